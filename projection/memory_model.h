// Memory model: bytes one GPU holds at the peak of a training step, per pipeline stage —
// weights, gradients, optimizer state (sharded by the distributed optimizer or FSDP),
// activations of the in-flight micro-batches (after recompute), and a workspace allowance.
#ifndef PROJECTOR_PROJECTION_MEMORY_MODEL_H_
#define PROJECTOR_PROJECTION_MEMORY_MODEL_H_

#include <cstdint>
#include <vector>

#include "core/units.h"

namespace projector {

// Bytes per parameter in Megatron-style bf16 mixed precision (Rajbhandari et al. 2020, ZeRO
// §3.1; Megatron-LM distributed optimizer docs: 18 B/param = 2 + 4 + 12, or 6 + 12/d sharded).
inline constexpr double kWeightBytesPerParam = 2.0;     // bf16 weights
inline constexpr double kGradBytesPerParam = 4.0;       // fp32 main_grad buffer (default)
inline constexpr double kOptimizerBytesPerParam = 12.0;  // fp32 master copy + Adam m + v
// Fixed workspace: NCCL/RCCL channel buffers (NCCL_BUFFSIZE 4 MiB × channels × peers of the
// TP/DP/EP communicators) and cuBLAS/hipBLASLt workspaces, plus CUDA/HIP context: ~2 GiB.
inline constexpr double kWorkspaceFixedGib = 2.0;
// Caching-allocator fragmentation on top of the live tensors (PyTorch CUDA caching allocator;
// reserved − allocated is typically 5–10 % in Megatron memory reports): 5 %.
inline constexpr double kFragmentationShare = 0.05;

// What one pipeline rank holds, before DP/FSDP sharding.
struct StageMemoryInput {
  double dense_parameters = 0;   // after TP (and PP) sharding
  double expert_parameters = 0;  // after EP/ETP (and PP) sharding
  // Stored activations of one micro-batch through all of this rank's model chunks.
  Bytes activations_per_micro_batch;
  // (micro-batch, chunk) units in flight at the schedule's peak (InFlightChunkMicroBatches).
  int64_t in_flight_chunk_micro_batches = 1;
  // Of those, the micro-batches past their B that wait for their weight-gradient pass W under
  // a zero-bubble schedule (DeferredWeightGradMicroBatches), and what one of them keeps on this
  // rank until its W: the inputs and output
  // gradients of its linear layers, taken as the activations stored without full recompute
  // (a fully recomputed layer has rebuilt them for B and keeps them for W).
  int64_t deferred_weight_grad_micro_batches = 0;
  Bytes deferred_weight_grad_bytes;
  // The largest working set held briefly on top of the stored activations: one recomputed
  // layer's activations during its backward (full recompute), or the loss's working set at the
  // end of the forward on the stage holding the output layer (ModuleProfile::transient_bytes).
  Bytes transient_working_set;
  // Held right after a micro-batch's backward on the stage with the output layer, when that
  // micro-batch's activations are freed: the train-metric passes over its logits
  // (ModuleProfile::after_backward_bytes). The stage's activations are the larger of the two
  // peaks (the other micro-batches in flight stay stored).
  Bytes after_backward_working_set;
  // Largest layer's parameters on this rank (FSDP holds ~2 gathered layers: current + prefetch).
  double largest_layer_parameters = 0;
};

struct MemoryModelConfig {
  int64_t vpp = 1;
  bool distributed_optimizer = false;
  bool fsdp = false;
  int64_t dense_shard = 1;   // DP·CP: ranks the non-expert state is sharded over
  int64_t expert_shard = 1;  // expert-DP = DP·CP·TP / (EP·ETP)
  // Megatron's main-grad buffer holds the grads in the reduce dtype (4 B fp32, 2 B with
  // --grad-reduce-in-bf16). FSDP keeps its sharded grads in the fp32 of its sharded parameters
  // whatever it reduces in, so it always counts kGradBytesPerParam.
  double grad_bytes_per_param = kGradBytesPerParam;
  // FSDP: the unsharded gradients of the unit being reduced, per parameter of the largest layer
  // (FsdpCopyBytes::gradient_working_set: FSDP1's bf16 flat gradient and its reduce-dtype copy,
  // FSDP2's gradients and their reduce-scatter input; 0 for Megatron-FSDP's persistent buffers).
  double fsdp_gradient_bytes_per_unit_param = 0;
  Bytes hbm_capacity;
};

struct StageMemory {
  int64_t stage = 0;
  double parameters = 0;  // before DP/FSDP sharding
  Bytes weights;
  Bytes gradients;
  Bytes optimizer_state;
  Bytes activations;
  Bytes workspace;
  Bytes total;
  int64_t in_flight_micro_batches = 0;  // (micro-batch, chunk) units
};

struct MemoryFootprint {
  std::vector<StageMemory> stages;
  Bytes peak;
  int64_t peak_stage = 0;
  Bytes capacity;
  bool fits = true;
};

// Per stage:
//   weights = 2 B · P        (FSDP: only the 2 gathered layers · 2 B; the fp32 shard is the
//                             master copy inside the optimizer state)
//   grads   = 4 B · P        (FSDP: / shard; the distributed optimizer keeps the full buffer)
//   optim   = 12 B · P       (distributed optimizer or FSDP: / shard)
//   acts    = (in_flight − deferred) / vpp · activations_per_micro_batch
//             + deferred · deferred_weight_grad_bytes + recompute working set
//   workspace = 2 GiB + 5 % of the above
// with P split into dense (shard DP·CP) and expert (shard expert-DP) parameters.
MemoryFootprint EstimateMemory(const std::vector<StageMemoryInput>& stages,
                              const MemoryModelConfig& config);

// One stage of EstimateMemory (its `stage` index left 0).
StageMemory EstimateStageMemory(const StageMemoryInput& in, const MemoryModelConfig& config);

// The state of a stage that costs the same per parameter on every stage: bf16 weights and
// gradients (unless FSDP, whose gathered layers and unit buffers depend on the largest layer),
// and the optimizer state. Summed over the stages, it is the same whatever the split of the
// layers between them.
Bytes SplitInvariantStateBytes(const StageMemory& s, bool fsdp);
// The least peak any split of the same layers over `stages` pipeline stages can have, given the
// stages' SplitInvariantStateBytes summed: the busiest stage holds at least their mean, with
// the workspace that much live memory brings (fixed part and fragmentation share).
Bytes PeakLowerBoundOverSplits(Bytes split_invariant_sum, int64_t stages);

}  // namespace projector

#endif  // PROJECTOR_PROJECTION_MEMORY_MODEL_H_
