// The API's JSON form of a job: its spec fields at the top level, plus
// id, user, state, reason, submitTime, startTime, endTime, attempts and
// allocations (RFC 3339 UTC times; absent when unset).
#pragma once

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace muster::server {

nlohmann::json JobJson(const store::JobRow& row);
nlohmann::json EventJson(const store::EventRow& row);

}  // namespace muster::server
