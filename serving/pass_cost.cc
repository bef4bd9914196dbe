#include "serving/pass_cost.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "profilers/op_list.h"

namespace projector {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

absl::Status CheckSplits(const Deployment& d) {
  const ModelSpec& m = d.model;
  if (d.tp < 1 || d.pp < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("tp and pp must be >= 1, got tp=", d.tp, " pp=", d.pp));
  }
  if (m.num_attention_heads % d.tp != 0) {
    return absl::InvalidArgumentError(absl::StrCat("tp: ", m.name, " has ", m.num_attention_heads,
                                                   " attention heads, which tp=", d.tp,
                                                   " does not divide"));
  }
  if (d.pp > m.num_layers) {
    return absl::InvalidArgumentError(absl::StrCat("pp: ", m.name, " has ", m.num_layers,
                                                   " layers, fewer than pp=", d.pp, " stages"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view DeepEpModeName(DeepEpMode mode) {
  switch (mode) {
    case DeepEpMode::kAuto:
      return "auto";
    case DeepEpMode::kNormal:
      return "normal";
    case DeepEpMode::kLowLatency:
      return "low-latency";
  }
  return "?";
}

std::vector<StageLayers> SplitStages(const ModelSpec& model, int64_t pp) {
  const int64_t stages = std::max<int64_t>(pp, 1);
  std::vector<int64_t> counts(static_cast<size_t>(stages), model.num_layers / stages);
  const int64_t remainder = model.num_layers % stages;
  // vLLM get_pp_indices: the remainder goes one each to partitions[-2], [-3], ... so the last
  // stage (which also runs the output head) keeps the base count.
  for (int64_t i = 0; i < remainder; ++i) {
    const int64_t index = stages >= 2 ? stages - 2 - (i % (stages - 1)) : 0;
    ++counts[static_cast<size_t>(index)];
  }
  std::vector<StageLayers> out;
  out.reserve(counts.size());
  int64_t first = 0;
  for (int64_t count : counts) {
    StageLayers s{.first = first, .count = count, .moe = 0};
    for (int64_t l = first; l < first + count; ++l) s.moe += model.IsMoeLayer(l) ? 1 : 0;
    out.push_back(s);
    first += count;
  }
  return out;
}

int64_t BatchPass::NewTokens() const {
  int64_t tokens = decode_sequences;
  for (const PrefillChunk& c : prefills) tokens += c.new_tokens;
  return tokens;
}

void BatchPass::Clear() {
  prefills.clear();
  decode_sequences = 0;
  decode_kv_tokens = 0;
  emitting = 0;
}

PassCostModel::PassCostModel(Deployment deployment, BackendSet backends)
    : deployment_(std::move(deployment)), backends_(std::move(backends)) {
  stages_ = SplitStages(deployment_.model, deployment_.pp);
  // Decode attention's matrix work runs on the tensor cores (FlashInfer and FlashMLA pack a
  // KV head's query group into the MMA rows) at the flash kernel's forward efficiency.
  const GpuSpec& gpu = deployment_.hw.gpu;
  decode_matrix_rate_ =
      gpu.MatrixPeak(InferenceActivationDType(deployment_.Context()), gpu.sustained_clock) *
      gpu.attention_fwd_efficiency;
}

absl::StatusOr<std::unique_ptr<PassCostModel>> PassCostModel::Make(const Deployment& deployment) {
  PROJECTOR_RETURN_IF_ERROR(CheckSplits(deployment));
  PROJECTOR_ASSIGN_OR_RETURN(BackendSet backends,
                             MakeBackendSet(deployment.backends, deployment.hw));
  std::unique_ptr<PassCostModel> model(new PassCostModel(deployment, std::move(backends)));
  // One pass of one token through each layer kind checks every TP split up front.
  PROJECTOR_RETURN_IF_ERROR(model->Linear(1).status());
  return model;
}

absl::StatusOr<Seconds> PassCostModel::TimeOpList(OpList& ops, Seconds* comm) {
  const BackendRefs refs{.gemm = *backends_.gemm,
                         .attention = *backends_.attention,
                         .memory = *backends_.memory,
                         .collective = *backends_.collective};
  PROJECTOR_RETURN_IF_ERROR(TimeOps(refs, ops));
  Seconds compute(0);
  for (const Op& op : ops) {
    if (op.kind == OpKind::kCollective) {
      if (comm != nullptr) *comm += op.time;
    } else {
      compute += op.time;
    }
  }
  return compute;
}

absl::StatusOr<PassCostModel::LinearCost> PassCostModel::Linear(int64_t tokens) {
  if (auto it = linear_.find(tokens); it != linear_.end()) return it->second;
  const InferenceContext ctx = deployment_.Context();
  LinearCost cost;
  Seconds all_reduce(0);
  if (deployment_.tp > 1) {
    PROJECTOR_ASSIGN_OR_RETURN(const CollectiveEstimate e,
                               backends_.collective->Estimate(InferenceTpAllReduce(ctx, tokens)));
    all_reduce = e.time;
  }
  for (const bool moe : {false, true}) {
    if ((moe ? deployment_.model.NumMoeLayers() : deployment_.model.NumDenseLayers()) == 0) {
      continue;
    }
    PROJECTOR_ASSIGN_OR_RETURN(OpList ops, InferenceLayerOps(ctx, tokens, moe));
    PROJECTOR_RETURN_IF_ERROR(TimeOpList(ops, nullptr).status());
    LayerParts& parts = moe ? cost.moe : cost.dense;
    for (const Op& op : ops) {
      (op.module == "attention" ? parts.attention_linear : parts.mlp_linear) += op.time;
    }
    parts.all_reduce = all_reduce;
  }
  PROJECTOR_ASSIGN_OR_RETURN(OpList embedding, InferenceEmbeddingOps(ctx, tokens));
  PROJECTOR_ASSIGN_OR_RETURN(cost.embedding, TimeOpList(embedding, &cost.embedding_comm));
  if (deployment_.pp > 1) {
    const CollectiveOp send{.kind = CollectiveKind::kSendRecv,
                            .bytes = Bytes(D(tokens) * D(deployment_.model.hidden_size) *
                                           BytesPerElement(InferenceActivationDType(ctx))),
                            .group = ProcessGroup{.size = 2, .stride = deployment_.tp},
                            .routing = {}};
    PROJECTOR_ASSIGN_OR_RETURN(const CollectiveEstimate e, backends_.collective->Estimate(send));
    cost.pp_send = e.time;
  }
  linear_.emplace(tokens, cost);
  return cost;
}

absl::StatusOr<PassCostModel::LayerParts> PassCostModel::Parts(int64_t tokens, bool moe) {
  PROJECTOR_ASSIGN_OR_RETURN(const LinearCost linear, Linear(tokens));
  return moe ? linear.moe : linear.dense;
}

absl::StatusOr<Seconds> PassCostModel::PrefillAttention(const PrefillChunk& chunk) {
  const std::pair<int64_t, int64_t> key{chunk.new_tokens, chunk.context};
  if (auto it = prefill_attention_.find(key); it != prefill_attention_.end()) return it->second;
  PROJECTOR_ASSIGN_OR_RETURN(
      const AttentionEstimate e,
      backends_.attention->Estimate(
          PrefillAttentionShape(deployment_.Context(), chunk.new_tokens, chunk.context),
          AttentionPass::kForward));
  prefill_attention_.emplace(key, e.time);
  return e.time;
}

absl::StatusOr<Seconds> PassCostModel::DecodeAttention(int64_t sequences, int64_t kv_tokens) {
  if (sequences == 0) return Seconds(0);
  MemoryOp op = DecodeAttentionOp(deployment_.Context(), sequences, kv_tokens);
  // Memory-bound on the cache read; the matrix work is priced at the tensor-core rate, not by
  // the memory backend's vector rate.
  const Flops flops = op.flops;
  op.flops = Flops(0);
  PROJECTOR_ASSIGN_OR_RETURN(const MemoryEstimate e, backends_.memory->Estimate(op));
  const Seconds compute =
      decode_matrix_rate_.value() > 0 ? flops / decode_matrix_rate_ : Seconds(0);
  return std::max(e.time, compute);
}

absl::StatusOr<Seconds> PassCostModel::Collective(const CollectiveOp& op,
                                                  CollectiveAlgorithm algorithm) {
  PROJECTOR_ASSIGN_OR_RETURN(const CollectiveEstimate e,
                             backends_.collective->Estimate(op, algorithm));
  return e.time;
}

absl::StatusOr<std::pair<Seconds, Seconds>> PassCostModel::Output(int64_t sequences) {
  if (auto it = output_.find(sequences); it != output_.end()) return it->second;
  PROJECTOR_ASSIGN_OR_RETURN(OpList ops, InferenceOutputOps(deployment_.Context(), sequences));
  Seconds comm(0);
  PROJECTOR_ASSIGN_OR_RETURN(const Seconds compute, TimeOpList(ops, &comm));
  const std::pair<Seconds, Seconds> cost{compute, comm};
  output_.emplace(sequences, cost);
  return cost;
}

absl::StatusOr<PassBreakdown> PassCostModel::Breakdown(const BatchPass& pass, int64_t stage) {
  const int64_t tokens = pass.NewTokens();
  if (tokens < 1) return absl::InvalidArgumentError("a pass needs at least one new token");
  if (stage < 0 || stage >= deployment_.pp) {
    return absl::InvalidArgumentError(absl::StrCat("stage ", stage, " of pp=", deployment_.pp));
  }
  const StageLayers& layers = stages_[static_cast<size_t>(stage)];
  PROJECTOR_ASSIGN_OR_RETURN(const LinearCost linear, Linear(tokens));
  const double dense = D(layers.count - layers.moe);
  const double moe = D(layers.moe);
  PROJECTOR_ASSIGN_OR_RETURN(PassBreakdown b, Ends(pass, stage));
  b.linear = linear.dense.Linear() * dense + linear.moe.Linear() * moe;
  b.tp_comm += (linear.dense.all_reduce * dense + linear.moe.all_reduce * moe) * 2.0;
  Seconds prefill(0);
  for (const PrefillChunk& chunk : pass.prefills) {
    PROJECTOR_ASSIGN_OR_RETURN(const Seconds t, PrefillAttention(chunk));
    prefill += t;
  }
  b.prefill_attention = prefill * D(layers.count);
  PROJECTOR_ASSIGN_OR_RETURN(const Seconds decode,
                             DecodeAttention(pass.decode_sequences, pass.decode_kv_tokens));
  b.decode_attention = decode * D(layers.count);
  if (stage != deployment_.pp - 1) b.pp_send = linear.pp_send;
  return b;
}

absl::StatusOr<PassBreakdown> PassCostModel::Ends(const BatchPass& pass, int64_t stage) {
  PassBreakdown b;
  if (stage == 0) {
    PROJECTOR_ASSIGN_OR_RETURN(const LinearCost linear, Linear(pass.NewTokens()));
    b.head += linear.embedding;
    b.tp_comm += linear.embedding_comm;
  }
  if (stage == deployment_.pp - 1 && pass.emitting > 0) {
    PROJECTOR_ASSIGN_OR_RETURN(const auto output, Output(pass.emitting));
    b.head += output.first;
    b.tp_comm += output.second;
  }
  return b;
}

absl::Status PassCostModel::StageTimes(const BatchPass& pass, std::span<Seconds> out) {
  if (static_cast<int64_t>(out.size()) != deployment_.pp) {
    return absl::InternalError("StageTimes: one slot per pipeline stage");
  }
  for (int64_t s = 0; s < deployment_.pp; ++s) {
    PROJECTOR_ASSIGN_OR_RETURN(const PassBreakdown b, Breakdown(pass, s));
    out[static_cast<size_t>(s)] = b.Total();
  }
  return absl::OkStatus();
}

}  // namespace projector
