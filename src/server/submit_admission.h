// SubmitAdmission: what a submit must pass, beyond its spec's own checks,
// before anything of it is added: the per-user limits of the server's
// `limits:` (ServerOptions) and its dependencies' visibility.
//
//   1. An array of more than limits.arraySize tasks: InvalidArgument on
//      spec.array.
//   2. The user's jobs waiting to start (JobTable::WaitingOf: PENDING and
//      HELD) plus this submit's (an array's tasks each) past
//      limits.pendingJobsPerUser: PermissionDenied naming the limit.
//   3. A dependency on a job that does not exist, or that the caller may not
//      see: the same InvalidArgument for both ("unknown job N (or not one you
//      may see)" on spec.dependencies[i].job), so that an id tells nothing
//      of another user's jobs, not even whether they exist or started.
// A limit of 0 is none. Example: with pendingJobsPerUser 3 and 2 of alice's
// jobs pending, an array of 2 is refused, a single job admitted.
//
// Thread-safety: a function of its arguments; the control loop calls it.
#pragma once

#include <functional>
#include <string>

#include "api/job_spec.h"
#include "common/status.h"
#include "server/job_table.h"
#include "server/options.h"
#include "store/store.h"

namespace muster::server {

// Whether the caller may see a job; empty: every job.
using MaySee = std::function<bool(const store::JobRow&)>;

Status CheckSubmitAdmission(const api::JobSpec& spec, const std::string& user, const JobTable& jobs,
                            const ServerOptions& options, const MaySee& may_see);

}  // namespace muster::server
