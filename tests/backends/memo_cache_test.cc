#include "backends/simulate/memo_cache.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace projector {
namespace {

TEST(MemoCacheTest, MissThenHit) {
  MemoCache<int64_t, double> cache;
  EXPECT_FALSE(cache.Find(3).has_value());
  cache.Insert(3, 1.5);
  ASSERT_TRUE(cache.Find(3).has_value());
  EXPECT_EQ(*cache.Find(3), 1.5);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(MemoCacheTest, FirstInsertWins) {
  MemoCache<int64_t, double> cache;
  cache.Insert(1, 2.0);
  cache.Insert(1, 3.0);
  EXPECT_EQ(*cache.Find(1), 2.0);
  cache.Clear();
  EXPECT_EQ(cache.size(), 0u);
}

// Readers and writers from several threads; every key ends up with its value.
TEST(MemoCacheTest, ConcurrentFindAndInsertAreSafe) {
  MemoCache<int64_t, int64_t> cache;
  constexpr int64_t kKeys = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache] {
      for (int64_t key = 0; key < kKeys; ++key) {
        if (std::optional<int64_t> v = cache.Find(key)) {
          EXPECT_EQ(*v, key * 7);
        } else {
          cache.Insert(key, key * 7);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(cache.size(), static_cast<size_t>(kKeys));
  for (int64_t key = 0; key < kKeys; ++key) EXPECT_EQ(*cache.Find(key), key * 7);
}

// The thread's front copy belongs to one cache: a second cache of the same types with the same
// key answers from its own entries, a cleared cache misses, and one built where a destroyed one
// was (the same address, perhaps) does not see the old entries.
TEST(MemoCacheTest, FrontCopiesStayWithTheirCache) {
  MemoCache<int64_t, double> a, b;
  a.Insert(5, 1.0);
  b.Insert(5, 2.0);
  EXPECT_EQ(*a.Find(5), 1.0);  // now in this thread's front slot
  EXPECT_EQ(*b.Find(5), 2.0);
  EXPECT_EQ(*a.Find(5), 1.0);
  a.Clear();
  EXPECT_FALSE(a.Find(5).has_value());
  auto c = std::make_unique<MemoCache<int64_t, double>>();
  c->Insert(6, 3.0);
  EXPECT_EQ(*c->Find(6), 3.0);
  c.reset();
  c = std::make_unique<MemoCache<int64_t, double>>();
  EXPECT_FALSE(c->Find(6).has_value());
}

}  // namespace
}  // namespace projector
