// AuthOptions: who may do what on a Muster server (the `auth` section of
// its configuration; `admins` stays at the top level).
//
//   admins: [root]               # everything, including acting for others
//   auth:
//     munge: /run/munge/munge.socket.2   # munged's socket; default: used when it
//                                        # exists; "none": MUNGE credentials refused
//     operators: [ops]           # drain and cordon nodes, act on any job, read the audit log
//     rootJobs: []               # admins whose jobs may run as root (uid 0); default none
//     queues:                    # access lists; a queue not listed is open to all users
//       research: {users: [alice, bob], admins: [carol]}   # admins manage its jobs
//
// Roles, from least to most: a user (submits to queues whose list names
// them, manages and sees their own jobs), a queue admin (also every job of
// their queue), an operator (every job, nodes' cordon and drain), an admin
// (everything: tokens for others, nodes declared lost or removed, acting
// for another user).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace YAML {
class Node;
}

namespace muster::server {

struct QueueAccess {
  std::vector<std::string> users;   // who may submit ("*": everyone)
  std::vector<std::string> admins;  // who manages its jobs (and may submit)
};

struct AuthOptions {
  std::string munge_socket;  // "": the default socket when it exists; "none": off
  std::vector<std::string> operators;
  std::vector<std::string> root_jobs;
  std::map<std::string, QueueAccess> queues;
};

// Reads the `auth` mapping; errors name the key ("server.auth.queues.x.users[1]").
Status ReadAuthOptions(const YAML::Node& node, AuthOptions& out);

}  // namespace muster::server
