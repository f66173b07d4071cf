// Dependencies that name job arrays, read as Slurm reads them. An array's
// id is its first task's; a dependency on it holds only once it holds for
// every task of the array (afterok:ID waits for all of them). aftercorr:ID
// pairs tasks: each task of the dependent array waits for afterok on the
// task of the same index in array ID; a task with no such partner waits on
// nothing, and aftercorr on a job that is no array is afterok on that job.
//
// The scheduler sees only plain dependencies on single jobs: the server
// resolves these when a job is submitted and again when it is restored.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "common/status.h"
#include "core/job.h"

namespace muster::server {

struct ArrayTaskRef {
  int64_t id = 0;
  int32_t index = 0;
};

// The tasks of the array whose id is `id`, in index order; empty when `id`
// is no array's.
using ArrayTasksOf = std::function<std::vector<ArrayTaskRef>(int64_t id)>;

// `deps` as written; `any`: Slurm's "?" (one holding is enough);
// `own_index`: this job's index when it is an array task. Errors name
// the field "dependencies": aftercorr from a job that is no array, and a
// whole array among alternatives joined by "?" (all of its tasks would
// have to hold, which "?" cannot say).
StatusOr<std::vector<core::Dependency>> ResolveArrayDependencies(const std::vector<core::Dependency>& deps, bool any,
                                                                 std::optional<int32_t> own_index,
                                                                 const ArrayTasksOf& tasks_of);

}  // namespace muster::server
