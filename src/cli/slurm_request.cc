#include "cli/slurm_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include "api/array_indices.h"

namespace muster::cli {
namespace {

std::optional<int64_t> Count(const std::string& text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string p; std::getline(in, p, sep);) parts.push_back(p);
  if (!text.empty() && text.back() == sep) parts.emplace_back();
  return parts;
}

// "[type:]N" (--gpus, --gpus-per-node, --gpus-per-task) or, with `gres`,
// "gpu[:type][:N]" (one GPU when N is left out).
Status ReadGpus(const std::string& value, bool gres, SlurmRequest& r, int64_t& n, const std::string& where) {
  std::vector<std::string> parts = Split(value, ':');
  if (gres) {
    if (parts.size() > 1 && value.find(',') != std::string::npos) parts.clear();
    if (parts.empty() || parts[0] != "gpu") {
      return InvalidArgument(where + ": only GPUs can be asked for as a generic resource (gpu[:type]:N), got \"" +
                             value + "\"");
    }
    parts.erase(parts.begin());
    if (parts.empty() || !Count(parts.back())) parts.push_back("1");
  }
  const std::optional<int64_t> count = parts.empty() ? std::nullopt : Count(parts.back());
  if (!count || parts.size() > 2 || (parts.size() == 2 && parts[0].empty())) {
    return InvalidArgument(where + ": expected " + (gres ? "gpu[:type]:N" : "[type:]N") + ", got \"" + value + "\"");
  }
  if (parts.size() == 2) {
    if (r.gpu_type && *r.gpu_type != parts[0]) {
      return InvalidArgument(where + ": GPU type " + parts[0] + " differs from " + *r.gpu_type + " asked before");
    }
    r.gpu_type = parts[0];
  }
  n = *count;
  return Status::Ok();
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::optional<int64_t> SlurmMemoryMib(const std::string& text) {
  std::string digits = text, unit;
  while (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back()))) {
    unit.insert(unit.begin(), static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back()))));
    digits.pop_back();
  }
  const std::optional<int64_t> n = Count(digits);
  if (!n) return std::nullopt;
  if (unit.size() == 2 && unit[1] == 'B') unit.pop_back();
  if (unit.empty() || unit == "M") return *n;
  if (unit == "K") return CeilDiv(*n, 1024);
  if (unit == "G") return *n * 1024;
  if (unit == "T") return *n * 1024 * 1024;
  return std::nullopt;
}

StatusOr<bool> TakeResourceOption(SlurmRequest& r, const SbatchOption& o, const std::string& where) {
  const std::string v = o.value.value_or("");
  const auto count = [&](std::optional<int64_t>& out, int64_t min) -> Status {
    const std::optional<int64_t> n = Count(v);
    if (!n || *n < min)
      return InvalidArgument(where + ": expected a count of at least " + std::to_string(min) + ", got \"" + v + "\"");
    out = *n;
    return Status::Ok();
  };
  const auto memory = [&](std::optional<int64_t>& out) -> Status {
    const std::optional<int64_t> mib = SlurmMemoryMib(v);
    if (!mib) {
      return InvalidArgument(
          where + ": expected a size such as 4096 (MiB), 64G or 228GB (K, M, G, T: powers of 1024), got \"" + v + "\"");
    }
    for (const std::optional<int64_t>* other : {&r.mem_mib, &r.mem_per_cpu_mib, &r.mem_per_gpu_mib}) {
      if (other != &out && other->has_value()) {
        return InvalidArgument(where + ": --mem, --mem-per-cpu and --mem-per-gpu exclude each other (" + r.mem_where +
                               " was given too)");
      }
    }
    out = *mib;
    r.mem_where = where;
    return Status::Ok();
  };
  const std::string& name = o.name;
  if (name == "nodes") {
    const size_t dash = v.find('-');
    const std::optional<int64_t> lo = Count(v.substr(0, dash)),
                                 hi = dash == std::string::npos ? lo : Count(v.substr(dash + 1));
    if (!lo || !hi || *lo < 1 || *hi < *lo) {
      return InvalidArgument(where + ": expected a node count N or a range MIN-MAX, got \"" + v + "\"");
    }
    r.nodes_min = *lo;
    r.nodes_max = *hi;
  } else if (name == "ntasks") {
    RETURN_IF_ERROR(count(r.ntasks, 1));
  } else if (name == "ntasks-per-node" || name == "tasks-per-node") {
    RETURN_IF_ERROR(count(r.ntasks_per_node, 1));
  } else if (name == "cpus-per-task") {
    RETURN_IF_ERROR(count(r.cpus_per_task, 1));
  } else if (name == "ntasks-per-gpu") {
    RETURN_IF_ERROR(count(r.ntasks_per_gpu, 1));
  } else if (name == "gpus" || name == "gpus-per-node" || name == "gpus-per-task" || name == "gres") {
    int64_t n = 0;
    RETURN_IF_ERROR(ReadGpus(v, name == "gres", r, n, where));
    (name == "gpus"            ? r.gpus
     : name == "gpus-per-node" ? r.gpus_per_node
     : name == "gres"          ? r.gres_gpus
                               : r.gpus_per_task) = n;
  } else if (name == "mem") {
    RETURN_IF_ERROR(memory(r.mem_mib));
  } else if (name == "mem-per-cpu") {
    RETURN_IF_ERROR(memory(r.mem_per_cpu_mib));
  } else if (name == "mem-per-gpu") {
    RETURN_IF_ERROR(memory(r.mem_per_gpu_mib));
  } else if (name == "exclusive") {
    if (o.value && !o.value->empty()) {
      return InvalidArgument(where + "=" + *o.value +
                             ": sharing nodes only with the same user or MCS label is not supported; --exclusive alone "
                             "gives the job its nodes whole");
    }
    r.exclusive = true;
  } else if (name == "overcommit") {
    r.overcommit = true;
  } else if (name == "constraint") {
    ASSIGN_OR_RETURN(r.features, ReadConstraint(v, where));
  } else if (name == "array") {
    auto parsed = api::ParseArrayIndices(v, 10000);
    if (!parsed.ok()) return InvalidArgument(where + ": " + parsed.status().message());
    r.array = v;
  } else {
    return false;
  }
  return true;
}

StatusOr<std::vector<std::string>> ReadConstraint(const std::string& v, const std::string& where) {
  const std::string at = where + "=" + v + ": ";
  if (v.find_first_of("[]*") != std::string::npos) {
    return InvalidArgument(at +
                           "all nodes with the same one of several features ([a|b]) and node counts (a*2) are "
                           "not supported; a|b lets each node have either");
  }
  // Terms joined by & (or ','), each a feature or a choice a|b, in
  // parentheses or alone.
  std::vector<std::string> terms;
  int depth = 0;
  std::string term;
  for (char c : v + "&") {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth < 0) return InvalidArgument(at + "a ')' without its '('");
    if (depth == 0 && (c == '&' || c == ',')) {
      terms.push_back(term);
      term.clear();
    } else {
      term += c;
    }
  }
  if (depth != 0) return InvalidArgument(at + "a '(' without its ')'");
  std::vector<std::string> out;
  for (std::string t : terms) {
    const bool grouped = t.size() >= 2 && t.front() == '(' && t.back() == ')';
    if (grouped) t = t.substr(1, t.size() - 2);
    if (t.find_first_of("()&,") != std::string::npos) {
      return InvalidArgument(at +
                             "only features that must all hold, each a feature or a choice, are supported: "
                             "a&b, a|b, (a|b)&c");
    }
    if (!grouped && terms.size() > 1 && t.find('|') != std::string::npos) {
      return InvalidArgument(at + "mixing & and | needs parentheses: (a|b)&c or a&(b|c)");
    }
    for (const std::string& f : Split(t, '|')) {
      if (f.empty() || f.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                           std::string::npos) {
        return InvalidArgument(at + "expected feature names (letters, digits, ._-) joined by & or |");
      }
    }
    out.push_back(t);
  }
  return out;
}

StatusOr<SlurmShape> ResolveSlurmShape(const SlurmRequest& r, int64_t largest_node_cpus, const std::string& file) {
  SlurmShape s;
  s.exclusive = r.exclusive;
  s.features = r.features;
  s.gpu_type = r.gpu_type;
  s.cpus_per_task = r.cpus_per_task.value_or(1);
  const std::string at = file + ": #SBATCH ";
  // GPUs per node, where the request names them per node.
  std::optional<int64_t> per_node = r.gpus_per_node;
  if (r.gres_gpus) {
    if (per_node && *per_node != *r.gres_gpus) {
      return InvalidArgument(at + "--gres=gpu:" + std::to_string(*r.gres_gpus) + " and --gpus-per-node=" +
                             std::to_string(*per_node) + " ask for different GPU counts per node");
    }
    per_node = r.gres_gpus;
  }
  std::optional<int64_t> ntasks = r.ntasks;
  if (r.ntasks_per_gpu && !ntasks) {
    const std::optional<int64_t> gpus = r.gpus ? r.gpus : per_node;
    if (gpus) ntasks = *gpus * *r.ntasks_per_gpu * (r.gpus ? 1 : r.nodes_min.value_or(1));
  }
  // Nodes.
  if (r.nodes_min) {
    s.nodes = *r.nodes_min;
    if (r.nodes_max && *r.nodes_max > *r.nodes_min) {
      s.warnings.push_back(at + "--nodes=" + std::to_string(*r.nodes_min) + "-" + std::to_string(*r.nodes_max) +
                           ": the job gets " + std::to_string(*r.nodes_min) + " nodes (a gang has one size)");
    }
  } else if (ntasks && r.ntasks_per_node) {
    s.nodes = CeilDiv(*ntasks, *r.ntasks_per_node);
  } else if (ntasks && !r.overcommit) {
    const int64_t cpus = *ntasks * s.cpus_per_task;
    if (largest_node_cpus <= 0) {
      return InvalidArgument(at + "--ntasks=" + std::to_string(*ntasks) +
                             " without --nodes or --ntasks-per-node needs the size of the cluster's nodes, which is "
                             "not known here");
    }
    if (s.cpus_per_task > largest_node_cpus) {
      return InvalidArgument(at + "--cpus-per-task=" + std::to_string(s.cpus_per_task) +
                             " is more than the largest node has (" + std::to_string(largest_node_cpus) + " CPUs)");
    }
    const int64_t tasks_per_node = largest_node_cpus / s.cpus_per_task;
    s.nodes = CeilDiv(cpus / s.cpus_per_task, tasks_per_node);
  }
  // Tasks.
  if (r.ntasks_per_node) {
    s.tasks_per_node = *r.ntasks_per_node;
    s.tasks = ntasks.value_or(s.nodes * s.tasks_per_node);
    if (s.tasks > s.nodes * s.tasks_per_node) {
      return InvalidArgument(at + "--ntasks=" + std::to_string(s.tasks) + " do not fit " + std::to_string(s.nodes) +
                             " nodes of " + std::to_string(s.tasks_per_node) + " tasks (--ntasks-per-node)");
    }
  } else if (ntasks) {
    s.tasks = *ntasks;
    s.tasks_per_node = CeilDiv(s.tasks, s.nodes);
  } else {
    s.tasks = s.nodes;
    s.tasks_per_node = 1;
  }
  if (s.tasks < s.nodes) {
    return InvalidArgument(at + "--ntasks=" + std::to_string(s.tasks) + " is fewer than the " +
                           std::to_string(s.nodes) + " nodes asked for: every node runs at least one task");
  }
  s.cpus_per_node = (r.overcommit ? 1 : s.tasks_per_node) * s.cpus_per_task;
  // GPUs.
  if (r.gpus_per_task) s.gpus_per_task = *r.gpus_per_task;
  if (per_node) {
    s.gpus_per_node = *per_node;
    if (r.gpus_per_task && *r.gpus_per_task * s.tasks_per_node > s.gpus_per_node) {
      s.gpus_per_node = *r.gpus_per_task * s.tasks_per_node;
    }
    if (r.gpus) {
      return InvalidArgument(at + "--gpus (the job's total) and a per-node GPU count were both given");
    }
  } else if (r.gpus_per_task) {
    s.gpus_per_node = *r.gpus_per_task * s.tasks_per_node;
  } else if (r.gpus) {
    if (*r.gpus % s.nodes != 0) {
      return InvalidArgument(at + "--gpus=" + std::to_string(*r.gpus) + " cannot be divided evenly among " +
                             std::to_string(s.nodes) + " nodes");
    }
    s.gpus_per_node = *r.gpus / s.nodes;
  }
  // Memory.
  if (r.mem_mib) {
    if (*r.mem_mib == 0) {
      if (!s.exclusive) {
        s.warnings.push_back(r.mem_where + "=0 asks for all of each node's memory: the job gets its nodes whole");
      }
      s.exclusive = true;
    } else {
      s.memory_mib_per_node = *r.mem_mib;
    }
  } else if (r.mem_per_cpu_mib) {
    s.memory_mib_per_node = *r.mem_per_cpu_mib * s.cpus_per_node;
  } else if (r.mem_per_gpu_mib) {
    if (s.gpus_per_node == 0) {
      return InvalidArgument(r.mem_where + " needs GPUs (--gpus-per-node, --gres=gpu:N, --gpus-per-task or --gpus)");
    }
    s.memory_mib_per_node = *r.mem_per_gpu_mib * s.gpus_per_node;
  }
  return s;
}

}  // namespace muster::cli
