// MemoCache: a small thread-safe memo map from an op shape to a backend estimate. Backends are
// immutable and const; this cache is their only mutable state ("logically const"). Lookups take
// a shared (reader) lock, so concurrent sweeps over warm caches do not serialise.
#ifndef PROJECTOR_BACKENDS_SIMULATE_MEMO_CACHE_H_
#define PROJECTOR_BACKENDS_SIMULATE_MEMO_CACHE_H_

#include <cstddef>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

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
  std::optional<Value> Find(const Key& key) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::ReaderMutexLock lock(&mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }

  // Keeps the first value stored for a key (two threads racing on the same miss compute the
  // same value, so either is correct). Const: the cache is the logically-const state of an
  // immutable backend.
  void Insert(const Key& key, const Value& value) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    map_.try_emplace(key, value);
  }

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::ReaderMutexLock lock(&mu_);
    return map_.size();
  }

  void Clear() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    map_.clear();
  }

 private:
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<Key, Value> map_ ABSL_GUARDED_BY(mu_);
};

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_MEMO_CACHE_H_
