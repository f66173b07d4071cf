#include "server/job_row_filter.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace muster::server {

bool RowPasses(const store::JobFilter& f, const store::JobRow& row) {
  if (!f.states.empty() && std::find(f.states.begin(), f.states.end(), row.state) == f.states.end()) return false;
  if ((!f.queue.empty() && row.queue != f.queue) || (!f.user.empty() && row.user != f.user) ||
      (!f.name.empty() && row.name != f.name)) {
    return false;
  }
  if (f.active_from_ms && row.end_ms && *row.end_ms < *f.active_from_ms) return false;
  if (f.submitted_before_ms && row.submit_ms >= *f.submitted_before_ms) return false;
  if (f.labels.empty()) return true;
  const nlohmann::json spec = nlohmann::json::parse(row.spec_json, nullptr, false);
  const nlohmann::json* labels =
      spec.is_object() && spec.contains("labels") && spec["labels"].is_object() ? &spec["labels"] : nullptr;
  for (const store::LabelRequirement& r : f.labels) {
    using Op = store::LabelRequirement::Op;
    const bool has = labels != nullptr && labels->contains(r.key) && (*labels)[r.key].is_string();
    const bool equal = has && (*labels)[r.key].get<std::string>() == r.value;
    switch (r.op) {
      case Op::kEqual:
        if (!equal) return false;
        break;
      case Op::kNotEqual:
        if (equal) return false;
        break;
      case Op::kExists:
        if (!has) return false;
        break;
      case Op::kNotExists:
        if (has) return false;
        break;
    }
  }
  return true;
}

}  // namespace muster::server
