#include "profilers/inference_profiler.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/training_config.h"
#include "profilers/module_profilers.h"

namespace projector {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

// Launches of a split-KV decode attention: the attention kernel and the reduce of its partial
// results (vLLM csrc/attention/paged_attention_v2.cu launches paged_attention_v2_kernel and
// paged_attention_v2_reduce_kernel; FlashInfer's decode with split-KV merges the same way).
constexpr int64_t kDecodeAttentionLaunches = 2;
// Vector FLOPs per element of a sampler pass over the logits: softmax (max, exp, sum, scale)
// and the top-k/top-p threshold compare.
constexpr double kSamplerFlopsPerLogit = 5.0;
// Bytes per logit the sampler moves: it reads the gathered logits (activation dtype), writes
// and reads back their fp32 probabilities (vLLM's Sampler computes probs and logprobs in fp32).
constexpr double kSamplerFp32BytesPerLogit = 8.0;

// The training profilers' context for an inference forward of `tokens` new tokens: one
// micro-batch of `tokens` tokens, TP without sequence parallelism, experts split by TP
// (vLLM's and TensorRT-LLM's default MoE tensor parallelism: every expert's FFN split over the
// TP ranks), the fused kernels of an inference engine (no eager elementwise), per-tensor FP8.
struct ForwardContext {
  ParallelConfig parallel;
  TrainingConfig training;
  RunChoices run;
  ProfileContext Get(const ModelSpec& model) const {
    return ProfileContext{.model = model,
                          .parallel = parallel,
                          .training = training,
                          .recompute = Recompute::kNone,
                          .run = run};
  }
};

ForwardContext MakeForwardContext(const InferenceContext& ctx, int64_t tokens) {
  ForwardContext f;
  f.parallel.tp = ctx.tp;
  const int64_t moe_gpus = ctx.moe_gpus > 0 ? ctx.moe_gpus : ctx.tp;
  f.parallel.etp = ctx.expert_parallel ? 1 : moe_gpus;
  f.parallel.ep = ctx.expert_parallel ? moe_gpus : 1;
  f.parallel.dp = 1;
  f.parallel.sequence_parallel = false;
  f.training.seq_len = tokens;
  f.training.micro_batch = 1;
  f.training.global_batch = 1;
  f.training.precision = ctx.weight_dtype;
  f.training.hidden_dropout = 0;
  f.training.attention_dropout = 0;
  f.run.stack = TrainingStack::kMegatron;
  f.run.dropout = DropoutRates{.hidden = 0, .attention = 0};
  f.run.eager_elementwise = false;
  f.run.fp8_recipe = Fp8Recipe::kDelayed;
  f.run.inference = true;
  return f;
}

void KeepForward(const OpList& from, OpList& to, bool keep_attention) {
  for (const Op& op : from) {
    if (op.phase != OpPhase::kForward) continue;
    if (op.kind == OpKind::kAttention && !keep_attention) continue;
    to.push_back(op);
  }
}

int64_t KvHeadsPerGpu(const InferenceContext& ctx) {
  return std::max<int64_t>(1, ctx.model.num_kv_heads / std::max<int64_t>(ctx.tp, 1));
}

}  // namespace

DType InferenceActivationDType(const InferenceContext& ctx) {
  return ctx.weight_dtype == DType::kFp16 ? DType::kFp16 : DType::kBf16;
}

int64_t KvElementsPerTokenPerLayer(const InferenceContext& ctx) {
  if (ctx.model.mla.has_value()) {
    return ctx.model.mla->kv_lora_rank + ctx.model.mla->qk_rope_head_dim;
  }
  return KvHeadsPerGpu(ctx) * (ctx.model.QkHeadDim() + ctx.model.VHeadDim());
}

Bytes KvBytesPerTokenPerLayer(const InferenceContext& ctx) {
  return Bytes(D(KvElementsPerTokenPerLayer(ctx)) * BytesPerElement(ctx.kv_dtype));
}

absl::StatusOr<OpList> InferenceLayerOps(const InferenceContext& ctx, int64_t tokens, bool is_moe) {
  if (tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat("tokens per pass must be >= 1, got ", tokens));
  }
  const ForwardContext f = MakeForwardContext(ctx, tokens);
  PROJECTOR_ASSIGN_OR_RETURN(const LayerProfile layer, ProfileLayer(f.Get(ctx.model), is_moe));
  OpList ops;
  ops.reserve(48);
  for (const ModuleProfile& module : layer.modules) KeepForward(module.ops, ops, false);
  // reshape_and_cache: the new tokens' K and V (or MLA latent) read in the activation dtype
  // and written into their cache blocks in the KV dtype.
  const double elements = D(tokens) * D(KvElementsPerTokenPerLayer(ctx));
  Op& write = ops.emplace_back();
  write.name = "kv_cache_write";
  write.module = "attention";
  write.kind = OpKind::kMemory;
  write.memory =
      MemoryOp{.bytes = Bytes(elements * (BytesPerElement(InferenceActivationDType(ctx)) +
                                          BytesPerElement(ctx.kv_dtype))),
               .flops = Flops(0),
               .launches = 1};
  write.bytes = write.memory.bytes;
  return ops;
}

AttentionShape PrefillAttentionShape(const InferenceContext& ctx, int64_t new_tokens,
                                     int64_t context) {
  return AttentionShape{.batch = 1,
                        .num_q_heads = ctx.model.num_attention_heads / ctx.tp,
                        .num_kv_heads = ctx.model.mla.has_value()
                                            ? ctx.model.num_attention_heads / ctx.tp
                                            : KvHeadsPerGpu(ctx),
                        .seq_q = new_tokens,
                        .seq_kv = context + new_tokens,
                        .qk_head_dim = ctx.model.QkHeadDim(),
                        .v_head_dim = ctx.model.VHeadDim(),
                        .causal = true,
                        .dtype = InferenceActivationDType(ctx)};
}

MemoryOp DecodeAttentionOp(const InferenceContext& ctx, int64_t sequences, int64_t kv_tokens) {
  const int64_t q_heads = ctx.model.num_attention_heads / ctx.tp;
  const double e = BytesPerElement(InferenceActivationDType(ctx));
  double qk_dim = D(ctx.model.QkHeadDim());
  double v_dim = D(ctx.model.VHeadDim());
  if (ctx.model.mla.has_value()) {
    // Absorbed MLA decode: queries projected into the latent space score against the cached
    // latent and RoPE key, and the values are the latent itself.
    qk_dim = D(ctx.model.mla->kv_lora_rank + ctx.model.mla->qk_rope_head_dim);
    v_dim = D(ctx.model.mla->kv_lora_rank);
  }
  const double cache = D(kv_tokens) * KvBytesPerTokenPerLayer(ctx).value();
  const double q_and_out = D(sequences) * D(q_heads) * (qk_dim + v_dim) * e;
  return MemoryOp{.bytes = Bytes(cache + q_and_out),
                  .flops = Flops(2.0 * D(q_heads) * D(kv_tokens) * (qk_dim + v_dim)),
                  .launches = kDecodeAttentionLaunches};
}

CollectiveOp InferenceTpAllReduce(const InferenceContext& ctx, int64_t tokens) {
  return CollectiveOp{.kind = CollectiveKind::kAllReduce,
                      .bytes = Bytes(D(tokens) * D(ctx.model.hidden_size) *
                                     BytesPerElement(InferenceActivationDType(ctx))),
                      .group = ProcessGroup{.size = ctx.tp, .stride = 1},
                      .routing = {}};
}

absl::StatusOr<OpList> InferenceOutputOps(const InferenceContext& ctx, int64_t sequences) {
  if (sequences < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequences emitting a token must be >= 1, got ", sequences));
  }
  const DType act = InferenceActivationDType(ctx);
  const double e = BytesPerElement(act);
  const double h = D(ctx.model.hidden_size);
  const double rows = D(sequences);
  const int64_t vocab_local = PaddedVocabSize(ctx.model, ctx.tp) / ctx.tp;
  OpList ops;
  ops.reserve(4);
  Op& norm = ops.emplace_back();
  norm.name = "final_norm";
  norm.module = "output";
  norm.kind = OpKind::kMemory;
  // Reads the hidden states and writes the normalised ones; 4 vector FLOPs per element.
  norm.memory = MemoryOp{.bytes = Bytes(2.0 * e * rows * h), .flops = Flops(4.0 * rows * h)};
  norm.bytes = norm.memory.bytes;
  norm.flops = norm.memory.flops;
  Op& proj = ops.emplace_back();
  proj.name = "output_proj";
  proj.module = "output";
  proj.kind = OpKind::kGemm;
  proj.gemm = GemmShape{.m = sequences, .n = vocab_local, .k = ctx.model.hidden_size, .dtype = act};
  proj.flops = GemmFlops(proj.gemm);
  proj.bytes = Bytes(e * (rows * h + h * D(vocab_local) + rows * D(vocab_local)));
  const double logits = rows * D(PaddedVocabSize(ctx.model, ctx.tp));
  Op& sampler = ops.emplace_back();
  sampler.name = "sampler";
  sampler.module = "output";
  sampler.kind = OpKind::kMemory;
  sampler.memory = MemoryOp{.bytes = Bytes((e + kSamplerFp32BytesPerLogit) * logits),
                            .flops = Flops(kSamplerFlopsPerLogit * logits)};
  sampler.bytes = sampler.memory.bytes;
  sampler.flops = sampler.memory.flops;
  if (ctx.tp > 1) {
    Op& gather = ops.emplace_back();
    gather.name = "logits_gather";
    gather.module = "output";
    gather.kind = OpKind::kCollective;
    gather.comm_dim = CommDim::kTp;
    gather.collective = CollectiveOp{.kind = CollectiveKind::kAllGather,
                                     .bytes = Bytes(e * logits),
                                     .group = ProcessGroup{.size = ctx.tp, .stride = 1},
                                     .routing = {}};
    gather.bytes = gather.collective.bytes;
  }
  return ops;
}

absl::StatusOr<OpList> InferenceEmbeddingOps(const InferenceContext& ctx, int64_t tokens) {
  if (tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat("tokens per pass must be >= 1, got ", tokens));
  }
  const ForwardContext f = MakeForwardContext(ctx, tokens);
  PROJECTOR_ASSIGN_OR_RETURN(const ModuleProfile embedding, ProfileEmbedding(f.Get(ctx.model)));
  OpList ops;
  KeepForward(embedding.ops, ops, false);
  if (ctx.tp > 1) {
    Op& reduce = ops.emplace_back();
    reduce.name = "embedding_all_reduce";
    reduce.module = "embedding";
    reduce.kind = OpKind::kCollective;
    reduce.comm_dim = CommDim::kTp;
    reduce.collective = InferenceTpAllReduce(ctx, tokens);
    reduce.bytes = reduce.collective.bytes;
  }
  return ops;
}

absl::StatusOr<Bytes> InferenceWeightBytes(const InferenceContext& ctx, int64_t first_layer,
                                           int64_t layers, bool first_stage, bool last_stage) {
  const ForwardContext f = MakeForwardContext(ctx, 1);
  const ProfileContext pctx = f.Get(ctx.model);
  const double w = BytesPerElement(ctx.weight_dtype);
  const double e = BytesPerElement(InferenceActivationDType(ctx));
  double bytes = 0;
  // Parameters per layer kind, profiled once each.
  double per_kind[2] = {-1, -1};
  for (int64_t i = first_layer; i < first_layer + layers; ++i) {
    const bool moe = ctx.model.IsMoeLayer(i);
    double& params = per_kind[moe ? 1 : 0];
    if (params < 0) {
      PROJECTOR_ASSIGN_OR_RETURN(const LayerProfile layer, ProfileLayer(pctx, moe));
      params = 0;
      for (const ModuleProfile& m : layer.modules) {
        params += m.dense_parameters + m.expert_parameters;
      }
    }
    bytes += params * w;
  }
  // Embedding and output head in the activation dtype (FP8 checkpoints keep them in bf16).
  const double table = D(PaddedVocabSize(ctx.model, ctx.tp) / ctx.tp) * D(ctx.model.hidden_size);
  if (first_stage) bytes += table * e;
  const bool shared_head = ctx.model.tied_embeddings && first_stage;
  if (last_stage && !shared_head) bytes += table * e;
  return Bytes(bytes);
}

}  // namespace projector
