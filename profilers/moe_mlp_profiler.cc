// MoE MLP profiler (Megatron-Core MoELayer with the all-to-all token dispatcher): router GEMM
// and top-k, token permutation, the grouped expert GEMMs on this GPU's local experts (turbo: one
// batched GEMM per projection over the local experts; legacy: one GEMM per local expert run
// sequentially), unpermutation, and the shared experts. The EP All-to-All dispatch/combine
// between permutation and the experts is added by the composer.
//
// Tokens (derivation). A GPU enters the MoE layer with T = micro_batch·seq_len/CP tokens, of
// which it routes T_l = T/t: under sequence parallelism the layer input is already split over
// the TP ranks (Megatron requires SP for MoE with TP > 1; without it we keep the same split).
// Each token picks top_k experts, so a GPU emits T_l·k token-expert pairs. EP·ETP ranks
// exchange their pairs; each expert is split over ETP ranks, which all process every token of
// the expert. With uniform routing each expert receives EP·ETP·T_l·k/E pairs, and a GPU holding
// E/EP local experts processes
//     pairs = (E/EP)·EP·ETP·T_l·k/E = ETP·T_l·k,
// i.e. m = pairs/(E/EP) = ETP·T_l·k·EP/E rows per local expert (rounded up), each against an
// FFN slice of expert_ffn/ETP. The FLOPs per GPU do not depend on EP or ETP.
//
// Routing that is not balanced (training.moe_imbalance, capacity factor and padding): every
// MoE layer waits at its All-to-All for the busiest EP rank, so the layer is timed on that
// rank, whose experts process L·pairs (L = MoeExpertLoad: the imbalance, capped by the capacity
// factor, or the capacity factor itself under padding), rounded up. Its own tokens' router,
// permutation and unpermutation stay T_l·k.
#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "profilers/module_profilers.h"
#include "profilers/profiler_internal.h"

namespace projector {

namespace {

using profiler_internal::CheckDivisible;
using profiler_internal::D;

// The MoE layer's sizes on this GPU (see the derivation above).
struct MoeShape {
  int64_t experts = 0, top_k = 0, hidden = 0;
  int64_t tokens_local = 0;     // T_l: the tokens this GPU routes
  int64_t local_experts = 0;    // E/EP
  // Local experts that receive tokens: all of them in training; in an inference pass the ones
  // its tokens choose (few tokens leave experts idle, and their weights unread).
  int64_t active_experts = 0;
  int64_t pairs = 0;            // token-expert pairs the busiest rank's experts process
  int64_t rows_per_expert = 0;  // pairs over the local experts, rounded up
  int64_t expert_ffn_local = 0; // expert_ffn/ETP
  int64_t shared_ffn = 0;       // num_shared·shared_ffn (0: no shared experts)
  bool gated = false;
  // Transformer Engine's Fp8Padding copies the experts' rows to the quantisation alignment and
  // back (ExpertRowsPaddedByCopies).
  bool padding_copies = false;
};

// Whether the experts' rows reach the fp8 GEMMs through padding copies: the megatron stack's fp8
// MoE (RunChoices::moe_quant_align) without router padding, when a count is not a multiple of the
// alignment. Dropless routing (or a capacity without padding) gives counts that vary every step,
// whose remainders are almost never all zero, so the copies run (TE Fp8Padding skips them only
// when "no padding needed"); padded to capacity every expert takes the same fixed count.
bool ExpertRowsPaddedByCopies(const RunChoices& run, const TrainingConfig& training,
                              int64_t rows_per_expert) {
  if (run.moe_quant_align <= 0 || run.moe_router_padding) return false;
  if (!MoeForwardSyncsHost(training)) return rows_per_expert % run.moe_quant_align != 0;
  return true;
}

absl::StatusOr<MoeShape> ResolveMoeShape(const ProfileContext& ctx,
                                         const profiler_internal::LayerDims& dims) {
  const ModelSpec& model = ctx.model;
  if (!model.moe.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", model.name, " has no MoE layers (no \"moe\" section)"));
  }
  const MoeSpec& moe = *model.moe;
  const ParallelConfig& parallel = ctx.parallel;
  MoeShape s{.experts = moe.num_experts, .top_k = moe.top_k, .hidden = model.hidden_size};
  const int64_t E = s.experts, k = s.top_k, f_e = moe.expert_ffn_hidden;
  if (E <= 0 || k <= 0 || k > E || f_e <= 0 || moe.num_shared_experts < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model ", model.name, ": MoE needs num_experts > 0, 0 < top_k <= num_experts and "
        "expert_ffn_hidden > 0, got ", E, ", ", k, ", ", f_e));
  }
  PROJECTOR_RETURN_IF_ERROR(CheckDivisible("num_experts", E, "ep", parallel.ep));
  PROJECTOR_RETURN_IF_ERROR(CheckDivisible("expert_ffn_hidden", f_e, "etp", parallel.etp));
  s.local_experts = E / parallel.ep;
  // Token-expert pairs this rank's experts handle: Megatron splits the tokens over TP and each
  // expert-TP rank of a group sees its group's tokens, etp·(T/tp)·k, which is T·k/ep with
  // tp = ep·etp. An inference engine (dims.inference) routes all T tokens on every TP rank
  // (vLLM's FusedMoE after the attention all-reduce) and keeps T·k/ep of the pairs: the same
  // count without asking TP to divide the pass's tokens.
  double pairs = 0;
  if (dims.inference) {
    s.tokens_local = dims.tokens;
    pairs = D(dims.tokens * k) / D(parallel.ep);
  } else {
    PROJECTOR_RETURN_IF_ERROR(CheckDivisible("tokens per micro-batch (micro_batch*seq_len/cp)",
                                             dims.tokens, "tp (MoE tokens are split over TP)",
                                             dims.tp));
    s.tokens_local = dims.tokens / dims.tp;
    // Router padding with the alltoall dispatcher: every routing rank's map gains
    // MoeRouterPaddingPairsRouted pairs, which reach the experts like routed ones.
    pairs = D(parallel.etp) *
            (D(s.tokens_local * k) + MoeRouterPaddingPairsRouted(ctx.run, parallel.deepep, E));
  }
  s.active_experts = s.local_experts;
  if (dims.inference) {
    // A fused MoE kernel (vLLM's fused_moe: moe_align_block_size pads each expert's rows to
    // the block and launches none for an expert without tokens) reads only the experts its
    // tokens chose. With T tokens each choosing k of E experts uniformly, an expert stays idle
    // with probability (1 - k/E)^T.
    const double idle = std::pow(1.0 - D(k) / D(E), D(dims.tokens));
    s.active_experts = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(D(s.local_experts) * (1.0 - idle) - 1e-9)), 1,
        s.local_experts);
  }
  // At least one row per active expert: a capacity is rounded up per expert (Megatron
  // get_capacity: ceil(tokens/experts · factor)), so a tiny factor still leaves one.
  // Router padding after DeepEP's dispatch rounds each local expert's count up on the GPU.
  s.pairs = std::max(
      s.active_experts,
      static_cast<int64_t>(std::ceil(
          pairs * MoeExpertLoad(ctx.training) +
          MoeRouterPaddingRowsAfterDispatch(ctx.run, parallel.deepep, s.local_experts) - 1e-9)));
  s.rows_per_expert = (s.pairs + s.active_experts - 1) / s.active_experts;
  s.padding_copies =
      !dims.inference && ExpertRowsPaddedByCopies(ctx.run, ctx.training, s.rows_per_expert);
  s.expert_ffn_local = f_e / parallel.etp;
  s.gated = model.mlp == MlpKind::kSwiGlu;
  s.shared_ffn = moe.num_shared_experts *
                 (moe.shared_expert_ffn_hidden > 0 ? moe.shared_expert_ffn_hidden : f_e);
  if (s.shared_ffn > 0) {
    PROJECTOR_RETURN_IF_ERROR(
        CheckDivisible("shared expert ffn (num_shared_experts*shared_expert_ffn_hidden)",
                       s.shared_ffn, "tp", dims.tp));
  }
  return s;
}

// Which directions of the permutation sum T_l·k rows back into T_l rows by atomic adds, one per
// element (RunChoices::moe_permute_fused and the stack; the kernels' rates are measured:
// docs/gpu_measurements.md, session 30):
//   fused (Transformer Engine's moe_permute/moe_unpermute): none, every direction a gather or a
//     gather-reduce;
//   Megatron-Core unfused (moe_utils.permute/unpermute): the permutation is tokens.index_select,
//     whose backward is index_add; the unpermutation is scatter_add_, whose backward a gather;
//   torchtitan (models/moe/moe.py): torch.gather, whose backward is scatter_add_, and
//     out.scatter_add, whose backward a gather.
struct PermutationAdds {
  AtomicAddKernel permute_backward = AtomicAddKernel::kNone;
  AtomicAddKernel unpermute_forward = AtomicAddKernel::kNone;
};

PermutationAdds PermutationAddsOf(const RunChoices& run) {
  if (run.moe_permute_fused) return {};
  if (run.stack == TrainingStack::kTorchTitan) {
    return {AtomicAddKernel::kScatterAdd, AtomicAddKernel::kScatterAdd};
  }
  return {AtomicAddKernel::kIndexAdd, AtomicAddKernel::kScatterAdd};
}

// `op` as a scatter-add of the T_l·k routed rows of h elements into T_l rows by `kernel`.
MemoryOp SummedByAtomics(MemoryOp op, AtomicAddKernel kernel, const MoeShape& s) {
  if (kernel == AtomicAddKernel::kNone) return op;
  op.atomic_kernel = kernel;
  op.atomic_adds = D(s.tokens_local) * D(s.top_k) * D(s.hidden);
  return op;
}

// How the router gate's GEMM runs, from the model's router dtype (MoeSpec::router_dtype) and the
// stack.
enum class RouterGemm {
  // In the activations' dtype, forward and backward (Megatron-Core's default moe_router_dtype;
  // an inference engine's gate, which vLLM's GateLinear runs as one bf16 GEMM with fp32 output).
  kActivationDtype,
  // Megatron-Core's RouterGatingLinearFunction under moe_router_dtype="fp32" (moe_utils.py, with
  // Transformer Engine): the forward is TE's general_gemm on the bf16 input and weight writing
  // fp32 logits; the backward casts the weight and the saved input to fp32 and runs the dgrad
  // and wgrad as pure-FP32 GEMMs, which Transformer Engine issues on TF32 tensor cores
  // (cublaslt_gemm.cu: "Use TF32 only for pure FP32 GEMM", CUBLAS_COMPUTE_32F_FAST_TF32), then
  // casts both gradients back to bf16.
  kTeFp32Logits,
  // PyTorch fp32 GEMMs on fp32 copies of the input and weight: torchtitan's gate, run under
  // torch.autocast(dtype=float32) for every MoE model (torchtitan models/moe, "Compute gate in
  // float32 to help stability of expert load balancing"), and Megatron-Core's torch.mm path
  // without Transformer Engine. With PyTorch's default fp32 matmul precision (IEEE, TF32 off)
  // cuBLAS has no tensor-core kernel for them: SIMT SGEMM on the FP32 cores for the forward,
  // dgrad and wgrad (pytorch/torchtitan #4273 measured it at 4% of speed of light on B300, 8-9%
  // of a step).
  kFp32Simt,
};

RouterGemm RouterGemmOf(const ProfileContext& ctx, const profiler_internal::LayerDims& dims) {
  if (dims.inference) return RouterGemm::kActivationDtype;
  if (ctx.run.stack == TrainingStack::kTorchTitan) return RouterGemm::kFp32Simt;
  if (ctx.model.moe->router_dtype != DType::kFp32) return RouterGemm::kActivationDtype;
  return dims.te_modules ? RouterGemm::kTeFp32Logits : RouterGemm::kFp32Simt;
}

// Router GEMM, fused softmax and top-k, and the permutation gather.
void AddRoutingOps(profiler_internal::ModuleOpBuilder& b, const MoeShape& s,
                   const profiler_internal::LayerDims& dims, const TrainingConfig& training,
                   RouterGemm router, const PermutationAdds& adds) {
  const double e = dims.act_bytes;
  // Router: replicated over TP (not split), never FP8 (RouterGemm for its dtype). The fp32
  // copies of its input and weight are casts reading e bytes and writing 4 an element, and the
  // fp32 gradients' casts back read 4 and write e: under autocast the copies are made in the
  // forward and the gradients cast back in the backward (two kernels each way); Megatron-Core's
  // fp32 path makes the copies and casts back all in the backward (four kernels).
  const double gate_elements = (D(s.tokens_local) + D(s.experts)) * D(s.hidden);
  const MemoryOp fp32_casts{
      .bytes = Bytes((e + 4.0) * gate_elements), .flops = Flops(gate_elements), .launches = 2};
  switch (router) {
    case RouterGemm::kActivationDtype:
      b.Linear("router", s.tokens_local, s.hidden, s.experts, dims.act_dtype);
      break;
    case RouterGemm::kTeFp32Logits: {
      const MemoryOp both_ways{
          .bytes = fp32_casts.bytes * 2.0, .flops = fp32_casts.flops * 2.0, .launches = 4};
      b.Linear("router", s.tokens_local, s.hidden, s.experts, dims.act_dtype);
      b.SetBackwardGemmDType(DType::kTf32, both_ways);
      break;
    }
    case RouterGemm::kFp32Simt:
      b.Memory("router_fp32_cast", fp32_casts, fp32_casts);
      b.Linear("router", s.tokens_local, s.hidden, s.experts, DType::kFp32);
      break;
  }
  b.PlainTorchLinear();  // Megatron's TopKRouter gate: torch's linear, not a TE module
  // Fused softmax + top-k: reads the logits, writes the top-k probabilities (fp32), indices
  // (int64) and the boolean routing map; backward reads the probability gradient and writes the
  // logit gradient.
  const double logits = D(s.tokens_local) * D(s.experts);
  b.Memory("router_topk",
           MemoryOp{.bytes = Bytes(e * logits + 12.0 * D(s.tokens_local) * D(s.top_k) + logits),
                    .flops = Flops(5.0 * logits)},
           MemoryOp{.bytes = Bytes(e * logits + 4.0 * D(s.tokens_local) * D(s.top_k)),
                    .flops = Flops(3.0 * logits)});
  // The load-balancing loss every published MoE recipe trains with (Megatron-Core
  // router.py with moe_router_fusion: the routing scores recomputed for the loss, the per-expert
  // token sums, the loss itself): three kernels over the [T_l, E] fp32 scores each way.
  // Training only: an inference engine routes without it.
  if (!dims.inference) {
    b.Memory("router_aux_loss",
             MemoryOp{.bytes = Bytes(8.0 * logits), .flops = Flops(5.0 * logits), .launches = 3},
             MemoryOp{.bytes = Bytes(8.0 * logits), .flops = Flops(3.0 * logits),
                      .launches = 3});
  }
  // The dispatcher's preprocess (MoEAlltoAllTokenDispatcher.preprocess): the per-expert token
  // counts (routing_map.sum over the [T_l, E] boolean map), the All-to-All splits from them and
  // their two copies to the host; forward only, and only the count when the experts are padded
  // to capacity (static splits, no copy). The counts' AllGather over the EP group is added by
  // the layer composer.
  const int64_t preprocess_kernels = MoeForwardSyncsHost(training) ? 4 : 1;
  b.Memory("dispatch_preprocess",
           MemoryOp{.bytes = Bytes(logits), .flops = Flops(logits),
                    .launches = preprocess_kernels},
           MemoryOp{.bytes = Bytes(0), .flops = Flops(0), .launches = 0});
  // Permutation gathers the T_l·k token copies (T_l·k·h·e bytes moved: read + write); its
  // backward is the unpermutation (scatter-add) of the gradients, the same traffic.
  const double moved = D(s.tokens_local) * D(s.top_k) * D(s.hidden) * e;
  const MemoryOp permute{.bytes = Bytes(2.0 * moved), .flops = Flops(0)};
  b.Memory("permute", permute, SummedByAtomics(permute, adds.permute_backward, s));
}

// The copies that pad the experts' rows for the fp8 GEMMs (MoeShape::padding_copies): pairs rows
// of h elements of e bytes and their fp32 routing probabilities, each read and written once (the
// few padded rows, (a − 1)/2 an expert on average, are left out).
// - Grouped (Megatron-Core TEGroupedMLP.forward under fp8): Transformer Engine's Fp8Padding on
//   the hidden states and on the probabilities (tex.fused_multi_row_padding, one kernel each),
//   whose backward unpads the two gradients (tex.fused_multi_row_unpadding); after the experts,
//   Fp8Unpadding (fused_multi_row_unpadding, its backward fused_multi_row_padding) on the output.
// - One GEMM per expert (Megatron-Core SequentialMLP._pad_tensor_for_quantization): every
//   expert's rows and probabilities are concatenated with zero rows, a zeros and a cat kernel
//   each, whose backward takes views; the expert's output is sliced back (a view), whose backward
//   zero-fills the padded gradient and copies the slice's in, two kernels an expert, counted here
//   as the padding's backward.
void AddFp8PaddingOp(profiler_internal::ModuleOpBuilder& b, const MoeShape& s, double e,
                     bool grouped) {
  const double rows = D(s.pairs) * D(s.hidden) * e;
  const MemoryOp pad{.bytes = Bytes(2.0 * (rows + 4.0 * D(s.pairs))),
                     .flops = Flops(0),
                     .launches = grouped ? 2 : 4 * s.active_experts};
  const MemoryOp slice_grad{
      .bytes = Bytes(3.0 * rows), .flops = Flops(0), .launches = 2 * s.active_experts};
  b.Memory("fp8_padding", pad, grouped ? pad : slice_grad);
}

void AddFp8UnpaddingOp(profiler_internal::ModuleOpBuilder& b, const MoeShape& s, double e) {
  const MemoryOp copy{.bytes = Bytes(2.0 * D(s.pairs) * D(s.hidden) * e), .flops = Flops(0)};
  b.Memory("fp8_unpadding", copy, copy);
}

// The local experts' GEMMs (turbo: one batched GEMM per projection; legacy: one per expert),
// the unpermutation, and the shared experts.
void AddExpertOps(profiler_internal::ModuleOpBuilder& b, const MoeShape& s,
                  const profiler_internal::LayerDims& dims, const ParallelConfig& parallel,
                  const PermutationAdds& adds) {
  const double e = dims.act_bytes;
  const bool turbo = parallel.turbo_grouped_gemm;
  // The batched (turbo) path is Transformer Engine's GroupedLinear: one call per projection,
  // but the host splits the input and issues every local expert's GEMM (and quantisation)
  // itself. The legacy path repeats a whole TE Linear per expert (Op::repeat) already.
  // Permutation 2 (MoEAlltoAllTokenDispatcher, "Sort tokens by local expert"): with several local
  // experts the received tokens arrive grouped by source rank and are copied into expert order
  // (sort_chunks_by_idxs; padded to capacity, a transpose().contiguous() of the same size), and
  // copied back before the combine; each backward is the reverse copy. pairs·h·e read and
  // written each.
  const double rows_moved = D(s.pairs) * D(s.hidden) * e;
  const MemoryOp sort_chunks{.bytes = Bytes(2.0 * rows_moved), .flops = Flops(0)};
  if (s.local_experts > 1) b.Memory("sort_chunks", sort_chunks, sort_chunks);
  if (s.padding_copies) AddFp8PaddingOp(b, s, e, turbo);
  b.SetLinearHostFanout(turbo ? s.active_experts : 1);
  profiler_internal::AddMlpOps(
      b, {.fc1 = "expert_fc1", .act = "expert_act", .fc2 = "expert_fc2", .routed_experts = true},
      s.rows_per_expert,
      s.hidden, s.expert_ffn_local, s.gated, dims.gemm_dtype, e,
      s.rows_per_expert * s.active_experts, /*batch=*/turbo ? s.active_experts : 1,
      /*repeat=*/turbo ? 1 : s.active_experts, profiler_internal::LinearInput::kCast,
      dims.eager_elementwise);
  b.SetLinearHostFanout(1);
  if (s.padding_copies && turbo) AddFp8UnpaddingOp(b, s, e);
  if (s.local_experts > 1) b.Memory("unsort_chunks", sort_chunks, sort_chunks);
  // Unpermutation sums the k copies back into token order; backward permutes the gradient
  // again. The routing probabilities scale the copies inside the experts' activation
  // (Megatron-Core experts.py, activation_func_with_probs: act(fc1_output) * permuted_probs,
  // fused), so the probability gradient comes from there.
  const double moved = D(s.tokens_local) * D(s.top_k) * D(s.hidden) * e;
  const MemoryOp unpermute{.bytes = Bytes(2.0 * moved),
                           .flops = Flops(2.0 * D(s.tokens_local) * D(s.top_k) * D(s.hidden))};
  b.Memory("unpermute", SummedByAtomics(unpermute, adds.unpermute_forward, s), unpermute);
  if (s.shared_ffn <= 0) return;
  // Shared experts: one dense MLP of num_shared·shared_ffn, TP-split like the dense MLP, on
  // all T tokens (gathered under SP).
  b.BeginRecomputeGroup(RecomputeModule::kSharedExperts);
  profiler_internal::AddMlpOps(b,
                               {.fc1 = kSharedExpertFc1,
                                .act = kSharedExpertAct,
                                .fc2 = kSharedExpertFc2},
                               dims.tokens, s.hidden, s.shared_ffn / dims.tp, s.gated,
                               dims.gemm_dtype, e, dims.tokens, /*batch=*/1, /*repeat=*/1,
                               profiler_internal::LinearInput::kCast, dims.eager_elementwise);
  b.EndRecomputeGroup(RecomputeModule::kSharedExperts);
}

// Korthikanti et al. 2022's MLP terms applied per routed pair (pairs rows instead of sbh):
// the MoE input (the norm output, SP-sharded; the router's input, and also the shared experts'
// fc1 input, which under a Transformer Engine fp8 recipe keeps its own quantised copy), the
// fp32 router probabilities, the permuted expert input (fc1's input: SavedLinearInputBytes),
// the experts' activation and fc2 inputs and the permuted probabilities the weighted
// activation keeps (4 bytes a pair; the unweighted unpermutation keeps nothing), the shared
// experts' activation and fc2 inputs, and the dropout mask. A gate run on fp32 copies
// (RouterGemm::kFp32Simt) keeps them for its wgrad and dgrad: 4 bytes per element of the input
// and of the weight.
Bytes StoredActivations(const MoeShape& s, const profiler_internal::LayerDims& dims,
                        RouterGemm router) {
  const double e = dims.act_bytes;
  const double saved = profiler_internal::SavedLinearInputBytes(dims);
  const double logits = D(s.tokens_local) * D(s.experts);
  double stored = e * D(s.tokens_local) * D(s.hidden) + 4.0 * logits +
                  saved * D(s.pairs) * D(s.hidden) +
                  profiler_internal::MlpInnerActivationBytes(s.pairs, s.expert_ffn_local, s.gated,
                                                             dims) +
                  4.0 * D(s.pairs);
  if (s.shared_ffn > 0) {
    if (saved < e) stored += saved * D(s.tokens_local) * D(s.hidden);
    stored += profiler_internal::MlpInnerActivationBytes(dims.tokens, s.shared_ffn / dims.tp,
                                                         s.gated, dims);
  }
  if (dims.hidden_dropout) stored += D(s.tokens_local) * D(s.hidden);
  if (router == RouterGemm::kFp32Simt) {
    stored += 4.0 * (D(s.tokens_local) + D(s.experts)) * D(s.hidden);
  }
  return Bytes(stored);
}

// What selective recompute's modules leave of `stored_without` (StoredActivations): "moe" keeps
// the layer's input (the pre-MLP norm's output) and the dropout mask; otherwise "layernorm" drops
// that norm output (the router's and, unquantised, the shared experts' input), "moe_act" the
// routed experts' fc2 input, "shared_experts" everything the shared experts keep beyond their
// input.
Bytes StoredUnderSelective(const ProfileContext& ctx, const MoeShape& s,
                           const profiler_internal::LayerDims& dims, Bytes stored_without) {
  using profiler_internal::SelectiveRecomputes;
  const double e = dims.act_bytes;
  const double mask = dims.hidden_dropout ? D(s.tokens_local) * D(s.hidden) : 0.0;
  if (SelectiveRecomputes(ctx, RecomputeModule::kMoe)) {
    return Bytes(e * D(s.tokens_local) * D(s.hidden) + mask);
  }
  const double saved = profiler_internal::SavedLinearInputBytes(dims);
  double stored = stored_without.value();
  if (SelectiveRecomputes(ctx, RecomputeModule::kLayernorm)) {
    stored -= e * D(s.tokens_local) * D(s.hidden);
  }
  if (SelectiveRecomputes(ctx, RecomputeModule::kMoeAct)) {
    stored -= saved * D(s.pairs) * D(s.expert_ffn_local);
  }
  if (s.shared_ffn > 0 && SelectiveRecomputes(ctx, RecomputeModule::kSharedExperts)) {
    if (saved < e) stored -= saved * D(s.tokens_local) * D(s.hidden);
    stored -= profiler_internal::MlpInnerActivationBytes(dims.tokens, s.shared_ffn / dims.tp,
                                                         s.gated, dims);
  }
  return Bytes(stored);
}

}  // namespace

absl::StatusOr<ModuleProfile> ProfileMoeMlp(const ProfileContext& ctx) {
  PROJECTOR_ASSIGN_OR_RETURN(const profiler_internal::LayerDims dims,
                             profiler_internal::ResolveDims(ctx));
  PROJECTOR_ASSIGN_OR_RETURN(const MoeShape s, ResolveMoeShape(ctx, dims));
  ModuleProfile profile;
  profile.module = "moe";
  profile.tokens = s.pairs;
  profiler_internal::ModuleOpBuilder b("moe", profile.ops, 128, dims);
  b.BeginRecomputeGroup(RecomputeModule::kMoe);
  const PermutationAdds adds = PermutationAddsOf(ctx.run);
  const RouterGemm router = RouterGemmOf(ctx, dims);
  AddRoutingOps(b, s, dims, ctx.training, router, adds);
  AddExpertOps(b, s, dims, ctx.parallel, adds);
  b.EndRecomputeGroup(RecomputeModule::kMoe);
  b.Finish(ctx.recompute, ctx.training.recompute_modules);

  const bool bias = ctx.model.linear_bias;
  profile.dense_parameters = D(s.hidden) * D(s.experts);  // router, no bias
  if (s.shared_ffn > 0) {
    profile.dense_parameters +=
        profiler_internal::MlpParameters(s.hidden, s.shared_ffn / dims.tp, s.gated, bias);
  }
  profile.expert_parameters =
      D(s.local_experts) *
      profiler_internal::MlpParameters(s.hidden, s.expert_ffn_local, s.gated, bias);
  profile.activation_bytes = StoredActivations(s, dims, router);
  profile.activation_bytes_selective =
      dims.op_sac ? b.OpSacStoredBytes()
                  : StoredUnderSelective(ctx, s, dims, profile.activation_bytes);
  return profile;
}

}  // namespace projector
