// Parallel-layout search: enumerates every layout of a design space (TP, PP, VPP, CP, EP,
// expert-TP, DP, micro-batch, recompute, sequence parallelism, DP sharding, MoE switches),
// removes invalid ones with a count per constraint, projects the survivors with Project() on a
// thread pool that shares one BackendSet, applies a memory limit and ranks by an objective.
// A study built on single projections (DESIGN.md "Projection"); `project search` prints it.
#ifndef PROJECTOR_STUDIES_SEARCH_H_
#define PROJECTOR_STUDIES_SEARCH_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/training_config.h"
#include "core/units.h"
#include "core/work_team.h"
#include "hw_profiles/hardware_profile.h"
#include "nlohmann/json.hpp"
#include "profilers/op_list.h"
#include "projection/projection.h"
#include "projection/step_composer.h"
#include "scenario/scenario.h"

namespace projector {

enum class SearchObjective {
  kTokensPerGpu,  // "tgs": highest tokens/s/GPU first
  kStepTime,      // "step-time": shortest step first
  kMemory,        // "memory": lowest peak memory per GPU first
};
std::string_view SearchObjectiveName(SearchObjective objective);
// kInvalidArgument "unknown objective 'x'; accepted: tgs, step-time, memory".
absl::StatusOr<SearchObjective> ParseSearchObjective(std::string_view name);

// How the DP replicas hold weights, gradients and optimizer state.
enum class DpSharding {
  kNone,                  // "dp": plain data parallel, everything replicated
  kDistributedOptimizer,  // "distopt": optimizer state sharded (ZeRO-1, Megatron)
  kFsdp,                  // "fsdp": weights, gradients and optimizer state sharded
};
std::string_view DpShardingName(DpSharding sharding);
// kInvalidArgument "unknown DP sharding 'x'; accepted: dp, distopt, fsdp".
absl::StatusOr<DpSharding> ParseDpSharding(std::string_view name);

// The values each dimension may take. The space is their Cartesian product; DP is derived as
// num_gpus / (tp·pp·cp) for each point. Every list must be non-empty.
struct SearchSpace {
  std::vector<int64_t> tp;
  std::vector<int64_t> pp;
  std::vector<int64_t> vpp;
  std::vector<int64_t> cp;
  std::vector<int64_t> ep;
  std::vector<int64_t> etp;
  std::vector<int64_t> micro_batch;
  std::vector<Recompute> recompute;
  // The Megatron-Core recompute module sets a selective candidate takes (each one point); by
  // default the base scenario's (training.recompute_modules).
  std::vector<RecomputeModules> selective_modules = {kDefaultRecomputeModules};
  std::vector<bool> sequence_parallel;
  std::vector<DpSharding> sharding;
  std::vector<bool> turbo_grouped_gemm;  // MoE: turbo (true) or legacy (false) grouped GEMM
  std::vector<bool> deepep;              // MoE: DeepEP-style dispatch
  std::vector<PipelineSchedule> pipeline_schedule = {PipelineSchedule::kOneFOneB};
  bool allow_cross_node_tp = false;

  // Points in the Cartesian product.
  int64_t Size() const;
  // The (recompute, modules) pairs: one per non-selective value, one per module set for
  // selective.
  int64_t RecomputePoints() const;
};

// The default space for a scenario: tp, pp, cp and (MoE) ep take every divisor of num_gpus,
// etp {1, 2, 4, 8} (MoE), vpp {1, 2, 4}, micro-batch {1, 2, 4, 8}, recompute none/selective/full
// (selective with the base's recompute modules),
// sequence parallelism off/on, sharding dp/distopt/fsdp, the 1f1b schedule, and for MoE
// turbo/legacy grouped GEMM and DeepEP off/on. Dense models get ep = etp = {1} and the MoE
// switches at their defaults.
SearchSpace DefaultSearchSpace(const Scenario& base);

// The reasons a candidate is removed, in the order they are checked: each candidate is counted
// under the FIRST constraint it violates, so the counts add up to enumerated − ranked.
enum class SearchConstraint {
  kGpuCount,            // tp·pp·cp does not divide num_gpus (no whole DP)
  kTpCrossNode,         // TP group larger than a node or straddling nodes (--allow-cross-node-tp)
  kTpHeads,             // attention heads (or kv heads) not divisible/replicable over TP
  kSpWithoutTp,         // sequence parallelism with TP 1: same as SP off (duplicate)
  kSeqCp,               // seq_len not divisible by CP
  kSeqTpSp,             // seq_len/CP not divisible by TP under sequence parallelism
  kVppWithoutPp,        // VPP > 1 with PP 1
  kScheduleLayout,      // zb-h1 with PP 1 (duplicate of 1f1b) or with VPP > 1 (unsupported)
  kLayersPpVpp,         // layers not divisible by PP·VPP
  kExpertsEp,           // experts not divisible by EP (or EP > 1 on a dense model)
  kEpEtpGroup,          // EP·ETP does not divide DP·CP·TP
  kEtpFfn,              // expert FFN not divisible by ETP (or ETP > 1 on a dense model)
  kMoeSwitchRedundant,  // DeepEP with EP 1 / legacy GEMM with one local expert (duplicates)
  kGlobalBatch,         // global batch not divisible by micro_batch·DP
  kShardingWithoutDp,   // distopt/FSDP with DP·CP 1: same as plain DP (duplicate)
  kScenarioValidation,  // any further rule of ValidateScenario
  kBound,               // an alternative pipeline split that provably cannot reach the top K
  kProjectionError,     // Project() returned an error (e.g. an unsupported combination)
  kMemory,              // projected peak memory per GPU above the limit
};
inline constexpr int kNumSearchConstraints = 19;
// Stable snake_case name used in JSON ("gpu_count", "tp_heads", ..., "memory").
std::string_view SearchConstraintName(SearchConstraint constraint);
// One line for people ("heads or kv heads not divisible by TP").
std::string_view SearchConstraintDescription(SearchConstraint constraint);

// One point of the space.
struct SearchCandidate {
  ParallelConfig parallel;  // dp derived; sharding encoded in fsdp / distributed_optimizer
  int64_t micro_batch = 1;
  Recompute recompute = Recompute::kNone;
  RecomputeModules recompute_modules = kDefaultRecomputeModules;  // selective only
};

// Applies the candidate to a copy of `base` (parallel layout, micro-batch, recompute).
// training.moe_imbalance becomes min(requested_moe_imbalance, the layout's MaxMoeImbalance):
// with fewer EP ranks the busiest one cannot be as far above the mean (with EP 1, not at all).
void ApplyCandidate(const SearchCandidate& candidate, double requested_moe_imbalance,
                    Scenario& scenario);

// The first constraint (in SearchConstraint order, up to kShardingWithoutDp) the candidate
// violates, or nullopt. Cheap: no allocation. These are the rules of ValidateScenario plus the
// duplicate removals, so they can be counted one by one.
std::optional<SearchConstraint> FirstViolatedConstraint(const Scenario& base,
                                                        const SearchCandidate& candidate,
                                                        bool allow_cross_node_tp);

// The pipeline split a layout is enumerated with: balanced ({0, 0}) when the layers split evenly
// over pp·vpp virtual stages (LayersSplitEvenly, embedding/loss-aware split included), else
// SuggestUnevenSplit's first/last stage layers (the model's MTP modules on the last stage) when
// the scenario accepts them; nullopt when neither applies (the layers_pp_vpp constraint).
std::optional<std::pair<int64_t, int64_t>> DefaultStageSplit(const ModelSpec& model, int64_t pp,
                                                             int64_t vpp);

// How many first/last stage splits other than its own the search considers for a layout with
// pp > 1 (explore_splits): every pair the scenario accepts with each stage at least max(1, vpp)
// layers, the middle stages at one size, less the split it was evaluated with.
int64_t CountAlternativeSplits(int64_t layers, const ParallelConfig& parallel);

// Enumerates the space in a fixed order (tp outermost ... deepep, schedule innermost), each
// layout with its DefaultStageSplit, and returns the candidates that pass every pre-check;
// `removed` (if given) receives the count per constraint.
std::vector<SearchCandidate> EnumerateCandidates(
    const Scenario& base, const SearchSpace& space,
    std::array<int64_t, kNumSearchConstraints>* removed = nullptr);

// What the ranking and the report need from one projection.
struct LayoutMetrics {
  double tokens_per_s_per_gpu = 0;
  Seconds step_time;
  double mfu = 0;
  double tflops_per_gpu = 0;
  Bytes peak_memory_per_gpu;
  // The least peak any other first/last-stage split of this layout can have
  // (Projection::split_peak_lower_bound).
  Bytes split_peak_lower_bound;
  // Step breakdown terms, in kBreakdownTerms order (short names): compute, tp_comm, cp_comm,
  // ep_comm, pipeline_bubble, p2p, dp_comm, fsdp_comm, optimizer.
  std::array<Seconds, kNumBreakdownTerms> breakdown{};
  // One micro-batch's passes per layer of each kind (forward; backward incl. recompute) and
  // through the embedding and the output layer, as the projection's per-layer table gives them
  // (compute and exposed TP/CP/EP communication): what StepLowerBound deals over the stages of
  // another split. Zero for a kind the model does not have.
  ChunkTimes dense_layer;
  ChunkTimes moe_layer;
  ChunkTimes embedding;
  ChunkTimes output;
  // abandoned: the projection stopped at its lower bound (the evaluator's abandon_at); only
  // the passes above, micro_batches and step_lower_bound are set.
  bool abandoned = false;
  Seconds step_lower_bound;
  int64_t micro_batches = 0;
};

// A lower bound on the step time of `parallel` (a layout with its first/last stage layers) from
// the per-layer passes `m` of the same layout under any other split: PipelineLowerBound of the
// chunks AssignLayers gives it. The projection's own bound for that split also counts the MTP
// modules, host and FSDP time, and the step adds P2P, DP sync and the optimizer: all >= 0.
Seconds StepLowerBound(const ModelSpec& model, const ParallelConfig& parallel,
                       const LayoutMetrics& m);
// Names of LayoutMetrics::breakdown entries ("compute", "tp_comm", ...).
std::string_view BreakdownTermName(int term_idx);
// Name of the largest breakdown term.
std::string_view DominantCost(const LayoutMetrics& metrics);
// The largest term besides compute with its share of the step, "pipeline_bubble 12.5%": what
// sets layouts apart when compute dominates every one of them; "none" when all others are 0.
std::string LargestOverhead(const LayoutMetrics& metrics);

// Projects the search's layouts. `project` projects one scenario with `composed` (the model a
// layout of the same CompositionKey composed; null: it composes its own), or abandons it
// (LayoutMetrics::abandoned) once its step's lower bound is at least `abandon_at` (infinite:
// never). `compose` composes the model for a group of layouts with equal CompositionKeyOf; when
// empty, every layout composes its own. Both must be safe to call from several threads at once.
struct LayoutEvaluator {
  std::function<absl::StatusOr<std::shared_ptr<const ComposedModel>>(const Scenario&)> compose;
  std::function<absl::StatusOr<LayoutMetrics>(const Scenario&, const ComposedModel* composed,
                                              Seconds abandon_at)>
      project;
};
// The evaluator the tool uses: Project(scenario, backends). `backends` must outlive it. With a
// `memory_limit`, a layout whose peak memory is above it is not replayed (its metrics hold the
// peak memory and the passes): the search removes it whatever its step.
LayoutEvaluator ProjectionEvaluator(const BackendRefs& backends,
                                    std::optional<Bytes> memory_limit = std::nullopt);

// The memory limit used when the user gives none: the GPU's HBM less a reserve for what the
// projection's memory model does not count (see search.cc for the figures and their sources).
Bytes DefaultMemoryLimit(const HardwareProfile& hw);
// The reserve itself: 1 GiB + 5% of HBM.
Bytes MemoryReserve(const HardwareProfile& hw);

// Where a running search is: the pass (bounding every layout, projecting them best bound
// first, then the same for the alternative pipeline splits), its layouts done and in all, the
// seconds since the search and the pass began.
struct SearchProgress {
  std::string_view pass;  // "bounding layouts", "projecting layouts", "bounding splits", ...
  int64_t done = 0;
  int64_t total = 0;
  double elapsed_s = 0;
  double pass_elapsed_s = 0;
};

struct SearchOptions {
  SearchSpace space;
  SearchObjective objective = SearchObjective::kTokensPerGpu;
  // Layouts whose peak memory exceeds this are removed (counted under kMemory). nullopt keeps
  // every layout and only marks those above DefaultMemoryLimit.
  std::optional<Bytes> memory_limit;
  int threads = 0;  // lanes on each rank; 0 = its share of the cores
  // The ranks that evaluate the candidates (null: this process alone). Every rank calls
  // SearchLayouts with the same arguments: the coordinator runs the search and returns its
  // result, the others serve it and return ServedStatus().
  WorkTeam* team = nullptr;
  // Called from the calling thread about every `progress_interval_s` while evaluating.
  std::function<void(const SearchProgress&)> progress;
  double progress_interval_s = 0.5;
  // Pruning (time objectives): the best `exact_top` layouts found are those an exhaustive search
  // finds. A projection is abandoned before its pipeline replay once its lower bound
  // (PipelineLowerBound: step >= every rank's passes plus the pipeline fill and drain around
  // them) is at least the step of the exact_top-th best layout within the memory limit found so
  // far; such a layout's step is at least that, so it cannot enter the top exact_top. Layouts are
  // projected cheapest bound first (pipeline parallel ones after the others) so the threshold
  // falls early. prune = false projects every layout to the end.
  // Alternative pipeline splits (explore_splits, time objectives): every first/last stage split
  // the scenario accepts (UnevenSplitAccepted, each stage at least one layer) of each layout with
  // PP > 1 projected in the first pass; one is projected only when StepLowerBound (from that
  // layout's per-layer passes) is below the threshold. The memory objective keeps each layout's
  // DefaultStageSplit.
  bool explore_splits = true;
  bool prune = true;
  int64_t exact_top = 10;
};

struct RankedLayout {
  SearchCandidate candidate;
  LayoutMetrics metrics;
  bool fits_memory = true;  // vs the limit in effect (DefaultMemoryLimit when none is given)
};

struct SearchResult {
  int64_t candidates_enumerated = 0;  // points in the space
  int64_t candidates_evaluated = 0;   // projected with Project()
  int64_t splits_enumerated = 0;      // alternative pipeline splits among the enumerated
  double elapsed_s = 0;               // wall time of enumeration + evaluation + ranking
  int threads = 1;
  SearchObjective objective = SearchObjective::kTokensPerGpu;
  std::optional<Bytes> memory_limit;  // nullopt = none (kept and marked)
  Bytes memory_check;                 // the limit `fits_memory` is judged against
  std::array<int64_t, kNumSearchConstraints> removed{};
  std::string first_projection_error;  // message of the first kProjectionError, if any
  std::vector<RankedLayout> ranked;    // best first by the objective; ties by layout order
};

// Runs the search with `evaluate`. kFailedPrecondition when no layout survives, naming the
// constraint that removed the last candidates (the last one in check order that removed any)
// and what to relax; kInvalidArgument for an empty value list.
absl::StatusOr<SearchResult> SearchLayouts(const Scenario& base, const SearchOptions& options,
                                           const LayoutEvaluator& evaluate);
// Builds the backends of base.backends once and searches with ProjectionEvaluator.
absl::StatusOr<SearchResult> SearchLayouts(const Scenario& base, const SearchOptions& options);

// The `project ...` command that reproduces one layout of the search on its own, with the
// attention kernel of the base scenario pinned.
std::string ReproduceCommand(const Scenario& base, const SearchCandidate& candidate);
// What sets `c` apart from `best`, field by field: "PP 32→16, CP 4→8, recompute none→full";
// "same layout" when nothing does.
std::string DifferenceFrom(const SearchCandidate& best, const SearchCandidate& c);
// "TP8 PP2 VPP2 CP1 DP4 SP DistOpt mb1 full" style label.
std::string CandidateLabel(const SearchCandidate& candidate);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_SEARCH_H_
