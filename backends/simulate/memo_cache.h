// MemoCache: a small thread-safe memo map from an op shape to a backend estimate. Backends are
// immutable and const; this cache is their only mutable state ("logically const"). Lookups take
// a shared (reader) lock on one of kShards shards chosen by the key's hash, so concurrent sweeps
// over warm caches neither serialise nor pass one lock's cache line back and forth (a search on
// two threads spent ~45% of its time in a single reader lock). In front of the shards each
// thread keeps a direct-mapped copy of the entries it found last (kFrontSlots per key and value
// type), read without any lock: the reader lock still took ~11% of the DeepSeek-V3 search.
#ifndef PROJECTOR_BACKENDS_SIMULATE_MEMO_CACHE_H_
#define PROJECTOR_BACKENDS_SIMULATE_MEMO_CACHE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
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
  MemoCache() : id_(NextId()) {}
  MemoCache(const MemoCache&) = delete;
  MemoCache& operator=(const MemoCache&) = delete;

  // The cached value, or nullopt on a miss.
  std::optional<Value> Find(const Key& key) const {
    const size_t hash = absl::Hash<Key>{}(key);
    const uint64_t id = id_.load(std::memory_order_relaxed);
    FrontSlot& front = Front()[hash % kFrontSlots];
    if (front.id == id && front.hash == hash && front.entry && front.entry->first == key) {
      return front.entry->second;
    }
    const Shard& shard = ShardOf(hash);
    std::shared_lock lock(shard.mu);
    auto it = shard.map.find(key);
    if (it == shard.map.end()) return std::nullopt;
    front.id = id;
    front.hash = hash;
    front.entry.emplace(key, it->second);
    return it->second;
  }

  // Keeps the first value stored for a key (two threads racing on the same miss compute the
  // same value, so either is correct). Const: the cache is the logically-const state of an
  // immutable backend.
  void Insert(const Key& key, const Value& value) const {
    Shard& shard = ShardOf(absl::Hash<Key>{}(key));
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

  // Not concurrent with Find or Insert. The threads' front copies are dropped with a new id.
  void Clear() {
    for (Shard& shard : shards_) {
      std::unique_lock lock(shard.mu);
      shard.map.clear();
    }
    id_.store(NextId(), std::memory_order_relaxed);
  }

 private:
  static constexpr size_t kShards = 16;
  // One cache line each, so threads on different shards do not share one.
  struct alignas(64) Shard {
    mutable std::shared_mutex mu;
    mutable absl::flat_hash_map<Key, Value> map;
  };

  Shard& ShardOf(size_t hash) const {
    // The high bits: the map itself indexes by the low ones.
    return shards_[(hash >> 32) % kShards];
  }

  // One thread's copy of an entry of the cache whose id it holds (ids are never reused, so a
  // slot left by a destroyed or cleared cache never matches).
  static constexpr size_t kFrontSlots = 1024;
  struct FrontSlot {
    uint64_t id = 0;
    size_t hash = 0;
    std::optional<std::pair<Key, Value>> entry;
  };
  static std::array<FrontSlot, kFrontSlots>& Front() {
    thread_local std::array<FrontSlot, kFrontSlots> slots;
    return slots;
  }
  static uint64_t NextId() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }

  mutable std::array<Shard, kShards> shards_;
  std::atomic<uint64_t> id_;
};

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_MEMO_CACHE_H_
