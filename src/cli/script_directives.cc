#include "cli/script_directives.h"

#include "cli/sbatch_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <sstream>

namespace muster::cli {

namespace {

enum class Field { kName, kQueue, kPriority, kGpuType, kCpus, kMemory, kTime, kAfter, kChdir, kStdout, kStderr, kGpus, kReplicas, kHold, kSpot,
                   kTotalGpus, kGres, kGpusPerNode, kArray, kRetry, kEnv, kExport, kImage, kMounts, kIgnored };

struct Flag {
  Field field;
  bool takes_value;
  // For kIgnored: what the warning says after the flag.
  const char* ignored = " is ignored (it has no meaning here)";
};


// #MUSTER: muster submit's own flags.
const std::map<std::string, Flag>& MusterFlags() {
  static const std::map<std::string, Flag> flags = {
      {"--name", {Field::kName, true}},       {"--queue", {Field::kQueue, true}},   {"-q", {Field::kQueue, true}},
      {"--priority", {Field::kPriority, true}}, {"--gpus", {Field::kGpus, true}},   {"--gpu-type", {Field::kGpuType, true}},
      {"--replicas", {Field::kReplicas, true}}, {"--cpus", {Field::kCpus, true}},   {"--memory", {Field::kMemory, true}},
      {"--time", {Field::kTime, true}},       {"-t", {Field::kTime, true}},         {"--after", {Field::kAfter, true}},
      {"--hold", {Field::kHold, false}},      {"--chdir", {Field::kChdir, true}},   {"-D", {Field::kChdir, true}},
      {"--stdout", {Field::kStdout, true}},   {"--stderr", {Field::kStderr, true}},
      {"--array", {Field::kArray, true}},     {"--retry", {Field::kRetry, true}},   {"--env", {Field::kEnv, true}},
      {"--image", {Field::kImage, true}},     {"--mount", {Field::kMounts, true}},
      {"--spot", {Field::kSpot, false}},
  };
  return flags;
}

// #SBATCH: the subset of sbatch's flags with a meaning here.
const std::map<std::string, Flag>& SlurmFlags() {
  static const std::map<std::string, Flag> flags = {
      {"--job-name", {Field::kName, true}},      {"--partition", {Field::kQueue, true}},    {"--qos", {Field::kPriority, true}},       {"--nodes", {Field::kReplicas, true}},     {"--gpus-per-node", {Field::kGpusPerNode, true}}, {"--gres", {Field::kGres, true}},
      {"--gpus", {Field::kTotalGpus, true}},     {"--cpus-per-task", {Field::kCpus, true}}, {"--mem", {Field::kMemory, true}},         {"--time", {Field::kTime, true}},
      {"--dependency", {Field::kAfter, true}},
      {"--hold", {Field::kHold, false}},
      {"--chdir", {Field::kChdir, true}},
      // Slurm's bookkeeping and output: no effect on where or how the job runs here.
      {"--output", {Field::kStdout, true}},      {"--error", {Field::kStderr, true}},       {"--mail-type", {Field::kIgnored, true}},  {"--mail-user", {Field::kIgnored, true}},
      {"--account", {Field::kIgnored, true}},    {"--comment", {Field::kIgnored, true}},    {"--open-mode", {Field::kIgnored, true}},
      {"--ntasks", {Field::kIgnored, true}},     {"--ntasks-per-node", {Field::kIgnored, true}}, {"--export", {Field::kExport, true}},
      {"--requeue", {Field::kIgnored, false}},   {"--no-requeue", {Field::kIgnored, false}},
      // pyxis's flags (Slurm's container plugin): the image, and SRC:DST[:ro] mounts, comma-separated.
      {"--container-image", {Field::kImage, true}}, {"--container-mounts", {Field::kMounts, true}},
  };
  return flags;
}

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

// "[type:]N" (--gpus, --gpus-per-node) or "gpu[:type]:N" (--gres).
Status ReadGpus(const std::string& value, bool gres, std::optional<std::string>& type, int64_t& n,
                const std::string& where) {
  std::vector<std::string> parts;
  std::stringstream ss(value);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  if (gres) {
    if (parts.empty() || parts[0] != "gpu") {
      return InvalidArgument(where + ": only gpu resources are supported, got \"" + value + "\"");
    }
    parts.erase(parts.begin());
    if (parts.empty()) parts.push_back("1");  // --gres=gpu: one
  }
  const std::optional<int64_t> count = parts.empty() ? std::nullopt : Count(parts.back());
  if (!count || parts.size() > 2) {
    return InvalidArgument(where + ": expected " + (gres ? "gpu[:type]:N" : "[type:]N") + ", got \"" + value + "\"");
  }
  n = *count;
  if (parts.size() == 2) type = parts[0];
  return Status::Ok();
}

}  // namespace

std::string SlurmTimeLimit(const std::string& value) {
  std::string lower = value;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "0" || lower == "infinite" || lower == "unlimited") return "unlimited";
  return AllDigits(value) ? value + "m" : value;
}

StatusOr<ScriptSettings> ReadScriptDirectives(const std::string& script, const std::string& file) {
  ScriptSettings out;
  std::optional<int64_t> total_gpus;
  std::istringstream in(script);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;        // blank
    if (line[first] != '#') break;                   // the first command: directives end
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
    const std::map<std::string, Flag>& table = muster ? MusterFlags() : SlurmFlags();
    const std::vector<std::string> words = Words(text.substr(prefix.size()), slurm);
    const std::string at = file + " line " + std::to_string(number) + ": " + prefix + " ";
    // #SBATCH words are read as sbatch reads them (abbreviations, short
    // forms, optional arguments), each option by its full name.
    std::vector<SbatchOption> sbatch;
    if (slurm) {
      auto read = ReadSbatchOptions(words);
      if (!read.ok()) return InvalidArgument(at + read.status().message());
      sbatch = std::move(*read);
    }
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
        case Field::kName: out.name = value; break;
        case Field::kQueue: out.queue = value; break;
        case Field::kPriority: out.priority = value; break;
        case Field::kGpuType: out.gpu_type = value; break;
        case Field::kCpus: out.cpus = value; break;
        case Field::kAfter: out.after = value; break;
        case Field::kChdir: out.chdir = value; break;
        case Field::kStdout: out.stdout_path = value; break;
        case Field::kStderr: out.stderr_path = value; break;
        case Field::kHold: out.hold = true; break;
        case Field::kSpot: out.spot = true; break;
        case Field::kMemory:
          // Slurm: a bare number is MiB, and its K M G T are powers of 1024.
          if (slurm && AllDigits(value)) {
            value += "Mi";
          } else if (slurm && value.size() > 1 && AllDigits(value.substr(0, value.size() - 1)) &&
                     std::string("KMGTkmgt").find(value.back()) != std::string::npos) {
            value = value.substr(0, value.size() - 1) + static_cast<char>(std::toupper(value.back())) + "i";
          }
          out.memory = value;
          break;
        case Field::kTime:
          out.time = SlurmTimeLimit(value);
          break;
        case Field::kEnv:
          out.env.push_back(value);
          break;
        case Field::kImage: out.image = value; break;
        case Field::kMounts: {
          std::stringstream list(value);
          for (std::string item; std::getline(list, item, ',');) {
            if (!item.empty()) out.mounts.push_back(item);
          }
          break;
        }
        case Field::kExport: {
          std::stringstream list(value);
          for (std::string item; std::getline(list, item, ',');) {
            if (item == "NONE" || item.empty()) continue;
            if (item == "ALL") {
              out.warnings.push_back(where + "=ALL is not taken: the job gets only the variables listed (" + prefix +
                                     " --export=NAME,...)");
              continue;
            }
            out.env.push_back(item);
          }
          break;
        }
        case Field::kGpus:
        case Field::kArray:
        case Field::kRetry:
        case Field::kReplicas: {
          std::optional<int64_t> n = Count(value);
          // Slurm's --nodes=min-max: a gang has one size.
          if (!n && f.field == Field::kReplicas && slurm) {
            const size_t dash = value.find('-');
            if (dash != std::string::npos && value.substr(0, dash) == value.substr(dash + 1)) n = Count(value.substr(0, dash));
          }
          if (!n) return InvalidArgument(where + ": expected a count, got \"" + value + "\"");
          (f.field == Field::kGpus    ? out.gpus
           : f.field == Field::kArray ? out.array
           : f.field == Field::kRetry ? out.retry
                                      : out.replicas) = *n;
          break;
        }
        case Field::kTotalGpus:
        case Field::kGres:
        case Field::kGpusPerNode: {
          int64_t n = 0;
          RETURN_IF_ERROR(ReadGpus(value, f.field == Field::kGres, out.gpu_type, n, where));
          if (f.field == Field::kTotalGpus) {
            total_gpus = n;
          } else {
            out.gpus = n;
          }
          break;
        }
        case Field::kIgnored:
          out.warnings.push_back(where + f.ignored);
          break;
      }
    }
  }
  if (total_gpus) {
    if (out.gpus) {
      return InvalidArgument(file + ": #SBATCH --gpus (the job's total) and a per-node GPU count were both given");
    }
    const int64_t nodes = out.replicas.value_or(1);
    if (nodes <= 0 || *total_gpus % nodes != 0) {
      return InvalidArgument(file + ": #SBATCH --gpus=" + std::to_string(*total_gpus) + " cannot be divided evenly among " +
                             std::to_string(nodes) + " nodes");
    }
    out.gpus = *total_gpus / nodes;
  }
  return out;
}

}  // namespace muster::cli
