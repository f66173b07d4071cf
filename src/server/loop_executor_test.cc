#include "server/loop_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "server/cycle_pacer.h"
#include "wait_for.h"

namespace muster::server {
namespace {

TEST(LoopExecutorTest, TasksRunInOrderOnOneThreadAndCallReturnsTheValue) {
  // Declared before the loop, so they outlive its thread (which ticks until
  // the loop's destructor stops it).
  std::vector<int> seen;  // touched only on the loop's thread
  std::atomic<int> ticks{0};
  LoopExecutor loop;
  loop.Start("test-loop", {[] { return Duration::Seconds(10); }, [&] { ++ticks; }, nullptr, nullptr});
  for (int i = 0; i < 100; ++i) loop.Post([&seen, i] { seen.push_back(i); });
  const size_t n = loop.Call<size_t>([&](const LoopExecutor::Done<size_t>& reply) { reply(seen.size()); }, 0);
  EXPECT_EQ(n, 100u);
  const bool ordered = loop.Call<bool>(
      [&](const LoopExecutor::Done<bool>& reply) {
        for (int i = 0; i < 100; ++i) {
          if (seen[i] != i) return reply(false);
        }
        reply(true);
      },
      false);
  EXPECT_TRUE(ordered);
  EXPECT_GE(ticks.load(), 1) << "the owner's work runs after each wake-up";
}

TEST(LoopExecutorTest, StopFinishesWhatWasPostedRunsStoppingOnceThenRefuses) {
  std::atomic<int> ran{0}, stopping{0}, after_stopping{0};  // outlive the loop's thread
  LoopExecutor loop;
  loop.Start("test-loop", {nullptr, nullptr,
                           [&] {
                             ++stopping;
                             after_stopping = ran.load();
                           },
                           nullptr});
  for (int i = 0; i < 50; ++i) loop.Post([&] { ++ran; });
  loop.Stop();
  loop.Stop();  // idempotent
  EXPECT_EQ(ran.load(), 50);
  EXPECT_EQ(stopping.load(), 1);
  EXPECT_EQ(after_stopping.load(), 50) << "stopping runs after the last task";
  EXPECT_FALSE(loop.PostUnlessStopped([&] { ++ran; }));
  int answered = 0;
  loop.Async<int>([](const LoopExecutor::Done<int>& reply) { reply(1); }, [&](int v) { answered = v; }, -1);
  EXPECT_EQ(answered, -1) << "a stopped loop answers at once, on the caller's thread";
  EXPECT_EQ(loop.Call<int>([](const LoopExecutor::Done<int>& reply) { reply(1); }, -2), -2);
}

TEST(LoopExecutorTest, AnIdleLoopWakesWhenItsWaitEnds) {
  std::atomic<int> ticks{0};  // outlives the loop's thread (declared first)
  LoopExecutor loop;
  loop.Start("test-loop", {[] { return Duration::Millis(1); }, [&] { ++ticks; }, nullptr, nullptr});
  muster::testing::WaitFor([&] { return ticks.load() >= 5; }, std::chrono::seconds(2), std::chrono::milliseconds(1));
  EXPECT_GE(ticks.load(), 5) << "ticks with nothing posted";
}

TEST(CyclePacerTest, AChangeAsksForACycleSoonAndALongCycleSpacesTheNext) {
  CyclePacer pacer(Duration::Millis(5), Duration::Seconds(1));
  const Time t0 = Time::FromSeconds(100);
  pacer.Reset(t0);
  EXPECT_TRUE(pacer.changed()) << "the first cycle comes soon";
  EXPECT_FALSE(pacer.Due(t0 + Duration::Millis(4)));
  EXPECT_TRUE(pacer.Due(t0 + Duration::Millis(5)));
  EXPECT_EQ(pacer.Wait(), Duration::Millis(5));
  pacer.Seen();
  EXPECT_FALSE(pacer.Due(t0 + Duration::Millis(999)));
  EXPECT_TRUE(pacer.Due(t0 + Duration::Seconds(1))) << "every interval with no change";
  EXPECT_EQ(pacer.Wait(), Duration::Seconds(1));
  EXPECT_EQ(pacer.last_end(), Time::Zero());
  pacer.Ran(t0, /*took_us=*/20'000, t0 + Duration::Millis(20));  // 20 ms: the next waits 9 x as long
  EXPECT_EQ(pacer.last_end(), t0 + Duration::Millis(20));
  pacer.Changed();
  EXPECT_EQ(pacer.Wait(), Duration::Millis(180));
  EXPECT_FALSE(pacer.Due(t0 + Duration::Millis(179)));
  EXPECT_TRUE(pacer.Due(t0 + Duration::Millis(180)));
  pacer.Ran(t0, 5'000'000, t0);  // never past the interval
  EXPECT_EQ(pacer.Wait(), Duration::Seconds(1));
  pacer.Ran(t0, 100, t0);  // never below the delay
  EXPECT_EQ(pacer.Wait(), Duration::Millis(5));
}

TEST(LoopExecutorTest, ManualModeRunsTheWorkOnTheCallersThreadUntilIdle) {
  // What the hooks touch outlives the executor, whose destructor still runs them.
  std::vector<std::string> seen;
  std::deque<LoopExecutor::Task> outside;  // work another worker finishes, then posts back
  LoopExecutor loop;
  const std::thread::id caller = std::this_thread::get_id();
  bool on_caller = true;
  loop.StartManual({nullptr, [&] { seen.push_back("tick"); }, nullptr,
                    [&] {
                      // The settle hook: the other worker finishes; its
                      // answers post more work, as the store writer's do.
                      while (!outside.empty()) {
                        loop.Post(std::move(outside.front()));
                        outside.pop_front();
                      }
                    }});
  loop.Post([&] {
    on_caller = on_caller && std::this_thread::get_id() == caller;
    seen.push_back("a");
    outside.push_back([&] { seen.push_back("answer of a"); });
  });
  EXPECT_TRUE(seen.empty()) << "nothing runs until the caller asks";
  EXPECT_EQ(loop.RunUntilIdle(), 2);
  EXPECT_TRUE(on_caller);
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "tick", "answer of a", "tick", "tick"}));
  seen.clear();
  EXPECT_EQ(loop.RunUntilIdle(), 0);
  EXPECT_EQ(seen, std::vector<std::string>{"tick"}) << "an idle round still ticks: the clock may have moved";
}

TEST(LoopExecutorTest, ManualModeCallAnswersWithoutAThreadAndStopDrains) {
  int ran = 0, stopping = 0;
  std::deque<LoopExecutor::Done<int>> waiting;  // answered by the settle hook
  LoopExecutor loop;
  loop.StartManual({nullptr, nullptr, [&] { ++stopping; },
                    [&] {
                      while (!waiting.empty()) {
                        waiting.front()(42);
                        waiting.pop_front();
                      }
                    }});
  EXPECT_EQ(loop.Call<int>([&](const LoopExecutor::Done<int>& reply) { waiting.push_back(reply); }, -1), 42)
      << "answered once the other worker settled";
  loop.Post([&] { ++ran; });
  loop.Stop();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(stopping, 1);
  EXPECT_FALSE(loop.PostUnlessStopped([&] { ++ran; }));
  EXPECT_EQ(loop.Call<int>([](const LoopExecutor::Done<int>& reply) { reply(1); }, -1), -1);
  loop.Stop();
  EXPECT_EQ(stopping, 1) << "Stop is idempotent";
}

TEST(LoopExecutorDeathTest, ManualModeAbortsALoopThatNeverGoesIdle) {
  EXPECT_DEATH(
      {
        LoopExecutor loop;
        loop.StartManual({nullptr, [&] { loop.Post([] {}); }, nullptr, nullptr});
        loop.RunUntilIdle();
      },
      "still busy after 10000 rounds");
}

}  // namespace
}  // namespace muster::server
