// Signals by name, as users write them ("USR1", "SIGUSR1", "usr1", "10")
// and as Muster prints them ("SIGUSR1").
//
// Thread-safety: free functions.
#pragma once

#include <csignal>
#include <optional>
#include <string>
#include <string_view>

namespace muster {

// The signal `name` names: a name with or without "SIG", any case, or a
// number from 1 to 64; nullopt for anything else.
std::optional<int> SignalNumber(std::string_view name);

// "SIGUSR1" for 10; "SIG42" for a signal without a name here.
std::string SignalName(int signal);

// The value a node's agent queues with a signal it sends srun (sigqueue):
// the signal is for the tasks of srun's step, which srun passes it on to
// on every node (step/step_launch.h), not one that reached them already.
inline constexpr int kStepSignalValue = 0x53525553;

// The signals srun passes on to its step's tasks, as Slurm's srun does.
inline constexpr int kStepSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGCONT};
bool SrunPassesOn(int signal);

}  // namespace muster
