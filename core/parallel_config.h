// The parallel layout of one scenario (degrees, sharding, pipeline schedule, MoE execution
// switches) and the process groups it implies. The training-run settings are in
// core/training_config.h; validation against a model and a cluster lives in scenario/.
#ifndef PROJECTOR_CORE_PARALLEL_CONFIG_H_
#define PROJECTOR_CORE_PARALLEL_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/op_shapes.h"

namespace projector {

// Pipeline schedule. kOneFOneB: Megatron's 1F1B, interleaved when vpp > 1 (one backward pass per
// micro-batch and chunk, weight gradients inside it). kZeroBubbleH1: ZB-H1 of Qi et al., "Zero
// Bubble Pipeline Parallelism" (ICLR 2024, arXiv 2401.10241): the backward is split into B
// (input gradients, on the critical path between stages) and W (weight gradients, deferred to
// fill the pipeline bubble); one chunk per rank, peak activation memory of 1F1B's first stage.
enum class PipelineSchedule { kOneFOneB, kZeroBubbleH1 };
// "1f1b" or "zb-h1".
std::string_view PipelineScheduleName(PipelineSchedule s);
absl::StatusOr<PipelineSchedule> ParsePipelineSchedule(std::string_view name);
// The schedule names ParsePipelineSchedule accepts.
inline constexpr std::string_view kPipelineScheduleNames[] = {"1f1b", "zb-h1"};

// Rank order: TP fastest, then CP, then DP (EP and expert-TP are carved out of TP·CP·DP for the
// expert layers), then PP. num_gpus = tp·pp·cp·dp.
struct ParallelConfig {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t vpp = 1;  // virtual stages (model chunks) per PP rank; > 1 = interleaved 1F1B
  int64_t cp = 1;
  int64_t ep = 1;   // expert parallel, borrowed from DP (and CP)
  int64_t etp = 1;  // tensor parallel inside an expert
  int64_t dp = 1;
  bool sequence_parallel = false;
  bool fsdp = false;                   // weights, grads and optimizer state sharded over DP
  bool distributed_optimizer = false;  // optimizer state sharded over DP (ZeRO-1)
  // Uneven pipeline split: layers on the first/last stage; 0 = balanced.
  int64_t first_stage_layers = 0;
  int64_t last_stage_layers = 0;
  // MoE execution switches.
  bool turbo_grouped_gemm = true;  // one batched GEMM over local experts (else one per expert)
  // DeepEP dispatch kernels (Megatron --moe-token-dispatcher-type flex --moe-enable-deepep): a
  // token sent once per destination node and fanned out over NVLink there (PXN), FP8 dispatch
  // under FP8 training off the megatron stack (whose DeepEP path sends BF16). They run in the
  // layer's stream like NCCL's All-to-All; hiding them is TrainingConfig::moe_a2a_overlap's.
  bool deepep = false;
  PipelineSchedule pipeline_schedule = PipelineSchedule::kOneFOneB;

  int64_t NumGpus() const { return tp * pp * cp * dp; }

  ProcessGroup TpGroup() const { return {.size = tp, .stride = 1}; }
  ProcessGroup CpGroup() const { return {.size = cp, .stride = tp}; }
  ProcessGroup DpGroup() const { return {.size = dp, .stride = tp * cp}; }
  // Data-parallel group of the non-expert weights when CP > 1 (gradients reduce over CP·DP).
  ProcessGroup DpCpGroup() const { return {.size = dp * cp, .stride = tp}; }
  // EP ranks are strided by expert-TP inside the TP·CP·DP block of one PP stage.
  ProcessGroup EpGroup() const { return {.size = ep, .stride = etp}; }
  ProcessGroup PpGroup() const { return {.size = pp, .stride = tp * cp * dp}; }
};

// A layout that marks a PyTorch-native stack (llm-foundry, HF Accelerate, torchtitan without
// TP/PP): FSDP with neither tensor nor pipeline parallelism. TP or PP with FSDP is Megatron-style
// (Megatron-FSDP, NeMo), which runs Transformer Engine's attention and Megatron's loss.
inline bool IsPyTorchNativeLayout(const ParallelConfig& p) {
  return p.fsdp && p.tp == 1 && p.pp == 1;
}

}  // namespace projector

#endif  // PROJECTOR_CORE_PARALLEL_CONFIG_H_
