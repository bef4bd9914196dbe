// Inference profiler: the ops of one forward pass of an inference engine's batch, which mixes
// prefill chunks (many new tokens of one request) and decode steps (one new token of each
// running request) in one pass (continuous batching). Every token-linear op (projections,
// norms, RoPE, MLP or routed experts, the KV-cache write) sees all new tokens of the batch as
// one set of rows; attention is priced per request, a flash-attention forward for a prefill
// chunk and a paged KV-cache read for decode. Shapes follow the training profilers' forward
// (module_profilers.h) with RunChoices::inference: weights stored in the serving precision
// (no per-step casts), no load-balancing loss, no dropout, tensor parallelism without sequence
// parallelism (vLLM and TensorRT-LLM all-reduce after the row-parallel projections).
#ifndef PROJECTOR_PROFILERS_INFERENCE_PROFILER_H_
#define PROJECTOR_PROFILERS_INFERENCE_PROFILER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "models/model_spec.h"
#include "profilers/op_list.h"

namespace projector {

struct InferenceContext {
  const ModelSpec& model;
  int64_t tp = 1;
  // Weights and GEMMs: bf16, fp16, or fp8 (activations quantised per tensor before each
  // GEMM, TensorRT-LLM's and vLLM's FP8 W8A8); activations stay bf16 (fp16 under fp16).
  DType weight_dtype = DType::kBf16;
  // The KV cache's element type (bf16, fp16 or fp8).
  DType kv_dtype = DType::kBf16;
  // MoE experts spread over the TP ranks whole (vLLM --enable-expert-parallel: E/tp experts per
  // rank) instead of every expert's FFN split over them; either way the layer ends in the TP
  // all-reduce.
  bool expert_parallel = false;
  // GPUs the routed experts are spread or split over when that is not the TP group (DP
  // attention: attention at tp on each rank, the experts over all the deployment's GPUs);
  // 0: the TP group.
  int64_t moe_gpus = 0;
};

// The activation dtype of an inference pass: fp16 under fp16 weights, else bf16.
DType InferenceActivationDType(const InferenceContext& ctx);

// Key and value elements one token stores per layer on one GPU: 2·max(1, kv_heads/tp)·head_dim
// (vLLM replicates a KV head over the ranks of a TP group larger than the KV head count), or
// for multi-latent attention the compressed latent and the RoPE key, kv_lora_rank +
// qk_rope_head_dim, on every TP rank (vLLM's MLA backends cache the latent, not K and V).
int64_t KvElementsPerTokenPerLayer(const InferenceContext& ctx);
// The same in bytes of the KV cache's dtype.
Bytes KvBytesPerTokenPerLayer(const InferenceContext& ctx);

// The forward ops of one transformer layer over `tokens` new tokens (all requests of the
// batch), without the attention kernel (PrefillAttentionShape, DecodeAttentionOp) and without
// TP communication (InferenceTpAllReduce); with the KV-cache write of the new tokens
// ("kv_cache_write": read K and V in the activation dtype, write them into their cache blocks).
// kInvalidArgument for tokens < 1, a head or FFN count TP does not divide, or is_moe on a dense
// model.
absl::StatusOr<OpList> InferenceLayerOps(const InferenceContext& ctx, int64_t tokens, bool is_moe);

// Flash-attention forward of one prefill chunk: `new_tokens` queries attending causally
// (bottom-right aligned) over the `context` tokens already cached and themselves, heads split
// by TP.
AttentionShape PrefillAttentionShape(const InferenceContext& ctx, int64_t new_tokens,
                                     int64_t context);

// Decode attention of one layer over the paged KV cache for `sequences` requests holding
// `kv_tokens` cached tokens in all (each attends over its own): memory-bound, every cached key
// and value element read once, plus each request's query and output. Flash-decoding splits the
// KV of a request over thread blocks and a second kernel reduces the partial results (vLLM
// paged_attention_v2 and its reduce kernel; FlashInfer's split-KV decode): 2 launches. FLOPs
// 2·(q heads/tp)·kv_tokens·(qk dim + v dim) (MLA absorbed: the latent serves as key and value).
MemoryOp DecodeAttentionOp(const InferenceContext& ctx, int64_t sequences, int64_t kv_tokens);

// The TP all-reduce after a row-parallel projection (attention output, MLP down projection):
// `tokens` rows of the hidden size in the activation dtype over the TP group. Two per layer.
CollectiveOp InferenceTpAllReduce(const InferenceContext& ctx, int64_t tokens);

// The output head for the `sequences` requests that emit a token this pass (decode steps and
// the last chunk of a prefill): the final norm and the vocab-parallel projection of their last
// hidden state, then the logits all-gathered over TP for sampling (vLLM's LogitsProcessor
// gathers them) and a sampler pass over them (softmax and top-k/top-p, one read of the fp32
// logits). The collective, when TP > 1, is the last op.
absl::StatusOr<OpList> InferenceOutputOps(const InferenceContext& ctx, int64_t sequences);

// The embedding lookup of `tokens` new tokens (vocab-parallel over TP, then all-reduced: the
// all-reduce is the last op when TP > 1).
absl::StatusOr<OpList> InferenceEmbeddingOps(const InferenceContext& ctx, int64_t tokens);

// Weight bytes one GPU of a stage holds for `layers` transformer layers (dense and MoE as
// the model's pattern has them from layer `first_layer` on), plus the embedding (first stage)
// and output head (last stage; once when tied and on a single stage), in the activation dtype.
// Errors of the layer profilers (a head or FFN count TP does not divide) pass through.
absl::StatusOr<Bytes> InferenceWeightBytes(const InferenceContext& ctx, int64_t first_layer,
                                           int64_t layers, bool first_stage, bool last_stage);

}  // namespace projector

#endif  // PROJECTOR_PROFILERS_INFERENCE_PROFILER_H_
