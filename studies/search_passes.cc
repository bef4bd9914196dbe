#include "studies/search_passes.h"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <numeric>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "projection/projection.h"
#include "scenario/training_defaults.h"

namespace projector {
namespace {

using Clock = std::chrono::steady_clock;

// The most composed models the bound pass keeps for the pruned pass (a few KB each: a model's
// layer kinds, end modules and their collectives). A MoE search's split pass has thousands of
// groups and projects ~10^5 candidates to the end; its first pass has ~10^6 groups and keeps none.
constexpr size_t kKeptCompositions = 1 << 16;

// How a pass over the candidates projects them.
enum class PassMode {
  kFull,    // to the end (no pruning)
  kBound,   // only up to the lower bound: every projection abandoned before its replay
  kPruned,  // to the end unless the bound reaches the TopSteps threshold
};

// The order a pass takes the candidates in, as groups of consecutive entries of `order` (a
// worker takes a whole group): in the bound pass the layouts of one CompositionKey, which share
// one composed model; otherwise one candidate each.
struct PassOrder {
  std::vector<size_t> order;
  std::vector<size_t> group_starts;  // the first entry of each group, ascending
};

// One past the last entry of group g of `p`.
size_t EndOfGroup(const PassOrder& p, size_t g) {
  return g + 1 < p.group_starts.size() ? p.group_starts[g + 1] : p.order.size();
}

// Enumeration order, one candidate per group.
PassOrder OneByOne(size_t n) {
  PassOrder p;
  p.order.resize(n);
  std::iota(p.order.begin(), p.order.end(), size_t{0});
  p.group_starts = p.order;
  return p;
}

// The candidates grouped by the CompositionKey of their scenario: groups in the order their
// first candidate was enumerated, enumeration order inside.
PassOrder ByComposition(const Scenario& base, const std::vector<SearchCandidate>& candidates,
                        int threads) {
  // The keys on `threads` slices side by side, then grouped in order.
  std::vector<CompositionKey> keys(candidates.size());
  std::vector<std::thread> pool;
  const size_t slices = static_cast<size_t>(std::max(1, threads));
  for (size_t t = 0; t < slices; ++t) {
    pool.emplace_back([&, t] {
      Scenario scratch = base;
      for (size_t i = candidates.size() * t / slices; i < candidates.size() * (t + 1) / slices;
           ++i) {
        ApplyCandidate(candidates[i], base.training.moe_imbalance, scratch);
        keys[i] = CompositionKeyOf(scratch);
      }
    });
  }
  for (std::thread& worker : pool) worker.join();
  absl::flat_hash_map<CompositionKey, size_t> group_of;
  group_of.reserve(candidates.size() / 2);
  std::vector<size_t> group(candidates.size());
  std::vector<size_t> sizes;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto [it, added] = group_of.try_emplace(keys[i], sizes.size());
    if (added) sizes.push_back(0);
    group[i] = it->second;
    ++sizes[it->second];
  }
  PassOrder p;
  p.group_starts.resize(sizes.size());
  for (size_t g = 0, start = 0; g < sizes.size(); start += sizes[g], ++g) {
    p.group_starts[g] = start;
  }
  std::vector<size_t> next = p.group_starts;
  p.order.resize(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) p.order[next[group[i]]++] = i;
  return p;
}

// The candidates the bound pass left pending by their lower bound, lowest first (ties in
// enumeration order), one per group.
PassOrder ByLowerBound(const Evaluations& e) {
  std::vector<std::pair<double, size_t>> bounds;
  for (size_t i = 0; i < e.outcome.size(); ++i) {
    if (e.outcome[i] == Outcome::kPending) bounds.emplace_back(e.metrics[i].step_lower_bound.value(), i);
  }
  std::sort(bounds.begin(), bounds.end());
  PassOrder p;
  p.order.reserve(bounds.size());
  for (const auto& [bound, i] : bounds) p.order.push_back(i);
  p.group_starts = OneByOne(bounds.size()).order;
  return p;
}

// One worker's loop over groups of candidates. Each worker owns one Scenario copy and rewrites
// only its layout fields, so a candidate costs one ValidateScenario and one Project, no copy of
// the model or hardware profile.
struct EvaluationQueue {
  EvaluationQueue(const Scenario& b, const std::vector<SearchCandidate>& c,
                  const LayoutEvaluator& e, Evaluations& o)
      : base(b), candidates(c), evaluate(e), out(o) {}

  const Scenario& base;
  const std::vector<SearchCandidate>& candidates;
  const LayoutEvaluator& evaluate;
  Evaluations& out;
  PassMode mode = PassMode::kFull;
  const PassOrder* pass = nullptr;
  TopSteps* top = nullptr;  // kPruned: updated with every layout projected
  std::optional<Bytes> memory_limit;  // the search's
  // kPruned: the TopSteps threshold when the batch began. Every decision of a batch uses it, so
  // which layouts are projected does not depend on how the workers interleave.
  Seconds threshold{std::numeric_limits<double>::infinity()};
  int64_t group_end = 0;         // the groups of this batch end here
  // The bound pass's composed models by group, and each candidate's group, kept for the pruned
  // pass when there are few groups (kKeptCompositions); empty otherwise.
  std::vector<std::shared_ptr<const ComposedModel>> kept_models;
  std::vector<uint32_t> model_of;
  std::atomic<int64_t> next{0};  // the next group
  std::atomic<int64_t> done{0};  // candidates
  std::atomic<int> running{0};
  std::mutex mu;
  std::condition_variable finished;

  void RecordFirst(std::string& first, std::string message) {
    std::lock_guard<std::mutex> lock(mu);
    if (first.empty()) first = std::move(message);
  }

  // The candidate's scenario in `scenario`, its kernels resolved again when the stack flips;
  // false (and the outcome kInvalid) when the scenario is refused.
  bool Prepare(size_t idx, Scenario& scenario, std::optional<TrainingStack>& resolved_stack) {
    ApplyCandidate(candidates[idx], base.training.moe_imbalance, scenario);
    // "auto" picks the stack, and with it the kernels, from the layout (FSDP-only:
    // llm-foundry), as `project` does; they are resolved again when the stack flips.
    if (const TrainingStack stack = ResolvedStack(scenario.training, scenario.parallel);
        resolved_stack != stack) {
      resolved_stack = stack;
      if (absl::Status k = ResolveKernels(scenario, "search"); !k.ok()) {
        out.outcome[idx] = Outcome::kInvalid;
        RecordFirst(out.first_invalid, std::string(k.message()));
        return false;
      }
    }
    if (absl::Status valid = ValidateScenario(scenario, "search"); !valid.ok()) {
      out.outcome[idx] = Outcome::kInvalid;
      RecordFirst(out.first_invalid, std::string(valid.message()));
      return false;
    }
    return true;
  }

  void RecordError(size_t idx, const absl::Status& status) {
    out.outcome[idx] = Outcome::kError;
    RecordFirst(out.first_error,
                absl::StrCat(CandidateLabel(candidates[idx]), ": ", status.message()));
  }

  // Projects one candidate with `composed` (null: its own), up to the pass's bound.
  void EvaluateOne(size_t idx, Scenario& scenario, const ComposedModel* composed) {
    Seconds abandon_at{std::numeric_limits<double>::infinity()};
    if (mode == PassMode::kBound) abandon_at = Seconds(0);
    if (mode == PassMode::kPruned) abandon_at = threshold;
    absl::StatusOr<LayoutMetrics> m = evaluate.project(scenario, composed, abandon_at);
    if (!m.ok()) {
      RecordError(idx, m.status());
      return;
    }
    out.metrics[idx] = *m;
    if (m->abandoned) {
      // The bound pass leaves the outcome pending for the pruned pass.
      if (mode != PassMode::kBound) out.outcome[idx] = Outcome::kPruned;
      return;
    }
    out.outcome[idx] = Outcome::kOk;
    if (top != nullptr) top->Add(*m);
  }

  // The candidates of group g; in the bound pass they share the first valid one's model, in the
  // pruned pass the model the bound pass kept for them.
  void EvaluateGroup(int64_t g, size_t begin, size_t end, Scenario& scenario,
                     std::optional<TrainingStack>& resolved_stack) {
    std::shared_ptr<const ComposedModel> composed;
    for (size_t k = begin; k < end; ++k) {
      const size_t idx = pass->order[k];
      if (mode == PassMode::kPruned) {
        // The bound pass set the outcome of refused candidates and the bound of the others.
        if (out.outcome[idx] != Outcome::kPending) continue;
        if (out.metrics[idx].step_lower_bound >= threshold) {
          out.outcome[idx] = Outcome::kPruned;
          continue;
        }
        // The bound pass found its peak above the limit: removed for memory with that peak, as
        // projecting it again would remove it (the memory model reads no time).
        if (memory_limit && out.metrics[idx].peak_memory_per_gpu > *memory_limit) {
          out.outcome[idx] = Outcome::kOk;
          continue;
        }
      }
      if (!Prepare(idx, scenario, resolved_stack)) continue;
      if (mode == PassMode::kBound && composed == nullptr && evaluate.compose) {
        absl::StatusOr<std::shared_ptr<const ComposedModel>> c = evaluate.compose(scenario);
        if (!c.ok()) {
          RecordError(idx, c.status());
          continue;
        }
        composed = *std::move(c);
        if (!kept_models.empty()) kept_models[static_cast<size_t>(g)] = composed;
      }
      if (mode == PassMode::kPruned && !model_of.empty()) {
        composed = kept_models[model_of[idx]];
      }
      EvaluateOne(idx, scenario, composed.get());
    }
  }

  // One past the last entry of group g.
  size_t GroupEnd(int64_t g) const { return EndOfGroup(*pass, static_cast<size_t>(g)); }

  void Work() {
    Scenario scenario = base;
    std::optional<TrainingStack> resolved_stack;  // the stack the kernels were resolved for
    const std::vector<size_t>& starts = pass->group_starts;
    const int64_t groups = group_end;
    // A few groups per fetch: one candidate each outside the bound pass.
    const int64_t chunk = mode == PassMode::kBound ? 1 : 8;
    while (true) {
      const int64_t first = next.fetch_add(chunk, std::memory_order_relaxed);
      if (first >= groups) break;
      const int64_t last = std::min(groups, first + chunk);
      const size_t begin = starts[static_cast<size_t>(first)];
      const size_t end = GroupEnd(last - 1);
      for (int64_t g = first; g < last; ++g) {
        const size_t b = starts[static_cast<size_t>(g)];
        const size_t e = GroupEnd(g);
        EvaluateGroup(g, b, e, scenario, resolved_stack);
      }
      done.fetch_add(static_cast<int64_t>(end - begin), std::memory_order_relaxed);
    }
    if (running.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(mu);
      finished.notify_all();
    }
  }
};

// Runs the groups [first, end) of `order` on `threads` workers, reporting progress meanwhile.
void RunBatch(EvaluationQueue& queue, int64_t first, int64_t end, int threads,
              const SearchOptions& options, const SearchProgress& progress, Clock::time_point start,
              Clock::time_point pass_start) {
  queue.next = first;
  queue.group_end = end;
  queue.running = threads;
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) pool.emplace_back([&queue] { queue.Work(); });
  {
    std::unique_lock<std::mutex> lock(queue.mu);
    const auto interval = std::chrono::duration<double>(options.progress_interval_s);
    while (queue.running.load() > 0) {
      queue.finished.wait_for(lock, interval, [&] { return queue.running.load() == 0; });
      if (options.progress && queue.running.load() > 0) {
        lock.unlock();
        SearchProgress now = progress;
        now.done = queue.done.load();
        now.elapsed_s = ElapsedSeconds(start);
        now.pass_elapsed_s = ElapsedSeconds(pass_start);
        options.progress(now);
        lock.lock();
      }
    }
  }
  for (std::thread& t : pool) t.join();
}

// Runs one pass of `queue` in `order` on `threads` workers, reporting progress as `what`
// ("layouts", "splits"). The pruned pass runs in batches (64 layouts, doubling up to 1,024), each
// judged against the threshold at its start; once the next layout's bound reaches it, so does every
// later one's (the order is by bound), and the rest are pruned without a worker.
void RunPass(EvaluationQueue& queue, PassMode mode, const PassOrder& order, int threads,
             const SearchOptions& options, Clock::time_point start, std::string_view what) {
  const Clock::time_point pass_start = Clock::now();
  const std::string pass =
      absl::StrCat(mode == PassMode::kBound ? "bounding " : "projecting ", std::string(what));
  SearchProgress progress;
  progress.pass = pass;
  progress.total = static_cast<int64_t>(order.order.size());
  queue.mode = mode;
  queue.pass = &order;
  queue.done = 0;
  const auto groups = static_cast<int64_t>(order.group_starts.size());
  if (mode != PassMode::kPruned) {
    RunBatch(queue, 0, groups, threads, options, progress, start, pass_start);
    return;
  }
  // Small batches first, so a threshold exists early; then up to 1,024 layouts per batch.
  int64_t batch = 64;
  for (int64_t first = 0; first < groups;
       first += batch, batch = std::min<int64_t>(2 * batch, 1024)) {
    queue.threshold = queue.top->Threshold();
    const size_t from = order.group_starts[static_cast<size_t>(first)];
    if (!(queue.out.metrics[order.order[from]].step_lower_bound < queue.threshold)) {
      for (size_t k = from; k < order.order.size(); ++k) {
        Outcome& o = queue.out.outcome[order.order[k]];
        if (o == Outcome::kPending) o = Outcome::kPruned;
      }
      return;
    }
    RunBatch(queue, first, std::min(groups, first + batch), threads, options, progress, start,
             pass_start);
  }
}

}  // namespace

int WorkerThreads(const SearchOptions& options, size_t candidates) {
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, std::min<int>(threads, static_cast<int>(std::max<size_t>(candidates, 1))));
}

Evaluations EvaluateCandidates(const Scenario& base, const std::vector<SearchCandidate>& candidates,
                               const LayoutEvaluator& evaluate, const SearchOptions& options,
                               TopSteps* top, Clock::time_point start, std::string_view what) {
  Evaluations out;
  out.outcome.assign(candidates.size(), Outcome::kPending);
  out.metrics.resize(candidates.size());
  const int threads = WorkerThreads(options, candidates.size());
  EvaluationQueue queue(base, candidates, evaluate, out);
  queue.memory_limit = options.memory_limit;
  if (top == nullptr) {
    RunPass(queue, PassMode::kFull, OneByOne(candidates.size()), threads, options, start, what);
    return out;
  }
  const PassOrder groups = ByComposition(base, candidates, threads);
  if (groups.group_starts.size() <= kKeptCompositions) {
    queue.kept_models.resize(groups.group_starts.size());
    queue.model_of.resize(candidates.size());
    for (size_t g = 0; g < groups.group_starts.size(); ++g) {
      for (size_t k = groups.group_starts[g]; k < EndOfGroup(groups, g); ++k) {
        queue.model_of[groups.order[k]] = static_cast<uint32_t>(g);
      }
    }
  }
  RunPass(queue, PassMode::kBound, groups, threads, options, start, what);
  queue.top = top;
  RunPass(queue, PassMode::kPruned, ByLowerBound(out), threads, options, start, what);
  return out;
}

}  // namespace projector
