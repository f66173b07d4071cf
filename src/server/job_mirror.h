// JobMirror: a standby's copy of the store's job rows, kept current by
// following the store's change feed (Store::JobsChangedSince), so that a
// takeover reads only what changed since the last look instead of every
// row. The new leader restores from it (ControlLoop::Start).
//
// Only for a store with a change feed (PostgreSQL); Supported() says.
//
// Thread-safety: one thread at a time (the standby's election thread).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "common/status.h"
#include "store/store.h"

namespace muster::server {

class JobMirror {
 public:
  explicit JobMirror(store::Store& store) : store_(store) {}

  // Reads every change since the last call (the first reads every row).
  Status CatchUp();
  // The rows, in id order, handed over (the mirror is empty after).
  std::vector<store::JobRow> Take();
  size_t size() const { return rows_.size(); }
  int64_t rev() const { return rev_; }

 private:
  store::Store& store_;
  std::map<int64_t, store::JobRow> rows_;  // by id
  int64_t rev_ = 0;
};

}  // namespace muster::server
