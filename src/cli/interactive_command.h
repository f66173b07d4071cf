// `muster run --interactive`: a terminal in a new job's allocation, as
// `srun --pty bash` gives one.
//
//  1. The spec (from the flags) runs the node's muster as a shell relay
//     (`muster shell-serve`, shell/shell_relay.h) around the user's command
//     or shell; its class is `interactive` unless one was named, it is not
//     retried, and a fresh 256-bit key goes in its secretEnv
//     (MUSTER_SHELL_KEY), which the server shows to nobody.
//  2. Waits for the job to run and its relay to announce its `shell`
//     endpoint (progress.endpoints), saying why after a second of waiting;
//     ^C while waiting cancels the job.
//  3. Connects to the relay (TLS keyed by the secret: shell_channel.h) and
//     joins this terminal to the remote one; exits with the remote
//     command's status. The job ends with it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace muster::cli {

class Client;

// `spec`: the job spec the flags made; `command`: what to run on the
// terminal (empty: the user's shell). Returns the exit code.
int RunInteractive(Client& client, nlohmann::json spec, const std::vector<std::string>& command);

// `muster shell-serve [-- command...]`, inside the job: the relay, which
// announces its endpoint to the server as the job's progress.
int RunShellServe(const std::vector<std::string>& command);

}  // namespace muster::cli
