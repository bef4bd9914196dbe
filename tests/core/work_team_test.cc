#include "core/work_team.h"

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/task_queue.h"
#include "core/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace projector {
namespace {

using ::testing::HasSubstr;

// Tasks whose reply is the sum of their indices; the collector records every chunk.
struct SumTasks {
  std::vector<std::pair<int64_t, int64_t>> chunks;
  int64_t sum = 0;
  TaskHooks Hooks(int64_t count) {
    TaskHooks h;
    h.count = count;
    h.request = [](int64_t first, int64_t last) {
      WireWriter w;
      w.Put(first).Put(last);
      return w.Take();
    };
    h.perform = [](int, std::string_view request) {
      WireReader r(request);
      const auto first = r.Get<int64_t>();
      const auto last = r.Get<int64_t>();
      int64_t s = 0;
      for (int64_t i = first; i < last; ++i) s += i;
      WireWriter w;
      w.Put(s);
      return w.Take();
    };
    h.collect = [this](int64_t first, int64_t last, std::string_view reply) {
      chunks.emplace_back(first, last);
      sum += WireReader(reply).Get<int64_t>();
      return absl::OkStatus();
    };
    return h;
  }
};

// Every task is evaluated once: the chunks tile [0, 1000) and the replies add up to
// 0 + 1 + ... + 999 = 999·1000/2 = 499,500, on one lane or four.
TEST(WorkTeamTest, SoloTeamEvaluatesEveryTaskOnce) {
  for (int lanes : {1, 4}) {
    SumTasks tasks;
    ASSERT_TRUE(Solo().Distribute(tasks.Hooks(1000), lanes).ok());
    EXPECT_EQ(tasks.sum, 499500);
    std::sort(tasks.chunks.begin(), tasks.chunks.end());
    int64_t next = 0;
    for (const auto& [first, last] : tasks.chunks) {
      EXPECT_EQ(first, next);
      EXPECT_GT(last, first);
      next = last;
    }
    EXPECT_EQ(next, 1000);
  }
}

// Guided chunks: with 1 lane the first chunk is ceil(1000 / 2) = 500 tasks, capped at max_chunk
// 64; the chunk sizes never grow, and the last ones are min_chunk.
TEST(WorkTeamTest, ChunksShrinkTowardsTheEnd) {
  SumTasks tasks;
  TaskHooks hooks = tasks.Hooks(1000);
  hooks.max_chunk = 64;
  hooks.min_chunk = 2;
  ASSERT_TRUE(Solo().Distribute(hooks, 1).ok());
  ASSERT_FALSE(tasks.chunks.empty());
  EXPECT_EQ(tasks.chunks.front().second - tasks.chunks.front().first, 64);
  int64_t previous = 64;
  for (const auto& [first, last] : tasks.chunks) {
    EXPECT_LE(last - first, previous);
    previous = last - first;
  }
  // 1000 - 64·k left: chunks of 64 until fewer than 128 are left, then halving to 2 (or the rest).
  EXPECT_LE(previous, 2);
}

// The window: no chunk starts `window` or more tasks after the first one not yet collected, so an
// in-order consumer never holds more than `window` tasks.
TEST(WorkTeamTest, WindowBoundsTheTasksAheadOfTheOldest) {
  TaskHooks hooks;
  hooks.count = 400;
  hooks.window = 16;
  hooks.max_chunk = 4;
  std::set<int64_t> outstanding;
  std::mutex mu;
  int64_t widest = 0;
  hooks.request = [&](int64_t first, int64_t last) {
    std::lock_guard<std::mutex> lock(mu);
    for (int64_t i = first; i < last; ++i) outstanding.insert(i);
    widest = std::max(widest, *outstanding.rbegin() - *outstanding.begin() + 1);
    return std::string();
  };
  hooks.perform = [](int lane, std::string_view) {
    // Lane 0 is slow, so the others run ahead of it as far as the window lets them.
    if (lane == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    return std::string();
  };
  hooks.collect = [&](int64_t first, int64_t last, std::string_view) {
    std::lock_guard<std::mutex> lock(mu);
    for (int64_t i = first; i < last; ++i) outstanding.erase(i);
    return absl::OkStatus();
  };
  ASSERT_TRUE(Solo().Distribute(hooks, 3).ok());
  EXPECT_TRUE(outstanding.empty());
  EXPECT_LE(widest, 16);
}

// An error of `collect` stops the run: it is returned, and no chunk is handed out after it.
TEST(WorkTeamTest, CollectErrorStopsTheRun) {
  SumTasks tasks;
  TaskHooks hooks = tasks.Hooks(10000);
  hooks.max_chunk = 1;
  std::atomic<int> collected{0};
  hooks.collect = [&](int64_t, int64_t, std::string_view) {
    return ++collected == 5 ? absl::InternalError("disk full") : absl::OkStatus();
  };
  const absl::Status status = Solo().Distribute(hooks, 2);
  EXPECT_THAT(std::string(status.message()), HasSubstr("disk full"));
  EXPECT_EQ(collected.load(), 5);  // the chunk in flight on the other lane is not collected
}

TEST(WorkTeamTest, SoloLanesAndServe) {
  EXPECT_EQ(Solo().Lanes(3), 3);
  EXPECT_EQ(Solo().Lanes(0), HardwareThreads());
  EXPECT_EQ(Solo().size(), 1);
  EXPECT_TRUE(Solo().coordinator());
  EXPECT_FALSE(Solo().Serve([](int, std::string_view) { return std::string(); }, 1).ok());
  EXPECT_TRUE(IsServedStatus(ServedStatus()));
  EXPECT_FALSE(IsServedStatus(absl::CancelledError("other")));
  SumTasks none;
  EXPECT_TRUE(Solo().Distribute(none.Hooks(0), 2).ok());
  EXPECT_TRUE(none.chunks.empty());
}

TEST(WireTest, RoundTrip) {
  struct Pod {
    int64_t a;
    double b;
  };
  WireWriter w;
  w.Put(Pod{7, 2.5}).PutString("hello").Put(uint8_t{3}).PutString("");
  const std::string bytes = w.Take();
  WireReader r(bytes);
  const auto pod = r.Get<Pod>();
  EXPECT_EQ(pod.a, 7);
  EXPECT_EQ(pod.b, 2.5);
  EXPECT_EQ(r.GetString(), "hello");
  EXPECT_EQ(r.Get<uint8_t>(), 3);
  EXPECT_EQ(r.GetString(), "");
  EXPECT_TRUE(r.AtEnd());
}

}  // namespace
}  // namespace projector
