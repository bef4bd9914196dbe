#include "serving/dp_attention.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace projector {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

absl::Status CheckDpAttention(const Deployment& d) {
  const int64_t ranks = d.dp_attention;
  if (ranks < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("dp-attention: needs 2 or more attention ranks, got ", ranks));
  }
  if (d.tp % ranks != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dp-attention: ", ranks, " attention ranks do not divide tp=", d.tp,
        " (each rank runs attention on tp/ranks GPUs; SGLang's --dp divides --tp)"));
  }
  if (d.model.NumMoeLayers() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dp-attention: ", d.model.name,
        " has no MoE layer, so its attention ranks would share nothing: serve them as "
        "independent replicas (--replicas)"));
  }
  if (d.pp != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("dp-attention: runs without pipeline stages (pp=1), got pp=", d.pp));
  }
  return absl::OkStatus();
}

// The side that takes longest: the one every rank waits for.
const PassBreakdown& Busiest(const std::vector<PassBreakdown>& sides) {
  size_t busiest = 0;
  for (size_t r = 1; r < sides.size(); ++r) {
    if (sides[r].Total() > sides[busiest].Total()) busiest = r;
  }
  return sides[busiest];
}

}  // namespace

DpAttentionCost::DpAttentionCost(Deployment deployment, std::unique_ptr<PassCostModel> rank,
                                 std::unique_ptr<PassCostModel> group)
    : deployment_(std::move(deployment)), rank_(std::move(rank)), group_(std::move(group)) {}

absl::StatusOr<std::unique_ptr<DpAttentionCost>> DpAttentionCost::Make(
    const Deployment& deployment) {
  PROJECTOR_RETURN_IF_ERROR(CheckDpAttention(deployment));
  PROJECTOR_ASSIGN_OR_RETURN(std::unique_ptr<PassCostModel> rank,
                             PassCostModel::Make(deployment.AttentionRank()));
  Deployment group = deployment;
  group.dp_attention = 1;
  PROJECTOR_ASSIGN_OR_RETURN(std::unique_ptr<PassCostModel> group_model,
                             PassCostModel::Make(group));
  return std::unique_ptr<DpAttentionCost>(
      new DpAttentionCost(deployment, std::move(rank), std::move(group_model)));
}

absl::StatusOr<DpAttentionCost::RankSide> DpAttentionCost::Side(const BatchPass& pass) {
  RankSide side;
  const int64_t tokens = pass.NewTokens();
  if (tokens == 0) return side;  // an idle rank: waits at every MoE layer
  PROJECTOR_ASSIGN_OR_RETURN(const Seconds kernels, rank_->AttentionKernels(pass));
  Seconds prefill(0);
  for (const PrefillChunk& chunk : pass.prefills) {
    PROJECTOR_ASSIGN_OR_RETURN(const Seconds t, rank_->PrefillAttention(chunk));
    prefill += t;
  }
  for (PassBreakdown* b : {&side.dense, &side.moe}) {
    b->prefill_attention = prefill;
    b->decode_attention = kernels - prefill;
  }
  if (deployment_.model.NumDenseLayers() > 0) {
    PROJECTOR_ASSIGN_OR_RETURN(const PassCostModel::LayerParts dense,
                               rank_->Parts(tokens, false));
    side.dense.linear = dense.Linear();
    side.dense.tp_comm = dense.all_reduce * 2.0;
  }
  // The MoE layer's side: its attention projections and the attention output's all-reduce
  // (at TP tp/D; none at 1); its norms and experts run on the gathered tokens.
  PROJECTOR_ASSIGN_OR_RETURN(const PassCostModel::LayerParts moe, rank_->Parts(tokens, true));
  side.moe.linear = moe.attention_linear;
  side.moe.tp_comm = moe.all_reduce;
  PROJECTOR_ASSIGN_OR_RETURN(side.head, rank_->Ends(pass, 0));
  return side;
}

absl::StatusOr<PassBreakdown> DpAttentionCost::Breakdown(std::span<const BatchPass> passes) {
  int64_t tokens = 0;
  std::vector<PassBreakdown> dense, moe, head;
  dense.reserve(passes.size());
  moe.reserve(passes.size());
  head.reserve(passes.size());
  for (const BatchPass& pass : passes) {
    tokens += pass.NewTokens();
    PROJECTOR_ASSIGN_OR_RETURN(const RankSide side, Side(pass));
    dense.push_back(side.dense);
    moe.push_back(side.moe);
    head.push_back(side.head);
  }
  if (tokens < 1) return absl::InvalidArgumentError("a pass needs at least one new token");
  // The MoE over the tokens of all ranks on the whole group, with their gather and scatter.
  PROJECTOR_ASSIGN_OR_RETURN(const PassCostModel::LayerParts experts,
                             group_->Parts(tokens, true));
  PassBreakdown moe_layer = Busiest(moe);
  moe_layer.linear += experts.mlp_linear;
  moe_layer.tp_comm += experts.all_reduce;
  const ModelSpec& model = deployment_.model;
  PassBreakdown pass = Busiest(dense).Times(D(model.NumDenseLayers()));
  pass += moe_layer.Times(D(model.NumMoeLayers()));
  pass += Busiest(head);
  return pass;
}

absl::StatusOr<Seconds> DpAttentionCost::PassTime(std::span<const BatchPass> passes) {
  PROJECTOR_ASSIGN_OR_RETURN(const PassBreakdown b, Breakdown(passes));
  return b.Total();
}

}  // namespace projector
