#include "cli/scontrol_command.h"

#include <cstdlib>
#include <iostream>

#include "cli/hostlist.h"

namespace muster::cli {
namespace {

int Error(const std::string& message) {
  std::cerr << "scontrol: error: " << message << "\n";
  return 1;
}

}  // namespace

int RunScontrol(const std::vector<std::string>& args) {
  if (args.size() < 2 || args[0] != "show") {
    return Error("only \"show hostnames [LIST]\" and \"show hostlist LIST\" are supported here yet");
  }
  const std::string& what = args[1];
  if (what != "hostnames" && what != "hostname" && what != "hostlist") {
    return Error("\"show " + what + "\" is not supported here yet (show hostnames, show hostlist)");
  }
  std::string list;
  if (args.size() > 2) {
    for (size_t i = 2; i < args.size(); ++i) list += (list.empty() ? "" : ",") + args[i];
  } else if (const char* env = std::getenv("SLURM_JOB_NODELIST"); env != nullptr && (what == "hostnames" || what == "hostname")) {
    list = env;
  } else {
    return Error("give a host list (outside a job, $SLURM_JOB_NODELIST is not set)");
  }
  auto hosts = ExpandHostlist(list);
  if (!hosts.ok()) return Error(hosts.status().message());
  if (what == "hostnames" || what == "hostname") {
    for (const std::string& h : *hosts) std::cout << h << "\n";
    return 0;
  }
  std::cout << CompressHostlist(*hosts) << "\n";
  return 0;
}

}  // namespace muster::cli
