// Memoised file loaders: what a loader built from a file (a hardware profile, a model) is kept,
// keyed by the path and the file's bytes, so that a process resolving the same library file for
// many cases (project validate, calibrate, search) parses it once. A file that changed is loaded
// afresh (its bytes differ); failures are never kept, so every error is reported as the loader
// reports it. Thread-safe.
#ifndef PROJECTOR_CORE_FILE_MEMO_H_
#define PROJECTOR_CORE_FILE_MEMO_H_

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "core/json_reader.h"

namespace projector {

// `load(path)`, or a copy of what it returned for the same path and bytes before. At most
// kMaxEntries results per T are kept (then the memo starts afresh).
template <typename T, typename Load>
absl::StatusOr<T> LoadFileMemoised(const std::string& path, Load&& load) {
  constexpr size_t kMaxEntries = 256;
  static std::mutex mu;
  static std::map<std::pair<std::string, std::string>, T> memo;
  absl::StatusOr<std::string> bytes = ReadTextFile(path);
  if (!bytes.ok()) return load(path);  // the loader names the problem
  std::pair<std::string, std::string> key(path, *std::move(bytes));
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  absl::StatusOr<T> loaded = load(path);
  if (loaded.ok()) {
    std::lock_guard<std::mutex> lock(mu);
    if (memo.size() >= kMaxEntries) memo.clear();
    memo.emplace(std::move(key), *loaded);
  }
  return loaded;
}

}  // namespace projector

#endif  // PROJECTOR_CORE_FILE_MEMO_H_
