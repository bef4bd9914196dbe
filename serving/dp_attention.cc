#include "serving/dp_attention.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace projector {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

// The side that takes longest: the one every rank waits for.
const PassBreakdown& Busiest(const std::vector<PassBreakdown>& sides) {
  size_t busiest = 0;
  for (size_t r = 1; r < sides.size(); ++r) {
    if (sides[r].Total() > sides[busiest].Total()) busiest = r;
  }
  return sides[busiest];
}

}  // namespace

Bytes DeepEpLowLatencyBufferBytes(int64_t hidden, int64_t experts, int64_t max_tokens) {
  constexpr double kHeaderBytes = 16;  // the int4 carrying the token's source index
  constexpr double kScaleBlock = 128;  // fp8 elements per fp32 scale
  const double h = D(hidden);
  const double dispatch_msg = kHeaderBytes + std::max(2.0 * h, h + h / kScaleBlock * 4.0);
  const double combine_msg = 2.0 * h;
  const double slots = D(experts) * D(max_tokens);
  const double send = std::max(D(max_tokens) * dispatch_msg, slots * combine_msg);
  const double receive = std::max(slots * dispatch_msg, slots * combine_msg);
  const double signalling = D(experts) * 4.0;
  return Bytes(2.0 * (send + receive + signalling));
}

std::pair<BatchPass, BatchPass> SplitPass(const BatchPass& pass) {
  std::pair<BatchPass, BatchPass> halves;
  BatchPass& first = halves.first;
  BatchPass& second = halves.second;
  int64_t room = (pass.NewTokens() + 1) / 2;  // the first half's tokens
  first.decode_sequences = std::min(pass.decode_sequences, room);
  second.decode_sequences = pass.decode_sequences - first.decode_sequences;
  room -= first.decode_sequences;
  if (pass.decode_sequences > 0) {
    first.decode_kv_tokens = pass.decode_kv_tokens * first.decode_sequences / pass.decode_sequences;
    second.decode_kv_tokens = pass.decode_kv_tokens - first.decode_kv_tokens;
  }
  for (const PrefillChunk& chunk : pass.prefills) {
    const int64_t here = std::min(chunk.new_tokens, room);
    if (here > 0) first.prefills.push_back({.new_tokens = here, .context = chunk.context});
    if (here < chunk.new_tokens) {
      second.prefills.push_back(
          {.new_tokens = chunk.new_tokens - here, .context = chunk.context + here});
    }
    room -= here;
  }
  return halves;
}

absl::Status CheckDpAttentionLayout(const Deployment& d, absl::string_view tp_name) {
  const int64_t ranks = d.dp_attention;
  if (ranks < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("needs 2 or more attention ranks, got ", ranks));
  }
  if (d.model.NumMoeLayers() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        d.model.name,
        " has no MoE layer: its attention ranks would share nothing; serve independent "
        "replicas with --replicas"));
  }
  if (d.tp % ranks != 0) {
    return absl::InvalidArgumentError(absl::StrCat(ranks, " ranks do not divide ", tp_name, "=",
                                                   d.tp, " (each rank runs attention on tp/N GPUs)"));
  }
  if (d.pp != 1) return absl::InvalidArgumentError("runs without pipeline stages: drop --pp");
  if (d.deepep && !d.expert_parallel) {
    return absl::InvalidArgumentError(
        "DeepEP dispatches tokens to whole experts: add --expert-parallel");
  }
  if (d.two_batch_overlap && !d.deepep) {
    return absl::InvalidArgumentError(
        "two-batch overlap hides DeepEP's dispatch and combine: add --deepep");
  }
  return absl::OkStatus();
}

DpAttentionCost::DpAttentionCost(Deployment deployment, std::unique_ptr<PassCostModel> rank,
                                 std::unique_ptr<PassCostModel> group)
    : deployment_(std::move(deployment)), rank_(std::move(rank)), group_(std::move(group)) {}

absl::StatusOr<std::unique_ptr<DpAttentionCost>> DpAttentionCost::Make(
    const Deployment& deployment) {
  if (absl::Status s = CheckDpAttentionLayout(deployment, "tp"); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("dp-attention: ", s.message()));
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::unique_ptr<PassCostModel> rank,
                             PassCostModel::Make(deployment.AttentionRank()));
  Deployment group = deployment;
  group.dp_attention = 1;
  PROJECTOR_ASSIGN_OR_RETURN(std::unique_ptr<PassCostModel> group_model,
                             PassCostModel::Make(group));
  return std::unique_ptr<DpAttentionCost>(
      new DpAttentionCost(deployment, std::move(rank), std::move(group_model)));
}

absl::StatusOr<DpAttentionCost::RankSide> DpAttentionCost::LayerSide(const BatchPass& pass) {
  RankSide side;
  const int64_t tokens = pass.NewTokens();
  if (tokens == 0) return side;  // an idle rank: waits at every MoE layer
  Seconds prefill(0);
  for (const PrefillChunk& chunk : pass.prefills) {
    PROJECTOR_ASSIGN_OR_RETURN(const Seconds t, rank_->PrefillAttention(chunk));
    prefill += t;
  }
  PROJECTOR_ASSIGN_OR_RETURN(const Seconds decode,
                             rank_->DecodeAttention(pass.decode_sequences, pass.decode_kv_tokens));
  for (PassBreakdown* b : {&side.dense, &side.moe}) {
    b->prefill_attention = prefill;
    b->decode_attention = decode;
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
  return side;
}

absl::StatusOr<DpAttentionCost::RankSide> DpAttentionCost::Ends(const BatchPass& pass) {
  RankSide side;
  if (pass.NewTokens() == 0) return side;
  PROJECTOR_ASSIGN_OR_RETURN(side.head, rank_->Ends(pass, 0));
  BatchPass silent = pass;  // the embedding alone: no request emits
  silent.emitting = 0;
  PROJECTOR_ASSIGN_OR_RETURN(const PassBreakdown embedding, rank_->Ends(silent, 0));
  side.embedding = embedding.Total();
  return side;
}

absl::StatusOr<DpAttentionCost::RankSide> DpAttentionCost::Side(const BatchPass& pass) {
  PROJECTOR_ASSIGN_OR_RETURN(RankSide side, LayerSide(pass));
  PROJECTOR_ASSIGN_OR_RETURN(const RankSide ends, Ends(pass));
  side.head = ends.head;
  side.embedding = ends.embedding;
  return side;
}

absl::StatusOr<PassCostModel::LayerParts> DpAttentionCost::Experts(int64_t tokens) {
  return group_->Parts(tokens, true);
}

absl::StatusOr<PassBreakdown> DpAttentionCost::Breakdown(std::span<const BatchPass> passes) {
  if (deployment_.deepep && deployment_.two_batch_overlap) return TwoBatchBreakdown(passes);
  int64_t tokens = 0;
  std::vector<PassBreakdown>& dense = dense_sides_;
  std::vector<PassBreakdown>& moe = moe_sides_;
  std::vector<PassBreakdown>& head = heads_;
  dense.clear();
  moe.clear();
  head.clear();
  for (const BatchPass& pass : passes) {
    tokens += pass.NewTokens();
    PROJECTOR_ASSIGN_OR_RETURN(const RankSide side, Side(pass));
    dense.push_back(side.dense);
    moe.push_back(side.moe);
    head.push_back(side.head);
  }
  if (tokens < 1) return absl::InvalidArgumentError("a pass needs at least one new token");
  // The MoE over the tokens of all ranks on the whole group, with their gather and scatter.
  PROJECTOR_ASSIGN_OR_RETURN(const PassCostModel::LayerParts experts, Experts(tokens));
  PassBreakdown moe_layer = Busiest(moe);
  moe_layer.linear += experts.mlp_linear;
  if (deployment_.deepep) {
    PROJECTOR_ASSIGN_OR_RETURN(const AllToAllTimes a2a, DeepEpDispatchAndCombine(passes));
    moe_layer.tp_comm += a2a.dispatch + a2a.combine;
  } else {
    moe_layer.tp_comm += experts.all_reduce;
  }
  const ModelSpec& model = deployment_.model;
  PassBreakdown pass = Busiest(dense).Times(D(model.NumDenseLayers()));
  pass += moe_layer.Times(D(model.NumMoeLayers()));
  pass += Busiest(head);
  return pass;
}

DeepEpMode DpAttentionCost::DeepEpKernels(std::span<const BatchPass> passes) const {
  if (deployment_.deepep_mode != DeepEpMode::kAuto) return deployment_.deepep_mode;
  const bool extend = std::any_of(passes.begin(), passes.end(),
                                  [](const BatchPass& p) { return !p.prefills.empty(); });
  return extend ? DeepEpMode::kNormal : DeepEpMode::kLowLatency;
}

// DeepEP's dispatch and combine of one MoE layer; the rank with the most tokens sets the time.
// The all-to-all of every rank's top_k routed copies with the model's routing. The normal
// kernels as the training side prices DeepEP (PXN): sent once per destination node over the
// network and once per destination rank over the scale-up fabric (ExpectedDistinctRanks); the
// low-latency kernels send every copy to its expert's rank. The dispatch goes in fp8 when the
// experts run fp8 (DeepEP's low-precision dispatch), the combine in the activation dtype.
absl::StatusOr<DpAttentionCost::AllToAllTimes> DpAttentionCost::DeepEpDispatchAndCombine(
    std::span<const BatchPass> passes) {
  int64_t busiest_tokens = 0;
  for (const BatchPass& pass : passes) busiest_tokens = std::max(busiest_tokens, pass.NewTokens());
  return DeepEpTimes(busiest_tokens, DeepEpKernels(passes));
}

absl::StatusOr<DpAttentionCost::AllToAllTimes> DpAttentionCost::DeepEpTimes(
    int64_t busiest_tokens, DeepEpMode mode) {
  const CollectiveAlgorithm kernels = mode == DeepEpMode::kLowLatency
                                          ? CollectiveAlgorithm::kLowLatency
                                          : CollectiveAlgorithm::kPxn;
  const ModelSpec& model = deployment_.model;
  const A2aRouting routing{.top_k = model.moe->top_k,
                           .experts = model.moe->num_experts,
                           .groups = model.moe->num_groups,
                           .topk_groups = model.moe->topk_groups};
  const double rows = D(busiest_tokens) * D(model.moe->top_k) * D(model.hidden_size);
  const double activation = BytesPerElement(InferenceActivationDType(deployment_.Context()));
  const double dispatch =
      deployment_.weight_dtype == DType::kFp8 ? kFp8DispatchBytesPerElement : activation;
  const ProcessGroup group{.size = deployment_.tp, .stride = 1};
  auto a2a = [&](double bytes) {
    return group_->Collective(CollectiveOp{.kind = CollectiveKind::kAllToAll,
                                           .bytes = Bytes(rows * bytes),
                                           .group = group,
                                           .routing = routing},
                              kernels);
  };
  AllToAllTimes t;
  PROJECTOR_ASSIGN_OR_RETURN(t.dispatch, a2a(dispatch));
  PROJECTOR_ASSIGN_OR_RETURN(t.combine, a2a(activation));
  return t;
}

absl::StatusOr<PassBreakdown> DpAttentionCost::TwoBatchBreakdown(
    std::span<const BatchPass> passes) {
  // One DeepEP mode for the whole forward (SGLang resolves it once per batch).
  const DeepEpMode kernels = DeepEpKernels(passes);
  halves_[0].clear();
  halves_[1].clear();
  for (const BatchPass& pass : passes) {
    std::pair<BatchPass, BatchPass> split = SplitPass(pass);
    halves_[0].push_back(std::move(split.first));
    halves_[1].push_back(std::move(split.second));
  }
  PassBreakdown dense_layer, moe_layer;
  Seconds compute(0), communication(0), chain(0);
  std::vector<PassBreakdown>& dense = dense_sides_;
  std::vector<PassBreakdown>& moe = moe_sides_;
  for (const std::vector<BatchPass>& half : halves_) {
    int64_t tokens = 0, busiest_tokens = 0;
    dense.clear();
    moe.clear();
    for (const BatchPass& pass : half) {
      tokens += pass.NewTokens();
      busiest_tokens = std::max(busiest_tokens, pass.NewTokens());
      PROJECTOR_ASSIGN_OR_RETURN(const RankSide side, LayerSide(pass));
      dense.push_back(side.dense);
      moe.push_back(side.moe);
    }
    if (tokens == 0) continue;  // a pass of one token: the second half is empty
    dense_layer += Busiest(dense);
    PROJECTOR_ASSIGN_OR_RETURN(const PassCostModel::LayerParts experts, Experts(tokens));
    PassBreakdown side = Busiest(moe);
    side.linear += experts.mlp_linear;
    PROJECTOR_ASSIGN_OR_RETURN(const AllToAllTimes a2a, DeepEpTimes(busiest_tokens, kernels));
    const Seconds own = side.Total();
    const Seconds sent = a2a.dispatch + a2a.combine;
    compute += own;
    communication += sent;
    chain = std::max(chain, own + sent);
    moe_layer += side;
  }
  if (compute.value() <= 0) {
    return absl::InvalidArgumentError("a pass needs at least one new token");
  }
  // The layer takes max(compute, communication, chain): what it takes beyond the compute is
  // DeepEP's exposed time.
  moe_layer.tp_comm += Max0(std::max(communication, chain) - compute);
  std::vector<PassBreakdown>& head = heads_;
  head.clear();
  for (const BatchPass& pass : passes) {
    PROJECTOR_ASSIGN_OR_RETURN(const RankSide ends, Ends(pass));
    head.push_back(ends.head);
  }
  const ModelSpec& model = deployment_.model;
  PassBreakdown pass = dense_layer.Times(D(model.NumDenseLayers()));
  pass += moe_layer.Times(D(model.NumMoeLayers()));
  pass += Busiest(head);
  return pass;
}

absl::StatusOr<Seconds> DpAttentionCost::PassTime(std::span<const BatchPass> passes) {
  PROJECTOR_ASSIGN_OR_RETURN(const PassBreakdown b, Breakdown(passes));
  return b.Total();
}

}  // namespace projector
