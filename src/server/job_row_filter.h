// RowPasses: whether a job's row passes a list filter (store::JobFilter) as
// the stores' ListJobs passes it: any of its states, its queue, user and
// name, every label requirement on the spec's labels, and its time window.
// For rows in memory: the changes a watch sends (JobWatch).
#pragma once

#include "store/store.h"

namespace muster::server {

bool RowPasses(const store::JobFilter& f, const store::JobRow& row);

}  // namespace muster::server
