#include "server/job_mirror.h"

namespace muster::server {

Status JobMirror::CatchUp() {
  constexpr int32_t kPage = 10'000;
  while (true) {
    ASSIGN_OR_RETURN(store::JobChanges changes, store_.JobsChangedSince(rev_, kPage));
    for (store::JobRow& row : changes.rows) {
      const int64_t id = row.id;
      rows_.insert_or_assign(id, std::move(row));
    }
    rev_ = changes.rev;
    if (changes.rows.size() < static_cast<size_t>(kPage)) return Status::Ok();
  }
}

std::vector<store::JobRow> JobMirror::Take() {
  std::vector<store::JobRow> out;
  out.reserve(rows_.size());
  for (auto& [id, row] : rows_) out.push_back(std::move(row));
  rows_.clear();
  return out;
}

}  // namespace muster::server
