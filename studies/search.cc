#include "studies/search.h"

#include <algorithm>
#include <thread>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/number_format.h"
#include "core/status_macros.h"
#include "projection/projection.h"
#include "scenario/training_defaults.h"
#include "studies/search_passes.h"
#include "core/work_team.h"

// How the seed lab's design space (../shared/seeds/004, ASTRA-sim + STAGE, Part 3) maps onto
// this search.
//
// The lab sweeps dp·tp·pp·sp = 64 with pp = 1, weight_sharded = False and activation_recompute
// on/off: 28 (dp, tp, sp) power-of-two triples × 2 = 56 points. STAGE's `sp` ("Sequence/Token
// parallelism degree") is a dimension of its own: it multiplies the GPU count and splits the
// sequence of every activation over its ranks, attention gathering the other ranks' K/V. That
// is what Megatron calls context parallelism (CP), not Megatron's sequence parallelism: Megatron
// SP lives inside the TP group (same ranks, num_gpus = tp·pp·cp·dp does not change) and only
// shards the LayerNorm/dropout activations between the TP collectives. So:
//
//   lab dp  -> derived DP (= 64 / (tp·cp))
//   lab tp  -> --tp-values 1,2,4,8,16,32,64 with --allow-cross-node-tp (the lab's TP may span
//              its whole 64-NPU torus; here TP > gpus_per_node crosses nodes)
//   lab sp  -> --cp-values 1,2,4,8,16,32,64
//   lab pp = 1 -> --pp-values 1 --vpp-values 1;  weight_sharded = False -> --sharding-values dp
//   lab activation_recompute on/off -> --recompute-values none,full
//
// The kGpuCount constraint then removes the 21 of the 49 (tp, cp) pairs whose product exceeds
// 64, leaving exactly the lab's 28 triples per remaining setting. Megatron SP (on/off) is
// enumerated on top with --sp-values, and the micro-batch (the lab has no gradient
// accumulation) with --micro-batch-values.

namespace projector {
namespace {

using Clock = std::chrono::steady_clock;

struct ConstraintInfo {
  std::string_view name;
  std::string_view description;
  std::string_view hint;  // what to relax when this constraint removed the last candidates
};

// Indexed by SearchConstraint.
constexpr ConstraintInfo kConstraints[kNumSearchConstraints] = {
    {"gpu_count", "tp·pp·cp does not divide the GPU count",
     "choose --tp-values/--pp-values/--cp-values whose products divide --num-gpus"},
    {"tp_cross_node", "TP group crosses a node boundary",
     "pass --allow-cross-node-tp or --tp-values dividing --gpus-per-node"},
    {"tp_heads", "attention or key/value heads not divisible over TP",
     "choose --tp-values dividing the model's head count"},
    {"sp_without_tp", "sequence parallelism with TP 1 (duplicate of SP off)",
     "add --sp-values off or TP values > 1"},
    {"seq_cp", "seq_len not divisible by CP", "choose --cp-values dividing --seq-len"},
    {"seq_tp_sp", "seq_len/CP not divisible by TP under sequence parallelism",
     "add --sp-values off or choose --seq-len divisible by tp·cp"},
    {"vpp_without_pp", "VPP > 1 needs PP > 1", "add --vpp-values 1 or --pp-values > 1"},
    {"schedule_layout", "zb-h1 with PP 1 (duplicate of 1f1b) or with VPP > 1 (one chunk per rank)",
     "add --pipeline-schedule-values 1f1b, or --vpp-values 1 and --pp-values > 1"},
    {"layers_pp_vpp", "layers not divisible by PP·VPP",
     "choose --pp-values/--vpp-values whose product divides the layer count"},
    {"experts_ep", "experts not divisible by EP (EP > 1 needs an MoE model)",
     "choose --ep-values dividing the expert count (1 for dense models)"},
    {"ep_etp_group", "EP·ETP does not divide TP·CP·DP", "choose smaller --ep-values/--etp-values"},
    {"etp_ffn", "expert FFN not divisible by ETP (ETP > 1 needs an MoE model)",
     "choose --etp-values dividing the expert FFN size (1 for dense models)"},
    {"moe_switch_redundant",
     "DeepEP with EP 1, legacy GEMM with one local expert, or MoE switches on a dense model "
     "(duplicates)",
     "add --deepep-values off and --grouped-gemm-values turbo"},
    {"global_batch",
     "global batch not divisible by micro_batch·DP (by micro_batch·DP·PP when interleaved)",
     "choose --global-batch divisible by micro_batch·DP (·PP with VPP > 1) or smaller "
     "--micro-batch-values"},
    {"sharding_without_dp", "distributed optimizer / FSDP with DP·CP 1 (duplicate of plain DP)",
     "add --sharding-values dp"},
    {"scenario_validation", "rejected by scenario validation",
     "see the validation message of the first such layout (project with its flags)"},
    {"bound",
     "an alternative pipeline split whose step lower bound is no better than the K-th best",
     "pass --prune false to project every split"},
    {"projection_error", "the projection returned an error (unsupported combination)",
     "restrict the space to combinations the projection supports"},
    {"memory", "projected peak memory per GPU above the limit",
     "see MemoryHint: the widenings the space does not hold yet"},
};

std::vector<int64_t> DivisorsOf(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

bool KvHeadsSplit(const ModelSpec& m, int64_t tp) {
  if (m.mla || m.num_kv_heads <= 0) return true;
  return m.num_kv_heads >= tp ? m.num_kv_heads % tp == 0 : tp % m.num_kv_heads == 0;
}

template <typename T>
absl::Status NonEmpty(const std::vector<T>& values, std::string_view dimension) {
  if (values.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("search: ", std::string(dimension), ": empty value list; give at least one value"));
  }
  return absl::OkStatus();
}


// Objective key: smaller is better.
double ObjectiveKey(const LayoutMetrics& m, SearchObjective objective) {
  switch (objective) {
    case SearchObjective::kTokensPerGpu:
      return -m.tokens_per_s_per_gpu;
    case SearchObjective::kStepTime:
      return m.step_time.value();
    case SearchObjective::kMemory:
      return m.peak_memory_per_gpu.value();
  }
  return 0;
}

// Memory in GiB, as every view shows it (the --memory-limit-gb flag alone takes decimal GB).
double ToGib(Bytes b) { return b.value() / Gibibytes(1).value(); }

}  // namespace

std::string_view SearchObjectiveName(SearchObjective objective) {
  switch (objective) {
    case SearchObjective::kTokensPerGpu:
      return "tgs";
    case SearchObjective::kStepTime:
      return "step-time";
    case SearchObjective::kMemory:
      return "memory";
  }
  return "tgs";
}

absl::StatusOr<SearchObjective> ParseSearchObjective(std::string_view name) {
  for (SearchObjective o :
       {SearchObjective::kTokensPerGpu, SearchObjective::kStepTime, SearchObjective::kMemory}) {
    if (SearchObjectiveName(o) == name) return o;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown objective '", std::string(name), "'; accepted: tgs, step-time, memory"));
}

std::string_view DpShardingName(DpSharding sharding) {
  switch (sharding) {
    case DpSharding::kNone:
      return "dp";
    case DpSharding::kDistributedOptimizer:
      return "distopt";
    case DpSharding::kFsdp:
      return "fsdp";
  }
  return "dp";
}

absl::StatusOr<DpSharding> ParseDpSharding(std::string_view name) {
  for (DpSharding s : {DpSharding::kNone, DpSharding::kDistributedOptimizer, DpSharding::kFsdp}) {
    if (DpShardingName(s) == name) return s;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown DP sharding '", std::string(name), "'; accepted: dp, distopt, fsdp"));
}

int64_t SearchSpace::RecomputePoints() const {
  int64_t n = 0;
  for (Recompute r : recompute) {
    n += r == Recompute::kSelective ? static_cast<int64_t>(selective_modules.size()) : 1;
  }
  return n;
}

int64_t SearchSpace::Size() const {
  return static_cast<int64_t>(tp.size() * pp.size() * vpp.size() * cp.size() * ep.size() *
                              etp.size() * micro_batch.size() * sequence_parallel.size() *
                              sharding.size() * turbo_grouped_gemm.size() * deepep.size() *
                              pipeline_schedule.size()) *
         RecomputePoints();
}

SearchSpace DefaultSearchSpace(const Scenario& base) {
  SearchSpace s;
  std::vector<int64_t> divisors = DivisorsOf(base.num_gpus);
  s.tp = divisors;
  s.pp = divisors;
  s.cp = divisors;
  // Interleaving beyond 4 chunks per rank rarely pays: each extra chunk adds P2P and the
  // bubble already shrinks as 1/vpp (Narayanan et al. 2021, §2.2.2).
  s.vpp = {1, 2, 4};
  s.micro_batch = {1, 2, 4, 8};
  s.recompute = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  s.selective_modules = {base.training.recompute_modules};
  s.sequence_parallel = {false, true};
  s.sharding = {DpSharding::kNone, DpSharding::kDistributedOptimizer, DpSharding::kFsdp};
  s.pipeline_schedule = {PipelineSchedule::kOneFOneB};
  if (base.model.moe) {
    s.ep = divisors;
    s.etp = {1, 2, 4, 8};
    s.turbo_grouped_gemm = {true, false};
    s.deepep = {false, true};
  } else {
    s.ep = {1};
    s.etp = {1};
    s.turbo_grouped_gemm = {true};
    s.deepep = {false};
  }
  return s;
}

std::string_view SearchConstraintName(SearchConstraint constraint) {
  return kConstraints[static_cast<int>(constraint)].name;
}

std::string_view SearchConstraintDescription(SearchConstraint constraint) {
  return kConstraints[static_cast<int>(constraint)].description;
}

void ApplyCandidate(const SearchCandidate& candidate, double requested_moe_imbalance,
                    Scenario& scenario) {
  scenario.parallel = candidate.parallel;
  scenario.training.micro_batch = candidate.micro_batch;
  scenario.training.SetRecompute(candidate.recompute);
  if (candidate.recompute == Recompute::kSelective) {
    scenario.training.recompute_modules = candidate.recompute_modules;
  }
  scenario.training.recompute_layers = 0;
  scenario.training.moe_imbalance =
      std::min(requested_moe_imbalance, MaxMoeImbalance(scenario.model, candidate.parallel));
}

// These mirror ValidateScenario's rules (projection/scenario.cc) so that each can be counted;
// ValidateScenario still runs on every survivor before it is projected (kScenarioValidation).
namespace {

// The first three constraints, which read only TP, PP, CP and DP: when one fails, every point
// of the space with those degrees fails it first.
std::optional<SearchConstraint> FirstDegreeViolation(const Scenario& base, const ParallelConfig& p,
                                                     bool allow_cross_node_tp) {
  // dp = 0 marks tp·pp·cp beyond the GPU count (EnumerateCandidates), whose product may
  // not even fit in 64 bits; otherwise the product is at most the GPU count.
  if (p.dp <= 0 || p.pp > base.num_gpus / p.tp || p.cp > base.num_gpus / (p.tp * p.pp)) {
    return SearchConstraint::kGpuCount;
  }
  const int64_t model_parallel = p.tp * p.pp * p.cp;
  if (base.num_gpus % model_parallel != 0 || p.dp * model_parallel != base.num_gpus) {
    return SearchConstraint::kGpuCount;
  }
  const int64_t node = base.hw.gpus_per_node;
  if (!allow_cross_node_tp && (p.tp > node || node % p.tp != 0)) {
    return SearchConstraint::kTpCrossNode;
  }
  const ModelSpec& m = base.model;
  if (m.num_attention_heads % p.tp != 0 || !KvHeadsSplit(m, p.tp)) {
    return SearchConstraint::kTpHeads;
  }
  return std::nullopt;
}

}  // namespace

std::optional<SearchConstraint> FirstViolatedConstraint(const Scenario& base,
                                                        const SearchCandidate& c,
                                                        bool allow_cross_node_tp) {
  const ParallelConfig& p = c.parallel;
  const ModelSpec& m = base.model;
  const int64_t seq = base.training.seq_len;
  if (auto bad = FirstDegreeViolation(base, p, allow_cross_node_tp)) return bad;
  if (p.sequence_parallel && p.tp == 1) return SearchConstraint::kSpWithoutTp;
  if (seq % p.cp != 0) return SearchConstraint::kSeqCp;
  if (p.sequence_parallel && (seq / p.cp) % p.tp != 0) return SearchConstraint::kSeqTpSp;
  if (p.vpp > 1 && p.pp == 1) return SearchConstraint::kVppWithoutPp;
  if (p.pipeline_schedule == PipelineSchedule::kZeroBubbleH1 && (p.pp == 1 || p.vpp > 1)) {
    return SearchConstraint::kScheduleLayout;
  }
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0
          ? !UnevenSplitAccepted(m.num_layers, p.pp, p.vpp, p.first_stage_layers,
                                 p.last_stage_layers)
          : !LayersSplitEvenly(m.num_layers, p.pp * p.vpp)) {
    return SearchConstraint::kLayersPpVpp;
  }
  if (m.moe ? m.moe->num_experts % p.ep != 0 : p.ep > 1) return SearchConstraint::kExpertsEp;
  if (m.moe && (p.tp * p.cp * p.dp) % (p.ep * p.etp) != 0) return SearchConstraint::kEpEtpGroup;
  if (m.moe ? m.moe->expert_ffn_hidden % p.etp != 0 : p.etp > 1) return SearchConstraint::kEtpFfn;
  if (m.moe) {
    // DeepEP changes only the EP All-to-All; a legacy (per-expert) grouped GEMM over a single
    // local expert is the same single GEMM as the turbo one.
    if ((p.deepep && p.ep == 1) || (!p.turbo_grouped_gemm && m.moe->num_experts / p.ep == 1)) {
      return SearchConstraint::kMoeSwitchRedundant;
    }
  } else if (p.deepep || !p.turbo_grouped_gemm) {
    return SearchConstraint::kMoeSwitchRedundant;
  }
  if (base.training.global_batch % (c.micro_batch * p.dp) != 0 ||
      !InterleavedMicroBatchesFit(p, base.training.global_batch / (c.micro_batch * p.dp))) {
    return SearchConstraint::kGlobalBatch;
  }
  // The distributed optimizer and FSDP shard over the DP·CP group (Megatron shards the
  // optimizer over data-parallel-with-context-parallel ranks); with one rank nothing is sharded.
  if ((p.fsdp || p.distributed_optimizer) && p.dp * p.cp == 1) {
    return SearchConstraint::kShardingWithoutDp;
  }
  return std::nullopt;
}

std::vector<SearchCandidate> EnumerateCandidates(
    const Scenario& base, const SearchSpace& space,
    std::array<int64_t, kNumSearchConstraints>* removed) {
  std::vector<SearchCandidate> out;
  SearchCandidate c;
  ParallelConfig& p = c.parallel;
  p = base.parallel;
  const int64_t inner_points =
      static_cast<int64_t>(space.ep.size() * space.etp.size() * space.micro_batch.size() *
                           space.sequence_parallel.size() * space.sharding.size() *
                           space.turbo_grouped_gemm.size() * space.deepep.size() *
                           space.pipeline_schedule.size()) *
      space.RecomputePoints();
  // The (recompute, modules) pairs: the module sets apply to selective alone.
  std::vector<std::pair<Recompute, RecomputeModules>> recompute_points;
  for (Recompute r : space.recompute) {
    if (r != Recompute::kSelective) {
      recompute_points.emplace_back(r, kDefaultRecomputeModules);
      continue;
    }
    for (RecomputeModules m : space.selective_modules) recompute_points.emplace_back(r, m);
  }
  for (int64_t tp : space.tp) {
    for (int64_t pp : space.pp) {
      for (int64_t vpp : space.vpp) {
        // A layout whose layers split no way is removed by the layers_pp_vpp check.
        const std::pair<int64_t, int64_t> split =
            DefaultStageSplit(base.model, pp, vpp).value_or(std::make_pair(0, 0));
        p.first_stage_layers = split.first;
        p.last_stage_layers = split.second;
        for (int64_t cp : space.cp) {
          // tp·pp·cp beyond the GPU count (checked by division: the product of three
          // divisors of a large count can overflow) leaves no DP: the gpu_count constraint.
          const bool fits = pp <= base.num_gpus / tp && cp <= base.num_gpus / (tp * pp);
          const int64_t model_parallel = fits ? tp * pp * cp : 0;
          const int64_t dp =
              fits && base.num_gpus % model_parallel == 0 ? base.num_gpus / model_parallel : 0;
          p.tp = tp;
          p.pp = pp;
          p.cp = cp;
          p.dp = dp;
          if (auto bad = FirstDegreeViolation(base, p, space.allow_cross_node_tp)) {
            // Every inner point fails the same degree check first: counted, not visited.
            if (removed) (*removed)[static_cast<int>(*bad)] += inner_points;
            continue;
          }
          for (int64_t ep : space.ep) {
            for (int64_t etp : space.etp) {
              for (int64_t mb : space.micro_batch) {
                for (auto [rc, modules] : recompute_points) {
                  for (bool sp : space.sequence_parallel) {
                    for (DpSharding sh : space.sharding) {
                      for (bool turbo : space.turbo_grouped_gemm) {
                        for (bool deepep : space.deepep) {
                          for (PipelineSchedule sched : space.pipeline_schedule) {
                            p.tp = tp;
                            p.pp = pp;
                            p.vpp = vpp;
                            p.cp = cp;
                            p.dp = dp;
                            p.ep = ep;
                            p.etp = etp;
                            p.sequence_parallel = sp;
                            p.fsdp = sh == DpSharding::kFsdp;
                            p.distributed_optimizer = sh == DpSharding::kDistributedOptimizer;
                            p.turbo_grouped_gemm = turbo;
                            p.deepep = deepep;
                            p.pipeline_schedule = sched;
                            c.micro_batch = mb;
                            c.recompute = rc;
                            c.recompute_modules = modules;
                            std::optional<SearchConstraint> bad =
                                FirstViolatedConstraint(base, c, space.allow_cross_node_tp);
                            if (bad) {
                              if (removed) ++(*removed)[static_cast<int>(*bad)];
                              continue;
                            }
                            out.push_back(c);
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

std::optional<std::pair<int64_t, int64_t>> DefaultStageSplit(const ModelSpec& model, int64_t pp,
                                                             int64_t vpp) {
  const int64_t layers = model.num_layers;
  if (pp <= 0 || vpp <= 0) return std::nullopt;
  if (LayersSplitEvenly(layers, pp * vpp)) return std::make_pair(int64_t{0}, int64_t{0});
  std::optional<std::pair<int64_t, int64_t>> split =
      SuggestUnevenSplit(layers, pp, vpp, model.mtp_layers);
  if (split && UnevenSplitAccepted(layers, pp, vpp, split->first, split->second)) return split;
  return std::nullopt;
}

Seconds StepLowerBound(const ModelSpec& model, const ParallelConfig& parallel,
                       const LayoutMetrics& m) {
  absl::StatusOr<std::vector<ChunkAssignment>> chunks =
      AssignLayers(model, parallel, TrainingConfig{});
  if (!chunks.ok()) return Seconds(0);
  PipelineSpec spec;
  spec.pp = std::max<int64_t>(1, parallel.pp);
  spec.vpp = std::max<int64_t>(1, parallel.vpp);
  spec.micro_batches = m.micro_batches;
  spec.schedule = parallel.pipeline_schedule;
  spec.chunks.reserve(chunks->size());
  for (const ChunkAssignment& a : *chunks) {
    ChunkTimes& t = spec.chunks.emplace_back();
    for (const auto& [n, layer] : {std::pair{a.dense_layers, &m.dense_layer},
                                   std::pair{a.moe_layers, &m.moe_layer}}) {
      t.forward += layer->forward * static_cast<double>(n);
      t.backward += layer->backward * static_cast<double>(n);
    }
    for (const auto& [present, end] :
         {std::pair{a.has_embedding, &m.embedding}, std::pair{a.has_output, &m.output}}) {
      if (!present) continue;
      t.forward += end->forward;
      t.backward += end->backward;
    }
  }
  return PipelineLowerBound(spec);
}

std::string_view BreakdownTermName(int term_idx) {
  return kBreakdownTerms[static_cast<size_t>(term_idx)].short_name;
}

std::string_view DominantCost(const LayoutMetrics& metrics) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(kNumBreakdownTerms); ++i) {
    if (metrics.breakdown[static_cast<size_t>(i)] > metrics.breakdown[static_cast<size_t>(best)]) {
      best = i;
    }
  }
  return kBreakdownTerms[static_cast<size_t>(best)].short_name;
}

std::string LargestOverhead(const LayoutMetrics& metrics) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(kNumBreakdownTerms); ++i) {
    if (kBreakdownTerms[static_cast<size_t>(i)].member == &StepBreakdown::compute) continue;
    const Seconds v = metrics.breakdown[static_cast<size_t>(i)];
    if (v.value() > 0 && (best < 0 || v > metrics.breakdown[static_cast<size_t>(best)])) best = i;
  }
  if (best < 0 || metrics.step_time.value() <= 0) return "none";
  return absl::StrFormat("%s %.1f%%", kBreakdownTerms[static_cast<size_t>(best)].short_name,
                         100.0 * metrics.breakdown[static_cast<size_t>(best)].value() /
                             metrics.step_time.value());
}

LayoutEvaluator ProjectionEvaluator(const BackendRefs& backends,
                                    std::optional<Bytes> memory_limit) {
  LayoutEvaluator e;
  e.compose = [&backends](
                  const Scenario& scenario) -> absl::StatusOr<std::shared_ptr<const ComposedModel>> {
    PROJECTOR_ASSIGN_OR_RETURN(ComposedModel composed, ComposeModel(scenario, backends));
    return std::make_shared<const ComposedModel>(std::move(composed));
  };
  e.project = [&backends, memory_limit](const Scenario& scenario, const ComposedModel* composed,
                                        Seconds abandon_at) -> absl::StatusOr<LayoutMetrics> {
    ProjectionOptions options;
    options.abandon_at = abandon_at;
    options.abandon_above_memory = memory_limit;
    PROJECTOR_ASSIGN_OR_RETURN(Projection proj, composed != nullptr
                                                    ? Project(scenario, backends, *composed, options)
                                                    : Project(scenario, backends, options));
    LayoutMetrics m;
    m.tokens_per_s_per_gpu = proj.tokens_per_s_per_gpu;
    m.step_time = proj.step_time;
    m.mfu = proj.mfu;
    m.tflops_per_gpu = proj.tflops_per_gpu;
    m.peak_memory_per_gpu = proj.peak_memory_per_gpu;
    m.split_peak_lower_bound = proj.split_peak_lower_bound;
    for (size_t t = 0; t < kNumBreakdownTerms; ++t) {
      m.breakdown[t] = proj.breakdown.*kBreakdownTerms[t].member;
    }
    for (const LayerKindTimes& kind : proj.layer_kinds) {
      ChunkTimes& layer = kind.is_moe ? m.moe_layer : m.dense_layer;
      layer.forward = kind.forward;
      layer.backward = kind.backward + kind.recompute;
    }
    m.embedding.forward = proj.embedding.forward;
    m.embedding.backward = proj.embedding.backward;
    m.output.forward = proj.output_layer.forward;
    m.output.backward = proj.output_layer.backward;
    m.abandoned = proj.abandoned;
    m.step_lower_bound = proj.step_lower_bound;
    m.micro_batches = proj.micro_batches;
    return m;
  };
  return e;
}

// The projection's memory model (projection/memory_model.h) already counts a 2 GiB workspace
// (NCCL/RCCL channel buffers, BLAS workspaces, CUDA/HIP context) and 5 % caching-allocator
// fragmentation in every peak. The search keeps a further 5 % of HBM free by default for what
// a steady-state per-stage model does not see: transient peaks (fp32 logits and loss of the
// output layer, optimizer-step temporaries), fragmentation growing over long runs beyond the
// typical 5 % (PyTorch "CUDA memory management" notes that fragmentation can cause OOM while
// memory is reported free), and the gap between the datasheet "80 GB" and what the driver
// leaves to the process. 80 GB H100: limit 76 GB; 192 GB MI300X: 182.4 GB.
Bytes MemoryReserve(const HardwareProfile& hw) { return hw.gpu.hbm_capacity * 0.05; }

Bytes DefaultMemoryLimit(const HardwareProfile& hw) {
  return hw.gpu.hbm_capacity - MemoryReserve(hw);
}

namespace {

// Every value list non-empty and positive, and a job with GPUs.
absl::Status CheckSearchSpace(const Scenario& base, const SearchSpace& space) {
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.tp, "tp values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.pp, "pp values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.vpp, "vpp values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.cp, "cp values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.ep, "ep values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.etp, "etp values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.micro_batch, "micro-batch values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.recompute, "recompute values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.selective_modules, "recompute module sets"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.sequence_parallel, "sp values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.sharding, "sharding values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.pipeline_schedule, "pipeline schedule values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.turbo_grouped_gemm, "grouped-gemm values"));
  PROJECTOR_RETURN_IF_ERROR(NonEmpty(space.deepep, "deepep values"));
  for (const std::vector<int64_t>* list :
       {&space.tp, &space.pp, &space.vpp, &space.cp, &space.ep, &space.etp, &space.micro_batch}) {
    for (int64_t v : *list) {
      if (v <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("search: value list: ", v, " must be > 0"));
      }
    }
  }
  if (base.num_gpus <= 0 || base.hw.gpus_per_node <= 0) {
    return absl::InvalidArgumentError("search: num_gpus and gpus_per_node must be > 0");
  }
  return absl::OkStatus();
}

// The candidates of one pass and what became of them.
struct EvaluatedPass {
  const std::vector<SearchCandidate>& candidates;
  const Evaluations& e;
};

// The candidate with the lowest peak memory among those projected, for the memory hint.
struct LowestPeak {
  const SearchCandidate* candidate = nullptr;
  const LayoutMetrics* metrics = nullptr;
};

// Counts the evaluated and removed candidates of every pass and ranks the survivors by the
// objective (ties in pass order, then enumeration order).
LowestPeak RankSurvivors(std::initializer_list<EvaluatedPass> passes, const SearchOptions& options,
                         SearchResult& result) {
  std::vector<RankedLayout> survivors;
  LowestPeak lowest;
  for (const EvaluatedPass& pass : passes) {
    for (size_t i = 0; i < pass.candidates.size(); ++i) {
      switch (pass.e.outcome[i]) {
        case Outcome::kInvalid:
          ++result.removed[static_cast<int>(SearchConstraint::kScenarioValidation)];
          continue;
        case Outcome::kError:
          ++result.candidates_evaluated;
          ++result.removed[static_cast<int>(SearchConstraint::kProjectionError)];
          continue;
        case Outcome::kPruned:
          ++result.removed[static_cast<int>(SearchConstraint::kBound)];
          continue;
        case Outcome::kPending:
          continue;
        case Outcome::kOk:
          break;
      }
      ++result.candidates_evaluated;
      const LayoutMetrics& m = pass.e.metrics[i];
      if (lowest.metrics == nullptr || m.peak_memory_per_gpu < lowest.metrics->peak_memory_per_gpu) {
        lowest = {.candidate = &pass.candidates[i], .metrics = &m};
      }
      if (options.memory_limit && m.peak_memory_per_gpu > *options.memory_limit) {
        ++result.removed[static_cast<int>(SearchConstraint::kMemory)];
        continue;
      }
      survivors.push_back(RankedLayout{.candidate = pass.candidates[i],
                                       .metrics = m,
                                       .fits_memory = !(m.peak_memory_per_gpu > result.memory_check)});
    }
  }
  std::stable_sort(survivors.begin(), survivors.end(),
                   [&](const RankedLayout& a, const RankedLayout& b) {
                     return ObjectiveKey(a.metrics, options.objective) <
                            ObjectiveKey(b.metrics, options.objective);
                   });
  result.ranked = std::move(survivors);
  return lowest;
}

// The first/last stage splits of a layout with pp > 1 (each stage at least max(1, vpp) layers),
// family by family: `family(shared, middle)` for the middle stages at `middle` layers each and
// the first and last stage sharing the `shared` layers left (pp 2: no middle stage).
template <typename Family>
void ForEachSplitFamily(int64_t layers, const ParallelConfig& p, Family family) {
  const int64_t pp = p.pp, least = std::max<int64_t>(1, p.vpp);
  if (pp == 2) {
    family(layers, int64_t{0});
    return;
  }
  for (int64_t middle = least; (pp - 2) * middle <= layers - 2 * least; ++middle) {
    family(layers - (pp - 2) * middle, middle);
  }
}

// Whether the split is the one the layout was evaluated with: its own first/last stage layers,
// or every stage at layers/pp when it was balanced and the layers divide evenly.
bool IsEvaluatedSplit(int64_t layers, const ParallelConfig& p, int64_t first, int64_t last) {
  if (first == p.first_stage_layers && last == p.last_stage_layers) return true;
  return p.first_stage_layers == 0 && p.last_stage_layers == 0 &&
         layers % (p.pp * p.vpp) == 0 && first == layers / p.pp && last == layers / p.pp;
}

// Every split of ForEachSplitFamily but the evaluated one, given to `visit(first, last, middle)`.
template <typename Visit>
void ForEachAlternativeSplit(int64_t layers, const ParallelConfig& p, Visit visit) {
  const int64_t least = std::max<int64_t>(1, p.vpp);
  ForEachSplitFamily(layers, p, [&](int64_t shared, int64_t middle) {
    for (int64_t first = least; first <= shared - least; ++first) {
      if (!IsEvaluatedSplit(layers, p, first, shared - first)) {
        visit(first, shared - first, middle);
      }
    }
  });
}

}  // namespace

int64_t CountAlternativeSplits(int64_t layers, const ParallelConfig& p) {
  const int64_t least = std::max<int64_t>(1, p.vpp);
  int64_t n = 0;
  ForEachSplitFamily(layers, p, [&](int64_t shared, int64_t /*middle*/) {
    n += std::max<int64_t>(0, shared - 2 * least + 1);
    // The evaluated split is one of two pairs of the family, if either.
    const int64_t even = layers / p.pp;
    auto visited = [&](int64_t first, int64_t last) {
      return first >= least && last >= least && first + last == shared &&
             IsEvaluatedSplit(layers, p, first, last);
    };
    if (visited(p.first_stage_layers, p.last_stage_layers)) --n;
    if ((p.first_stage_layers != even || p.last_stage_layers != even) && visited(even, even)) --n;
  });
  return n;
}

namespace {

// The alternative splits of each layout with pp > 1 evaluated (or bounded) in the first pass whose
// lower bound (first the busiest stage's passes with every layer at the cheaper kind's cost, then
// StepLowerBound) is below `threshold`; the others are counted under kBound. A layout whose
// splits all lie over the memory limit (SplitMemoryCheck) has its splits counted under kMemory.
struct SplitsFound {
  std::vector<SearchCandidate> splits;
  int64_t enumerated = 0;
  int64_t pruned = 0;
  int64_t over_memory = 0;
};

// When the splits of a layout need no projection to be removed for memory: the least peak any
// of them can have (LayoutMetrics::split_peak_lower_bound) is over the search's limit, and over
// the lowest peak the first pass evaluated, so that none of them would have been the lowest the
// search reports when nothing fits either.
struct SplitMemoryCheck {
  std::optional<Bytes> limit;
  Bytes lowest_first_pass_peak{std::numeric_limits<double>::infinity()};
  bool AllOver(const LayoutMetrics& m) const {
    return limit && m.split_peak_lower_bound > *limit &&
           m.split_peak_lower_bound > lowest_first_pass_peak;
  }
};

// AlternativeSplits of evaluated[begin, end).
SplitsFound AlternativeSplitsOf(const Scenario& base, const std::vector<SearchCandidate>& evaluated,
                                const Evaluations& e, Seconds threshold,
                                const SplitMemoryCheck& memory, size_t begin, size_t end) {
  SplitsFound found;
  std::vector<SearchCandidate>& out = found.splits;
  int64_t& pruned = found.pruned;
  for (size_t i = begin; i < end; ++i) {
    const bool timed = e.outcome[i] == Outcome::kOk || e.outcome[i] == Outcome::kPruned;
    if (!timed || evaluated[i].parallel.pp < 2) continue;
    const LayoutMetrics& m = e.metrics[i];
    auto pass = [](const ChunkTimes& t) { return t.forward + t.backward; };
    Seconds cheapest = pass(m.dense_layer).value() > 0 ? pass(m.dense_layer) : pass(m.moe_layer);
    if (pass(m.moe_layer).value() > 0) cheapest = std::min(cheapest, pass(m.moe_layer));
    const double mb = static_cast<double>(m.micro_batches);
    // The busiest rank holds at least the average share of every layer and both end modules,
    // whatever the split: when even that reaches the threshold, no split of this layout can.
    const ParallelConfig& p = evaluated[i].parallel;
    const Seconds all_passes = pass(m.dense_layer) * static_cast<double>(base.model.num_layers -
                                                                         base.model.NumMoeLayers()) +
                               pass(m.moe_layer) * static_cast<double>(base.model.NumMoeLayers()) +
                               pass(m.embedding) + pass(m.output);
    auto remove_every_split = [&](int64_t& removed) {
      const int64_t n = CountAlternativeSplits(base.model.num_layers, p);
      found.enumerated += n;
      removed += n;
    };
    if (!(all_passes * (mb / static_cast<double>(p.pp)) < threshold)) {
      remove_every_split(pruned);
      continue;
    }
    if (memory.AllOver(m)) {
      remove_every_split(found.over_memory);
      continue;
    }
    SearchCandidate alt = evaluated[i];
    ForEachAlternativeSplit(
        base.model.num_layers, evaluated[i].parallel, [&](int64_t first, int64_t last, int64_t mid) {
          ++found.enumerated;
          const Seconds busiest =
              std::max({cheapest * static_cast<double>(first) + pass(m.embedding),
                        cheapest * static_cast<double>(mid),
                        cheapest * static_cast<double>(last) + pass(m.output)});
          alt.parallel.first_stage_layers = first;
          alt.parallel.last_stage_layers = last;
          if (!(busiest * mb < threshold) ||
              !(StepLowerBound(base.model, alt.parallel, m) < threshold)) {
            ++pruned;
            return;
          }
          out.push_back(alt);
        });
  }
  return found;
}

// The alternative splits, found over `threads` slices of `evaluated` side by side and joined in
// enumeration order; the enumerated and pruned ones are counted into `result`.
std::vector<SearchCandidate> AlternativeSplits(const Scenario& base,
                                               const std::vector<SearchCandidate>& evaluated,
                                               const Evaluations& e, Seconds threshold,
                                               std::optional<Bytes> memory_limit, int threads,
                                               SearchResult& result) {
  SplitMemoryCheck memory{.limit = memory_limit};
  for (size_t i = 0; i < e.outcome.size(); ++i) {
    if (e.outcome[i] == Outcome::kOk) {
      memory.lowest_first_pass_peak =
          std::min(memory.lowest_first_pass_peak, e.metrics[i].peak_memory_per_gpu);
    }
  }
  const size_t slices = static_cast<size_t>(std::max(1, threads));
  std::vector<SplitsFound> found(slices);
  std::vector<std::thread> pool;
  for (size_t t = 0; t < slices; ++t) {
    pool.emplace_back([&, t] {
      found[t] = AlternativeSplitsOf(base, evaluated, e, threshold, memory,
                                     evaluated.size() * t / slices,
                                     evaluated.size() * (t + 1) / slices);
    });
  }
  for (std::thread& worker : pool) worker.join();
  std::vector<SearchCandidate> out;
  for (SplitsFound& f : found) {
    out.insert(out.end(), f.splits.begin(), f.splits.end());
    result.splits_enumerated += f.enumerated;
    result.removed[static_cast<int>(SearchConstraint::kBound)] += f.pruned;
    result.removed[static_cast<int>(SearchConstraint::kMemory)] += f.over_memory;
  }
  return out;
}

// What to relax when the memory limit removed the last layouts: the widenings the space does not
// hold yet (full recompute, FSDP, deeper pipelines or wider TP among the GPU count's divisors),
// else the limit itself.
std::string MemoryHint(const Scenario& base, const SearchSpace& space) {
  std::vector<std::string> widen;
  auto holds = [](const auto& list, const auto& v) {
    return std::find(list.begin(), list.end(), v) != list.end();
  };
  if (!holds(space.recompute, Recompute::kFull)) widen.push_back("--recompute-values full");
  if (!holds(space.sharding, DpSharding::kFsdp)) widen.push_back("--sharding-values fsdp");
  auto larger = [&](const std::vector<int64_t>& list, int64_t cap) -> std::optional<int64_t> {
    const int64_t most = *std::max_element(list.begin(), list.end());
    for (int64_t d = most + 1; d <= std::min(cap, base.num_gpus); ++d) {
      if (base.num_gpus % d == 0) return d;
    }
    return std::nullopt;
  };
  if (auto pp = larger(space.pp, base.model.num_layers)) {
    widen.push_back(absl::StrCat("larger --pp-values (next: ", *pp, ")"));
  }
  if (auto tp = larger(space.tp, space.allow_cross_node_tp ? base.num_gpus : base.hw.gpus_per_node)) {
    widen.push_back(absl::StrCat("larger --tp-values (next: ", *tp, ")"));
  }
  std::string hint = "raise --memory-limit-gb or pass --memory-limit-gb none";
  if (!widen.empty()) absl::StrAppend(&hint, ", or widen the space with ", absl::StrJoin(widen, ", "));
  return hint;
}

// No survivor: names the constraint that removed the last candidates (the last one in check
// order that removed any), with what to relax.
absl::Status NoSurvivorError(const Scenario& base, const SearchOptions& options,
                             const SearchResult& result, const Evaluations& e,
                             const LowestPeak& lowest) {
  int last = -1;
  for (int k = 0; k < kNumSearchConstraints; ++k) {
    if (result.removed[static_cast<size_t>(k)] > 0) last = k;
  }
  if (last < 0) {
    return absl::FailedPreconditionError("search: the search space is empty");
  }
  const ConstraintInfo& info = kConstraints[last];
  std::string detail;
  const auto constraint = static_cast<SearchConstraint>(last);
  if (constraint == SearchConstraint::kMemory && lowest.metrics != nullptr) {
    detail = absl::StrFormat(" (limit %.1f GiB; the lowest peak was %.1f GiB, %s)",
                             ToGib(*options.memory_limit),
                             ToGib(lowest.metrics->peak_memory_per_gpu),
                             CandidateLabel(*lowest.candidate));
  } else if (constraint == SearchConstraint::kProjectionError) {
    detail = absl::StrCat(" (first: ", e.first_error, ")");
  } else if (constraint == SearchConstraint::kScenarioValidation) {
    detail = absl::StrCat(" (first: ", e.first_invalid, ")");
  } else if (constraint == SearchConstraint::kTpHeads) {
    detail = absl::StrFormat(" (%s has %d heads, %d key/value heads)", base.model.name,
                             base.model.num_attention_heads, base.model.num_kv_heads);
  } else if (constraint == SearchConstraint::kTpCrossNode) {
    detail = absl::StrFormat(" (%d GPUs per node)", base.hw.gpus_per_node);
  } else if (constraint == SearchConstraint::kLayersPpVpp) {
    detail = absl::StrFormat(" (%s has %d layers)", base.model.name, base.model.num_layers);
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "search: no valid layout among %s candidates: constraint '%s' (%s) removed the last %s%s; "
      "%s",
      FormatCount(result.candidates_enumerated), info.name, info.description,
      FormatCount(result.removed[static_cast<size_t>(last)]), detail,
      constraint == SearchConstraint::kMemory ? MemoryHint(base, options.space)
                                              : std::string(info.hint)));
}

}  // namespace

absl::StatusOr<SearchResult> SearchLayouts(const Scenario& base, const SearchOptions& options,
                                           const LayoutEvaluator& evaluate) {
  const SearchSpace& space = options.space;
  PROJECTOR_RETURN_IF_ERROR(CheckSearchSpace(base, space));
  WorkTeam& team = options.team != nullptr ? *options.team : Solo();
  if (!team.coordinator()) {
    const int lanes = team.Lanes(options.threads);
    CandidateProjector projector(base, evaluate, lanes);
    return team.Serve([&](int lane, std::string_view request) {
      return projector.Perform(lane, request);
    }, lanes);
  }
  StudyScope study(team);
  const Clock::time_point start = Clock::now();
  SearchResult result;
  result.objective = options.objective;
  result.memory_limit = options.memory_limit;
  result.memory_check = options.memory_limit ? *options.memory_limit : DefaultMemoryLimit(base.hw);
  result.candidates_enumerated = space.Size();
  std::vector<SearchCandidate> candidates = EnumerateCandidates(base, space, &result.removed);
  const int lanes =
      std::clamp(team.Lanes(options.threads), 1, std::max(1, static_cast<int>(candidates.size())));
  result.threads = lanes;
  CandidateProjector projector(base, evaluate, lanes);
  const bool timed_objective = options.objective != SearchObjective::kMemory;
  TopSteps top(options.exact_top, options.memory_limit);
  TopSteps* pruning = options.prune && timed_objective ? &top : nullptr;
  absl::Status ran;
  Evaluations e = EvaluateCandidates(base, candidates, projector, team, lanes, options, pruning,
                                     /*pass_id=*/1, start, "layouts", ran);
  PROJECTOR_RETURN_IF_ERROR(ran);
  // The second pass: every other pipeline split of the layouts the first one timed.
  std::vector<SearchCandidate> splits;
  Evaluations more;
  if (options.explore_splits && timed_objective) {
    splits = AlternativeSplits(
        base, candidates, e,
        pruning ? top.Threshold() : Seconds(std::numeric_limits<double>::infinity()),
        pruning ? options.memory_limit : std::nullopt, result.threads, result);
    result.candidates_enumerated += result.splits_enumerated;
    if (!splits.empty()) {
      more = EvaluateCandidates(base, splits, projector, team, lanes, options, pruning,
                                /*pass_id=*/2, start, "splits", ran);
      PROJECTOR_RETURN_IF_ERROR(ran);
      if (e.first_error.empty()) e.first_error = more.first_error;
      if (e.first_invalid.empty()) e.first_invalid = more.first_invalid;
    }
  }
  result.first_projection_error = e.first_error;
  const LowestPeak lowest = RankSurvivors({{candidates, e}, {splits, more}}, options, result);
  result.elapsed_s = ElapsedSeconds(start);
  if (!result.ranked.empty()) return result;
  return NoSurvivorError(base, options, result, e, lowest);
}

absl::StatusOr<SearchResult> SearchLayouts(const Scenario& base, const SearchOptions& options) {
  // One backend set per attention kernel a candidate can resolve to (with "auto", FSDP-only and
  // other layouts may differ), so every candidate is timed as `project` would time it.
  std::map<std::string, BackendSet> sets;
  std::map<std::string, BackendRefs> refs;
  for (bool native : {false, true}) {
    Scenario s = base;
    s.parallel.fsdp = native;
    s.parallel.tp = 1;
    s.parallel.pp = 1;
    PROJECTOR_RETURN_IF_ERROR(ResolveKernels(s, "search"));
    if (sets.contains(s.attention_kernel_used)) continue;
    PROJECTOR_ASSIGN_OR_RETURN(BackendSet set, MakeBackendSet(base.backends, s.hw));
    const BackendSet& kept = sets.emplace(s.attention_kernel_used, std::move(set)).first->second;
    refs.emplace(s.attention_kernel_used, RefsOf(kept));
  }
  std::map<std::string, LayoutEvaluator> evaluators;
  for (const auto& [kernel, r] : refs) evaluators.emplace(kernel, ProjectionEvaluator(r, options.memory_limit));
  LayoutEvaluator by_kernel;
  by_kernel.compose = [&evaluators](const Scenario& scenario) {
    return evaluators.at(scenario.attention_kernel_used).compose(scenario);
  };
  by_kernel.project = [&evaluators](const Scenario& scenario, const ComposedModel* composed,
                                    Seconds abandon_at) {
    return evaluators.at(scenario.attention_kernel_used).project(scenario, composed, abandon_at);
  };
  return SearchLayouts(base, options, by_kernel);
}

std::string DifferenceFrom(const SearchCandidate& best, const SearchCandidate& c) {
  const ParallelConfig& a = best.parallel;
  const ParallelConfig& b = c.parallel;
  std::vector<std::string> parts;
  for (const auto& [name, x, y] : {std::tuple{"TP", a.tp, b.tp}, std::tuple{"PP", a.pp, b.pp},
                                   std::tuple{"VPP", a.vpp, b.vpp}, std::tuple{"CP", a.cp, b.cp},
                                   std::tuple{"EP", a.ep, b.ep}, std::tuple{"ETP", a.etp, b.etp},
                                   std::tuple{"mb", best.micro_batch, c.micro_batch}}) {
    if (x != y) parts.push_back(absl::StrCat(name, " ", x, "→", y));
  }
  if (a.first_stage_layers != b.first_stage_layers || a.last_stage_layers != b.last_stage_layers) {
    parts.push_back(absl::StrFormat("split %d/%d→%d/%d", a.first_stage_layers,
                                    a.last_stage_layers, b.first_stage_layers,
                                    b.last_stage_layers));
  }
  auto sharding = [](const ParallelConfig& p) {
    return p.fsdp ? "FSDP" : (p.distributed_optimizer ? "DistOpt" : "DP");
  };
  auto on_off = [](bool v) { return v ? "on" : "off"; };
  if (best.recompute != c.recompute || best.recompute_modules != c.recompute_modules) {
    parts.push_back(absl::StrCat("recompute ",
                                 RecomputePhrase(best.recompute, best.recompute_modules), "→",
                                 RecomputePhrase(c.recompute, c.recompute_modules)));
  }
  if (a.sequence_parallel != b.sequence_parallel) {
    parts.push_back(absl::StrCat("SP ", on_off(a.sequence_parallel), "→",
                                 on_off(b.sequence_parallel)));
  }
  if (std::string_view(sharding(a)) != sharding(b)) {
    parts.push_back(absl::StrCat(sharding(a), "→", sharding(b)));
  }
  if (a.turbo_grouped_gemm != b.turbo_grouped_gemm) {
    parts.push_back(b.turbo_grouped_gemm ? "legacy→turbo" : "turbo→legacy");
  }
  if (a.deepep != b.deepep) {
    parts.push_back(absl::StrCat("DeepEP ", on_off(a.deepep), "→", on_off(b.deepep)));
  }
  if (a.pipeline_schedule != b.pipeline_schedule) {
    parts.push_back(absl::StrCat(std::string(PipelineScheduleName(a.pipeline_schedule)), "→",
                                 std::string(PipelineScheduleName(b.pipeline_schedule))));
  }
  return parts.empty() ? "same layout" : absl::StrJoin(parts, ", ");
}

std::string CandidateLabel(const SearchCandidate& c) {
  return absl::StrCat(
      LayoutSummary(c.parallel), " mb", c.micro_batch, " ",
      RecomputePhrase(c.recompute, c.recompute_modules),
      c.parallel.ep > 1 || !c.parallel.turbo_grouped_gemm
          ? (c.parallel.turbo_grouped_gemm ? " turbo" : " legacy")
          : "",
      c.parallel.deepep ? " DeepEP" : "",
      c.parallel.first_stage_layers > 0 || c.parallel.last_stage_layers > 0
          ? absl::StrFormat(" split %d/%d", c.parallel.first_stage_layers,
                            c.parallel.last_stage_layers)
          : "",
      c.parallel.pipeline_schedule == PipelineSchedule::kZeroBubbleH1 ? " zb-h1" : "");
}

std::string ReproduceCommand(const Scenario& base, const SearchCandidate& c) {
  const ParallelConfig& p = c.parallel;
  std::string cmd = absl::StrFormat(
      "project --profiling-mode simulate%s --gpu-arch %s --model %s --num-gpus %d "
      "--gpus-per-node %d --tp %d --pp %d",
      base.scenario_file.empty() ? "" : absl::StrCat(" --scenario ", base.scenario_file),
      base.hw.name, base.model.name, base.num_gpus, base.hw.gpus_per_node, p.tp, p.pp);
  // Over a scenario file every layout field is spelled out: the file's own would stand otherwise.
  const bool spell_out = !base.scenario_file.empty();
  if (p.vpp > 1 || spell_out) absl::StrAppend(&cmd, " --vpp ", p.vpp);
  if (p.first_stage_layers > 0 || spell_out) {
    absl::StrAppend(&cmd, " --first-stage-layers ", p.first_stage_layers);
  }
  if (p.last_stage_layers > 0 || spell_out) {
    absl::StrAppend(&cmd, " --last-stage-layers ", p.last_stage_layers);
  }
  if (p.pipeline_schedule != PipelineSchedule::kOneFOneB || spell_out) {
    absl::StrAppend(&cmd, " --pipeline-schedule ",
                    std::string(PipelineScheduleName(p.pipeline_schedule)));
  }
  absl::StrAppend(&cmd, " --cp ", p.cp);
  if (base.model.moe) {
    absl::StrAppend(&cmd, " --ep ", p.ep, " --etp ", p.etp, " --moe-grouped-gemm ",
                    p.turbo_grouped_gemm ? "turbo" : "legacy",
                    p.deepep ? " --deepep" : " --deepep=false");
  }
  absl::StrAppend(&cmd, " --dp ", p.dp);
  // Booleans are always spelled out: the flags' defaults come from the default scenario.
  absl::StrAppend(&cmd, p.sequence_parallel ? " --sequence-parallel" : " --sequence-parallel=false",
                  p.distributed_optimizer ? " --distributed-optimizer"
                                          : " --distributed-optimizer=false",
                  p.fsdp ? " --fsdp" : " --fsdp=false");
  absl::StrAppend(&cmd, " --seq-len ", base.training.seq_len, " --micro-batch ", c.micro_batch,
                  " --global-batch ", base.training.global_batch, " --recompute ",
                  std::string(RecomputeName(c.recompute)));
  if (c.recompute == Recompute::kSelective && c.recompute_modules != kDefaultRecomputeModules) {
    absl::StrAppend(&cmd, " --recompute-modules=", RecomputeModulesName(c.recompute_modules));
  }
  if (base.training.precision != DType::kBf16) {
    absl::StrAppend(&cmd, " --precision ", std::string(DTypeName(base.training.precision)));
  }
  // The kernel the search asked for ("auto" resolves per layout, as `project` resolves it).
  absl::StrAppend(&cmd, " --attention-kernel ", base.training.attention_kernel == AttentionKernel::kUnfused
                                                     ? std::string("unfused")
                                                     : base.training.flash_kernel);
  if (base.training.loss_kernel != LossKernel::kAuto) {
    absl::StrAppend(&cmd, " --loss-kernel ",
                    std::string(LossKernelName(base.training.loss_kernel)));
  }
  if (base.training.stack != TrainingStack::kAuto) {
    absl::StrAppend(&cmd, " --stack ", std::string(TrainingStackName(base.training.stack)));
  }
  if (base.training.train_metric_passes != kAutoTrainMetricPasses) {
    absl::StrAppend(&cmd, " --train-metric-passes ", base.training.train_metric_passes);
  }
  if (base.training.tp_comm_overlap) absl::StrAppend(&cmd, " --tp-comm-overlap");
  if (base.training.moe_a2a_overlap) absl::StrAppend(&cmd, " --moe-a2a-overlap");
  if (base.training.moe_shared_expert_overlap) {
    absl::StrAppend(&cmd, " --moe-shared-expert-overlap");
  }
  if (base.training.cuda_graphs) absl::StrAppend(&cmd, " --cuda-graphs");
  if (base.training.tf_amp) absl::StrAppend(&cmd, " --tf-amp");
  for (auto [flag, value] : {std::pair{" --moe-permute-fusion ", base.training.moe_permute_fusion},
                             {" --moe-router-padding ", base.training.moe_router_padding}}) {
    if (value) absl::StrAppend(&cmd, flag, *value ? "true" : "false");
  }
  if (!base.training.overlap_grad_reduce) absl::StrAppend(&cmd, " --overlap-grad-reduce=false");
  if (!base.training.overlap_param_gather) absl::StrAppend(&cmd, " --overlap-param-gather=false");
  if (base.training.fp8_recipe != Fp8Recipe::kAuto) {
    absl::StrAppend(&cmd, " --fp8-recipe ", std::string(Fp8RecipeName(base.training.fp8_recipe)));
  }
  if (base.training.torch_compile) absl::StrAppend(&cmd, " --torch-compile");
  if (base.backends.network) absl::StrAppend(&cmd, " --network ", base.backends.network->source_file);
  if (base.training.fsdp_impl != FsdpImpl::kAuto) {
    absl::StrAppend(&cmd, " --fsdp-impl ", std::string(FsdpImplName(base.training.fsdp_impl)));
  }
  if (base.training.hidden_dropout != kAutoDropout) {
    absl::StrAppend(&cmd, " --hidden-dropout ",
                    absl::StrFormat("%g", base.training.hidden_dropout));
  }
  if (base.training.attention_dropout != kAutoDropout) {
    absl::StrAppend(&cmd, " --attention-dropout ",
                    absl::StrFormat("%g", base.training.attention_dropout));
  }
  if (!base.hw_overlay_file.empty()) absl::StrAppend(&cmd, " --hw-overlay ", base.hw_overlay_file);
  for (const std::string& what_if : base.hw_settings) absl::StrAppend(&cmd, " ", what_if);
  if (base.training.grad_reduce_dtype != DType::kFp32) {
    absl::StrAppend(&cmd, " --grad-reduce-dtype ",
                    std::string(DTypeName(base.training.grad_reduce_dtype)));
  }
  const TrainingConfig& t = base.training;
  if (t.moe_capacity_factor > 0) {
    absl::StrAppend(&cmd, " --moe-capacity-factor ", t.moe_capacity_factor,
                    t.moe_pad_to_capacity ? " --moe-pad-to-capacity" : "");
  }
  if (const double imbalance = std::min(t.moe_imbalance, MaxMoeImbalance(base.model, p));
      imbalance != 1.0) {
    absl::StrAppend(&cmd, " --moe-imbalance ", imbalance);
  }
  return cmd;
}

}  // namespace projector
