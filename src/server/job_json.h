// The API's JSON form of a job: its spec fields at the top level, plus
// id, user, state, reason, submitTime, startTime, endTime, attempts,
// allocations, idempotencyKey, for array tasks arrayFirstId and
// arrayIndex, and once an attempt has ended retries, requeues, notBefore
// (a retry's backoff) and attemptHistory (per attempt: number, start and
// end, result, reason, and each replica's node and result) (RFC 3339 UTC
// times; absent when unset).
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
// A list's compact form (GET /v1/jobs?view=summary): id, name, user, queue,
// priority, state, reason, submitTime, startTime, endTime, gpus (per
// replica), replicas, nodes. Appended to `out`, written without a JSON tree.
void AppendSummaryJson(const store::JobSummary& job, std::string& out);
nlohmann::json JobJson(const store::JobRow& row);
nlohmann::json EventJson(const store::EventRow& row);
// A checkpoint catalog entry: seq, attempt, step, location, manifestSha256,
// files, bytes, state, note, createdTime.
nlohmann::json CheckpointJson(const store::CheckpointRow& row);

}  // namespace muster::server
