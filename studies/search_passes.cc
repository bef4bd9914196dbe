#include "studies/search_passes.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/wire.h"
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

// A pass's request: how far to project, then groups of candidates (their position in the pass's
// list, the candidate itself, the composition group whose model the bound pass kept or
// kNoModel). The candidates travel by value, since the coordinator alone derives the splits.
constexpr uint32_t kNoModel = std::numeric_limits<uint32_t>::max();
struct RequestHeader {
  PassMode mode = PassMode::kFull;
  double abandon_at_s = std::numeric_limits<double>::infinity();
  uint32_t pass_id = 0;
  bool keep_models = false;  // the bound pass keeps each group's model for the pruned pass
};

// A candidate's reply: its position, outcome, metrics (when projected) and message (refused or
// failed).
void PutResult(WireWriter& out, uint64_t position, Outcome outcome, const LayoutMetrics* metrics,
               std::string_view message) {
  out.Put(position).Put(outcome).Put(static_cast<uint8_t>(metrics != nullptr));
  if (metrics != nullptr) out.Put(*metrics);
  out.PutString(message);
}

// The coordinator's side of one pass: builds the requests for groups of its order, screening the
// candidates the pruned pass removes without a projection, and records the replies.
struct PassCoordinator {
  const std::vector<SearchCandidate>& candidates;
  Evaluations& out;
  const PassOrder* pass = nullptr;
  RequestHeader header = {};
  TopSteps* top = nullptr;            // kPruned: updated with every layout projected
  std::optional<Bytes> memory_limit = {};  // the search's
  const std::vector<uint32_t>* model_of = nullptr;  // composition group of each candidate
  int64_t done = 0;                   // candidates
  size_t first_error_at = std::numeric_limits<size_t>::max();
  size_t first_invalid_at = std::numeric_limits<size_t>::max();

  // kPruned: whether the candidate still needs a projection; the others get their outcome here.
  bool Screen(size_t idx) {
    if (header.mode != PassMode::kPruned) return true;
    // The bound pass set the outcome of refused candidates and the bound of the others.
    if (out.outcome[idx] != Outcome::kPending) return false;
    if (out.metrics[idx].step_lower_bound.value() >= header.abandon_at_s) {
      out.outcome[idx] = Outcome::kPruned;
      return false;
    }
    // The bound pass found its peak above the limit: removed for memory with that peak, as
    // projecting it again would remove it (the memory model reads no time).
    if (memory_limit && out.metrics[idx].peak_memory_per_gpu > *memory_limit) {
      out.outcome[idx] = Outcome::kOk;
      return false;
    }
    return true;
  }

  std::string Request(int64_t first_group, int64_t last_group) {
    WireWriter w;
    w.Put(header);
    for (int64_t g = first_group; g < last_group; ++g) {
      const size_t begin = pass->group_starts[static_cast<size_t>(g)];
      const size_t end = EndOfGroup(*pass, static_cast<size_t>(g));
      std::vector<size_t> kept;
      for (size_t k = begin; k < end; ++k) {
        if (Screen(pass->order[k])) kept.push_back(pass->order[k]);
      }
      done += static_cast<int64_t>(end - begin - kept.size());
      if (kept.empty()) continue;
      w.Put(static_cast<uint32_t>(kept.size()));
      for (const size_t idx : kept) {
        const bool kept_model = model_of != nullptr && !model_of->empty();
        w.Put(static_cast<uint64_t>(idx)).Put(candidates[idx]);
        w.Put(kept_model ? (*model_of)[idx] : kNoModel);
      }
    }
    return w.Take();
  }

  // The first message by enumeration order, whichever lane reported it first.
  static void KeepFirst(size_t idx, std::string message, size_t& at, std::string& first) {
    if (idx < at) {
      at = idx;
      first = std::move(message);
    }
  }

  absl::Status Collect(std::string_view reply) {
    WireReader in(reply);
    while (!in.AtEnd()) {
      const auto idx = static_cast<size_t>(in.Get<uint64_t>());
      const auto outcome = in.Get<Outcome>();
      if (in.Get<uint8_t>() != 0) out.metrics[idx] = in.Get<LayoutMetrics>();
      std::string message = in.GetString();
      out.outcome[idx] = outcome;
      ++done;
      if (outcome == Outcome::kInvalid) KeepFirst(idx, std::move(message), first_invalid_at, out.first_invalid);
      if (outcome == Outcome::kError) KeepFirst(idx, std::move(message), first_error_at, out.first_error);
      if (outcome == Outcome::kOk && top != nullptr) top->Add(out.metrics[idx]);
    }
    return absl::OkStatus();
  }
};

// Runs the groups [first, end) of the coordinator's pass on the team, reporting progress.
absl::Status RunBatch(PassCoordinator& coordinator, CandidateProjector& projector, WorkTeam& team,
                      int lanes, int64_t first, int64_t end, const SearchOptions& options,
                      const SearchProgress& progress, Clock::time_point start,
                      Clock::time_point pass_start) {
  TaskHooks hooks;
  hooks.count = end - first;
  // One composition group per task in the bound pass (a group can hold hundreds of layouts),
  // else one candidate; up to 32 a chunk (tool choice: a layout projects in tens of µs, so a
  // chunk is milliseconds of work against a hand-out of microseconds).
  hooks.max_chunk = 32;
  hooks.request = [&](int64_t a, int64_t b) { return coordinator.Request(first + a, first + b); };
  hooks.perform = [&](int lane, std::string_view request) { return projector.Perform(lane, request); };
  hooks.collect = [&](int64_t, int64_t, std::string_view reply) { return coordinator.Collect(reply); };
  hooks.describe = [&](int64_t a, int64_t b) {
    std::vector<std::string> labels;
    for (int64_t g = first + a; g < first + b; ++g) {
      const size_t begin = coordinator.pass->group_starts[static_cast<size_t>(g)];
      for (size_t k = begin; k < EndOfGroup(*coordinator.pass, static_cast<size_t>(g)); ++k) {
        labels.push_back(CandidateLabel(coordinator.candidates[coordinator.pass->order[k]]));
      }
    }
    return absl::StrJoin(labels, "; ");
  };
  hooks.tick_interval_s = options.progress_interval_s;
  if (options.progress) {
    hooks.tick = [&] {
      SearchProgress now = progress;
      now.done = coordinator.done;
      now.elapsed_s = ElapsedSeconds(start);
      now.pass_elapsed_s = ElapsedSeconds(pass_start);
      options.progress(now);
    };
  }
  return team.Distribute(hooks, lanes);
}

// Runs one pass in `order` on the team, reporting progress as `what` ("layouts", "splits"). The
// pruned pass runs in batches (64 layouts, doubling up to 1,024), each judged against the
// threshold at its start, so which layouts are projected depends neither on how the lanes
// interleave nor on how many there are; once the next layout's bound reaches the threshold, so
// does every later one's (the order is by bound), and the rest are pruned without a lane.
absl::Status RunPass(PassCoordinator& coordinator, CandidateProjector& projector, WorkTeam& team,
                     int lanes, PassMode mode, const PassOrder& order, const SearchOptions& options,
                     Clock::time_point start, std::string_view what) {
  const Clock::time_point pass_start = Clock::now();
  const std::string pass =
      absl::StrCat(mode == PassMode::kBound ? "bounding " : "projecting ", std::string(what));
  SearchProgress progress;
  progress.pass = pass;
  progress.total = static_cast<int64_t>(order.order.size());
  coordinator.header.mode = mode;
  coordinator.header.abandon_at_s =
      mode == PassMode::kBound ? 0.0 : std::numeric_limits<double>::infinity();
  coordinator.pass = &order;
  coordinator.done = 0;
  const auto groups = static_cast<int64_t>(order.group_starts.size());
  if (mode != PassMode::kPruned) {
    return RunBatch(coordinator, projector, team, lanes, 0, groups, options, progress, start,
                    pass_start);
  }
  // Small batches first, so a threshold exists early; then up to 1,024 layouts per batch.
  int64_t batch = 64;
  for (int64_t first = 0; first < groups;
       first += batch, batch = std::min<int64_t>(2 * batch, 1024)) {
    const double threshold = coordinator.top->Threshold().value();
    coordinator.header.abandon_at_s = threshold;
    const size_t from = order.group_starts[static_cast<size_t>(first)];
    if (!(coordinator.out.metrics[order.order[from]].step_lower_bound.value() < threshold)) {
      for (size_t k = from; k < order.order.size(); ++k) {
        Outcome& o = coordinator.out.outcome[order.order[k]];
        if (o == Outcome::kPending) o = Outcome::kPruned;
      }
      return absl::OkStatus();
    }
    PROJECTOR_RETURN_IF_ERROR(RunBatch(coordinator, projector, team, lanes, first,
                                       std::min(groups, first + batch), options, progress, start,
                                       pass_start));
  }
  return absl::OkStatus();
}

}  // namespace

CandidateProjector::CandidateProjector(const Scenario& base, const LayoutEvaluator& evaluate,
                                       int lanes)
    : base_(base), evaluate_(evaluate) {
  for (int lane = 0; lane < std::max(1, lanes); ++lane) lanes_.push_back(std::make_unique<Lane>(base));
}

CandidateProjector::~CandidateProjector() = default;

// The candidate's scenario in the lane's scratch, its kernels resolved again when the stack
// flips; the message when the scenario is refused.
std::optional<std::string> CandidateProjector::Prepare(const SearchCandidate& candidate,
                                                       Lane& lane) const {
  Scenario& scenario = lane.scenario;
  ApplyCandidate(candidate, base_.training.moe_imbalance, scenario);
  // "auto" picks the stack, and with it the kernels, from the layout (FSDP-only: llm-foundry),
  // as `project` does; they are resolved again when the stack flips.
  if (const TrainingStack stack = ResolvedStack(scenario.training, scenario.parallel);
      lane.resolved_stack != stack) {
    lane.resolved_stack = stack;
    if (absl::Status k = ResolveKernels(scenario, "search"); !k.ok()) return std::string(k.message());
  }
  if (absl::Status valid = ValidateScenario(scenario, "search"); !valid.ok()) {
    return std::string(valid.message());
  }
  return std::nullopt;
}

std::shared_ptr<const ComposedModel> CandidateProjector::KeptModel(uint32_t pass_id,
                                                                   uint32_t model) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pass_id != models_pass_) return nullptr;
  auto it = models_.find(model);
  return it == models_.end() ? nullptr : it->second;
}

void CandidateProjector::KeepModel(uint32_t pass_id, uint32_t model,
                                   std::shared_ptr<const ComposedModel> composed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pass_id != models_pass_) {
    models_.clear();
    models_pass_ = pass_id;
  }
  models_.emplace(model, std::move(composed));
}

std::string CandidateProjector::Perform(int lane_index, std::string_view request) {
  Lane& lane = *lanes_[static_cast<size_t>(lane_index)];
  WireReader in(request);
  const auto header = in.Get<RequestHeader>();
  WireWriter out;
  while (!in.AtEnd()) {
    // A group: in the bound pass its candidates share the first valid one's composed model, in
    // the pruned pass the model the bound pass kept for them (composed again where another rank
    // bounded the group: the same model, since the group shares one CompositionKey).
    const auto n = in.Get<uint32_t>();
    std::shared_ptr<const ComposedModel> composed;
    for (uint32_t k = 0; k < n; ++k) {
      const auto position = in.Get<uint64_t>();
      const auto candidate = in.Get<SearchCandidate>();
      const auto model = in.Get<uint32_t>();
      if (std::optional<std::string> refused = Prepare(candidate, lane)) {
        PutResult(out, position, Outcome::kInvalid, nullptr, *refused);
        continue;
      }
      auto failed = [&](const absl::Status& status) {
        PutResult(out, position, Outcome::kError, nullptr,
                  absl::StrCat(CandidateLabel(candidate), ": ", status.message()));
      };
      if (header.mode == PassMode::kBound && composed == nullptr && evaluate_.compose) {
        absl::StatusOr<std::shared_ptr<const ComposedModel>> c = evaluate_.compose(lane.scenario);
        if (!c.ok()) {
          failed(c.status());
          continue;
        }
        composed = *std::move(c);
        if (header.keep_models && model != kNoModel) KeepModel(header.pass_id, model, composed);
      }
      if (header.mode == PassMode::kPruned && model != kNoModel) {
        composed = KeptModel(header.pass_id, model);
      }
      absl::StatusOr<LayoutMetrics> m =
          evaluate_.project(lane.scenario, composed.get(), Seconds(header.abandon_at_s));
      if (!m.ok()) {
        failed(m.status());
        continue;
      }
      // The bound pass leaves the outcome pending for the pruned pass.
      const Outcome outcome = !m->abandoned                    ? Outcome::kOk
                              : header.mode == PassMode::kBound ? Outcome::kPending
                                                                : Outcome::kPruned;
      PutResult(out, position, outcome, &*m, "");
    }
  }
  return out.Take();
}

Evaluations EvaluateCandidates(const Scenario& base, const std::vector<SearchCandidate>& candidates,
                               CandidateProjector& projector, WorkTeam& team, int lanes,
                               const SearchOptions& options, TopSteps* top, uint32_t pass_id,
                               Clock::time_point start, std::string_view what,
                               absl::Status& status) {
  Evaluations out;
  out.outcome.assign(candidates.size(), Outcome::kPending);
  out.metrics.resize(candidates.size());
  PassCoordinator coordinator{.candidates = candidates, .out = out};
  coordinator.memory_limit = options.memory_limit;
  coordinator.header.pass_id = pass_id;
  if (top == nullptr) {
    const PassOrder one_by_one = OneByOne(candidates.size());
    status = RunPass(coordinator, projector, team, lanes, PassMode::kFull, one_by_one, options,
                     start, what);
    return out;
  }
  const PassOrder groups = ByComposition(base, candidates, lanes);
  std::vector<uint32_t> model_of;
  if (groups.group_starts.size() <= kKeptCompositions) {
    coordinator.header.keep_models = true;
    model_of.resize(candidates.size());
    for (size_t g = 0; g < groups.group_starts.size(); ++g) {
      for (size_t k = groups.group_starts[g]; k < EndOfGroup(groups, g); ++k) {
        model_of[groups.order[k]] = static_cast<uint32_t>(g);
      }
    }
  }
  coordinator.model_of = &model_of;
  status = RunPass(coordinator, projector, team, lanes, PassMode::kBound, groups, options, start,
                   what);
  if (!status.ok()) return out;
  coordinator.top = top;
  const PassOrder by_bound = ByLowerBound(out);
  status = RunPass(coordinator, projector, team, lanes, PassMode::kPruned, by_bound, options,
                   start, what);
  return out;
}

}  // namespace projector
