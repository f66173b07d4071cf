// StoreWriter: group commit. The control loop hands it WriteBatches with a
// completion callback; a writer thread commits everything queued since its
// last commit in one transaction, then calls each batch's callback with the
// result. Throughput scales with the batch, while every acknowledged change
// is durable: the loop replies to a client only from the callback.
//
// If a group fails, each of its batches is retried alone, so one bad batch
// (for example a duplicate idempotency key) fails only itself.
//
// Callbacks run on the writer thread, in submission order; they must be
// quick (typically: post the result back to the control loop or fulfil a
// promise). The destructor commits what is queued, then stops.
//
// Thread-safety: Submit() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "common/mutex.h"
#include "store/store.h"

namespace muster::store {

class StoreWriter {
 public:
  struct Options {
    size_t max_batches_per_commit = 4096;
    // Called on the writer thread after each group commit, with its
    // duration in seconds (metrics); must be quick.
    std::function<void(double seconds)> on_commit;
  };
  struct Stats {
    uint64_t commits = 0;
    uint64_t batches = 0;
    uint64_t failures = 0;
    uint64_t largest_group = 0;  // batches in the largest single commit
  };

  StoreWriter(Store& store, Options options);
  explicit StoreWriter(Store& store) : StoreWriter(store, Options{}) {}
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  // Queues a batch; returns its ticket (1, 2, ...: batches are committed in
  // ticket order).
  uint64_t Submit(WriteBatch batch, std::function<void(const Status&)> done);
  // True once the batch with this ticket was committed (or failed), from
  // just before its callback runs. Any thread.
  bool Committed(uint64_t ticket) const;
  // Blocks until everything submitted so far is committed (or failed).
  void Flush();
  Stats stats() const;

 private:
  struct Item {
    WriteBatch batch;
    std::function<void(const Status&)> done;
  };
  void Loop();

  Store& store_;
  const Options options_;
  mutable Mutex mu_;
  CondVar cv_;       // work arrived or stopping
  CondVar drained_;  // a group finished
  std::deque<Item> queue_ GUARDED_BY(mu_);
  uint64_t submitted_ GUARDED_BY(mu_) = 0;
  uint64_t finished_ GUARDED_BY(mu_) = 0;  // callbacks ran
  std::atomic<uint64_t> committed_{0};
  bool stop_ GUARDED_BY(mu_) = false;
  Stats stats_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace muster::store
