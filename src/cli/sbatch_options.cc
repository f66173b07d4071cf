#include "cli/sbatch_options.h"

#include <array>
#include <span>

namespace muster::cli {

namespace {

// sbatch 22.05's long options, sorted (test/slurm/sbatch_options.tsv).
constexpr std::array kOptions = {
    SbatchOptionInfo{"account", SbatchArgument::kRequired, 'A'},
    SbatchOptionInfo{"acctg-freq", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"array", SbatchArgument::kRequired, 'a'},
    SbatchOptionInfo{"batch", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"bb", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"bbf", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"begin", SbatchArgument::kRequired, 'b'},
    SbatchOptionInfo{"chdir", SbatchArgument::kRequired, 'D'},
    SbatchOptionInfo{"cluster", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"cluster-constraint", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"clusters", SbatchArgument::kRequired, 'M'},
    SbatchOptionInfo{"comment", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"constraint", SbatchArgument::kRequired, 'C'},
    SbatchOptionInfo{"container", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"context", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"contiguous", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"core-spec", SbatchArgument::kRequired, 'S'},
    SbatchOptionInfo{"cores-per-socket", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"cpu-freq", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"cpus-per-gpu", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"cpus-per-task", SbatchArgument::kRequired, 'c'},
    SbatchOptionInfo{"deadline", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"delay-boot", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"dependency", SbatchArgument::kRequired, 'd'},
    SbatchOptionInfo{"distribution", SbatchArgument::kRequired, 'm'},
    SbatchOptionInfo{"error", SbatchArgument::kRequired, 'e'},
    SbatchOptionInfo{"exclude", SbatchArgument::kRequired, 'x'},
    SbatchOptionInfo{"exclusive", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"export", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"export-file", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"extra-node-info", SbatchArgument::kRequired, 'B'},
    SbatchOptionInfo{"get-user-env", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"gid", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gpu-bind", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gpu-freq", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gpus", SbatchArgument::kRequired, 'G'},
    SbatchOptionInfo{"gpus-per-node", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gpus-per-socket", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gpus-per-task", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gres", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gres-flags", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"help", SbatchArgument::kNone, 'h'},
    SbatchOptionInfo{"hint", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"hold", SbatchArgument::kNone, 'H'},
    SbatchOptionInfo{"ignore-pbs", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"input", SbatchArgument::kRequired, 'i'},
    SbatchOptionInfo{"job-name", SbatchArgument::kRequired, 'J'},
    SbatchOptionInfo{"kill-on-invalid-dep", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"licenses", SbatchArgument::kRequired, 'L'},
    SbatchOptionInfo{"mail-type", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mail-user", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mcs-label", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mem", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mem-bind", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mem-per-cpu", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mem-per-gpu", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mincpus", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"network", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"nice", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"no-kill", SbatchArgument::kOptional, 'k'},
    SbatchOptionInfo{"no-requeue", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"nodefile", SbatchArgument::kRequired, 'F'},
    SbatchOptionInfo{"nodelist", SbatchArgument::kRequired, 'w'},
    SbatchOptionInfo{"nodes", SbatchArgument::kRequired, 'N'},
    SbatchOptionInfo{"ntasks", SbatchArgument::kRequired, 'n'},
    SbatchOptionInfo{"ntasks-per-core", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"ntasks-per-gpu", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"ntasks-per-node", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"ntasks-per-socket", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"ntasks-per-tres", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"open-mode", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"output", SbatchArgument::kRequired, 'o'},
    SbatchOptionInfo{"overcommit", SbatchArgument::kNone, 'O'},
    SbatchOptionInfo{"oversubscribe", SbatchArgument::kNone, 's'},
    SbatchOptionInfo{"parsable", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"partition", SbatchArgument::kRequired, 'p'},
    SbatchOptionInfo{"power", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"prefer", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"priority", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"profile", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"propagate", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"qos", SbatchArgument::kRequired, 'q'},
    SbatchOptionInfo{"quiet", SbatchArgument::kNone, 'Q'},
    SbatchOptionInfo{"reboot", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"requeue", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"reservation", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"signal", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"sockets-per-node", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"spread-job", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"switches", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"tasks-per-node", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"test-only", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"thread-spec", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"threads-per-core", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"time", SbatchArgument::kRequired, 't'},
    SbatchOptionInfo{"time-min", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"tmp", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"uid", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"usage", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"use-min-nodes", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"verbose", SbatchArgument::kNone, 'v'},
    SbatchOptionInfo{"version", SbatchArgument::kNone, 'V'},
    SbatchOptionInfo{"wait", SbatchArgument::kNone, 'W'},
    SbatchOptionInfo{"wait-all-nodes", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"wckey", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"wrap", SbatchArgument::kRequired, 0},
};

// pyxis's (NVIDIA's container plugin for Slurm) options that Muster reads:
// where pyxis is installed, sbatch knows them too.
constexpr std::array kPyxisOptions = {
    SbatchOptionInfo{"container-image", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"container-mounts", SbatchArgument::kRequired, 0},
};

// srun 22.05's long options, sorted (test/slurm/srun_options.tsv).
constexpr std::array kSrunOptions = {
    SbatchOptionInfo{"accel-bind", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"account", SbatchArgument::kRequired, 'A'},
    SbatchOptionInfo{"acctg-freq", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"bb", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"bbf", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"bcast", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"bcast-exclude", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"begin", SbatchArgument::kRequired, 'b'},
    SbatchOptionInfo{"chdir", SbatchArgument::kRequired, 'D'},
    SbatchOptionInfo{"cluster", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"cluster-constraint", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"clusters", SbatchArgument::kRequired, 'M'},
    SbatchOptionInfo{"comment", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"compress", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"constraint", SbatchArgument::kRequired, 'C'},
    SbatchOptionInfo{"container", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"context", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"contiguous", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"core-spec", SbatchArgument::kRequired, 'S'},
    SbatchOptionInfo{"cores-per-socket", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"cpu-bind", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"cpu-freq", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"cpus-per-gpu", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"cpus-per-task", SbatchArgument::kRequired, 'c'},
    SbatchOptionInfo{"deadline", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"debugger-test", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"delay-boot", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"dependency", SbatchArgument::kRequired, 'd'},
    SbatchOptionInfo{"disable-status", SbatchArgument::kNone, 'X'},
    SbatchOptionInfo{"distribution", SbatchArgument::kRequired, 'm'},
    SbatchOptionInfo{"epilog", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"error", SbatchArgument::kRequired, 'e'},
    SbatchOptionInfo{"exact", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"exclude", SbatchArgument::kRequired, 'x'},
    SbatchOptionInfo{"exclusive", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"export", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"extra-node-info", SbatchArgument::kRequired, 'B'},
    SbatchOptionInfo{"gid", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gpu-bind", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gpu-freq", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gpus", SbatchArgument::kRequired, 'G'},
    SbatchOptionInfo{"gpus-per-node", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gpus-per-socket", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gpus-per-task", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gres", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"gres-flags", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"help", SbatchArgument::kNone, 'h'},
    SbatchOptionInfo{"het-group", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"hint", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"hold", SbatchArgument::kNone, 'H'},
    SbatchOptionInfo{"immediate", SbatchArgument::kOptional, 'I'},
    SbatchOptionInfo{"input", SbatchArgument::kRequired, 'i'},
    SbatchOptionInfo{"interactive", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"job-name", SbatchArgument::kRequired, 'J'},
    SbatchOptionInfo{"jobid", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"kill-on-bad-exit", SbatchArgument::kOptional, 'K'},
    SbatchOptionInfo{"label", SbatchArgument::kNone, 'l'},
    SbatchOptionInfo{"licenses", SbatchArgument::kRequired, 'L'},
    SbatchOptionInfo{"mail-type", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mail-user", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mcs-label", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mem", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mem-bind", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mem-per-cpu", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mem-per-gpu", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mincpus", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"mpi", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"msg-timeout", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"multi-prog", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"network", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"nice", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"no-allocate", SbatchArgument::kNone, 'Z'},
    SbatchOptionInfo{"no-kill", SbatchArgument::kOptional, 'k'},
    SbatchOptionInfo{"nodefile", SbatchArgument::kRequired, 'F'},
    SbatchOptionInfo{"nodelist", SbatchArgument::kRequired, 'w'},
    SbatchOptionInfo{"nodes", SbatchArgument::kRequired, 'N'},
    SbatchOptionInfo{"ntasks", SbatchArgument::kRequired, 'n'},
    SbatchOptionInfo{"ntasks-per-core", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"ntasks-per-gpu", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"ntasks-per-node", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"ntasks-per-socket", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"ntasks-per-tres", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"open-mode", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"output", SbatchArgument::kRequired, 'o'},
    SbatchOptionInfo{"overcommit", SbatchArgument::kNone, 'O'},
    SbatchOptionInfo{"overlap", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"oversubscribe", SbatchArgument::kNone, 's'},
    SbatchOptionInfo{"pack-group", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"partition", SbatchArgument::kRequired, 'p'},
    SbatchOptionInfo{"power", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"prefer", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"preserve-env", SbatchArgument::kNone, 'E'},
    SbatchOptionInfo{"priority", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"profile", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"prolog", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"propagate", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"pty", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"qos", SbatchArgument::kRequired, 'q'},
    SbatchOptionInfo{"quiet", SbatchArgument::kNone, 'Q'},
    SbatchOptionInfo{"quit-on-interrupt", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"reboot", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"relative", SbatchArgument::kRequired, 'r'},
    SbatchOptionInfo{"reservation", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"resv-ports", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"send-libs", SbatchArgument::kOptional, 0},
    SbatchOptionInfo{"signal", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"slurmd-debug", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"sockets-per-node", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"spread-job", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"switches", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"task-epilog", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"task-prolog", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"tasks-per-node", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"test-only", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"thread-spec", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"threads", SbatchArgument::kRequired, 'T'},
    SbatchOptionInfo{"threads-per-core", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"time", SbatchArgument::kRequired, 't'},
    SbatchOptionInfo{"time-min", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"tmp", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"uid", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"unbuffered", SbatchArgument::kNone, 'u'},
    SbatchOptionInfo{"usage", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"use-min-nodes", SbatchArgument::kNone, 0},
    SbatchOptionInfo{"verbose", SbatchArgument::kNone, 'v'},
    SbatchOptionInfo{"version", SbatchArgument::kNone, 'V'},
    SbatchOptionInfo{"wait", SbatchArgument::kRequired, 'W'},
    SbatchOptionInfo{"wckey", SbatchArgument::kRequired, 0},
    SbatchOptionInfo{"whole", SbatchArgument::kNone, 0},
};

// A command's option table: its own options, and pyxis's where it has them.
struct Table {
  std::string_view command;
  std::span<const SbatchOptionInfo> options;
  std::span<const SbatchOptionInfo> pyxis;
};
constexpr Table kSbatch{"sbatch", kOptions, kPyxisOptions};
constexpr Table kSrun{"srun", kSrunOptions, kPyxisOptions};

const SbatchOptionInfo* ByShort(const Table& table, char c) {
  for (const SbatchOptionInfo& o : table.options) {
    if (o.short_name == c) return &o;
  }
  return nullptr;
}

StatusOr<const SbatchOptionInfo*> Resolve(const Table& table, std::string_view word, bool with_pyxis) {
  const SbatchOptionInfo* found = nullptr;
  std::string candidates;
  int matches = 0;
  auto consider = [&](const SbatchOptionInfo& o) {
    if (o.name.substr(0, word.size()) != word) return;
    found = &o;
    ++matches;
    candidates += std::string(candidates.empty() ? "" : ", ") + "--" + std::string(o.name);
  };
  for (const SbatchOptionInfo& o : table.options) {
    if (o.name == word) return &o;
    consider(o);
  }
  if (with_pyxis) {
    for (const SbatchOptionInfo& o : table.pyxis) {
      if (o.name == word) return &o;
      consider(o);
    }
  }
  if (matches == 0 || word.empty()) {
    return NotFound("--" + std::string(word) + " is not an " + std::string(table.command) + " option");
  }
  if (matches > 1) return InvalidArgument("--" + std::string(word) + " is ambiguous: it could be " + candidates);
  return found;
}

StatusOr<std::vector<SbatchOption>> ReadOptions(const Table& table, const std::vector<std::string>& words,
                                                size_t* rest) {
  std::vector<SbatchOption> out;
  if (rest != nullptr) *rest = words.size();
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (rest != nullptr && (w.size() < 2 || w[0] != '-' || w == "--")) {
      *rest = i + (w == "--");  // the script and its arguments
      break;
    }
    if (w.size() < 2 || w[0] != '-' || w == "--") {
      return InvalidArgument("\"" + w + "\" is not an option (" + std::string(table.command) +
                             " refuses the script: invalid directive)");
    }
    if (w[1] == '-') {
      const size_t eq = w.find('=');
      const std::string name = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      ASSIGN_OR_RETURN(const SbatchOptionInfo* o, Resolve(table, name, /*with_pyxis=*/true));
      SbatchOption opt{std::string(o->name), std::nullopt, w.substr(0, eq)};
      if (eq != std::string::npos) {
        if (o->argument == SbatchArgument::kNone) return InvalidArgument("--" + opt.name + " takes no value");
        opt.value = w.substr(eq + 1);
      } else if (o->argument == SbatchArgument::kRequired) {
        if (i + 1 >= words.size()) return InvalidArgument("--" + opt.name + " needs a value");
        opt.value = words[++i];
      }
      out.push_back(std::move(opt));
      continue;
    }
    // Short options: flags may be grouped; one taking an argument takes the
    // rest of the word, or (required only) the next word.
    for (size_t k = 1; k < w.size(); ++k) {
      const SbatchOptionInfo* o = ByShort(table, w[k]);
      if (o == nullptr) {
        return InvalidArgument("-" + std::string(1, w[k]) + " is not an " + std::string(table.command) + " option");
      }
      SbatchOption opt{std::string(o->name), std::nullopt, "-" + std::string(1, w[k])};
      if (o->argument != SbatchArgument::kNone) {
        if (k + 1 < w.size()) {
          opt.value = w.substr(k + 1);
        } else if (o->argument == SbatchArgument::kRequired) {
          if (i + 1 >= words.size()) return InvalidArgument(opt.given + " needs a value");
          opt.value = words[++i];
        }
        out.push_back(std::move(opt));
        break;
      }
      out.push_back(std::move(opt));
    }
  }
  return out;
}

}  // namespace

StatusOr<const SbatchOptionInfo*> ResolveSbatchOption(std::string_view word, bool with_pyxis) {
  return Resolve(kSbatch, word, with_pyxis);
}

StatusOr<std::vector<SbatchOption>> ReadSbatchOptions(const std::vector<std::string>& words, size_t* rest) {
  return ReadOptions(kSbatch, words, rest);
}

StatusOr<std::vector<SbatchOption>> ReadSrunOptions(const std::vector<std::string>& words, size_t* rest) {
  return ReadOptions(kSrun, words, rest);
}

}  // namespace muster::cli
