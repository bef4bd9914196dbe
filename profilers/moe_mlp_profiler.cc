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

absl::StatusOr<ModuleProfile> ProfileMoeMlp(const ProfileContext& ctx) {
  using profiler_internal::CheckDivisible;
  using profiler_internal::D;
  PROJECTOR_ASSIGN_OR_RETURN(const profiler_internal::LayerDims dims,
                             profiler_internal::ResolveDims(ctx));
  const ModelSpec& model = ctx.model;
  if (!model.moe.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", model.name, " has no MoE layers (no \"moe\" section)"));
  }
  const MoeSpec& moe = *model.moe;
  const ParallelConfig& parallel = ctx.parallel;
  const int64_t E = moe.num_experts;
  const int64_t k = moe.top_k;
  const int64_t f_e = moe.expert_ffn_hidden;
  const int64_t h = model.hidden_size;
  if (E <= 0 || k <= 0 || k > E || f_e <= 0 || moe.num_shared_experts < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model ", model.name, ": MoE needs num_experts > 0, 0 < top_k <= num_experts and "
        "expert_ffn_hidden > 0, got ", E, ", ", k, ", ", f_e));
  }
  PROJECTOR_RETURN_IF_ERROR(CheckDivisible("num_experts", E, "ep", parallel.ep));
  PROJECTOR_RETURN_IF_ERROR(CheckDivisible("expert_ffn_hidden", f_e, "etp", parallel.etp));
  PROJECTOR_RETURN_IF_ERROR(CheckDivisible("tokens per micro-batch (micro_batch*seq_len/cp)",
                                           dims.tokens, "tp (MoE tokens are split over TP)",
                                           dims.tp));
  const int64_t t_l = dims.tokens / dims.tp;
  const int64_t experts_l = E / parallel.ep;
  // At least one row per local expert: a capacity is rounded up per expert (Megatron
  // get_capacity: ceil(tokens/experts · factor)), so a tiny factor still leaves one.
  const int64_t pairs = std::max(
      experts_l, static_cast<int64_t>(std::ceil(D(parallel.etp * t_l * k) *
                                                    MoeExpertLoad(ctx.training) -
                                                1e-9)));
  const int64_t rows_per_expert = (pairs + experts_l - 1) / experts_l;
  const int64_t f_l = f_e / parallel.etp;
  const bool gated = model.mlp == MlpKind::kSwiGlu;
  const double e = dims.act_bytes;
  const int64_t shared_f =
      moe.num_shared_experts *
      (moe.shared_expert_ffn_hidden > 0 ? moe.shared_expert_ffn_hidden : f_e);
  if (shared_f > 0) {
    PROJECTOR_RETURN_IF_ERROR(
        CheckDivisible("shared expert ffn (num_shared_experts*shared_expert_ffn_hidden)",
                       shared_f, "tp", dims.tp));
  }

  ModuleProfile profile;
  profile.module = "moe";
  profile.tokens = pairs;
  profiler_internal::ModuleOpBuilder b("moe", profile.ops, 64, dims);
  // Router: replicated over TP (not split), in the parameter dtype (bf16; Megatron's
  // moe_router_dtype=fp32 is not modelled), never FP8.
  b.Linear("router", t_l, h, E, dims.act_dtype);
  // Fused softmax + top-k: reads the logits, writes the top-k probabilities (fp32), indices
  // (int64) and the boolean routing map; backward reads the probability gradient and writes the
  // logit gradient.
  const double logits = D(t_l) * D(E);
  b.Memory("router_topk",
           MemoryOp{.bytes = Bytes(e * logits + 12.0 * D(t_l) * D(k) + logits),
                    .flops = Flops(5.0 * logits)},
           MemoryOp{.bytes = Bytes(e * logits + 4.0 * D(t_l) * D(k)), .flops = Flops(3.0 * logits)});
  // Permutation gathers the T_l·k token copies (T_l·k·h·e bytes moved: read + write); its
  // backward is the unpermutation (scatter-add) of the gradients, the same traffic.
  const double moved = D(t_l) * D(k) * D(h) * e;
  const MemoryOp permute{.bytes = Bytes(2.0 * moved), .flops = Flops(0)};
  b.Memory("permute", permute, permute);
  const profiler_internal::MlpOpNames expert_names{
      .fc1 = "expert_fc1", .act = "expert_act", .fc2 = "expert_fc2"};
  if (parallel.turbo_grouped_gemm) {
    profiler_internal::AddMlpOps(b, expert_names, rows_per_expert, h, f_l, gated, dims.gemm_dtype,
                                 e, rows_per_expert * experts_l,
                                 /*batch=*/experts_l, /*repeat=*/1,
                                 profiler_internal::LinearInput::kCast, dims.eager_elementwise);
  } else {
    profiler_internal::AddMlpOps(b, expert_names, rows_per_expert, h, f_l, gated, dims.gemm_dtype,
                                 e, rows_per_expert * experts_l,
                                 /*batch=*/1, /*repeat=*/experts_l,
                                 profiler_internal::LinearInput::kCast, dims.eager_elementwise);
  }
  // Unpermutation scales each copy by its routing probability and sums the k copies back
  // into token order; backward permutes the gradient again (and forms the probability
  // gradient).
  const MemoryOp unpermute{.bytes = Bytes(2.0 * moved), .flops = Flops(2.0 * D(t_l) * D(k) * D(h))};
  b.Memory("unpermute", unpermute, unpermute);
  int64_t shared_f_l = 0;
  if (shared_f > 0) {
    // Shared experts: one dense MLP of num_shared·shared_ffn, TP-split like the dense MLP, on
    // all T tokens (gathered under SP).
    shared_f_l = shared_f / dims.tp;
    profiler_internal::AddMlpOps(b, {.fc1 = "shared_fc1", .act = "shared_act", .fc2 = "shared_fc2"},
                                 dims.tokens, h, shared_f_l, gated, dims.gemm_dtype, e, dims.tokens,
                                 /*batch=*/1, /*repeat=*/1, profiler_internal::LinearInput::kCast,
                                 dims.eager_elementwise);
  }
  b.Finish(ctx.recompute);

  profile.dense_parameters = D(h) * D(E);  // router, no bias
  if (shared_f_l > 0) {
    profile.dense_parameters +=
        profiler_internal::MlpParameters(h, shared_f_l, gated, model.linear_bias);
  }
  profile.expert_parameters =
      D(experts_l) * profiler_internal::MlpParameters(h, f_l, gated, model.linear_bias);

  // Korthikanti et al. 2022's MLP terms applied per routed pair (pairs rows instead of sbh):
  // the MoE input (the norm output, SP-sharded; also the shared experts' fc1 input), the fp32
  // router probabilities, the permuted expert input, the experts' activation and fc2 inputs,
  // the expert outputs the weighted unpermutation keeps, the shared experts' activation and
  // fc2 inputs, and the dropout mask.
  double stored =
      e * D(t_l) * D(h) + 4.0 * logits + e * D(pairs) * D(h) +
      profiler_internal::MlpInnerActivationBytes(pairs, f_l, gated, e, dims.eager_elementwise) +
      e * D(pairs) * D(h);
  if (shared_f_l > 0) {
    stored += profiler_internal::MlpInnerActivationBytes(dims.tokens, shared_f_l, gated, e,
                                                         dims.eager_elementwise);
  }
  if (dims.hidden_dropout) stored += D(t_l) * D(h);
  profile.activation_bytes = Bytes(stored);
  profile.activation_bytes_selective = profile.activation_bytes;
  return profile;
}

}  // namespace projector
