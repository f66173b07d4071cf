// The job spec schema: validates a SpecTree (from JSON or YAML alike) and
// builds an api::JobSpec. Internal to muster_api; job_spec.h documents the
// fields, their limits and the error format.
#pragma once

#include "api/job_spec.h"
#include "api/spec_tree.h"

namespace muster::api {

// The spec in `root`, or the first error found. Checks run in a fixed order:
// unknown and duplicate keys of an object first (document order), then its
// fields in the order of job_spec.h, then rules that span fields (command
// versus script, backoff max versus initial).
// Fields the spec leaves out of `retry` and `checkpoint` come from
// `defaults`.
StatusOr<JobSpec> JobSpecFromTree(const TreeNode& root, const SpecDefaults& defaults = {});

}  // namespace muster::api
