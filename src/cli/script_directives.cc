#include "cli/script_directives.h"

#include "cli/sbatch_options.h"
#include "cli/slurm_request.h"
#include "common/signal_name.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <sstream>

namespace muster::cli {

namespace {

enum class Field {
  kPartition,
  kQos,
  kAccount,
  kName,
  kQueue,
  kPriority,
  kGpuType,
  kCpus,
  kMemory,
  kTime,
  kAfter,
  kChdir,
  kStdout,
  kStderr,
  kGpus,
  kReplicas,
  kHold,
  kSpot,
  kArray,
  kRetry,
  kEnv,
  kExport,
  kImage,
  kMounts,
  kSignal,
  kReservation,
  kEmptyOnly,
  kHonoured,
  kIgnored
};

struct Flag {
  Field field;
  bool takes_value;
  // For kIgnored: what the warning says after the flag; for kEmptyOnly,
  // what is not supported.
  const char* ignored = " is ignored (it has no meaning here)";
};

// #MUSTER: muster submit's own flags.
const std::map<std::string, Flag>& MusterFlags() {
  static const std::map<std::string, Flag> flags = {
      {"--name", {Field::kName, true}},
      {"--queue", {Field::kQueue, true}},
      {"-q", {Field::kQueue, true}},
      {"--priority", {Field::kPriority, true}},
      {"--gpus", {Field::kGpus, true}},
      {"--gpu-type", {Field::kGpuType, true}},
      {"--replicas", {Field::kReplicas, true}},
      {"--cpus", {Field::kCpus, true}},
      {"--memory", {Field::kMemory, true}},
      {"--time", {Field::kTime, true}},
      {"-t", {Field::kTime, true}},
      {"--after", {Field::kAfter, true}},
      {"--hold", {Field::kHold, false}},
      {"--chdir", {Field::kChdir, true}},
      {"-D", {Field::kChdir, true}},
      {"--stdout", {Field::kStdout, true}},
      {"--stderr", {Field::kStderr, true}},
      {"--array", {Field::kArray, true}},
      {"--retry", {Field::kRetry, true}},
      {"--env", {Field::kEnv, true}},
      {"--image", {Field::kImage, true}},
      {"--mount", {Field::kMounts, true}},
      {"--spot", {Field::kSpot, false}},
      {"--reservation", {Field::kReservation, true}},
  };
  return flags;
}

// #SBATCH: sbatch's flags with a meaning here beside the resource ones
// (slurm_request.h).
const std::map<std::string, Flag>& SlurmFlags() {
  static const std::map<std::string, Flag> flags = {
      {"--job-name", {Field::kName, true}},
      {"--partition", {Field::kPartition, true}},
      {"--qos", {Field::kQos, true}},
      {"--account", {Field::kAccount, true}},
      {"--time", {Field::kTime, true}},
      {"--dependency", {Field::kAfter, true}},
      {"--hold", {Field::kHold, false}},
      {"--chdir", {Field::kChdir, true}},
      {"--output", {Field::kStdout, true}},
      {"--error", {Field::kStderr, true}},
      {"--export", {Field::kExport, true}},
      // pyxis's flags (Slurm's container plugin): the image, and SRC:DST[:ro] mounts, comma-separated.
      {"--container-image", {Field::kImage, true}},
      {"--container-mounts", {Field::kMounts, true}},
      // What Muster does anyway: a gang starts on all its nodes at once;
      // output files are appended to; sbatch's own output.
      {"--wait-all-nodes", {Field::kHonoured, true}},
      {"--parsable", {Field::kHonoured, false}},
      {"--open-mode", {Field::kHonoured, true}},
      // Names that must exist to be honoured: empty, they ask for nothing.
      {"--reservation", {Field::kReservation, true}},
      {"--exclude", {Field::kEmptyOnly, true, "excluding nodes by name"}},
      {"--nodelist", {Field::kEmptyOnly, true, "choosing nodes by name"}},
      // Slurm's bookkeeping and hints: no effect on where or how the job runs here.
      {"--mail-type", {Field::kIgnored, true}},
      {"--mail-user", {Field::kIgnored, true}},
      {"--comment", {Field::kIgnored, true}},
      {"--requeue", {Field::kIgnored, false, " is ignored (a job whose node is lost is always requeued here)"}},
      {"--no-requeue", {Field::kIgnored, false, " is ignored (a job whose node is lost is always requeued here)"}},
      {"--hint", {Field::kIgnored, true, " is ignored (tasks are not bound to cores here)"}},
      {"--cluster", {Field::kIgnored, true, " is ignored (one cluster here)"}},
      {"--clusters", {Field::kIgnored, true, " is ignored (one cluster here)"}},
      {"--gpu-bind", {Field::kIgnored, true, " is ignored (each replica sees its node's GPUs)"}},
      {"--time-min", {Field::kIgnored, true, " is ignored (a job runs to its --time)"}},
      {"--signal", {Field::kSignal, true}},
  };
  return flags;
}

}  // namespace

StatusOr<ScriptSettings::LimitSignal> ReadSignalOption(const std::string& value, const std::string& where) {
  ScriptSettings::LimitSignal out;
  std::string rest = value;
  if (const size_t colon = rest.find(':'); colon != std::string::npos) {
    const std::string flags = rest.substr(0, colon);
    if (flags.empty() || flags.find_first_not_of("BR") != std::string::npos) {
      return InvalidArgument(where + "=" + value + ": the flags before ':' may be B (the batch shell) and R only");
    }
    if (flags.find('B') != std::string::npos) out.to = "batch";
    rest = rest.substr(colon + 1);
  }
  if (const size_t at = rest.find('@'); at != std::string::npos) {
    const std::string time = rest.substr(at + 1);
    int64_t seconds = -1;
    const auto [end, ec] = std::from_chars(time.data(), time.data() + time.size(), seconds);
    if (time.empty() || ec != std::errc() || end != time.data() + time.size() || seconds < 0 || seconds > 65535) {
      return InvalidArgument(where + "=" + value + ": the time after '@' must be seconds from 0 to 65535");
    }
    out.before_seconds = seconds;
    rest = rest.substr(0, at);
  }
  const std::optional<int> number = SignalNumber(rest);
  if (!number)
    return InvalidArgument(where + "=" + value + ": \"" + rest + "\" is not a signal name or number (1 to 64)");
  out.signal = SignalName(*number);
  return out;
}

namespace {

// Words of a directive line, with '...' and "..." quoting; an unquoted '#'
// starts a comment, and with `sbatch_rules` also inside a word
// (--job-name=a#b is "a", as sbatch reads it).
std::vector<std::string> Words(const std::string& text, bool sbatch_rules) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char ch : text) {
    if (quote) {
      if (ch == quote) {
        quote = 0;
      } else {
        word += ch;
      }
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (ch == '#' && (!in_word || sbatch_rules)) {
      break;  // a comment after the flags
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

std::optional<int64_t> Count(const std::string& text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

std::string SlurmTimeLimit(const std::string& value) {
  std::string lower = value;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "0" || lower == "infinite" || lower == "unlimited") return "unlimited";
  return AllDigits(value) ? value + "m" : value;
}

StatusOr<ScriptSettings> ReadScriptDirectives(const std::string& script, const std::string& file,
                                              const std::function<StatusOr<int64_t>()>& largest_node_cpus,
                                              const std::vector<SbatchOption>& command_line) {
  ScriptSettings out;
  SlurmRequest slurm_request;
  bool any_slurm = !command_line.empty();
  // The directive lines, then sbatch's command line, which wins.
  struct Directive {
    bool slurm;
    std::string at;  // "train.sh line 4: #SBATCH "
    std::vector<std::string> words;
    std::vector<SbatchOption> sbatch;
  };
  std::vector<Directive> directives;
  std::map<std::string, std::string> empty_only;  // flag -> the error its last value makes, if any
  bool export_given = false;
  std::vector<std::string> export_list;  // what the last --export lists
  std::istringstream in(script);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;  // blank
    if (line[first] != '#') break;             // the first command: directives end
    const std::string text = line.substr(first);
    // sbatch reads #SBATCH only at the start of a line: indented, it is a comment.
    const bool muster = text.rfind("#MUSTER", 0) == 0, slurm = first == 0 && text.rfind("#SBATCH", 0) == 0;
    if (!muster && !slurm) {
      if (text.rfind("#SBATCH", 0) == 0) {
        out.warnings.push_back(file + " line " + std::to_string(number) +
                               ": an indented #SBATCH is a comment to sbatch, and is ignored here too");
      }
      continue;  // a comment (or the #! line)
    }
    const std::string prefix = muster ? "#MUSTER" : "#SBATCH";
    Directive d{slurm,
                file + " line " + std::to_string(number) + ": " + prefix + " ",
                Words(text.substr(prefix.size()), slurm),
                {}};
    // #SBATCH words are read as sbatch reads them (abbreviations, short
    // forms, optional arguments), each option by its full name.
    if (slurm) {
      auto read = ReadSbatchOptions(d.words);
      if (!read.ok()) return InvalidArgument(d.at + read.status().message());
      d.sbatch = std::move(*read);
    }
    directives.push_back(std::move(d));
  }
  if (!command_line.empty()) directives.push_back({true, "sbatch's command line: ", {}, command_line});
  for (const Directive& d : directives) {
    const bool slurm = d.slurm, muster = !d.slurm;
    const std::map<std::string, Flag>& table = muster ? MusterFlags() : SlurmFlags();
    const std::vector<std::string>& words = d.words;
    const std::vector<SbatchOption>& sbatch = d.sbatch;
    const std::string& at = d.at;
    for (size_t i = 0; i < (slurm ? sbatch.size() : words.size()); ++i) {
      std::string flag, value;
      bool has_value = false;
      if (slurm) {
        flag = "--" + sbatch[i].name;
        has_value = sbatch[i].value.has_value();
        value = sbatch[i].value.value_or("");
      } else {
        flag = words[i];
        if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
          value = flag.substr(eq + 1);
          flag = flag.substr(0, eq);
          has_value = true;
        } else if (flag.size() > 2 && flag[0] == '-' && flag[1] != '-') {  // -t2h
          value = flag.substr(2);
          flag = flag.substr(0, 2);
          has_value = true;
        }
      }
      const std::string where = at + (slurm && sbatch[i].given != flag ? sbatch[i].given + " (" + flag + ")" : flag);
      if (slurm) {
        any_slurm = true;
        ASSIGN_OR_RETURN(const bool taken, TakeResourceOption(slurm_request, sbatch[i], where));
        if (taken) continue;
      }
      auto it = table.find(flag);
      if (it == table.end()) {
        if (muster) return InvalidArgument(where + " is not a muster submit flag");
        return InvalidArgument(where + " is not supported; give the setting with a #MUSTER line or a flag");
      }
      const Flag f = it->second;
      if (f.takes_value && !has_value) {
        if (slurm || i + 1 >= words.size()) return InvalidArgument(where + " needs a value");
        value = words[++i];
      } else if (!f.takes_value && has_value) {
        return InvalidArgument(where + " takes no value");
      }
      switch (f.field) {
        case Field::kName:
          out.name = value;
          if (slurm) {
            // Slurm takes any name; Muster's are [A-Za-z0-9._-], from a letter or digit.
            std::string name;
            for (char ch : value)
              name += std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-' ? ch : '-';
            name.erase(0, std::min(name.find_first_not_of("._-"), name.size()));
            if (name.size() > 128) name.resize(128);
            if (name != value) {
              out.warnings.push_back(where + "=" + value + ": the job is named " +
                                     (name.empty() ? "after the file" : name) + " (names are letters, digits and ._-)");
              out.name = name.empty() ? std::nullopt : std::optional<std::string>(name);
            }
          }
          break;
        case Field::kQueue:
          out.queue = value;
          break;
        // The server maps Slurm's names (api/slurm_mapping.h).
        case Field::kPartition:
          out.slurm_partition = value;
          break;
        case Field::kQos:
          out.slurm_qos = value;
          break;
        case Field::kAccount:
          out.slurm_account = value;
          break;
        case Field::kPriority:
          out.priority = value;
          break;
        case Field::kGpuType:
          out.gpu_type = value;
          break;
        case Field::kCpus:
          out.cpus = value;
          break;
        case Field::kAfter:
          out.after = value;
          break;
        case Field::kChdir:
          out.chdir = value;
          break;
        case Field::kStdout:
          out.stdout_path = value;
          break;
        case Field::kStderr:
          out.stderr_path = value;
          break;
        case Field::kHold:
          out.hold = true;
          break;
        case Field::kSpot:
          out.spot = true;
          break;
        case Field::kMemory:
          out.memory = value;
          break;
        case Field::kTime:
          out.time = SlurmTimeLimit(value);
          break;
        case Field::kEnv:
          out.env.push_back(value);
          break;
        case Field::kImage:
          out.image = value;
          break;
        case Field::kMounts: {
          std::stringstream list(value);
          for (std::string item; std::getline(list, item, ',');) {
            if (!item.empty()) out.mounts.push_back(item);
          }
          break;
        }
        case Field::kExport: {
          // ALL: the submitting environment too; NONE or a list without
          // ALL: only what is listed. The last --export counts.
          export_list.clear();
          out.export_all = false;
          std::stringstream list(value);
          for (std::string item; std::getline(list, item, ',');) {
            if (item == "NONE" || item.empty()) continue;
            if (item == "ALL") {
              out.export_all = true;
              continue;
            }
            export_list.push_back(item);
          }
          export_given = true;
          break;
        }
        case Field::kGpus:
        case Field::kArray:
        case Field::kRetry:
        case Field::kReplicas: {
          std::optional<int64_t> n = Count(value);
          if (!n) return InvalidArgument(where + ": expected a count, got \"" + value + "\"");
          (f.field == Field::kGpus    ? out.gpus
           : f.field == Field::kArray ? out.array
           : f.field == Field::kRetry ? out.retry
                                      : out.replicas) = *n;
          break;
        }
        case Field::kSignal: {
          ASSIGN_OR_RETURN(ScriptSettings::LimitSignal signal, ReadSignalOption(value, where));
          if (value.find(':') != std::string::npos && value.substr(0, value.find(':')).find('R') != std::string::npos) {
            out.warnings.push_back(where + "=" + value +
                                   ": R: is ignored (a reservation's end does not stop jobs here)");
          }
          out.limit_signal = signal;
          break;
        }
        case Field::kReservation:
          // The last one counts; empty (sbatch's command line) clears it.
          out.reservation = value.empty() ? std::nullopt : std::optional<std::string>(value);
          break;
        case Field::kHonoured:
          break;
        case Field::kEmptyOnly:
          // The last one counts (sbatch's command line comes last).
          empty_only[flag] = value.empty() ? ""
                                           : where + "=" + value + ": " + f.ignored +
                                                 " is not supported here; leave it out, or give it empty on the "
                                                 "command line";
          break;
        case Field::kIgnored:
          out.warnings.push_back(where + f.ignored);
          break;
      }
    }
  }
  out.env.insert(out.env.begin(), export_list.begin(), export_list.end());  // #MUSTER --env wins
  for (const auto& [flag, error] : empty_only) {
    if (!error.empty()) return InvalidArgument(error);
  }
  if (any_slurm) {
    // As sbatch: without --export, the submitting environment goes along.
    if (!export_given) out.export_all = true;
    int64_t largest = 0;
    const bool needs_nodes =
        slurm_request.ntasks && !slurm_request.nodes_min && !slurm_request.ntasks_per_node && !slurm_request.overcommit;
    if (needs_nodes && largest_node_cpus) {
      ASSIGN_OR_RETURN(largest, largest_node_cpus());
    }
    ASSIGN_OR_RETURN(SlurmShape shape, ResolveSlurmShape(slurm_request, largest, file));
    out.warnings.insert(out.warnings.end(), shape.warnings.begin(), shape.warnings.end());
    // A #MUSTER line says the same in Muster's words, and wins.
    if (!out.replicas) out.replicas = shape.nodes;
    out.one_per_node = true;
    out.exclusive = shape.exclusive;
    out.features = shape.features;
    if (!out.gpus && shape.gpus_per_node > 0) out.gpus = shape.gpus_per_node;
    if (!out.gpu_type) out.gpu_type = shape.gpu_type;
    if (!out.cpus) out.cpus = std::to_string(shape.cpus_per_node);
    if (!out.memory && shape.memory_mib_per_node) {
      const int64_t mib = *shape.memory_mib_per_node;
      out.memory = mib > 0 && mib % (1024 * 1024) == 0 ? std::to_string(mib >> 20) + "Ti"
                   : mib > 0 && mib % 1024 == 0        ? std::to_string(mib >> 10) + "Gi"
                                                       : std::to_string(mib) + "Mi";
    }
    if (!out.array && slurm_request.array) out.array_indices = slurm_request.array;
    // As Slurm: a script that fails is not run again (a node failure still
    // requeues it, which Muster always does); #MUSTER --retry says otherwise.
    if (!out.retry) out.retry = 0;
    out.slurm = std::move(shape);
  }
  return out;
}

}  // namespace muster::cli
