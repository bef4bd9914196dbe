// MemoCache: a small thread-safe memo map from an op shape to a backend estimate. Backends are
// immutable and const; this cache is their only mutable state ("logically const"). Lookups take
// a shared (reader) lock on one of kShards shards chosen by the key's hash, so concurrent sweeps
// over warm caches neither serialise nor pass one lock's cache line back and forth (a search on
// two threads spent ~45% of its time in a single reader lock).
#ifndef PROJECTOR_BACKENDS_SIMULATE_MEMO_CACHE_H_
#define PROJECTOR_BACKENDS_SIMULATE_MEMO_CACHE_H_

#include <array>
#include <cstddef>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"

namespace projector {

// Key must be hashable with absl::Hash and equality-comparable; Value must be copyable.
// Only successful estimates should be inserted (errors are cheap to recompute and carry
// messages that would make every entry larger).
template <typename Key, typename Value>
class MemoCache {
 public:
  MemoCache() = default;
  MemoCache(const MemoCache&) = delete;
  MemoCache& operator=(const MemoCache&) = delete;

  // The cached value, or nullopt on a miss.
  std::optional<Value> Find(const Key& key) const {
    const Shard& shard = ShardOf(key);
    std::shared_lock lock(shard.mu);
    auto it = shard.map.find(key);
    if (it == shard.map.end()) return std::nullopt;
    return it->second;
  }

  // Keeps the first value stored for a key (two threads racing on the same miss compute the
  // same value, so either is correct). Const: the cache is the logically-const state of an
  // immutable backend.
  void Insert(const Key& key, const Value& value) const {
    Shard& shard = ShardOf(key);
    std::unique_lock lock(shard.mu);
    shard.map.try_emplace(key, value);
  }

  size_t size() const {
    size_t n = 0;
    for (const Shard& shard : shards_) {
      std::shared_lock lock(shard.mu);
      n += shard.map.size();
    }
    return n;
  }

  void Clear() {
    for (Shard& shard : shards_) {
      std::unique_lock lock(shard.mu);
      shard.map.clear();
    }
  }

 private:
  static constexpr size_t kShards = 16;
  // One cache line each, so threads on different shards do not share one.
  struct alignas(64) Shard {
    mutable std::shared_mutex mu;
    mutable absl::flat_hash_map<Key, Value> map;
  };

  Shard& ShardOf(const Key& key) const {
    // The high bits: the map itself indexes by the low ones.
    return shards_[(absl::Hash<Key>{}(key) >> 32) % kShards];
  }

  mutable std::array<Shard, kShards> shards_;
};

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_MEMO_CACHE_H_
