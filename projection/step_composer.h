// Step composer: places the layers on pipeline ranks and model chunks, builds each chunk's
// forward/backward time (layers + recompute + exposed FSDP communication + embedding/output),
// replays the pipeline schedule with P2P, then adds the exposed data-parallel gradient
// synchronisation (bucketed, overlapped with the last micro-batch's backward), the
// distributed-optimizer parameter gather and the optimizer step. Hidden FSDP/DP collectives
// still slow the compute they overlap (CommInterferenceModel, layer_composer.h); that slowdown
// is counted in their exposed time. Also feeds the memory model.
#ifndef PROJECTOR_PROJECTION_STEP_COMPOSER_H_
#define PROJECTOR_PROJECTION_STEP_COMPOSER_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/training_config.h"
#include "core/units.h"
#include "models/model_spec.h"
#include "profilers/op_list.h"
#include "projection/layer_composer.h"
#include "projection/memory_model.h"
#include "projection/pipeline_schedule.h"

namespace projector {

// Where the step time goes. The terms add up to the step time exactly: the pipeline terms are
// taken on the pipeline rank with the most work ("critical rank").
struct StepBreakdown {
  Seconds compute;            // GEMM, attention and memory-bound kernels (incl. recompute)
  Seconds exposed_tp_comm;    // TP AllReduce / AllGather / ReduceScatter not hidden
  Seconds exposed_cp_comm;    // CP K/V ring exchange not hidden behind attention
  Seconds exposed_ep_comm;    // EP All-to-All (and expert-TP) not hidden
  Seconds exposed_host;       // host time the GPU waits for (projection/host_overhead.h)
  Seconds pipeline_bubble;    // idle time of the critical rank in the schedule
  Seconds p2p;                // pipeline send/recv on the critical path
  Seconds exposed_dp_comm;    // gradient reduce (+ param gather), incl. compute it slowed
  Seconds exposed_fsdp_comm;  // FSDP gathers / reduce-scatters not hidden, incl. the slowdown
  Seconds fsdp_copies;        // FSDP's memory-bound copies and casts around them (FsdpCopyBytes)
  Seconds optimizer;          // Adam update

  Seconds Total() const {
    return compute + exposed_tp_comm + exposed_cp_comm + exposed_ep_comm + exposed_host +
           pipeline_bubble + p2p + exposed_dp_comm + exposed_fsdp_comm + fsdp_copies + optimizer;
  }
};

// The terms of StepBreakdown in report order, with their label and JSON key (one table for the
// text, JSON and HTML reports).
struct BreakdownTerm {
  std::string_view label;       // "exposed TP comm"
  std::string_view json_key;    // "exposed_tp_comm_s"
  std::string_view short_name;  // "tp_comm" (search's breakdown keys and dominant cost)
  Seconds StepBreakdown::*member;
};
inline constexpr BreakdownTerm kBreakdownTerms[] = {
    {"compute", "compute_s", "compute", &StepBreakdown::compute},
    {"exposed TP comm", "exposed_tp_comm_s", "tp_comm", &StepBreakdown::exposed_tp_comm},
    {"exposed CP comm", "exposed_cp_comm_s", "cp_comm", &StepBreakdown::exposed_cp_comm},
    {"exposed EP comm", "exposed_ep_comm_s", "ep_comm", &StepBreakdown::exposed_ep_comm},
    {"exposed host overhead", "exposed_host_s", "host", &StepBreakdown::exposed_host},
    {"pipeline bubble", "pipeline_bubble_s", "pipeline_bubble", &StepBreakdown::pipeline_bubble},
    {"pipeline P2P", "p2p_s", "p2p", &StepBreakdown::p2p},
    {"exposed DP grad sync", "exposed_dp_comm_s", "dp_comm", &StepBreakdown::exposed_dp_comm},
    {"exposed FSDP comm", "exposed_fsdp_comm_s", "fsdp_comm", &StepBreakdown::exposed_fsdp_comm},
    {"FSDP copies", "fsdp_copies_s", "fsdp_copies", &StepBreakdown::fsdp_copies},
    {"optimizer step", "optimizer_s", "optimizer", &StepBreakdown::optimizer},
};
inline constexpr size_t kNumBreakdownTerms = std::size(kBreakdownTerms);

// The layers of one (rank, chunk); index rank · vpp + chunk.
struct ChunkAssignment {
  int64_t first_layer = 0;
  int64_t num_layers = 0;
  int64_t dense_layers = 0;
  int64_t moe_layers = 0;
  int64_t recomputed_dense = 0;  // full recompute: how many of them are recomputed
  int64_t recomputed_moe = 0;
  bool has_embedding = false;
  bool has_output = false;
  // The model's multi-token-prediction modules, on the output chunk: each one more layer of
  // the last layer's kind (recomputed under full recompute of all layers) and one more pass
  // of the output head and loss.
  int64_t mtp_layers = 0;
  int64_t recomputed_mtp = 0;
};

// Balanced (remainder to the earlier virtual stages), or with parallel.first_stage_layers /
// last_stage_layers on the first/last pipeline rank (each split evenly over its chunks) and the
// rest balanced over the others. Virtual stage of (rank, chunk) = chunk · pp + rank holds
// consecutive layers. Full recompute marks the first recompute_layers (0 = all) of each chunk.
// kFailedPrecondition if the uneven split does not add up.
absl::StatusOr<std::vector<ChunkAssignment>> AssignLayers(const ModelSpec& model,
                                                          const ParallelConfig& parallel,
                                                          const TrainingConfig& training);

// Bytes of Adam's update traffic per parameter a GPU updates (Megatron FusedAdam after
// clip_grad_norm): read fp32 grad, fp32 master, m, v (16 B) + write master, m, v (12 B) and
// the bf16 model weight (2 B) + read the fp32 grad once more for the grad-norm (4 B) = 34 B.
inline constexpr double kOptimizerBytesPerUpdatedParam = 34.0;
// The PyTorch-native stacks' AdamW is not one fused kernel but a sequence of elementwise ops
// over fp32 tensors, each reading its operands and writing its result (recalled from the
// sources, not stored here):
//   Composer's DecoupledAdamW (llm-foundry; composer/optim/decoupled_weight_decay.py, a loop of
//   in-place ops; MPT's recipes set weight_decay 0, which skips its decay multiply):
//   exp_avg.mul_(β1) 8 + .add_(g) 12, exp_avg_sq.mul_(β2) 8, .addcmul_(g, g) 16, sqrt 8,
//   ÷ √bias-correction 8, + eps 8, param.addcdiv_(exp_avg, denom) 16 = 84 B;
//   torch.optim.AdamW's foreach path (torchtitan's default): _foreach_lerp_ 12, mul_ 8,
//   addcmul_ 16, sqrt 8, div_ 8, add_ 8, addcdiv_ 16, the weight-decay mul_ 8 = 84 B.
// torch.nn.utils.clip_grad_norm_ then reads the gradients for the norm (4) and scales them in
// place (8): 96 bytes. FSDP casts the bf16 weights at its gathers, so none are written here.
inline constexpr double kPyTorchAdamWBytesPerUpdatedParam = 96.0;
inline double OptimizerBytesPerUpdatedParam(TrainingStack stack) {
  return RunsPyTorchAttention(stack) ? kPyTorchAdamWBytesPerUpdatedParam
                                     : kOptimizerBytesPerUpdatedParam;
}
// Megatron DDP bucket size: max(40M, 1M · DP) parameters (distributed_data_parallel.py).
inline constexpr double kDdpMinBucketParams = 40e6;
inline constexpr double kDdpBucketParamsPerDpRank = 1e6;
// FSDP fallback overlap when a layer's compute is unknown (Primus PR #560: 93 %, measured on
// Llama-3-70B); with known compute the per-layer max(0, comm − compute) is used instead.
inline constexpr double kFsdpFallbackOverlap = 0.93;

// What follows pipeline rank r's last pass, in the parts an event replay needs apart (the
// bucket reduces themselves are kGradReduce timeline events): the step composer's tail is
// max(finish + reduce_slowdown, last bucket reduce end) + param_gather, then the optimizer.
struct RankTailParts {
  Seconds reduce_slowdown;  // the backward slowed by the DP reduces that overlapped it
  Seconds param_gather;     // distributed-optimizer parameter gathers left exposed
  Seconds optimizer;        // the optimizer step
};

// A model chunk's exposed communication of one parallel dimension per micro-batch (its layers'
// collectives beyond what overlaps), for an event replay that puts it on the network.
struct ExposedPassComm {
  Seconds forward;
  Seconds backward;    // incl. recompute
  int64_t layers = 0;  // layers that communicate over it
};
struct ChunkComm {
  ExposedPassComm tp, cp, ep;
  ExposedPassComm fsdp;  // the FSDP units' gathers and reduce-scatters (layers: units)
};

// One FSDP unit's collectives (a layer, the embedding, the output head) per micro-batch, for
// an export that issues them as the unit schedule does: its parameters gathered (bf16) and its
// gradients reduce-scattered, the dense ones over DP·CP and the expert ones over expert-DP, and
// the time the medium projection gave each.
struct FsdpUnitTraffic {
  Bytes dense_gather, expert_gather, dense_reduce, expert_reduce;
  Seconds gather, reduce;
  // What they take from the compute they hide behind (InterferenceCost): the gather from the
  // previous unit's forward, the backward's gather and reduce-scatter from the unit's backward.
  Seconds forward_interference = {}, backward_interference = {};
};

struct StepInputs {
  const ModelSpec& model;
  const ParallelConfig& parallel;
  const TrainingConfig& training;
  const ComposedLayer* dense = nullptr;  // nullptr when the model has no dense layers
  const ComposedLayer* moe = nullptr;    // nullptr when it has no MoE layers
  ComposedEndModule embedding;
  ComposedEndModule output;
  // The output head as each MTP module runs it, when it differs from `output`: the training
  // metrics (train_metrics op) read only the main head's logits. Absent: `output`.
  std::optional<ComposedEndModule> mtp_output;
  Bytes hbm_capacity;
  // Slowdown of compute by the FSDP/DP collectives it hides; default: none.
  CommInterferenceModel interference{};
  // When set, receives every pass of the replayed schedule and each rank's tail (`--trace`).
  std::vector<TimelineEvent>* timeline = nullptr;
  // With `timeline`: receives each pipeline rank's tail in its parts, and each chunk's exposed
  // TP, CP and EP communication by rank · vpp + chunk (the event replay's).
  std::vector<RankTailParts>* rank_tails = nullptr;
  std::vector<ChunkComm>* chunk_comm = nullptr;
  // With `timeline` under FSDP: each chunk's units in execution order (the embedding, its
  // layers, the output, the MTP modules), by rank · vpp + chunk.
  std::vector<std::vector<FsdpUnitTraffic>>* chunk_fsdp = nullptr;
  RunChoices run{};  // what the stack runs: its FSDP implementation and optimizer
  // Stop before the pipeline replay when PipelineLowerBound of the step's passes is at least
  // this (a search that has this many better layouts already); infinite: always replay.
  Seconds abandon_at{std::numeric_limits<double>::infinity()};
  // Stop before the pipeline replay when the peak memory per GPU is above this; none: replay.
  std::optional<Bytes> abandon_above_memory = std::nullopt;
};

struct StepResult {
  int64_t micro_batches = 0;
  Seconds step_time;
  StepBreakdown breakdown;
  Seconds clock_scaled;  // compute time on the critical path that scales with 1/clock
  int64_t critical_rank = 0;
  Seconds pipeline_time;        // the schedule's makespan, P2P included
  Seconds p2p_transfer;         // one activation transfer between neighbouring stages
  bool p2p_overlapped = false;  // PipelineSpec::p2p_overlapped of the replay
  Seconds dp_comm_total;    // all DP gradient (+ param gather) communication of the critical rank
  Seconds fsdp_comm_total;  // all FSDP communication of the critical rank per step
  std::vector<ChunkAssignment> chunks;
  std::vector<ChunkTimes> chunk_times;
  MemoryFootprint memory;
  // abandoned: the lower bound reached StepInputs::abandon_at, and only micro_batches, chunks
  // and lower_bound are set (and memory.peak, with abandon_above_memory).
  bool abandoned = false;
  // over_memory_limit: the peak memory exceeded StepInputs::abandon_above_memory, and only
  // micro_batches, chunks, memory and lower_bound are set.
  bool over_memory_limit = false;
  // The least peak memory any other first/last-stage split of this layout can have
  // (PeakLowerBoundOverSplits); set wherever memory.peak is.
  Bytes split_peak_lower_bound;
  Seconds lower_bound;  // PipelineLowerBound of the passes (set when abandon_at is finite)
};

// FSDP's memory-bound work per parameter and micro-batch, beyond its collectives, in HBM bytes
// (reads + writes) and kernels, for the FSDP implementation that runs (training.fsdp_impl, by
// default the stack's: ResolvedFsdpImpl) (bf16 weights, e = 2;
// r = grad_reduce_dtype bytes; n = the sharding group; a = (micro-batches − 1)/micro-batches,
// the share of micro-batches whose reduced shard is added to an accumulated one, 3r/n):
//   fsdp1 (llm-foundry's), PyTorch FSDP1 (FlatParameter, MixedPrecision; torch/distributed/fsdp/
//   _runtime_utils.py, _flat_param.py, recalled): forward, the fp32 shard cast to the bf16 copy
//   it gathers (6/n); backward, the same cast for the re-gather (6/n), the flat gradient
//   assembled from the per-parameter views' gradients (SplitWithSizesBackward's cat: 2e), its
//   cast to the reduce dtype when that differs (e + r) and the gradient pre-divide in place
//   before the reduce-scatter (2r; FSDP1 always pre-divides, by a factor > 1 for any group of
//   2 or more).
//   fsdp2 (torchtitan's, Megatron-LM --use-torch-fsdp2), FSDP2 (per-parameter DTensor sharding,
//   _fsdp_collectives.py, recalled): each gather casts the shard (6/n), copies it into the gather
//   buffer (4/n) and copies the gathered buffer out into the parameters (split_with_sizes_copy:
//   2e), forward and backward; the reduce-scatter input is the gradients concatenated and cast
//   (chunk_cat: e + r); no divide (NCCL's average). megatron-fsdp (megatron's), Megatron-FSDP:
//   parameters gathered into and gradients reduced from persistent buffers (zero copy): nothing.
// These run between the compute kernels (or on a side stream next to kernels that fill the
// GPU), so they add to the step.
struct FsdpCopyBytes {
  double forward = 0;
  double backward = 0;
  int64_t forward_launches = 0;
  int64_t backward_launches = 0;
  // Bytes per parameter of the unit being reduced held at once: FSDP1's bf16 flat gradient and
  // its cast copy (e + r, or e when r = e), FSDP2's gradients and the reduce-scatter input
  // (e + r).
  double gradient_working_set = 0;
};
FsdpCopyBytes FsdpCopyBytesPerParam(FsdpImpl impl, double grad_bytes, double group,
                                    int64_t micro_batches);

// kFailedPrecondition when global_batch < micro_batch · DP or layers cannot be placed;
// collective/memory backend errors pass through.
absl::StatusOr<StepResult> ComposeStep(const StepInputs& inputs, const BackendRefs& backends);

// Micro-batches per pipeline per step: global_batch / (micro_batch · DP), floored.
int64_t MicroBatches(const ParallelConfig& parallel, const TrainingConfig& training);

// Expert-data-parallel group of the expert weights: the DP·CP·TP ranks of one stage divided by
// EP·ETP, strided by EP·ETP (rank order TP, CP, DP; experts carved out of that block).
ProcessGroup ExpertDpGroup(const ParallelConfig& parallel);

}  // namespace projector

#endif  // PROJECTOR_PROJECTION_STEP_COMPOSER_H_
