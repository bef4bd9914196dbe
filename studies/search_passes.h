// The evaluation passes of a layout search (studies/search.h): every candidate validated and
// projected on a pool of workers, or, with pruning, first bounded (projected up to its lower
// bound, the layouts of one CompositionKey sharing one composed model) and then projected lowest
// bound first while the bound stays below the step of the K-th best layout found so far.
// Internal to the search; SearchLayouts is the interface.
#ifndef PROJECTOR_STUDIES_SEARCH_PASSES_H_
#define PROJECTOR_STUDIES_SEARCH_PASSES_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "scenario/scenario.h"
#include "studies/search.h"

namespace projector {

// What became of each candidate, in enumeration order.
enum class Outcome : uint8_t { kPending, kInvalid, kError, kPruned, kOk };
struct Evaluations {
  std::vector<Outcome> outcome;
  std::vector<LayoutMetrics> metrics;
  std::string first_error;    // "<layout>: <message>" of the first projection error
  std::string first_invalid;  // the first validation message
};

// The step of the K-th best layout within the memory limit evaluated so far (infinite until K
// are): a layout whose lower bound reaches it cannot enter the top K. Shared by the workers.
class TopSteps {
 public:
  TopSteps(int64_t k, std::optional<Bytes> memory_limit)
      : k_(static_cast<size_t>(std::max<int64_t>(1, k))), memory_limit_(memory_limit) {}

  Seconds Threshold() const { return Seconds(threshold_.load(std::memory_order_relaxed)); }

  void Add(const LayoutMetrics& m) {
    if (memory_limit_ && m.peak_memory_per_gpu > *memory_limit_) return;
    std::lock_guard<std::mutex> lock(mu_);
    const double step = m.step_time.value();
    if (best_.size() == k_ && step >= best_.front()) return;
    best_.push_back(step);
    std::push_heap(best_.begin(), best_.end());  // max-heap: the K-th best on top
    if (best_.size() > k_) {
      std::pop_heap(best_.begin(), best_.end());
      best_.pop_back();
    }
    if (best_.size() == k_) threshold_.store(best_.front(), std::memory_order_relaxed);
  }

 private:
  const size_t k_;
  const std::optional<Bytes> memory_limit_;
  std::mutex mu_;
  std::vector<double> best_;
  std::atomic<double> threshold_{std::numeric_limits<double>::infinity()};
};

// Seconds since `start`.
inline double ElapsedSeconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The workers for `candidates` evaluations: as asked (all cores by default), at most one each.
int WorkerThreads(const SearchOptions& options, size_t candidates);

// Validates and projects every candidate, pruned by `top` when it is given: a bound pass over
// the candidates grouped by composition, then the candidates projected lowest bound first.
// Progress is reported as `what` ("layouts", "splits") with the seconds since `start`.
Evaluations EvaluateCandidates(const Scenario& base, const std::vector<SearchCandidate>& candidates,
                               const LayoutEvaluator& evaluate, const SearchOptions& options,
                               TopSteps* top, std::chrono::steady_clock::time_point start,
                               std::string_view what);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_SEARCH_PASSES_H_
