#include "projection/memory_model.h"

#include <algorithm>

namespace projector {

StageMemory EstimateStageMemory(const StageMemoryInput& in, const MemoryModelConfig& config) {
  const double dense_shard = static_cast<double>(std::max<int64_t>(1, config.dense_shard));
  const double expert_shard = static_cast<double>(std::max<int64_t>(1, config.expert_shard));
  const double vpp = static_cast<double>(std::max<int64_t>(1, config.vpp));
  StageMemory s;
  s.parameters = in.dense_parameters + in.expert_parameters;
  // Parameters whose state this GPU keeps under sharding.
  double sharded = in.dense_parameters / dense_shard + in.expert_parameters / expert_shard;
  double grad_params = config.fsdp ? sharded : s.parameters;
  double optim_params = (config.fsdp || config.distributed_optimizer) ? sharded : s.parameters;
  if (config.fsdp) {
    // FSDP keeps no bf16 copy of its shard: the sharded fp32 parameter is the master copy
    // (counted with the optimizer state) and mixed precision casts it to bf16 on the
    // all-gather. The bf16 weights alive are the unsharded layers: FSDP2 unshards the
    // current layer while prefetching the next one.
    s.weights = Bytes(2.0 * in.largest_layer_parameters * kWeightBytesPerParam);
  } else {
    s.weights = Bytes(s.parameters * kWeightBytesPerParam);
  }
  s.gradients =
      Bytes(grad_params * (config.fsdp ? kGradBytesPerParam : config.grad_bytes_per_param));
  if (config.fsdp) {
    s.gradients += Bytes(in.largest_layer_parameters * config.fsdp_gradient_bytes_per_unit_param);
  }
  s.optimizer_state = Bytes(optim_params * kOptimizerBytesPerParam);
  s.in_flight_micro_batches = in.in_flight_chunk_micro_batches;
  const int64_t deferred = std::clamp<int64_t>(in.deferred_weight_grad_micro_batches, 0,
                                               in.in_flight_chunk_micro_batches);
  const Bytes stored =
      in.activations_per_micro_batch *
          (static_cast<double>(in.in_flight_chunk_micro_batches - deferred) / vpp) +
      in.deferred_weight_grad_bytes * static_cast<double>(deferred);
  // After a backward the micro-batch's own activations are gone; the others stay.
  const Bytes after_backward = stored - std::min(stored, in.activations_per_micro_batch / vpp) +
                               in.after_backward_working_set;
  s.activations = std::max(stored + in.transient_working_set, after_backward);
  Bytes live = s.weights + s.gradients + s.optimizer_state + s.activations;
  s.workspace = Gibibytes(kWorkspaceFixedGib) + live * kFragmentationShare;
  s.total = live + s.workspace;
  return s;
}

Bytes SplitInvariantStateBytes(const StageMemory& s, bool fsdp) {
  return fsdp ? s.optimizer_state : s.weights + s.gradients + s.optimizer_state;
}

Bytes PeakLowerBoundOverSplits(Bytes split_invariant_sum, int64_t stages) {
  const Bytes mean = split_invariant_sum / static_cast<double>(std::max<int64_t>(1, stages));
  return Gibibytes(kWorkspaceFixedGib) + mean * (1.0 + kFragmentationShare);
}

MemoryFootprint EstimateMemory(const std::vector<StageMemoryInput>& stages,
                              const MemoryModelConfig& config) {
  MemoryFootprint out;
  out.capacity = config.hbm_capacity;
  out.stages.reserve(stages.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    StageMemory s = EstimateStageMemory(stages[i], config);
    s.stage = static_cast<int64_t>(i);
    if (s.total > out.peak) {
      out.peak = s.total;
      out.peak_stage = s.stage;
    }
    out.stages.push_back(s);
  }
  out.fits = out.capacity.value() <= 0 || out.peak <= out.capacity;
  return out;
}

}  // namespace projector
