// Projection of one training step: composes the timed op lists of the module profilers into
// layers (with TP/CP/EP communication and overlap), pipeline stages and schedules, DP/FSDP
// gradient and weight communication and the optimizer step; estimates memory per GPU; and
// derives TGS, TFLOP/s per GPU and MFU. This is the public entry point of projection/.
#ifndef PROJECTOR_PROJECTION_PROJECTION_H_
#define PROJECTOR_PROJECTION_PROJECTION_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend_registry.h"
#include "core/units.h"
#include "profilers/op_list.h"
#include "projection/layer_composer.h"
#include "projection/layer_time_adjuster.h"
#include "projection/memory_model.h"
#include "projection/pass_plan.h"
#include "projection/step_composer.h"
#include "scenario/scenario.h"

namespace projector {

// How a projection runs (what it models is the Scenario's).
struct ProjectionOptions {
  // Keep every timed op (Projection::op_tables) for a per-op report (`--show-ops`). Off in the
  // hot path: the op lists are copied only when asked for.
  bool keep_ops = false;
  // Replaces module and layer times between timing and composition (profile mode's measured
  // module times); none: the backends' times as they are. Must outlive the call.
  const LayerTimeAdjuster* adjuster = nullptr;
  // Keep the replayed step (Projection::timeline) for a trace (`--trace`).
  bool keep_timeline = false;
  // With keep_timeline: each chunk's passes as its layers' modules and collectives
  // (Projection::chunk_plans), for the event replay.
  bool keep_pass_plans = false;
  // Abandon the projection before its pipeline replay when the step's lower bound
  // (PipelineLowerBound of the passes) is at least this: a search's K-th best step so far. The
  // Projection then holds only abandoned, step_lower_bound, micro_batches, layer_kinds,
  // embedding and output_layer (and peak_memory_per_gpu, with abandon_above_memory).
  Seconds abandon_at{std::numeric_limits<double>::infinity()};
  // Abandon the projection before its pipeline replay when its peak memory per GPU is above
  // this (a search's memory limit: such a layout is removed whatever its step). The memory
  // model reads no time, so the figure is the full projection's. The Projection then holds
  // over_memory_limit, memory, peak_memory_per_gpu, fits_in_memory (false) and what
  // abandon_at leaves.
  std::optional<Bytes> abandon_above_memory = std::nullopt;
};

// The forward, backward and (zero bubble) weight-gradient passes a step's replay holds over all
// pipeline ranks and chunks: pp·vpp · micro-batches · passes per micro-batch. A timeline keeps one
// event each, so a trace or page is refused above kMaxTimelinePasses (a million is ~100 MB).
double ReplayedPasses(const Scenario& scenario);
inline constexpr int64_t kMaxTimelinePasses = 1000000;

// The timed ops of one layer kind or end module for one micro-batch on one GPU, in execution
// order: compute ops as profiled, then the communication the layer composer added (its full
// cost before overlap).
struct OpTable {
  std::string group;  // "dense layer", "moe layer", "embedding", "output"
  int64_t count = 1;  // how many of these the model has (layers of the kind)
  OpList ops;
};

// One layer kind (dense or MoE) of one micro-batch on one GPU.
struct LayerKindTimes {
  bool is_moe = false;
  int64_t count = 0;  // layers of this kind in the model
  std::vector<ModuleTimes> modules;
  Seconds forward;         // compute + exposed TP/CP/EP communication
  Seconds backward;        // dgrad + wgrad + exposed communication
  Seconds recompute;       // extra forward under recompute (0 without)
  Bytes activation_bytes;  // stored for backward per micro-batch, after recompute
};

// With --network: one of the layout's process groups, one collective kind on it, as the network
// backend priced its largest call (where on the network the group lies, the algorithm taken).
struct NetworkGroupUse {
  std::string group;  // "TP", "DP", "EP", "PP", "CP", "DP·CP"; several joined by "/" when equal
  CollectiveOp op;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  std::string placement;  // "dim 0 x 8, dim 1 x 4": dimensions spanned, ranks along each
  Seconds time;
};

// One class of kernels: its time, FLOPs and HBM bytes for one micro-batch through every layer
// (the MTP modules included) and both end modules, forward, backward and the recompute the
// training runs, before any overlap; the once-per-step ops (fp8 weight casts) are left out.
struct KernelClassTotals {
  Seconds time;
  Flops flops;
  Bytes bytes;
};
// The model's compute by class of kernel: GEMMs, attention kernels, memory-bound kernels.
struct ComputeByClass {
  KernelClassTotals gemm, attention, memory_bound;
  void Add(const Op& op, double times);  // by op.kind; collectives are ignored
};

struct Projection {
  std::string scenario_name;
  std::string layout;  // "TP8 PP16 VPP4 CP1 EP1 DP128 SP"
  int64_t num_gpus = 0;
  int64_t micro_batches = 0;  // per pipeline per step: global_batch / (micro_batch · DP)
  std::string schedule;       // "1f1b", "interleaved" or "zb-h1"

  Seconds step_time;
  double tokens_per_s_per_gpu = 0;  // TGS = global_batch · seq_len / step_time / num_gpus
  double tokens_per_s = 0;          // global_batch · seq_len / step_time
  // Model FLOPs per step (recompute NOT counted; PaLM appendix B / Megatron convention):
  //   tokens · (6 · N_matmul + 6 · L · s · H · (d_qk + d_v))
  // with N_matmul = active parameters minus the input-embedding table (a lookup, no FLOPs;
  // routed experts × the MoE capacity factor when it is below 1: the dropped tokens skip them),
  // plus each MTP module's active parameters and its pass of the output head (vocab · h),
  // tokens = global_batch · seq_len, L layers (+ MTP layers), s = seq_len, H query heads,
  // non-causal attention (for MHA: 12 · L · s · h per token, PaLM's term).
  Flops model_flops_per_step;
  double tflops_per_gpu = 0;  // model FLOPs / step_time / num_gpus / 1e12
  // tflops_per_gpu / the GPU's datasheet dense matrix peak for the training precision at the
  // peak clock.
  double mfu = 0;
  FlopsPerSecond peak_flops_per_gpu;

  StepBreakdown breakdown;
  // Share of step time that scales with 1/clock (compute-bound cycles).
  double clock_scaled_share = 0;

  std::vector<LayerKindTimes> layer_kinds;  // dense and/or MoE, whichever exist
  ModuleTimes embedding;
  ModuleTimes output_layer;

  ComputeByClass compute_by_class;

  MemoryFootprint memory;
  Bytes peak_memory_per_gpu;
  // The least peak any other first/last-stage split of the layout can have (set with
  // peak_memory_per_gpu; StepResult::split_peak_lower_bound).
  Bytes split_peak_lower_bound;
  bool fits_in_memory = true;

  std::optional<double> measured_tokens_per_s_per_gpu;
  std::optional<double> error_pct;  // (projected − measured) / measured · 100

  std::vector<std::string> defaults_used;

  // --network: the network's name and file, and each process group's collectives on it.
  std::string network;
  std::string network_file;
  std::vector<std::string> network_dimensions;  // "switch of 8 (NVLink 4 + NVSwitch)", by index
  std::vector<NetworkGroupUse> network_uses;

  // Only with ProjectionOptions::keep_ops.
  std::vector<OpTable> op_tables;
  // Only with ProjectionOptions::keep_timeline: every pass of every pipeline rank and its tail,
  // and how the replay moved activations between stages (one transfer's time; on its own
  // stream, or a rendezvous on the receiving rank's timeline).
  std::vector<TimelineEvent> timeline;
  std::vector<RankTailParts> rank_tails;  // by pipeline rank, with the timeline
  std::vector<ChunkComm> chunk_comm;
  // Under FSDP, with the timeline: each chunk's units in execution order (StepInputs).
  std::vector<std::vector<FsdpUnitTraffic>> chunk_fsdp;      // by rank · vpp + chunk, with the timeline
  // With the timeline and ProjectionOptions::keep_pass_plans: each chunk's passes as its layers'
  // modules and collectives, in order (by rank · vpp + chunk).
  std::vector<ChunkPlan> chunk_plans;
  Seconds pipeline_time;      // the replayed schedule's makespan (before the ranks' tails)
  int64_t critical_rank = 0;  // the pipeline rank whose passes the breakdown follows
  Seconds p2p_transfer;
  bool p2p_overlapped = false;

  bool abandoned = false;          // see ProjectionOptions::abandon_at
  bool over_memory_limit = false;  // see ProjectionOptions::abandon_above_memory
  Seconds step_lower_bound;        // set when ProjectionOptions::abandon_at is finite
};

// Each distinct layer kind of the model (dense, MoE) and the end modules (embedding, output
// layer, and the MTP modules' output head when it differs), profiled, timed and composed: all
// of a projection before the step composer, and most of its cost for a MoE model.
struct ComposedModel {
  std::optional<ComposedLayer> dense, moe;
  int64_t dense_layers = 0, moe_layers = 0;
  ComposedEndModule embedding, output;
  std::optional<ComposedEndModule> mtp_output;
  std::vector<OpTable> op_tables;  // with ProjectionOptions::keep_ops
  ComputeByClass compute_by_class;
};

// What ComposeModel reads of a scenario beyond its model, hardware, backends and the training
// settings a search keeps fixed: the layout except the pipeline depth (only whether there is
// one, and through the stack), its virtual stages, its first/last stage layers and the
// distributed optimizer, which only the step composer reads (the fp8/fp4 weight casts, once per
// step, are a layer's kOncePerStep time, which it adds once whatever the micro-batch count).
// Two scenarios that differ only in these fields (a search's candidates) compose the same model
// when their keys are equal.
struct CompositionKey {
  int64_t tp = 1, cp = 1, ep = 1, etp = 1;
  bool sequence_parallel = false, fsdp = false, turbo_grouped_gemm = true, deepep = false;
  bool moe_a2a_overlap = false, moe_shared_expert_overlap = false, moe_dispatch_fp8 = false;
  bool pipelined = false;    // pp > 1
  bool zero_bubble = false;  // weight gradients deferred
  TrainingStack stack = TrainingStack::kMegatron;
  int64_t micro_batch = 1;
  Recompute recompute = Recompute::kNone;
  int64_t recompute_layers = 0;
  RecomputeModules recompute_modules = kDefaultRecomputeModules;
  double moe_imbalance = 1.0;
  auto operator<=>(const CompositionKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const CompositionKey& k) {
    return H::combine(std::move(h), k.tp, k.cp, k.ep, k.etp, k.sequence_parallel, k.fsdp,
                      k.turbo_grouped_gemm, k.deepep, k.moe_a2a_overlap,
                      k.moe_shared_expert_overlap, k.moe_dispatch_fp8, k.pipelined,
                      k.zero_bubble, k.stack, k.micro_batch, k.recompute, k.recompute_layers,
                      k.recompute_modules, k.moe_imbalance);
  }
};
CompositionKey CompositionKeyOf(const Scenario& scenario);

// The composed model of `scenario` (the first half of Project).
absl::StatusOr<ComposedModel> ComposeModel(const Scenario& scenario, const BackendRefs& backends,
                                           const ProjectionOptions& options = {});

// Projects `scenario` with the model another scenario of the same base and CompositionKey
// composed (or its own). Project(scenario, backends, options) is ComposeModel then this.
absl::StatusOr<Projection> Project(const Scenario& scenario, const BackendRefs& backends,
                                   const ComposedModel& composed,
                                   const ProjectionOptions& options = {});

// Projects one training step with backends the caller built once (MakeBackendSet) and reuses.
// Errors from the profilers/backends pass through (kInvalidArgument, kUnimplemented, ...).
// The four backends of a set, by reference, as the profilers and composers take them.
BackendRefs RefsOf(const BackendSet& set);

absl::StatusOr<Projection> Project(const Scenario& scenario, const BackendRefs& backends,
                                   const ProjectionOptions& options = {});

// Convenience: builds the backends from scenario.backends and scenario.hw, then projects.
absl::StatusOr<Projection> Project(const Scenario& scenario, const ProjectionOptions& options = {});

// Model FLOPs of one training step by the formula documented on Projection.
Flops ModelFlopsPerStep(const ModelSpec& model, const TrainingConfig& training);

}  // namespace projector

#endif  // PROJECTOR_PROJECTION_PROJECTION_H_
