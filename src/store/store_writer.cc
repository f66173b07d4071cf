#include "store/store_writer.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <pthread.h>

namespace muster::store {

StoreWriter::StoreWriter(Store& store, Options options)
    : store_(store), options_(options), thread_([this] {
        pthread_setname_np(pthread_self(), "store-writer");
        Loop();
      }) {}

StoreWriter::~StoreWriter() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
}

uint64_t StoreWriter::Submit(WriteBatch batch, std::function<void(const Status&)> done) {
  uint64_t ticket;
  {
    MutexLock lock(mu_);
    queue_.push_back({std::move(batch), std::move(done)});
    ticket = ++submitted_;
  }
  cv_.NotifyOne();
  return ticket;
}

bool StoreWriter::Committed(uint64_t ticket) const { return committed_.load(std::memory_order_acquire) >= ticket; }

void StoreWriter::Flush() {
  MutexLock lock(mu_);
  const uint64_t target = submitted_;
  while (finished_ < target) drained_.Wait(lock);
}

StoreWriter::Stats StoreWriter::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

void StoreWriter::Loop() {
  while (true) {
    std::vector<Item> group;
    {
      MutexLock lock(mu_);
      while (!stop_ && queue_.empty()) cv_.Wait(lock);
      if (queue_.empty() && stop_) return;
      while (!queue_.empty() && group.size() < options_.max_batches_per_commit) {
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    std::vector<const WriteBatch*> batches;
    batches.reserve(group.size());
    for (const Item& it : group) batches.push_back(&it.batch);
    const auto began = std::chrono::steady_clock::now();
    const Status s = store_.Commit(batches);
    if (options_.on_commit) {
      options_.on_commit(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    }
    uint64_t failures = 0, commits = 1;
    if (s.ok()) {
      committed_.fetch_add(group.size(), std::memory_order_release);
      for (Item& it : group) it.done(s);
    } else if (group.size() == 1) {
      ++failures;
      committed_.fetch_add(1, std::memory_order_release);
      group[0].done(s);
    } else {
      // Isolate the failing batch: commit each alone.
      for (Item& it : group) {
        const Status one = store_.Commit({&it.batch});
        ++commits;
        if (!one.ok()) ++failures;
        committed_.fetch_add(1, std::memory_order_release);
        it.done(one);
      }
    }
    {
      MutexLock lock(mu_);
      stats_.commits += commits;
      stats_.batches += group.size();
      stats_.failures += failures;
      stats_.largest_group = std::max<uint64_t>(stats_.largest_group, group.size());
      finished_ += group.size();
    }
    drained_.NotifyAll();
  }
}

}  // namespace muster::store
