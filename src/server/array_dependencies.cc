#include "server/array_dependencies.h"

#include <string>

namespace muster::server {

using core::Dependency;
using core::DependencyType;

StatusOr<std::vector<Dependency>> ResolveArrayDependencies(const std::vector<Dependency>& deps, bool any,
                                                           std::optional<int32_t> own_index,
                                                           const ArrayTasksOf& tasks_of) {
  std::vector<Dependency> out;
  out.reserve(deps.size());
  for (const Dependency& d : deps) {
    const std::vector<ArrayTaskRef> tasks = tasks_of(d.job);
    if (d.type == DependencyType::kAfterCorr) {
      if (!own_index) {
        return InvalidArgument("aftercorr:" + std::to_string(d.job) +
                                   " pairs the tasks of two arrays; this job is no array (give it --array)",
                               "dependencies");
      }
      if (tasks.empty()) {
        out.push_back({DependencyType::kAfterOk, d.job, d.delay});
        continue;
      }
      for (const ArrayTaskRef& t : tasks) {
        if (t.index == *own_index) out.push_back({DependencyType::kAfterOk, t.id, d.delay});
      }
      continue;
    }
    if (tasks.size() <= 1) {
      out.push_back(d);
      continue;
    }
    if (any) {
      return InvalidArgument("job " + std::to_string(d.job) + " is an array of " + std::to_string(tasks.size()) +
                                 " tasks, and with ? (any one is enough) a dependency cannot wait for all of them; "
                                 "join with , or name the tasks' ids",
                             "dependencies");
    }
    for (const ArrayTaskRef& t : tasks) out.push_back({d.type, t.id, d.delay});
  }
  return out;
}

}  // namespace muster::server
