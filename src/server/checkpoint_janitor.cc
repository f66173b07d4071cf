#include "server/checkpoint_janitor.h"

#include <cstdio>

#include "checkpoint/storage.h"

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

void CheckpointJanitor::Remove(std::string location, std::string manifest_sha256) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(std::move(location), std::move(manifest_sha256));
  }
  cv_.notify_one();
}

void CheckpointJanitor::Run() {
  while (true) {
    std::pair<std::string, std::string> item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    auto storage = checkpoint::StorageFor(item.first);
    const Status s = storage.ok() ? (*storage)->Remove(item.first, item.second) : storage.status();
    if (!s.ok()) std::fprintf(stderr, "muster server: checkpoint retention: %s\n", s.ToString().c_str());
  }
}

}  // namespace muster::server
