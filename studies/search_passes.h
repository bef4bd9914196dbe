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
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "core/units.h"
#include "core/work_team.h"
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

// What projects the passes' candidates on one rank: the lanes of the search's WorkTeam perform
// its requests (a pass's mode and threshold, groups of candidates by value) with it, each lane
// with its own scenario scratch, so a candidate costs one ValidateScenario and one Project and no
// copy of the model or hardware profile. The bound pass's composed models are kept here for the
// pruned pass of the same candidates (a rank that did not bound a group composes it again).
class CandidateProjector {
 public:
  CandidateProjector(const Scenario& base, const LayoutEvaluator& evaluate, int lanes);
  ~CandidateProjector();
  CandidateProjector(const CandidateProjector&) = delete;
  CandidateProjector& operator=(const CandidateProjector&) = delete;

  // The reply to a request: for each candidate its position, outcome, metrics and message.
  std::string Perform(int lane, std::string_view request);

 private:
  struct Lane {
    explicit Lane(const Scenario& base) : scenario(base) {}
    Scenario scenario;
    std::optional<TrainingStack> resolved_stack;  // the stack the kernels were resolved for
  };
  std::optional<std::string> Prepare(const SearchCandidate& candidate, Lane& lane) const;
  std::shared_ptr<const ComposedModel> KeptModel(uint32_t pass_id, uint32_t model);
  void KeepModel(uint32_t pass_id, uint32_t model, std::shared_ptr<const ComposedModel> composed);

  const Scenario& base_;
  const LayoutEvaluator& evaluate_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::mutex mu_;
  uint32_t models_pass_ = 0;
  absl::flat_hash_map<uint32_t, std::shared_ptr<const ComposedModel>> models_;
};

// Validates and projects every candidate on the lanes of `team` (`lanes` of them here), pruned
// by `top` when it is given: a bound pass over the candidates grouped by composition, then the
// candidates projected lowest bound first. `pass_id` tells this call's composition groups from
// another's. Progress is reported as `what` ("layouts", "splits") with the seconds since
// `start`. A failure of the team (a rank stopped) is set in `status`.
Evaluations EvaluateCandidates(const Scenario& base, const std::vector<SearchCandidate>& candidates,
                               CandidateProjector& projector, WorkTeam& team, int lanes,
                               const SearchOptions& options, TopSteps* top, uint32_t pass_id,
                               std::chrono::steady_clock::time_point start, std::string_view what,
                               absl::Status& status);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_SEARCH_PASSES_H_
