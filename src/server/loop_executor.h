// LoopExecutor: one thread that runs posted tasks in the order posted, and
// the owner's own work between them: what the control loop's thread is.
//
// Any thread may Post a task or Call one and wait for its value; the
// thread runs each batch of posted tasks, then the owner's `tick` (a
// scheduling cycle when due, sweeps), then sleeps until a task is posted
// or `idle_wait` has passed. Stop lets the thread finish what was posted,
// calls `stopping` once on it, and joins it; tasks posted after that are
// refused (PostUnlessStopped, Async) so their callers answer themselves.
//
// Manual mode (StartManual, for tests under a simulated clock, in the
// manner of Mesos' Clock::settle): there is no thread. RunUntilIdle runs,
// on its caller's thread, what was posted, then `tick`, then `settle` (the
// owner waits for its other workers, such as the store writer, whose
// callbacks may post more), until a round finds nothing posted. Call runs
// the work itself that way, so it answers without a thread; `idle_wait`
// is never asked, since the caller moves the clock.
//
// Only the executor's own lock guards its queue, and no hook runs under
// it: the thread holds no lock while it works, so an owner's locks and
// this one never nest.
//
// Thread-safety: Post, PostUnlessStopped, Async, Call and Stop from any
// thread; Start once. In manual mode, RunUntilIdle, Call and Stop from one
// thread at a time, the test's.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/time.h"

namespace muster::server {

class LoopExecutor {
 public:
  using Task = std::function<void()>;
  template <typename T>
  using Done = std::function<void(T)>;

  struct Hooks {
    std::function<Duration()> idle_wait;  // how long to sleep with nothing posted (on the thread)
    Task tick;                            // after each wake-up, its tasks run
    Task stopping;                        // once, after the last task
    Task settle;                          // manual mode: after each round, the owner's other workers finish
  };

  LoopExecutor() = default;
  LoopExecutor(const LoopExecutor&) = delete;
  LoopExecutor& operator=(const LoopExecutor&) = delete;
  ~LoopExecutor() { Stop(); }

  // Starts the thread, named `name` (at most 15 characters).
  void Start(const std::string& name, Hooks hooks);
  // Manual mode: no thread; RunUntilIdle does the work (see above).
  void StartManual(Hooks hooks);
  // Manual mode: runs rounds (posted tasks, tick, settle) until a round
  // starts with nothing posted; returns how many did work. A loop that
  // keeps posting forever is a defect: it aborts after 10,000 rounds.
  int RunUntilIdle();
  bool manual() const { return manual_; }
  // Finishes what was posted, runs `stopping`, joins. Idempotent.
  void Stop();

  // Queues `task` (after Stop: it runs only if the thread is still draining).
  void Post(Task task);
  // Queues `task` unless stopped (then false: the caller answers).
  bool PostUnlessStopped(Task task);
  // Runs `fn` on the thread; `done` gets the value it replies with, or
  // `if_stopped` at once when the thread no longer runs.
  template <typename T>
  void Async(std::function<void(Done<T>)> fn, Done<T> done, T if_stopped);
  // The same, waiting for the value.
  template <typename T>
  T Call(std::function<void(Done<T>)> fn, T if_stopped);

 private:
  void Run();
  // Swaps the queue out; true when it held anything.
  bool TakeTasks(std::deque<Task>& batch);

  Hooks hooks_;
  bool manual_ = false;  // set by StartManual, before any other call
  Mutex mu_;
  CondVar cv_;
  std::deque<Task> tasks_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

template <typename T>
void LoopExecutor::Async(std::function<void(Done<T>)> fn, Done<T> done, T if_stopped) {
  if (!PostUnlessStopped([fn = std::move(fn), done] { fn(done); })) done(std::move(if_stopped));
}

template <typename T>
T LoopExecutor::Call(std::function<void(Done<T>)> fn, T if_stopped) {
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> future = promise->get_future();
  Async<T>(
      std::move(fn), [promise](T v) { promise->set_value(std::move(v)); }, std::move(if_stopped));
  if (manual_) {
    RunUntilIdle();
    if (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      std::fprintf(stderr, "LoopExecutor::Call: no answer once the loop was idle\n");
      std::abort();
    }
  }
  return future.get();
}

}  // namespace muster::server
