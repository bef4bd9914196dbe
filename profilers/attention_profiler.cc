// Attention profiler: MHA/GQA/MQA (fused QKV projection, optional QK-norm, RoPE, flash
// attention, output projection) and DeepSeek multi-latent attention (LoRA-factored Q,
// compressed KV, separate RoPE key projection). Shapes follow Megatron-Core's
// SelfAttention / MLASelfAttention with tensor parallelism: column-parallel projections split
// the heads, the output projection is row-parallel; every TP-split GEMM sees all T tokens of
// the micro-batch (sequence parallelism gathers them first).
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "profilers/module_profilers.h"
#include "profilers/profiler_internal.h"

namespace projector {
namespace {

using profiler_internal::CheckDivisible;
using profiler_internal::D;
using profiler_internal::LayerDims;
using profiler_internal::ModuleOpBuilder;
using profiler_internal::NormParamsPerElement;

constexpr std::string_view kModule = "attention";

// A normalisation over `rows`×`width` elements. Forward reads x and writes y; backward reads
// x and dy and writes dx (the weight-gradient reduction rides along). ~4 vector FLOPs per
// element forward (square, sum, scale, weight), twice that backward.
// `out_bytes` per output element: fp8 when the norm is fused into the next quantised linear.
// `eager`: an eager PyTorch RMSNorm, one kernel per op (EagerRmsNorm).
void AddNorm(ModuleOpBuilder& b, std::string_view name, int64_t rows, int64_t width, double e,
             double out_bytes, bool eager) {
  const double n = D(rows) * D(width);
  const profiler_internal::EagerKernels k = profiler_internal::NormKernels(e, out_bytes, eager);
  b.Memory(name, k.Forward(n, 4.0 * n), k.Backward(n, 8.0 * n));
}

// Rotary embedding applied to `rows` tokens of `q_width` query and `k_width` key elements
// (read, rotate, write; cos/sin tables are small and cached). The backward is the inverse
// rotation of the gradient: same traffic. `eager`: torchtitan's complex-number form, one
// kernel per op (EagerRope); the query gradient arrives from SDPA through a transpose, and so
// does the key's unless `key_gradient_contiguous` (GQA: repeat_kv's backward sums it into a
// fresh tensor).
void AddRope(ModuleOpBuilder& b, int64_t rows, int64_t q_width, int64_t k_width, double e,
             bool eager, bool key_gradient_contiguous) {
  const double q = D(rows) * D(q_width), k = D(rows) * D(k_width);
  if (!eager) {
    MemoryOp op{.bytes = Bytes(2.0 * e * (q + k)), .flops = Flops(3.0 * (q + k))};
    b.Memory("rope", op, op);
    return;
  }
  const profiler_internal::EagerKernels qk = profiler_internal::EagerRope(e, true);
  const profiler_internal::EagerKernels kk =
      profiler_internal::EagerRope(e, !key_gradient_contiguous);
  b.Memory("rope",
           MemoryOp{.bytes = Bytes(qk.forward_bytes * q + kk.forward_bytes * k),
                    .flops = Flops(3.0 * (q + k)),
                    .launches = qk.forward_launches + kk.forward_launches},
           MemoryOp{.bytes = Bytes(qk.backward_bytes * q + kk.backward_bytes * k),
                    .flops = Flops(3.0 * (q + k)),
                    .launches = qk.backward_launches + kk.backward_launches});
}

// The copies eager PyTorch attention code makes around F.scaled_dot_product_attention
// (torchtitan's Attention.forward, Hugging Face's sdpa path; traced with tools/eager_bytes.py).
// Before the kernel, repeat_kv (GQA, kv heads < query heads): K and V expanded to every query
// head, unsqueeze/expand/reshape, one copy each: reads e·T·g·d, writes e·T·a·d per tensor;
// backward sums the copies back (the same bytes).
void AddEagerRepeatKv(ModuleOpBuilder& b, int64_t rows, int64_t a_l, int64_t g_l, int64_t d,
                      double e) {
  if (a_l <= g_l) return;
  const MemoryOp repeat{
      .bytes = Bytes(2.0 * e * D(rows) * D(d) * D(g_l + a_l)), .flops = Flops(0), .launches = 2};
  b.Memory("repeat_kv", repeat, repeat);
}
// After it, sdpa_layout: the output transposed back to token-major,
// .transpose(1, 2).contiguous(), 2e·T·a·d; in backward, without GQA, the V gradient arrives
// through that transpose and is copied before its view (2e·T·g·d).
void AddEagerSdpaLayout(ModuleOpBuilder& b, int64_t rows, int64_t a_l, int64_t g_l, int64_t d,
                        double e) {
  b.Memory("sdpa_layout",
           MemoryOp{.bytes = Bytes(2.0 * e * D(rows) * D(a_l * d)), .flops = Flops(0)},
           a_l > g_l ? MemoryOp{}
                     : MemoryOp{.bytes = Bytes(2.0 * e * D(rows) * D(g_l * d)), .flops = Flops(0)});
}

// HBM traffic of flash attention. Forward reads Q, K, V and writes O and the fp32 log-sum-exp;
// backward reads Q, K, V, O, dO and the LSE and writes dQ, dK, dV (FlashAttention-2, Dao 2023).
struct AttentionTraffic {
  Bytes forward;
  Bytes backward;
};
AttentionTraffic FlashTraffic(const AttentionShape& s, double e) {
  double q = D(s.batch) * D(s.seq_q) * D(s.num_q_heads) * D(s.qk_head_dim);
  double kv = D(s.batch) * D(s.seq_kv) * D(s.num_kv_heads) * D(s.qk_head_dim + s.v_head_dim);
  double o = D(s.batch) * D(s.seq_q) * D(s.num_q_heads) * D(s.v_head_dim);
  double lse = 4.0 * D(s.batch) * D(s.seq_q) * D(s.num_q_heads);
  return {.forward = Bytes(e * (q + kv + o) + lse),
          .backward = Bytes(e * 2.0 * (q + kv + o) + lse)};
}

// The attention core, fused or not (training.attention_kernel).
//   flash: one kernel per pass (FlashAttentionTraffic bytes), causal tiles skipped.
//   unfused: Megatron-LM's CoreAttention before FlashAttention (megatron/model/transformer.py,
//   2019-2022) and PyTorch's SDPA math path:
//     kv_expand        GQA only: K and V repeated to every query head (read g, write a heads)
//     attention_scores batched GEMM per (sequence, head): S = Q·Kᵀ, (s_q × d) · (d × s_kv),
//                      written to HBM in the activation dtype; the full s_q × s_kv product is
//                      computed, the causal mask is applied afterwards (no tile skipping)
//     softmax          FusedScaleMaskSoftmax (megatron/model/fused_softmax.py): reads S, writes
//                      P; backward reads P and dP and writes dS
//     attention_dropout (with dropout) reads P, writes P' and a 1-byte mask; backward reads
//                      dP' and the mask, writes dP
//     attention_context batched GEMM O = P·V, (s_q × s_kv) · (s_kv × d_v)
//   Backward of the two GEMMs follows from the linear-layer rule: scores gives dQ = dS·K
//   (dgrad) and dKᵀ = Qᵀ·dS (the "wgrad" slot), context gives dP = dO·Vᵀ and dV = Pᵀ·dO.
//   All of them run in the activation dtype (the core is never FP8).
void AddAttentionCore(ModuleOpBuilder& b, const ProfileContext& ctx, const AttentionShape& s,
                      double e, bool attention_dropout) {
  if (ctx.training.attention_kernel == AttentionKernel::kFlash) {
    const AttentionTraffic traffic = FlashTraffic(s, e);
    b.Attention("attention_core", s, traffic.forward, traffic.backward);
    return;
  }
  const int64_t problems = s.batch * s.num_q_heads;
  const double scores = D(problems) * D(s.seq_q) * D(s.seq_kv);
  b.BeginAttentionCore();
  if (s.num_kv_heads < s.num_q_heads) {
    const double kv = D(s.batch) * D(s.seq_kv) * D(s.qk_head_dim + s.v_head_dim);
    // Forward reads the g kv heads and writes a; backward sums the a heads' gradients back
    // into g: reads a, writes g.
    const MemoryOp expand{.bytes = Bytes(e * kv * D(s.num_kv_heads + s.num_q_heads)),
                          .flops = Flops(0)};
    const MemoryOp reduce{.bytes = Bytes(e * kv * D(s.num_kv_heads + s.num_q_heads)),
                          .flops = Flops(kv * D(s.num_q_heads))};
    b.Memory("kv_expand", expand, reduce);
  }
  b.Linear("attention_scores", s.seq_q, s.qk_head_dim, s.seq_kv, s.dtype, problems);
  // ~5 FLOPs per score (scale, mask, max, exp, divide); backward 3 (P·(dP − Σ P·dP)).
  b.Memory("softmax", MemoryOp{.bytes = Bytes(2.0 * e * scores), .flops = Flops(5.0 * scores)},
           MemoryOp{.bytes = Bytes(3.0 * e * scores), .flops = Flops(3.0 * scores)});
  if (attention_dropout) {
    b.Memory("attention_dropout",
             MemoryOp{.bytes = Bytes((2.0 * e + 1.0) * scores), .flops = Flops(2.0 * scores)},
             MemoryOp{.bytes = Bytes((2.0 * e + 1.0) * scores), .flops = Flops(scores)});
  }
  b.Linear("attention_context", s.seq_q, s.seq_kv, s.v_head_dim, s.dtype, problems);
  b.EndAttentionCore();
}

// Activation bytes of the attention core itself, the term selective recompute drops.
// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
// (arXiv:2205.05198), section 4.1: softmax output 2as²b, its dropout mask as²b and the dropout
// output 2as²b = 5as²b (per TP rank /t). Without dropout only the softmax output (2as²b) is
// kept. Flash attention keeps no score matrix, only the fp32 softmax statistics (4 bytes per
// query row and head); its output O is counted as the output projection's input.
double CoreActivationBytes(const ProfileContext& ctx, const AttentionShape& s, double e,
                           bool attention_dropout) {
  double rows = D(s.batch) * D(s.num_q_heads) * D(s.seq_q);
  if (ctx.training.attention_kernel == AttentionKernel::kFlash) return 4.0 * rows;
  double per_score = attention_dropout ? 2.0 * e + 1.0 : e;
  return per_score * rows * D(s.seq_kv);
}

AttentionShape KernelShape(const LayerDims& dims, int64_t q_heads, int64_t kv_heads,
                           int64_t qk_dim, int64_t v_dim, bool causal) {
  // With CP the local seq_len/CP queries (Megatron's load-balanced pair of chunks) attend over
  // the gathered keys/values. AttentionFlops halves the product for causal masking, which is
  // the average causal work per rank under that load balancing.
  return AttentionShape{.batch = dims.micro_batch,
                        .num_q_heads = q_heads,
                        .num_kv_heads = kv_heads,
                        .seq_q = dims.seq_q,
                        .seq_kv = dims.seq_kv,
                        .qk_head_dim = qk_dim,
                        .v_head_dim = v_dim,
                        .causal = causal,
                        .dtype = dims.act_dtype};
}

// MHA / GQA / MQA. Forward: qkv_proj, [qk_norm], [rope], attention_core, out_proj.
absl::StatusOr<ModuleProfile> ProfileStandard(const ProfileContext& ctx, const LayerDims& dims) {
  const ModelSpec& model = ctx.model;
  const int64_t h = model.hidden_size;
  const int64_t a = model.num_attention_heads;
  const int64_t g = model.num_kv_heads;
  const int64_t d = profiler_internal::StandardHeadDim(model);
  const int64_t t = dims.tp;
  if (a <= 0 || g <= 0 || d <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model ", model.name, ": attention heads, kv heads and head_dim must be > 0, got ", a,
        ", ", g, ", ", d));
  }
  if (a % g != 0) {
    return absl::InvalidArgumentError(absl::StrCat("model ", model.name, ": num_attention_heads ",
                                                   a, " is not a multiple of num_kv_heads ", g));
  }
  PROJECTOR_RETURN_IF_ERROR(CheckDivisible("num_attention_heads", a, "tp", t));
  // Megatron splits the query groups over TP; when TP exceeds them each group is replicated on
  // tp/g ranks, which needs g | tp.
  if (g % t != 0 && t % g != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("num_kv_heads ", g, " and tp ", t,
                     ": one must divide the other (kv heads are split, or replicated when "
                     "tp > kv heads)"));
  }
  const int64_t a_l = a / t;
  const int64_t g_l = g >= t ? g / t : 1;
  const int64_t T = dims.tokens;
  const double e = dims.act_bytes;

  ModuleProfile profile;
  profile.module = kModule;
  profile.tokens = T;
  ModuleOpBuilder b(kModule, profile.ops, 64, dims);
  // Column-parallel fused QKV: N = (a + 2g)·d/t (replicated kv heads count once per rank).
  // A Q/K/V bias (attention_bias, or linear_bias on every linear layer) is fused into the
  // GEMM epilogue: parameters only. Under FP8 it is Megatron's TELayerNormColumnParallelLinear:
  // the input norm is fused into it and writes fp8 (gpt_layer_specs.py: input_layernorm =
  // IdentityOp); QK-norm (TENorm on the heads) and the output projection's input stay bf16.
  b.Linear("qkv_proj", T, h, (a_l + 2 * g_l) * d, dims.gemm_dtype, 1, 1,
           profiler_internal::LinearInput::kFusedNorm);
  // Eager Llama-family code (RoPE models: torchtitan, Hugging Face) runs wq, wk and wv as three
  // linear layers and SDPA with the copies around it (AddEagerRepeatKv, AddEagerSdpaLayout).
  // MPT's and GPT's code keeps one fused Wqkv and hands the kernel token-major tensors.
  const bool rope = model.position_embedding == PositionEmbedding::kRope;
  const bool eager_llama = dims.eager_elementwise && rope;
  const bool eager_rms = dims.eager_elementwise && model.norm != NormKind::kLayerNorm;
  if (eager_llama) b.SeparateInputGradients(3);
  // Llama-family PyTorch code (torchtitan) runs wq, wk and wv as three mms.
  if (rope && dims.pytorch_modules) b.SetMmOutputs({a_l * d, g_l * d, g_l * d});
  // MPT's and GPT's PyTorch code chunks the fused Wqkv output into Q, K and V; the kernel's
  // backward returns dQ, dK and dV apart and autograd's split backward joins them (a cat:
  // tools/eager_bytes.py traces it). torch.compile keeps it (the kernel's outputs are opaque
  // to Inductor). Megatron's TE path has no copy: TE's _SplitAlongDim returns a view when dQ,
  // dK, dV are adjacent in one buffer (recalled from transformer_engine/pytorch/attention.py).
  if (dims.pytorch_modules && !rope) b.SplitOutputGradients(3);
  if (model.qk_norm) AddNorm(b, "qk_norm", T, (a_l + g_l) * d, e, e, eager_rms);
  // Only rotary embeddings are a kernel of their own: ALiBi's bias is added to the scores
  // inside the attention kernel, and learned embeddings are added once to the token embedding.
  if (rope) AddRope(b, T, a_l * d, g_l * d, e, dims.eager_elementwise, a_l > g_l);
  const AttentionShape shape = KernelShape(dims, a_l, g_l, d, d, ctx.model.causal_attention);
  if (eager_llama) AddEagerRepeatKv(b, T, a_l, g_l, d, e);
  AddAttentionCore(b, ctx, shape, e, dims.attention_dropout);
  if (eager_llama) AddEagerSdpaLayout(b, T, a_l, g_l, d, e);
  b.Linear("out_proj", T, a_l * d, h, dims.gemm_dtype);
  b.Finish(ctx.recompute, ctx.training.recompute_modules);

  double params = D(h) * D((a_l + 2 * g_l) * d) + D(a_l * d) * D(h);
  if (model.attention_bias || model.linear_bias) params += D((a_l + 2 * g_l) * d);
  // The row-parallel output bias is replicated on every TP rank.
  if (model.linear_bias) params += D(h);
  if (model.qk_norm) params += 2.0 * D(d) * NormParamsPerElement(model);
  profile.dense_parameters = params;

  // Korthikanti et al. 2022, section 4.1, generalised to GQA: QKV input 2sbh (the norm
  // output; kept sharded under SP), Q and K 4sbh and V 2sbh (now e·T·(a + 2g)·d/t), the core
  // (CoreActivationBytes), the output projection's input 2sbh/t and its 1-byte dropout mask
  // sbh. QK-norm keeps its inputs (Q and K before the norm) as well. The two linear layers'
  // inputs are kept as SavedLinearInputBytes (quantised under a Transformer Engine fp8 recipe);
  // the attention kernel's Q, K and V stay in the activation dtype.
  const double core = CoreActivationBytes(ctx, shape, e, dims.attention_dropout);
  const double saved = profiler_internal::SavedLinearInputBytes(dims);
  double stored = saved * D(dims.sp_tokens) * D(h) + e * D(T) * D((a_l + 2 * g_l) * d) + core +
                  saved * D(T) * D(a_l * d);
  if (model.qk_norm) stored += e * D(T) * D((a_l + g_l) * d);
  // An eager QK RMSNorm also keeps its fp32 input copy (EagerRmsNorm: 4 + e where the fused one
  // keeps e).
  if (model.qk_norm && eager_rms) stored += 4.0 * D(T) * D((a_l + g_l) * d);
  // Eager GQA: SDPA keeps the expanded K and V (repeat_kv), a·d per token each instead of g·d.
  if (eager_llama && a_l > g_l) stored += 2.0 * e * D(T) * D((a_l - g_l) * d);
  if (dims.hidden_dropout) stored += D(dims.sp_tokens) * D(h);
  profile.activation_bytes = Bytes(stored);
  const bool core_rerun = profiler_internal::SelectiveRecomputes(ctx, RecomputeModule::kCoreAttn);
  profile.activation_bytes_selective =
      dims.op_sac ? b.OpSacStoredBytes() : Bytes(stored - (core_rerun ? core : 0.0));
  return profile;
}

// Multi-latent attention (DeepSeek-V2/V3; Megatron-Core MLASelfAttention). Forward GEMMs:
//   q_down      hidden → q_lora_rank            (replicated, on the T/t SP tokens)
//   q_up        q_lora_rank → heads·(nope+rope)/t
//     (no Q LoRA, q_lora_rank == 0: one q_proj hidden → heads·(nope+rope)/t instead of both)
//   kv_down     hidden → kv_lora_rank           (replicated, SP tokens)
//   k_rope_proj hidden → qk_rope_head_dim       (replicated, SP tokens; the shared RoPE key.
//               Megatron fuses it into linear_kv_down_proj; same FLOPs, kept separate as in
//               the DeepSeek papers and Primus' _simulate_mla_gemms)
//   kv_up       kv_lora_rank → heads·(nope+v)/t
//   o_proj      heads·v/t → hidden
// = 6 forward GEMMs (5 without Q LoRA), each with a dgrad and a wgrad: 12 (10) backward.
// Memory ops: q_norm (with Q LoRA), kv_norm, rope (Q's rope part and the shared key).
absl::StatusOr<ModuleProfile> ProfileMla(const ProfileContext& ctx, const LayerDims& dims) {
  const ModelSpec& model = ctx.model;
  const MlaSpec& mla = *model.mla;
  const int64_t h = model.hidden_size;
  const int64_t a = model.num_attention_heads;
  const int64_t t = dims.tp;
  const int64_t ql = mla.q_lora_rank;
  const int64_t kl = mla.kv_lora_rank;
  const int64_t nope = mla.qk_nope_head_dim;
  const int64_t rope = mla.qk_rope_head_dim;
  const int64_t v = mla.v_head_dim;
  if (a <= 0 || ql < 0 || kl <= 0 || nope <= 0 || rope <= 0 || v <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model ", model.name,
        ": MLA needs heads, kv_lora_rank and head dims > 0 and q_lora_rank >= 0"));
  }
  PROJECTOR_RETURN_IF_ERROR(CheckDivisible("num_attention_heads", a, "tp", t));
  const int64_t a_l = a / t;
  const int64_t T = dims.tokens;
  const int64_t Ts = dims.sp_tokens;
  const double e = dims.act_bytes;
  const DType dt = dims.gemm_dtype;

  ModuleProfile profile;
  profile.module = kModule;
  profile.tokens = T;
  ModuleOpBuilder b(kModule, profile.ops, 128, dims);
  double params = 0;
  const double norm_w = NormParamsPerElement(model);
  const bool eager_rms = dims.eager_elementwise && model.norm != NormKind::kLayerNorm;
  // Under FP8 the q/kv norms are fused into q_up/kv_up (TELayerNormColumnParallelLinear in
  // Megatron's MLA spec: q_layernorm = kv_layernorm = IdentityOp) and write fp8; the layer's input
  // norm is a separate TENorm (it feeds q_down and kv_down), so those cast their input.
  const double fused_norm_out = profiler_internal::NormOutputBytes(dims, true);
  using profiler_internal::LinearInput;
  if (ql > 0) {
    b.Linear("q_down_proj", Ts, h, ql, dt);
    AddNorm(b, "q_norm", Ts, ql, e, fused_norm_out, eager_rms);
    b.BeginRecomputeGroup(RecomputeModule::kMlaUpProj);
    b.Linear("q_up_proj", T, ql, a_l * (nope + rope), dt, 1, 1, LinearInput::kFusedNorm);
    b.EndRecomputeGroup(RecomputeModule::kMlaUpProj);
    params += D(h) * D(ql) + norm_w * D(ql) + D(ql) * D(a_l * (nope + rope));
  } else {
    b.Linear("q_proj", T, h, a_l * (nope + rope), dt);
    params += D(h) * D(a_l * (nope + rope));
  }
  b.Linear("kv_down_proj", Ts, h, kl, dt);
  b.Linear("k_rope_proj", Ts, h, rope, dt, 1, 1, LinearInput::kSameAsPrevious);
  AddNorm(b, "kv_norm", Ts, kl, e, fused_norm_out, eager_rms);
  // Megatron-Core's "mla_up_proj" recompute (CheckpointWithoutOutput around
  // qkv_up_proj_and_rope_apply) discards the up-projections' and RoPE's outputs, the core's Q, K
  // and V, and re-creates them before the core's backward.
  b.BeginRecomputeGroup(RecomputeModule::kMlaUpProj);
  b.Linear("kv_up_proj", T, kl, a_l * (nope + v), dt, 1, 1, LinearInput::kFusedNorm);
  AddRope(b, T, a_l * rope, rope, e, dims.eager_elementwise, true);
  b.EndRecomputeGroup(RecomputeModule::kMlaUpProj);
  // After kv_up every head has its own K and V: kv heads = q heads.
  const AttentionShape shape = KernelShape(dims, a_l, a_l, nope + rope, v, ctx.model.causal_attention);
  AddAttentionCore(b, ctx, shape, e, dims.attention_dropout);
  b.Linear("o_proj", T, a_l * v, h, dt);
  b.Finish(ctx.recompute, ctx.training.recompute_modules);
  params += D(h) * D(kl + rope) + norm_w * D(kl) + D(kl) * D(a_l * (nope + v)) + D(a_l * v) * D(h);
  if (model.linear_bias) {
    params += (ql > 0 ? D(ql) : 0.0) + D(a_l * (nope + rope)) + D(kl + rope) +
              D(a_l * (nope + v)) + D(h);
  }
  profile.dense_parameters = params;

  // Korthikanti's terms for MLA's graph: the shared norm output (SP-sharded), the inputs of
  // q_norm and q_up and of kv_norm and kv_up (SP-sharded), Q, K (nope+rope per head) and V for
  // the core, the core itself, o_proj's input and the dropout mask. The linear layers' inputs
  // are kept as SavedLinearInputBytes: under a Transformer Engine fp8 recipe the norm output
  // as two quantised copies (q_down and kv_down each cast their own), q_up's and kv_up's as the
  // fp8 their fused norms wrote, beside the norms' own bf16 inputs.
  const double core = CoreActivationBytes(ctx, shape, e, dims.attention_dropout);
  const double saved = profiler_internal::SavedLinearInputBytes(dims);
  const double norm_output = saved < e ? 2.0 * saved : e;
  double stored = norm_output * D(Ts) * D(h) + (ql > 0 ? (e + saved) * D(Ts) * D(ql) : 0.0) +
                  (e + saved) * D(Ts) * D(kl) + e * D(T) * D(a_l * (2 * (nope + rope) + v)) +
                  core + saved * D(T) * D(a_l * v);
  if (dims.hidden_dropout) stored += D(Ts) * D(h);
  profile.activation_bytes = Bytes(stored);
  // Selective recompute drops what its modules re-create: the core's own tensors (core_attn),
  // Q, K and V (mla_up_proj), the separate input norm's bf16 output that q_down and kv_down
  // keep when they are not quantised (layernorm; an fp8 recipe keeps their own copies).
  double dropped = 0;
  if (profiler_internal::SelectiveRecomputes(ctx, RecomputeModule::kCoreAttn)) dropped += core;
  if (profiler_internal::SelectiveRecomputes(ctx, RecomputeModule::kMlaUpProj)) {
    dropped += e * D(T) * D(a_l * (2 * (nope + rope) + v));
  }
  if (profiler_internal::SelectiveRecomputes(ctx, RecomputeModule::kLayernorm) && saved >= e) {
    dropped += e * D(Ts) * D(h);
  }
  profile.activation_bytes_selective =
      dims.op_sac ? b.OpSacStoredBytes() : Bytes(stored - dropped);
  return profile;
}

}  // namespace

absl::StatusOr<ModuleProfile> ProfileAttention(const ProfileContext& ctx) {
  PROJECTOR_ASSIGN_OR_RETURN(const LayerDims dims, profiler_internal::ResolveDims(ctx));
  if (ctx.model.mla.has_value()) return ProfileMla(ctx, dims);
  return ProfileStandard(ctx, dims);
}

}  // namespace projector
