// The API's JSON form of a job: its spec fields at the top level, plus
// id, user, state, reason, submitTime, startTime, endTime, attempts,
// allocations, idempotencyKey, and for array tasks arrayFirstId and
// arrayIndex (RFC 3339 UTC times; absent when unset).
//
// JobJsonText() writes it by appending the status fields to the stored
// canonical spec text, without parsing the spec: listing many jobs is
// mostly this function.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "store/store.h"

namespace muster::server {

std::string JobJsonText(const store::JobRow& row);
nlohmann::json JobJson(const store::JobRow& row);
nlohmann::json EventJson(const store::EventRow& row);

}  // namespace muster::server
