#include "server/submit_admission.h"

#include <algorithm>

namespace muster::server {

Status CheckSubmitAdmission(const api::JobSpec& spec, const std::string& user, const JobTable& jobs,
                            const ServerOptions& options, const MaySee& may_see) {
  if (options.max_array_size > 0 && spec.array > options.max_array_size) {
    return InvalidArgument("an array of " + std::to_string(spec.array) + " tasks is above this server's limit of " +
                               std::to_string(options.max_array_size) + " (limits.arraySize)",
                           "spec.array");
  }
  const int64_t count = std::max<int32_t>(1, spec.array);
  if (const int64_t waiting = jobs.WaitingOf(user);
      options.max_pending_jobs_per_user > 0 && waiting + count > options.max_pending_jobs_per_user) {
    return PermissionDenied(user + " has " + std::to_string(waiting) + " jobs waiting to start; " +
                            (count > 1 ? std::to_string(count) + " more" : std::string("one more")) +
                            " would pass this server's limit of " + std::to_string(options.max_pending_jobs_per_user) +
                            " (limits.pendingJobsPerUser); submit again once some have started or ended");
  }
  for (size_t i = 0; i < spec.dependencies.size(); ++i) {
    const int64_t target = spec.dependencies[i].job;
    const store::JobRow* row = jobs.Find(target);
    if (row == nullptr || (may_see && !may_see(*row))) {
      return InvalidArgument("unknown job " + std::to_string(target) + " (or not one you may see)",
                             "spec.dependencies[" + std::to_string(i) + "].job");
    }
  }
  return Status::Ok();
}

}  // namespace muster::server
