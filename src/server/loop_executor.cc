#include "server/loop_executor.h"

#include <pthread.h>

#include <chrono>

namespace muster::server {

void LoopExecutor::Start(const std::string& name, Hooks hooks) {
  hooks_ = std::move(hooks);
  thread_ = std::thread([this, name] {
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    Run();
  });
}

void LoopExecutor::StartManual(Hooks hooks) {
  hooks_ = std::move(hooks);
  manual_ = true;
}

bool LoopExecutor::TakeTasks(std::deque<Task>& batch) {
  MutexLock lock(mu_);
  batch.swap(tasks_);
  return !batch.empty();
}

int LoopExecutor::RunUntilIdle() {
  int worked = 0;
  for (int round = 0;; ++round) {
    if (round == 10'000) {
      std::fprintf(stderr, "LoopExecutor::RunUntilIdle: still busy after %d rounds\n", round);
      std::abort();
    }
    std::deque<Task> batch;
    const bool posted = TakeTasks(batch);
    for (Task& t : batch) t();
    if (hooks_.tick) hooks_.tick();
    if (hooks_.settle) hooks_.settle();
    if (!posted) {
      // The tick or the settling may have posted: idle only when not.
      MutexLock lock(mu_);
      if (tasks_.empty()) return worked;
    }
    ++worked;
  }
}

void LoopExecutor::Stop() {
  if (manual_) {
    {
      MutexLock lock(mu_);
      if (stop_) return;
    }
    RunUntilIdle();
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    // What was posted while stopping still runs, as the thread would.
    std::deque<Task> batch;
    while (TakeTasks(batch)) {
      for (Task& t : batch) t();
      batch.clear();
    }
    if (hooks_.stopping) hooks_.stopping();
    if (hooks_.settle) hooks_.settle();
    return;
  }
  {
    MutexLock lock(mu_);
    const bool running = !stop_ && thread_.joinable();
    stop_ = true;
    if (!running) return;
  }
  cv_.NotifyAll();
  thread_.join();
}

void LoopExecutor::Post(Task task) {
  {
    MutexLock lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.NotifyOne();
}

bool LoopExecutor::PostUnlessStopped(Task task) {
  {
    MutexLock lock(mu_);
    if (stop_) return false;
    tasks_.push_back(std::move(task));
  }
  cv_.NotifyOne();
  return true;
}

void LoopExecutor::Run() {
  while (true) {
    // Asked before the lock: a task posted meanwhile is seen by the wait's
    // predicate, and the owner's hooks never run under this lock.
    const Duration wait = hooks_.idle_wait ? hooks_.idle_wait() : Duration::Seconds(1);
    std::deque<Task> batch;
    {
      MutexLock lock(mu_);
      const auto until =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max<int64_t>(0, wait.millis()));
      while (!stop_ && tasks_.empty()) {
        if (!cv_.WaitFor(lock, until - std::chrono::steady_clock::now())) break;
      }
      batch.swap(tasks_);
      if (stop_ && batch.empty()) break;
    }
    for (Task& t : batch) t();
    if (hooks_.tick) hooks_.tick();
  }
  if (hooks_.stopping) hooks_.stopping();
}

}  // namespace muster::server
