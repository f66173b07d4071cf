// Queues made and changed through the API (server/api_queues.h), for
// admins; `muster get queues` lists every queue with its source.
//
//   muster queue create NAME [--limit N|TYPE=N,...] [--guarantee ...]
//                            [--share N] [--parent QUEUE]
//   muster queue set NAME [the same flags]   changes only what is given;
//                                  "none" clears a limit, guarantee or parent
//   muster queue delete NAME
//
// A count is GPUs of every type together (32), or per GPU type
// (H100=16,*=48, "*" for every type together).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/status.h"

namespace CLI {
class App;
}

namespace muster::cli {

// "32" -> {"*": 32}; "H100=16,*=48" -> {"H100": 16, "*": 48}. InvalidArgument
// naming `flag` otherwise.
StatusOr<std::map<std::string, int64_t>> ParseGpuCounts(const std::string& text, const std::string& flag);

struct QueueCommands;
std::shared_ptr<QueueCommands> AddQueueCommands(CLI::App& app);
// The exit code of whichever command was parsed, or -1 if none was.
int RunQueueCommands(QueueCommands& commands);

}  // namespace muster::cli
