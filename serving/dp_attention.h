// Data-parallel attention with the experts over the whole group (SGLang --enable-dp-attention
// --dp D, DeepSeek's serving layout; vLLM's data parallelism with expert parallelism): a
// deployment of tp GPUs runs D attention ranks, each with its own requests, scheduler and KV
// cache and the attention weights at TP tp/D, while every MoE layer gathers the tokens of all
// ranks, runs the routed experts over all tp GPUs (each expert's FFN split over them, or whole
// experts spread with expert parallelism) and scatters the results back. The ranks run every
// pass in lock-step (SGLang runs an idle batch on a rank without work): at each MoE layer every
// rank waits for the slowest rank's attention, so a pass takes, per layer, the busiest rank's
// attention side and then the MoE over the tokens of all.
#ifndef PROJECTOR_SERVING_DP_ATTENTION_H_
#define PROJECTOR_SERVING_DP_ATTENTION_H_

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/units.h"
#include "serving/pass_cost.h"

namespace projector {

// The RDMA buffer DeepEP's low-latency kernels register on every GPU, for up to `max_tokens`
// tokens a rank (deepseek-ai/DeepEP csrc/config.hpp, LowLatencyLayout; SGLang sizes it by
// SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK): two send, two receive and two signalling
// buffers, odd and even. A dispatch message is a 16-byte header and a token in bf16 (the
// larger of bf16 and fp8 with its per-128 fp32 scales), a combine message a token in bf16;
// a send buffer holds the larger of one message per token and one per token and expert, a
// receive buffer one per token and expert, a signalling buffer one int per expert.
Bytes DeepEpLowLatencyBufferBytes(int64_t hidden, int64_t experts, int64_t max_tokens);

// Two-batch overlap's split of one rank's pass (SGLang two_batch_overlap.py balances the two
// micro-batches' tokens): the decoding sequences first, then the prefill chunks in order, into
// a first half of ceil(tokens / 2) tokens, a chunk that straddles the boundary cut in two (its
// second part with the first part as context); the decode tokens attended over shared in
// proportion. Requests emitting tokens stay with the pass (the head runs on the whole pass).
std::pair<BatchPass, BatchPass> SplitPass(const BatchPass& pass);

// kInvalidArgument unless `d` can run data-parallel attention: 2 or more ranks dividing its TP
// (named `tp_name` in the message), a model with MoE layers, no pipeline stages, whole experts
// under DeepEP, and DeepEP under two-batch overlap. The message names no flag.
absl::Status CheckDpAttentionLayout(const Deployment& d, absl::string_view tp_name);

class DpAttentionCost {
 public:
  // kInvalidArgument when dp_attention does not divide tp, the model has no MoE layer (its
  // ranks would be independent replicas: --replicas), pp > 1, or a split fails.
  static absl::StatusOr<std::unique_ptr<DpAttentionCost>> Make(const Deployment& deployment);

  // Where one lock-step pass goes, `passes` one per rank (an empty pass: an idle rank):
  //   linear            per dense layer the busiest rank's attention, norms and dense MLP
  //                     (at TP tp/D), per MoE layer the busiest rank's attention projections
  //                     plus the MoE (router, experts, norms) over the tokens of all ranks on
  //                     tp GPUs;
  //   prefill/decode    the busiest rank's attention kernels, as part of that rank's side;
  //   tp_comm           the attention ranks' own all-reduces (tp/D > 1) and per MoE layer the
  //                     gather of all ranks' tokens and the scatter of the results over tp GPUs
  //                     (all-gather plus reduce-scatter: the traffic of one all-reduce), or
  //                     with DeepEP the all-to-all dispatch and combine of the routed copies;
  //   head              the busiest rank's embedding and output head.
  // The busiest rank is the one whose side of a layer takes longest (a layer's time is set by
  // it); kInvalidArgument when no rank has a token.
  //
  // With two-batch overlap (SGLang --enable-two-batch-overlap, with DeepEP) every rank's pass is
  // split into two micro-batches of about half its tokens (SplitPass), which go through each
  // layer one after the other on the compute stream while the other's dispatch and combine run
  // on the communication side: per MoE layer the attention side a and the experts m of each
  // half compute, its dispatch d and combine c communicate, and the layer takes the bound of a
  // two-resource pipeline of two micro-batches,
  //   max(a1 + m1 + a2 + m2, d1 + c1 + d2 + c2, max_h(a_h + d_h + m_h + c_h)),
  // the compute, the communication, or one micro-batch's own chain (its next layer waits for
  // its combine); what it takes beyond the compute is the exposed DeepEP time (tp_comm). Dense
  // layers run both halves in turn; the embedding and output head the whole pass.
  absl::StatusOr<PassBreakdown> Breakdown(std::span<const BatchPass> passes);
  absl::StatusOr<Seconds> PassTime(std::span<const BatchPass> passes);

  // The parts the high level of detail replays (serving/pass_events.h). One rank's side of a
  // dense and of a MoE layer, and its head (embedding, in `embedding`, and output head), with
  // the parts split as PassBreakdown splits them; all zero for an idle rank.
  struct RankSide {
    PassBreakdown dense, moe, head;
    Seconds embedding;
  };
  absl::StatusOr<RankSide> Side(const BatchPass& pass);
  // The same without the embedding and output head (two-batch overlap's halves, whose head
  // runs on the whole pass), and those alone (the rest zero).
  absl::StatusOr<RankSide> LayerSide(const BatchPass& pass);
  absl::StatusOr<RankSide> Ends(const BatchPass& pass);
  // The MoE of one layer over `tokens` tokens of all ranks on the whole group: its compute
  // (mlp_linear) and the all-reduce its gather and scatter together cost (all_reduce).
  absl::StatusOr<PassCostModel::LayerParts> Experts(int64_t tokens);
  // DeepEP's dispatch and combine of one MoE layer of a lock-step pass, by the kernels
  // `DeepEpKernels` picks; the rank with the most tokens sets the time.
  struct AllToAllTimes {
    Seconds dispatch, combine;
  };
  absl::StatusOr<AllToAllTimes> DeepEpDispatchAndCombine(std::span<const BatchPass> passes);
  // The kernels a lock-step pass runs: the deployment's mode, auto resolved to normal when some
  // rank prefills and to low-latency when every rank only decodes.
  DeepEpMode DeepEpKernels(std::span<const BatchPass> passes) const;
  // DeepEP's dispatch and combine when the busiest rank sends `busiest_tokens` by `kernels`.
  absl::StatusOr<AllToAllTimes> DeepEpTimes(int64_t busiest_tokens, DeepEpMode kernels);

  // One attention rank's model (its KV cache, the requests it can serve).
  PassCostModel& rank() { return *rank_; }
  const Deployment& deployment() const { return deployment_; }
  int64_t ranks() const { return deployment_.dp_attention; }

 private:
  DpAttentionCost(Deployment deployment, std::unique_ptr<PassCostModel> rank,
                  std::unique_ptr<PassCostModel> group);

  absl::StatusOr<PassBreakdown> TwoBatchBreakdown(std::span<const BatchPass> passes);

  Deployment deployment_;
  std::unique_ptr<PassCostModel> rank_;   // TP tp/D, experts over tp GPUs (weights, attention)
  std::unique_ptr<PassCostModel> group_;  // TP tp: the MoE over all ranks' tokens
  // Breakdown's per-rank sides, reused from pass to pass.
  std::vector<PassBreakdown> dense_sides_, moe_sides_, heads_;
  std::vector<BatchPass> halves_[2];  // TwoBatchBreakdown's split passes
};

}  // namespace projector

#endif  // PROJECTOR_SERVING_DP_ATTENTION_H_
