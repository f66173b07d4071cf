// CheckpointJanitor: deletes checkpoints that retention dropped, on its own
// thread, so the control loop never waits for storage. Deletion is best
// effort: a failure is written to stderr (the catalog already says REMOVED,
// and storage.h's Remove never deletes a location that does not hold the
// committed manifest).
//
// Thread-safety: Remove() from any thread; the destructor finishes the
// queue.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace muster::server {

class CheckpointJanitor {
 public:
  CheckpointJanitor();
  ~CheckpointJanitor();
  void Remove(std::string location, std::string manifest_sha256, int64_t job);

 private:
  void Run();
  std::mutex mu_;
  std::condition_variable cv_;
  struct Item {
    std::string location, manifest_sha256;
    int64_t job = 0;
  };
  std::deque<Item> queue_;  // guarded by mu_
  bool stop_ = false;       // guarded by mu_
  std::thread thread_;
};

}  // namespace muster::server
