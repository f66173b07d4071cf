#include "server/checkpoint_janitor.h"

#include <cstdio>

#include "checkpoint/storage.h"
#include "common/log.h"

namespace muster::server {

CheckpointJanitor::CheckpointJanitor() : thread_([this] { Run(); }) {}

CheckpointJanitor::~CheckpointJanitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CheckpointJanitor::Remove(std::string location, std::string manifest_sha256, int64_t job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(location), std::move(manifest_sha256), job});
  }
  cv_.notify_one();
}

void CheckpointJanitor::Run() {
  while (true) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    auto storage = checkpoint::StorageFor(item.location);
    const Status s = storage.ok() ? (*storage)->Remove(item.location, item.manifest_sha256, item.job) : storage.status();
    if (!s.ok()) log::Warn("checkpoint retention: {}", s.ToString());
  }
}

}  // namespace muster::server
