// Module profilers: each turns one module of one transformer layer (or the embedding / output
// layer) and one micro-batch into an op list with forward, backward-dgrad, backward-wgrad and
// recompute ops, plus the module's parameters and stored activations per GPU. Sizes follow the
// layout: sequence parallelism and CP divide the tokens, TP divides heads and FFN, EP divides
// the experts. Communication is added by the layer composer (projection/), not here.
#ifndef PROJECTOR_PROFILERS_MODULE_PROFILERS_H_
#define PROJECTOR_PROFILERS_MODULE_PROFILERS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/training_config.h"
#include "core/units.h"
#include "models/model_spec.h"
#include "profilers/op_list.h"

namespace projector {

struct ProfileContext {
  const ModelSpec& model;
  const ParallelConfig& parallel;
  const TrainingConfig& training;
  // Recompute applied to this layer: kFull adds a kRecompute copy of every forward op,
  // kSelective a copy of the attention core (Megatron's selective recompute), kNone nothing.
  Recompute recompute = Recompute::kNone;
  RunChoices run;  // what the stack runs (scenario/training_defaults.h ResolveRunChoices)
};


struct ModuleProfile {
  std::string_view module;  // "attention", "mlp", "moe", "norms", "embedding", "output"
  OpList ops;
  // Parameters held per GPU (after TP/EP/PP sharding, before DP/FSDP sharding), split so that
  // gradient sync can treat expert weights (reduced over the expert-DP group) separately.
  double dense_parameters = 0;
  double expert_parameters = 0;
  // Activation bytes one micro-batch keeps for backward on one GPU, by recompute mode.
  Bytes activation_bytes;            // no recompute
  Bytes activation_bytes_selective;  // selective recompute (attention core not stored)
  // Held briefly beyond activation_bytes at the module's peak (the loss's fp32 copies of the
  // logits); not kept across the step.
  Bytes transient_bytes;
  // Alive at the module's peak after the micro-batch's backward, when its activations are freed
  // (the train-metric passes over the logits the model output still references); 0 if none.
  Bytes after_backward_bytes;
  // Tokens this GPU processes through the module per micro-batch (after SP/CP; for MoE the
  // routed token-expert pairs handled by the local experts).
  int64_t tokens = 0;
};

// Tokens per GPU per micro-batch entering a layer: micro_batch·seq_len/CP (the sequence is
// further divided by TP inside norms/dropout under sequence parallelism).
int64_t TokensPerGpu(const ModelSpec& model, const ParallelConfig& parallel,
                     const TrainingConfig& training);

// Vocabulary as Megatron pads it (--make-vocab-size-divisible-by 128): the next multiple of
// 128·tp, so that every TP rank holds padded/tp rows of the embedding and output weights.
int64_t PaddedVocabSize(const ModelSpec& model, int64_t tp);

// Attention: norm-free QKV (or MLA's LoRA-factored Q, compressed KV and RoPE projections), QK
// norm when the model has it, RoPE, the flash-attention kernel and the output projection.
absl::StatusOr<ModuleProfile> ProfileAttention(const ProfileContext& ctx);
// Dense MLP: SwiGLU (gate, up, down) or plain (up, down) GEMMs and the activation.
absl::StatusOr<ModuleProfile> ProfileDenseMlp(const ProfileContext& ctx);

// The ops of a MoE layer's shared experts (moe_mlp_profiler.cc): their fc1 and activation, and
// their fc2, which Megatron-Core's --moe-shared-expert-overlap runs beside the dispatch and the
// combine All-to-All (projection/layer_composer.cc).
inline constexpr std::string_view kSharedExpertFc1 = "shared_fc1";
inline constexpr std::string_view kSharedExpertAct = "shared_act";
inline constexpr std::string_view kSharedExpertFc2 = "shared_fc2";

// MoE MLP: router GEMM + top-k, permutation/unpermutation, grouped expert GEMMs (turbo: one
// batched GEMM over local experts; legacy: one GEMM per local expert), shared experts,
// activation. EP All-to-All is added by the composer.
absl::StatusOr<ModuleProfile> ProfileMoeMlp(const ProfileContext& ctx);
// The two pre-norms and two residual adds of one layer. Under FP8 a norm fused into the next
// Transformer Engine linear layer writes fp8: the input norm before a standard attention's QKV
// projection, the pre-MLP norm before a dense MLP's fc1 (not before MoE: `moe_layer`).
absl::StatusOr<ModuleProfile> ProfileNorms(const ProfileContext& ctx, bool moe_layer = false);
// Embedding lookup (first stage).
absl::StatusOr<ModuleProfile> ProfileEmbedding(const ProfileContext& ctx);
// Final norm, output projection (vocab-parallel over TP) and cross-entropy loss (last stage).
// Tied embeddings: with pp == 1 the output projection uses the embedding's weight, so its
// parameters are counted by ProfileEmbedding only; with pp > 1 the last stage holds its own
// copy (Megatron keeps one and all-reduces its gradient with the first stage) and counts it.
// The loss is the kernel the run choices name (ctx.run.loss_kernel, CrossEntropyBytesPerLogit).
// The ctx.run.train_metric_passes training metrics over the logits follow the backward as one
// memory-bound op, "train_metrics" (TrainMetricBytesPerLogit), on the main head only: an MTP
// module's pass of the head (kMtp) has none, the metrics read the model's output.
enum class OutputHead { kMain, kMtp };

absl::StatusOr<ModuleProfile> ProfileOutputLayer(const ProfileContext& ctx,
                                                 OutputHead head = OutputHead::kMain);

// HBM bytes per logit of one cross-entropy kernel: its forward and backward passes, what it
// keeps for backward and what is alive at its peak. kAuto reads as kMegatron (resolve it first:
// scenario/training_defaults.h ResolvedLossKernel).
struct CrossEntropyTraffic {
  double forward = 0;
  double backward = 0;
  double kept = 0;  // kept from forward to backward
  double peak = 0;  // alive at the loss's peak, the bf16 logits included
};
// `logits_freed_before_backward`: the train step drops the model's output before backward
// (torchtitan), which lowers the eager loss's peak.
CrossEntropyTraffic CrossEntropyBytesPerLogit(LossKernel kernel,
                                              bool logits_freed_before_backward = false);

// HBM bytes per logit of one training-metric pass (an eager torch cross-entropy forward under
// autocast, no grad) and what is alive at its peak, the bf16 logits included.
struct TrainMetricTraffic {
  double per_pass = 0;
  double peak = 0;
};
TrainMetricTraffic TrainMetricBytesPerLogit();

// One transformer layer: attention, norms and the dense MLP or the MoE MLP.
struct LayerProfile {
  bool is_moe = false;
  std::vector<ModuleProfile> modules;
};
// `attention`: the ProfileAttention(ctx) of another layer kind, copied rather than built again
// (a layer's attention does not depend on its MLP).
absl::StatusOr<LayerProfile> ProfileLayer(const ProfileContext& ctx, bool is_moe,
                                          const ModuleProfile* attention = nullptr);

// Times every op of every module through the backends.
absl::Status TimeLayer(const BackendRefs& backends, LayerProfile& layer);

}  // namespace projector

#endif  // PROJECTOR_PROFILERS_MODULE_PROFILERS_H_
