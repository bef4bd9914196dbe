// Layer composer: takes the timed op list of one transformer layer (profilers/) and adds the
// communication the layout implies — TP AllReduce or sequence-parallel AllGather/ReduceScatter,
// CP ring exchange of K/V, EP All-to-All dispatch/combine (and expert-TP gathers) — timed with
// the collective backend, then applies the overlap rules to get the layer's forward, backward
// and recompute time per micro-batch on one GPU. Also holds the compute–communication
// interference model the overlap rules here and in the step composer share: a collective hidden
// behind compute still slows that compute (SMs held by its CTAs, HBM bandwidth it consumes).
#ifndef PROJECTOR_PROJECTION_LAYER_COMPOSER_H_
#define PROJECTOR_PROJECTION_LAYER_COMPOSER_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/collective_backend.h"
#include "core/training_config.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "profilers/module_profilers.h"
#include "profilers/op_list.h"
#include "projection/host_overhead.h"

namespace projector {

// Time of one module (or one exposed-communication term) for one micro-batch.
struct ModuleTimes {
  std::string_view module;  // "attention", "mlp", "moe", "norms", "tp_comm", ...
  Seconds forward;
  Seconds backward;
  Seconds recompute;
};

// Exposed communication of one phase, by parallel dimension.
struct ExposedComm {
  Seconds tp;
  Seconds cp;
  Seconds ep;
  Seconds Total() const { return tp + cp + ep; }
};

// What a collective kernel takes from the compute running beside it, per GPU (from
// HardwareProfile::comm_interference). Default-constructed = nothing: overlapped communication
// is free while hidden, the model before interference.
struct CommInterferenceModel {
  int64_t compute_units = 0;  // SMs / CUs of the GPU
  int64_t scale_up_ctas = 0;  // CTAs of a collective inside one node
  int64_t scale_out_ctas = 0;  // CTAs of a collective spanning nodes
  int64_t ep_dispatch_ctas = 0;  // SMs of a DeepEP-style dispatch/combine kernel
  BytesPerSecond hbm_bandwidth;  // achievable: datasheet x hbm_efficiency; 0 = no HBM contention
};

// The GPU's figures; all zero when the profile has no comm_interference section.
CommInterferenceModel MakeCommInterferenceModel(const HardwareProfile& hw);

// Fractions in [0, 1] of compute throughput a collective takes while it runs: `compute` of
// compute-bound kernels (GEMM, attention: its CTAs / SMs), `memory` of memory-bound kernels (its
// HBM traffic rate / achievable HBM bandwidth).
struct CommSlowdown {
  double compute = 0;
  double memory = 0;
};

// A timed collective (or several back to back) and the slowdown it causes while it runs.
struct TimedCollective {
  Seconds time;
  CommSlowdown slowdown;
};
// Back to back: the times add and the slowdown is their time-weighted mean (exact, as
// InterferenceCost is linear in the time).
TimedCollective Sum(const TimedCollective& a, const TimedCollective& b);

// Slowdown of one collective `op` that the backend timed as `estimate` (one instance).
// `ep_dispatch` = a DeepEP-style A2A kernel (its own SM budget) rather than NCCL channels.
CommSlowdown CollectiveSlowdown(const CommInterferenceModel& model, const CollectiveOp& op,
                                const CollectiveEstimate& estimate, bool ep_dispatch = false);

// The compute-stream time a collective overlaps: `total`, of which `compute_bound` runs
// GEMM/attention kernels and `memory_bound` memory-bound kernels (the rest, e.g. exposed
// communication of another dimension, is not slowed).
struct OverlapWindow {
  Seconds total;
  Seconds compute_bound;
  Seconds memory_bound;
};

// Compute time lost to a collective of duration `comm` spread over `window`:
// comm · (compute_bound · s.compute + memory_bound · s.memory) / total; 0 for an empty window.
Seconds InterferenceCost(Seconds comm, CommSlowdown slowdown, const OverlapWindow& window);

// How much longer the window gets with communication `comm` overlapping it, whose
// InterferenceCost is `cost`: max(comm − total, cost). Comm longer than the window shows as
// exposed; shorter, it is hidden but its slowdown of the compute is not. cost = 0 gives the
// interference-free max(0, comm − total).
Seconds OverlappedExposure(Seconds comm, Seconds cost, const OverlapWindow& window);

struct LayerCompositionContext {
  const ModelSpec& model;
  const ParallelConfig& parallel;
  const TrainingConfig& training;
  // Recompute the layer was profiled with (its kRecompute ops). Under kFull the recompute
  // forward repeats the layer's forward collectives.
  Recompute recompute = Recompute::kNone;
  bool tp_comm_overlap = false;
  CommInterferenceModel interference{};
  // A zero-bubble schedule runs the weight-gradient GEMMs in a later pass (W), so the backward
  // TP collectives Megatron hides behind them (input-grad AllReduce / ReduceScatter) have no
  // wgrad GEMM to overlap in B and are exposed there.
  bool weight_grad_deferred = false;
  // The host's cost per op and CUDA graphs (projection/host_overhead.h); default: not modelled.
  HostCostModel host{};
  // What the stack runs (scenario/training_defaults.h ResolveRunChoices): the pairs router
  // padding adds to the All-to-All.
  RunChoices run{};
};

// One layer, one micro-batch, one GPU. "compute" = GEMM, attention and memory-bound ops.
struct ComposedLayer {
  bool is_moe = false;
  Seconds forward_compute;
  Seconds backward_compute;   // dgrad + wgrad
  // The part of backward_compute in weight-gradient ops: a zero-bubble schedule's W.
  Seconds backward_weight_grad;
  Seconds recompute_compute;  // the layer's kRecompute ops
  // Once per step, in the first micro-batch's forward only: the layer's kOncePerStep ops
  // (the fp8 weight casts), and the part of them that scales with 1/clock.
  Seconds once_per_step_compute;
  Seconds once_per_step_clock_scaled;
  // Parts of the compute that scale with 1/clock.
  Seconds forward_clock_scaled;
  Seconds backward_clock_scaled;
  Seconds recompute_clock_scaled;
  // Parts of the compute spent in memory-bound kernels (the rest is GEMM / attention).
  Seconds forward_memory_bound;
  Seconds backward_memory_bound;
  Seconds recompute_memory_bound;
  // Exposed communication incl. the compute slowdown of the hidden part (InterferenceCost).
  ExposedComm forward_comm;
  ExposedComm backward_comm;
  ExposedComm recompute_comm;
  // Host time not hidden behind the GPU work (LayerHostExposure).
  HostExposure host;
  // Per module compute, plus one entry per exposed communication dimension.
  std::vector<ModuleTimes> modules;
  OpList comm_ops;  // the added collectives, timed (time = whole cost, before overlap)
  double dense_parameters = 0;   // per GPU, after TP/EP sharding
  double expert_parameters = 0;  // per GPU, after EP/ETP sharding
  Bytes activation_bytes;            // per micro-batch, no recompute
  Bytes activation_bytes_selective;  // per micro-batch, selective recompute
  Bytes input_bytes;                 // the layer input kept per micro-batch under full recompute

  Seconds Forward() const { return forward_compute + forward_comm.Total() + host.forward; }
  Seconds Backward() const { return backward_compute + backward_comm.Total() + host.backward; }
  Seconds Recompute() const {
    return recompute_compute + recompute_comm.Total() + host.recompute;
  }
};

// Composes a layer whose ops TimeLayer already timed. kInvalidArgument/kUnimplemented from the
// collective backend pass through.
absl::StatusOr<ComposedLayer> ComposeLayer(const LayerProfile& timed_layer,
                                           const LayerCompositionContext& ctx,
                                           const CollectiveBackend& collective);

// The embedding (first stage) or the output layer with loss (last stage), composed.
struct ComposedEndModule {
  Seconds forward_compute;
  Seconds backward_compute;
  Seconds backward_weight_grad;  // part of backward_compute in weight-gradient ops
  Seconds forward_clock_scaled;
  Seconds backward_clock_scaled;
  Seconds forward_memory_bound;   // part of forward_compute in memory-bound kernels
  Seconds backward_memory_bound;  // part of backward_compute in memory-bound kernels
  Seconds forward_tp_comm;   // exposed (incl. the interference of its hidden part)
  Seconds backward_tp_comm;  // exposed (incl. the interference of its hidden part)
  double parameters = 0;     // per GPU (dense)
  Bytes activation_bytes;    // per micro-batch
  Bytes transient_bytes;     // held briefly beyond activation_bytes (ModuleProfile)
  Bytes after_backward_bytes;  // alive after the backward, activations freed (ModuleProfile)
  Seconds Forward() const { return forward_compute + forward_tp_comm; }
  Seconds Backward() const { return backward_compute + backward_tp_comm; }
};

// Composes the embedding (is_output = false) or the output layer with loss (true): adds the
// vocab-parallel TP communication. Embedding: forward AllReduce (ReduceScatter under SP) of its
// output, backward AllGather under SP. Output: forward AllGather of the input under SP and three
// [tokens] fp32 AllReduces of the vocab-parallel cross-entropy (max, sum-exp, target logit);
// backward AllReduce (ReduceScatter under SP) of the input grad under its wgrad GEMM.
absl::StatusOr<ComposedEndModule> ComposeEndModule(const ModuleProfile& timed_module,
                                                   bool is_output,
                                                   const LayerCompositionContext& ctx,
                                                   const CollectiveBackend& collective);

// Bytes of the activation tensor [tokens, hidden] in bf16 that one GPU holds between layers
// (tokens = micro_batch · seq_len / CP, further / TP under sequence parallelism).
Bytes LayerInputBytes(const ModelSpec& model, const ParallelConfig& parallel,
                      const TrainingConfig& training);

}  // namespace projector

#endif  // PROJECTOR_PROJECTION_LAYER_COMPOSER_H_
