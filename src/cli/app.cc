#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "agent/task_shim.h"
#include "cli/agent_command.h"
#include "cli/auth_commands.h"
#include "cli/dev_command.h"
#include "cli/help_export.h"
#include "cli/image_commands.h"
#include "cli/interactive_command.h"
#include "cli/job_commands.h"
#include "cli/queue_commands.h"
#include "cli/report_commands.h"
#include "cli/reservation_commands.h"
#include "cli/sbatch_command.h"
#include "cli/scontrol_command.h"
#include "cli/server_command.h"
#include "cli/sim_command.h"
#include "cli/slurm_commands.h"
#include "cli/srun_command.h"
#include "cli/usage_commands.h"
#include "common/quantity.h"

namespace muster::cli {
namespace {

constexpr const char* kVersion = "muster 0.1.0";

// The flags `sub` and its own subcommands take ("--gpus", "-q", ...).
void FlagsOf(const CLI::App* sub, std::vector<std::string>& out) {
  for (const CLI::Option* o : sub->get_options()) {
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
    for (const std::string& s : o->get_snames()) out.push_back("-" + s);
  }
  for (const CLI::App* nested : sub->get_subcommands({})) FlagsOf(nested, out);
}

// "unknown flag ..." for the first flag before "--" that the command does
// not take, naming the closest one it does; "" when there is none (CLI11's
// own message lists every argument left over, which reads as noise).
std::string UnknownFlag(CLI::App& app, int argc, char** argv) {
  if (argc < 2) return "";
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands({})) {
    if (s->get_name() == argv[1]) sub = s;
  }
  if (sub == nullptr) return "";
  std::vector<std::string> known;
  FlagsOf(sub, known);
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-' || std::isdigit(static_cast<unsigned char>(arg[1]))) continue;  // a value (-1)
    const std::string flag = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), flag) != known.end()) continue;
    std::string msg = "muster " + sub->get_name() + ": unknown flag \"" + flag + "\"";
    const std::string close = ClosestMatch(flag, known);
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    return msg + " (muster " + sub->get_name() + " --help lists the flags)";
  }
  return "";
}

}  // namespace

int RunMuster(int argc, char** argv) {
  // The agent's task shim (agent/task_shim.h): internal, so not in --help.
  if (argc == 3 && std::strcmp(argv[1], "task-shim") == 0) return agent::RunTaskShim(argv[2]);
  // An interactive job's terminal relay (cli/interactive_command.h): internal too.
  if (argc >= 2 && std::strcmp(argv[1], "shell-serve") == 0) {
    int first = 2;
    if (first < argc && std::strcmp(argv[first], "--") == 0) ++first;
    return RunShellServe(std::vector<std::string>(argv + first, argv + argc));
  }
  // Slurm's commands, for scripts written for Slurm: the binary under
  // their names (a link), or `muster sbatch ...`.
  const std::string name = std::filesystem::path(argv[0]).filename().string();
  if (name == "sbatch") return RunSbatch(std::vector<std::string>(argv + 1, argv + argc));
  if (argc >= 2 && std::strcmp(argv[1], "sbatch") == 0)
    return RunSbatch(std::vector<std::string>(argv + 2, argv + argc));
  // squeue, scancel, sacct, sinfo (cli/slurm_commands.h), by name or as `muster squeue`.
  using SlurmCommand = int (*)(const std::vector<std::string>&);
  for (const auto& [command, run] : {std::pair<const char*, SlurmCommand>{"squeue", RunSqueue},
                                     std::pair<const char*, SlurmCommand>{"scancel", RunScancel},
                                     std::pair<const char*, SlurmCommand>{"sacct", RunSacct},
                                     std::pair<const char*, SlurmCommand>{"sinfo", RunSinfo}}) {
    if (name == command) return run(std::vector<std::string>(argv + 1, argv + argc));
    if (argc >= 2 && std::strcmp(argv[1], command) == 0) return run(std::vector<std::string>(argv + 2, argv + argc));
  }
  if (name == "srun") return RunSrun(std::vector<std::string>(argv + 1, argv + argc));
  if (argc >= 2 && std::strcmp(argv[1], "srun") == 0) return RunSrun(std::vector<std::string>(argv + 2, argv + argc));
  // A Slurm-style job's other nodes (cli/srun_command.h): internal.
  if (argc == 2 && std::strcmp(argv[1], "step-host") == 0) return RunStepHostCommand();
  if (name == "scontrol") return RunScontrol(std::vector<std::string>(argv + 1, argv + argc));
  if (argc >= 2 && std::strcmp(argv[1], "scontrol") == 0) {
    return RunScontrol(std::vector<std::string>(argv + 2, argv + argc));
  }
  CLI::App app{"muster: a GPU cluster scheduler for ML training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", kVersion);
  SimFlags sim_flags;
  CLI::App* sim = AddSimCommand(app, sim_flags);
  ServerFlags server_flags;
  CLI::App* server = AddServerCommand(app, server_flags);
  AgentFlags agent_flags;
  CLI::App* agent = AddAgentCommand(app, agent_flags);
  DevFlags dev_flags;
  CLI::App* dev = AddDevCommand(app, dev_flags);
  std::shared_ptr<JobCommands> jobs = AddJobCommands(app);
  std::shared_ptr<ReportCommands> reports = AddReportCommands(app);
  std::shared_ptr<AuthCommands> auth = AddAuthCommands(app);
  std::shared_ptr<ImageCommands> images = AddImageCommands(app);
  std::shared_ptr<ReservationCommands> reservations = AddReservationCommands(app);
  std::shared_ptr<QueueCommands> queues = AddQueueCommands(app);
  std::shared_ptr<UsageCommands> usage = AddUsageCommands(app);
  // The help exported (cli/help_export.h): last, so they see every command.
  std::string shell;
  CLI::App* completion = app.add_subcommand("completion", "Print a shell completion script (muster completion bash)");
  completion->add_option("shell", shell, "The shell: bash")->required()->check(CLI::IsMember({"bash"}));
  std::string man_dir;
  CLI::App* man = app.add_subcommand("man", "Write the man pages, made from this help, into a directory");
  man->add_option("--dir", man_dir, "Where to write muster.1 and muster-COMMAND.1")->required();
  // An unknown command: CLI11 would say only "A subcommand is required".
  if (argc >= 2 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::cerr << "muster: unknown command \"" << argv[1] << "\"";
      const std::string close = ClosestMatch(argv[1], names);
      if (!close.empty()) std::cerr << "; did you mean \"" << close << "\"?";
      std::cerr << " (muster --help lists the commands)\n";
      return 2;
    }
  }
  NoteRawArguments(*jobs, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    if (const std::string unknown = UnknownFlag(app, argc, argv); !unknown.empty()) {
      std::cerr << unknown << "\n";
      return 2;
    }
    app.exit(e);
    return 2;
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // --help and --version exit 0; every other parse error is a usage error.
    return code == 0 ? 0 : 2;
  }
  if (sim->parsed()) return RunSim(sim_flags);
  if (server->parsed()) return RunServerCommand(server_flags);
  if (agent->parsed()) return RunAgentCommand(agent_flags);
  if (dev->parsed()) return RunDevCommand(dev_flags);
  if (completion->parsed()) {
    std::cout << BashCompletion(app);
    return 0;
  }
  if (man->parsed()) {
    auto written = WriteManPages(app, man_dir, kVersion);
    if (!written.ok()) {
      std::cerr << "muster man: --dir: " << written.status().message() << "\n";
      return 1;
    }
    std::cout << "wrote " << *written << " man pages to " << man_dir << "\n";
    return 0;
  }
  if (const int rc = RunReportCommands(*reports); rc >= 0) return rc;
  if (const int rc = RunAuthCommands(*auth); rc >= 0) return rc;
  if (const int rc = RunImageCommands(*images); rc >= 0) return rc;
  if (const int rc = RunReservationCommands(*reservations); rc >= 0) return rc;
  if (const int rc = RunQueueCommands(*queues); rc >= 0) return rc;
  if (const int rc = RunUsageCommands(*usage); rc >= 0) return rc;
  const int rc = RunJobCommands(*jobs);
  return rc >= 0 ? rc : 2;
}

}  // namespace muster::cli
