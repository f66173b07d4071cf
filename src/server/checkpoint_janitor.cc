#include "server/checkpoint_janitor.h"

#include <cstdio>

#include "checkpoint/storage.h"
#include "common/log.h"

namespace muster::server {

CheckpointJanitor::CheckpointJanitor() : thread_([this] { Run(); }) {}

CheckpointJanitor::~CheckpointJanitor() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
}

void CheckpointJanitor::Remove(std::string location, std::string manifest_sha256, int64_t job) {
  {
    MutexLock lock(mu_);
    queue_.push_back({std::move(location), std::move(manifest_sha256), job});
  }
  cv_.NotifyOne();
}

void CheckpointJanitor::Run() {
  while (true) {
    Item item;
    {
      MutexLock lock(mu_);
      while (!stop_ && queue_.empty()) cv_.Wait(lock);
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    auto storage = checkpoint::StorageFor(item.location);
    const Status s =
        storage.ok() ? (*storage)->Remove(item.location, item.manifest_sha256, item.job) : storage.status();
    if (!s.ok()) log::Warn("checkpoint retention: {}", s.ToString());
  }
}

}  // namespace muster::server
