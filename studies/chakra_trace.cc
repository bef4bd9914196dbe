#include "studies/chakra_trace.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "core/training_config.h"
#include "projection/layer_composer.h"
#include "projection/memory_model.h"
#include "projection/step_composer.h"

namespace projector {
namespace {

uint64_t Micros(Seconds t) {
  return static_cast<uint64_t>(std::llround(std::max(0.0, t.value()) * 1e6));
}

// The lowest rank of the group of `rank` with `group.size` members `group.stride` apart.
int64_t FirstMemberOf(int64_t rank, const ProcessGroup& group) {
  return rank - ((rank / group.stride) % group.size) * group.stride;
}

std::optional<ChakraCollective> ChakraKind(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return ChakraCollective::kAllReduce;
    case CollectiveKind::kAllGather:
      return ChakraCollective::kAllGather;
    case CollectiveKind::kReduceScatter:
      return ChakraCollective::kReduceScatter;
    case CollectiveKind::kAllToAll:
      return ChakraCollective::kAllToAll;
    case CollectiveKind::kBroadcast:
      return ChakraCollective::kBroadcast;
    case CollectiveKind::kSendRecv:
      return std::nullopt;  // a ring step: a send and a receive
  }
  return std::nullopt;
}

const OpTable* FindTable(const Projection& p, std::string_view group) {
  for (const OpTable& t : p.op_tables) {
    if (t.group == group) return &t;
  }
  return nullptr;
}

// One layer kind's (or end module's) op table with, for each compute op, the collectives to
// issue after it: those of the same module and phase, after its last compute op.
struct LaidOutTable {
  const OpTable* table = nullptr;
  std::vector<std::vector<const Op*>> after;  // by op index
  std::vector<const Op*> trailing;            // collectives with no compute op of their kind
};

LaidOutTable LayOut(const OpTable* table) {
  LaidOutTable out;
  out.table = table;
  if (table == nullptr) return out;
  const OpList& ops = table->ops;
  out.after.resize(ops.size());
  for (const Op& c : ops) {
    if (c.kind != OpKind::kCollective) continue;
    std::optional<size_t> last;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind != OpKind::kCollective && ops[i].module == c.module &&
          ops[i].phase == c.phase) {
        last = i;
      }
    }
    if (last) {
      out.after[*last].push_back(&c);
    } else {
      out.trailing.push_back(&c);
    }
  }
  return out;
}

// Which phases one pass runs of a layer.
struct PassPhases {
  bool forward = false;
  bool recompute = false;
  bool dgrad = false;
  bool wgrad = false;
  bool first_micro_batch = false;  // the step's first micro-batch: its once-per-step ops too
  bool Has(OpPhase p) const {
    switch (p) {
      case OpPhase::kForward:
        return forward;
      case OpPhase::kRecompute:
        return recompute;
      case OpPhase::kBackwardDgrad:
        return dgrad;
      case OpPhase::kBackwardWgrad:
        return wgrad;
      case OpPhase::kOncePerStep:
        return forward && first_micro_batch;
    }
    return false;
  }
};

// Builds one rank's program.
class ProgramBuilder {
 public:
  ProgramBuilder(const Scenario& s, const Projection& p, int64_t rank, ChakraGroups& groups)
      : s_(s), p_(p), rank_(rank), groups_(groups) {}

  absl::StatusOr<std::vector<ChakraNode>> Build() {
    const ParallelConfig& par = s_.parallel;
    pp_ = std::max<int64_t>(1, par.pp);
    v_ = std::max<int64_t>(1, par.vpp);
    pp_stride_ = par.PpGroup().stride;
    stage_ = rank_ / pp_stride_;
    PROJECTOR_ASSIGN_OR_RETURN(chunks_, AssignLayers(s_.model, par, s_.training));
    dense_ = LayOut(FindTable(p_, "dense layer"));
    moe_ = LayOut(FindTable(p_, "moe layer"));
    embedding_ = LayOut(FindTable(p_, "embedding"));
    output_ = LayOut(FindTable(p_, "output"));
    layer_input_bytes_ = LayerInputBytes(s_.model, par, s_.training).value();

    std::vector<const TimelineEvent*> passes;
    const TimelineEvent* optimizer = nullptr;
    for (const TimelineEvent& e : p_.timeline) {
      if (e.rank != stage_) continue;
      if (e.kind == TimelineKind::kForward || e.kind == TimelineKind::kBackward ||
          e.kind == TimelineKind::kWeightGrad) {
        passes.push_back(&e);
      } else if (e.kind == TimelineKind::kOptimizer) {
        optimizer = &e;
      } else if (e.kind == TimelineKind::kGradReduce) {
        buckets_.push_back(&e);
      }
    }
    std::stable_sort(
        passes.begin(), passes.end(),
        [](const TimelineEvent* a, const TimelineEvent* b) { return a->start < b->start; });
    // Per chunk, the pass after which its gradients are final: its last backward (its last W
    // under zero bubble), where Megatron's DDP issues its buckets.
    final_pass_.assign(static_cast<size_t>(v_), nullptr);
    for (const TimelineEvent* e : passes) {
      if (e->kind != TimelineKind::kForward && e->chunk >= 0 && e->chunk < v_) {
        final_pass_[static_cast<size_t>(e->chunk)] = e;
      }
    }
    for (const TimelineEvent* e : passes) {
      PROJECTOR_RETURN_IF_ERROR(Pass(*e));
    }
    Tail(optimizer);
    return std::move(nodes_);
  }

 private:
  uint64_t Add(ChakraNode n, bool chain) {
    n.id = static_cast<uint64_t>(nodes_.size());
    if (last_) n.data_deps.push_back(*last_);
    if (chain) {
      n.data_deps.insert(n.data_deps.end(), pending_deps_.begin(), pending_deps_.end());
      pending_deps_.clear();
    }
    nodes_.push_back(std::move(n));
    if (chain) last_ = nodes_.back().id;
    return nodes_.back().id;
  }

  // Global rank of virtual stage vs's pipeline rank in this rank's TP·CP·DP position.
  int64_t RankOfStage(int64_t vs) const { return rank_ + (vs % pp_ - stage_) * pp_stride_; }

  // A tag both sides compute: the activation from virtual stage vs to vs + 1 of micro-batch mb
  // (gradient: +1).
  int32_t Tag(int64_t mb, int64_t vs, bool gradient) const {
    return static_cast<int32_t>(2 * (mb * pp_ * v_ + vs) + (gradient ? 1 : 0));
  }

  // A DP gradient bucket's reduce (the medium projection's bucket: its collective and bytes on
  // the dense or expert DP group): hangs off the chain where its gradients are final, after the
  // bucket before it, as Megatron's DDP issues them on their own stream.
  void Bucket(const TimelineEvent& b) {
    const std::optional<ChakraCollective> kind = ChakraKind(b.reduce_kind);
    if (!kind) return;
    ChakraNode n;
    n.name = absl::StrFormat("dp gradient bucket %d%s%s", buckets_emitted_,
                             b.chunk >= 0 ? absl::StrCat(" c", b.chunk) : "",
                             b.expert_buffer ? " (experts)" : "");
    n.type = ChakraNodeType::kCollective;
    n.comm_type = *kind;
    n.comm_size = static_cast<int64_t>(b.reduce_bytes.value());
    n.pg_name = groups_.NameOf(
        rank_, b.expert_buffer ? ExpertDpGroup(s_.parallel) : s_.parallel.DpCpGroup());
    n.duration_us = Micros(b.end - b.start);
    if (last_bucket_) n.data_deps.push_back(*last_bucket_);
    last_bucket_ = Add(std::move(n), /*chain=*/false);
    ++buckets_emitted_;
  }

  // The buckets of `chunk` whose gradients are final once `done` of its final pass has run.
  void BucketsUpTo(int64_t chunk, double done) {
    for (const TimelineEvent* b : buckets_) {
      if (b->chunk == chunk && !bucket_issued_.contains(b) && b->ready_fraction <= done + 1e-12) {
        bucket_issued_.insert(b);
        Bucket(*b);
      }
    }
  }

  // FSDP: one unit's collective of `kind` (dense over DP·CP, experts over expert-DP), hanging
  // off the chain after the collective before it on the unit stream; its last node's id.
  uint64_t FsdpCollective(std::string name, ChakraCollective kind, Bytes dense, Bytes expert,
                          Seconds time) {
    const double total = dense.value() + expert.value();
    std::optional<uint64_t> id;
    for (const auto& [bytes, group, suffix] :
         {std::tuple{dense, s_.parallel.DpCpGroup(), ""},
          std::tuple{expert, ExpertDpGroup(s_.parallel), " (experts)"}}) {
      // The dense node always (even of no bytes, when the unit has no expert weights either);
      // the expert one when there are expert weights.
      const bool experts = suffix[0] != '\0';
      if (experts ? expert.value() <= 0 : bytes.value() <= 0 && expert.value() > 0) continue;
      ChakraNode n;
      n.name = name + suffix;
      n.type = ChakraNodeType::kCollective;
      n.comm_type = kind;
      n.comm_size = static_cast<int64_t>(bytes.value());
      n.pg_name = groups_.NameOf(rank_, group);
      n.duration_us = total > 0 ? Micros(time * (bytes.value() / total)) : 0;
      if (last_fsdp_) n.data_deps.push_back(*last_fsdp_);
      id = last_fsdp_ = Add(std::move(n), /*chain=*/false);
    }
    return *id;
  }

  // FSDP: before the pass's unit at `pos` of `order` runs, its parameters gathered (if not
  // yet) and the next unit's prefetched (issued once the unit before has run, as FSDP's
  // one-ahead prefetch does); the unit's first op waits for its gather.
  void BeforeFsdpUnit(const std::vector<int64_t>& order, size_t pos,
                      const std::vector<FsdpUnitTraffic>& units, std::vector<uint64_t>& gathered,
                      const std::string& prefix) {
    for (size_t k = pos; k < std::min(order.size(), pos + 2); ++k) {
      const size_t u = static_cast<size_t>(order[k]);
      if (gathered[u] != kNotGathered) continue;
      gathered[u] =
          FsdpCollective(absl::StrCat(prefix, "fsdp gather unit ", u), ChakraCollective::kAllGather,
                         units[u].dense_gather, units[u].expert_gather, units[u].gather);
    }
    pending_deps_.push_back(gathered[static_cast<size_t>(order[pos])]);
  }

  // A send to, or a receive from, `peer`; a receive joins the chain, a send hangs off it.
  void P2p(ChakraNodeType type, int64_t peer, int32_t tag, double bytes, std::string name) {
    ChakraNode n;
    n.name = std::move(name);
    n.type = type;
    n.comm_size = static_cast<int64_t>(bytes);
    n.comm_src = static_cast<int32_t>(type == ChakraNodeType::kSend ? rank_ : peer);
    n.comm_dst = static_cast<int32_t>(type == ChakraNodeType::kSend ? peer : rank_);
    n.comm_tag = tag;
    Add(std::move(n), /*chain=*/type == ChakraNodeType::kRecv);
  }

  void Collective(const Op& op, const std::string& prefix) {
    const std::optional<ChakraCollective> kind = ChakraKind(op.collective.kind);
    const ProcessGroup& g = op.collective.group;
    const std::string name = prefix + std::string(op.name);
    if (!kind) {
      // A ring step of the group: send to the next member, receive from the previous one.
      const int64_t base = FirstMemberOf(rank_, g);
      const int64_t k = (rank_ - base) / g.stride;
      const int32_t tag = kRingTagBase + ring_steps_++;
      P2p(ChakraNodeType::kSend, base + ((k + 1) % g.size) * g.stride, tag, op.bytes.value(),
          name + " send");
      P2p(ChakraNodeType::kRecv, base + ((k + g.size - 1) % g.size) * g.stride, tag,
          op.bytes.value(), name + " recv");
      return;
    }
    CollectiveNode(name, *kind, op.bytes.value(), g, Micros(op.time));
  }

  void CollectiveNode(std::string name, ChakraCollective kind, double bytes,
                      const ProcessGroup& group, uint64_t duration_us) {
    ChakraNode n;
    n.name = std::move(name);
    n.type = ChakraNodeType::kCollective;
    n.comm_type = kind;
    n.comm_size = static_cast<int64_t>(bytes);
    n.pg_name = groups_.NameOf(rank_, group);
    n.duration_us = duration_us;
    Add(std::move(n), /*chain=*/true);
  }

  void Compute(const Op& op, const std::string& prefix) {
    ChakraNode n;
    n.name = prefix + std::string(op.name);
    n.type = ChakraNodeType::kCompute;
    n.num_ops = static_cast<int64_t>(op.flops.value());
    n.tensor_size = static_cast<uint64_t>(op.bytes.value());
    n.duration_us = Micros(op.time);
    Add(std::move(n), /*chain=*/true);
  }

  // The ops of one table a pass runs, in table order, collectives after their module's last op.
  void Module(const LaidOutTable& t, const PassPhases& phases, const std::string& prefix) {
    if (t.table == nullptr) return;
    const OpList& ops = t.table->ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == OpKind::kCollective || !phases.Has(ops[i].phase)) continue;
      Compute(ops[i], prefix);
      for (const Op* c : t.after[i]) Collective(*c, prefix);
    }
    for (const Op* c : t.trailing) {
      if (phases.Has(c->phase)) Collective(*c, prefix);
    }
  }

  absl::Status Pass(const TimelineEvent& e) {
    const int64_t c = e.chunk, mb = e.micro_batch;
    const int64_t vs = c * pp_ + stage_, stages = pp_ * v_;
    const ChunkAssignment& a = chunks_[static_cast<size_t>(stage_ * v_ + c)];
    const bool zero_bubble = s_.parallel.pipeline_schedule == PipelineSchedule::kZeroBubbleH1;
    const std::string prefix = absl::StrFormat("mb%d c%d ", mb, c);
    // FSDP: the chunk's units (StepInputs::chunk_fsdp's order: the embedding, the layers, the
    // output, the MTP modules), each gathered before it runs and, in a backward, its gradients
    // reduce-scattered after.
    const bool fsdp = s_.parallel.fsdp;
    const size_t chunk_index = static_cast<size_t>(stage_ * v_ + c);
    if (fsdp && chunk_index >= p_.chunk_fsdp.size()) {
      return absl::InternalError("chakra: the projection lacks its FSDP units");
    }
    static const std::vector<FsdpUnitTraffic> kNoUnits;
    const std::vector<FsdpUnitTraffic>& units = fsdp ? p_.chunk_fsdp[chunk_index] : kNoUnits;
    const int64_t first_layer_unit = a.has_embedding ? 1 : 0;
    const int64_t output_unit = first_layer_unit + a.num_layers;
    const int64_t first_mtp_unit = output_unit + (a.has_output ? 1 : 0);
    const bool backward = e.kind != TimelineKind::kForward;
    std::vector<int64_t> order;  // the units in the order this pass runs them
    if (fsdp) {
      if (a.has_embedding) order.push_back(0);
      for (int64_t l = 0; l < a.num_layers; ++l) order.push_back(first_layer_unit + l);
      for (int64_t m = 0; m < a.mtp_layers; ++m) order.push_back(first_mtp_unit + m);
      if (a.has_output) order.push_back(output_unit);
      if (backward) std::reverse(order.begin(), order.end());
      if (static_cast<int64_t>(units.size()) != first_mtp_unit + a.mtp_layers) {
        return absl::InternalError("chakra: the chunk's FSDP units do not match its layers");
      }
    }
    std::vector<uint64_t> gathered(units.size(), kNotGathered);
    size_t position = 0;
    auto unit = [&](int64_t index, auto&& run) {
      if (fsdp) BeforeFsdpUnit(order, position++, units, gathered, prefix);
      run();
      if (fsdp && backward) {
        const FsdpUnitTraffic& t = units[static_cast<size_t>(index)];
        FsdpCollective(absl::StrCat(prefix, "fsdp reduce-scatter unit ", index),
                       ChakraCollective::kReduceScatter, t.dense_reduce, t.expert_reduce, t.reduce);
      }
    };
    if (e.kind == TimelineKind::kForward) {
      if (vs > 0)
        P2p(ChakraNodeType::kRecv, RankOfStage(vs - 1), Tag(mb, vs - 1, false), layer_input_bytes_,
            prefix + "recv activation");
      const PassPhases f{.forward = true, .first_micro_batch = mb == 0};
      if (a.has_embedding) unit(0, [&] { Module(embedding_, f, prefix + "embedding "); });
      for (int64_t l = 0; l < a.num_layers; ++l) {
        unit(first_layer_unit + l, [&] { Layer(a.first_layer + l, f, prefix); });
      }
      for (int64_t m = 0; m < a.mtp_layers; ++m) {
        unit(first_mtp_unit + m, [&] { Layer(s_.model.num_layers - 1, f, prefix + "mtp "); });
      }
      if (a.has_output) {
        unit(output_unit, [&] {
          for (int64_t h = 0; h <= a.mtp_layers; ++h) Module(output_, f, prefix + "output ");
        });
      }
      if (vs < stages - 1)
        P2p(ChakraNodeType::kSend, RankOfStage(vs + 1), Tag(mb, vs, false), layer_input_bytes_,
            prefix + "send activation");
      return absl::OkStatus();
    }
    const bool weight_pass = e.kind == TimelineKind::kWeightGrad;
    if (!weight_pass && vs < stages - 1) {
      P2p(ChakraNodeType::kRecv, RankOfStage(vs + 1), Tag(mb, vs, true), layer_input_bytes_,
          prefix + "recv gradient");
    }
    const PassPhases b{.forward = false,
                       .recompute = !weight_pass,
                       .dgrad = !weight_pass,
                       .wgrad = weight_pass || !zero_bubble};
    const PassPhases no_recompute{
        .forward = false, .recompute = false, .dgrad = b.dgrad, .wgrad = b.wgrad};
    if (a.has_output) {
      unit(output_unit, [&] {
        for (int64_t h = 0; h <= a.mtp_layers; ++h) Module(output_, b, prefix + "output ");
      });
    }
    for (int64_t m = a.mtp_layers; m-- > 0;) {
      unit(first_mtp_unit + m, [&] {
        Layer(s_.model.num_layers - 1, m < a.recomputed_mtp ? b : no_recompute, prefix + "mtp ");
      });
    }
    // Full recompute re-runs the chunk's first recomputed_* layers of each kind.
    int64_t dense_seen = 0, moe_seen = 0;
    std::vector<bool> recomputed(static_cast<size_t>(a.num_layers));
    for (int64_t l = 0; l < a.num_layers; ++l) {
      const bool moe = s_.model.IsMoeLayer(a.first_layer + l);
      recomputed[static_cast<size_t>(l)] =
          moe ? moe_seen++ < a.recomputed_moe : dense_seen++ < a.recomputed_dense;
    }
    // The chunk's final pass issues each gradient bucket after the layer that completes it.
    const bool final_pass = final_pass_[static_cast<size_t>(c)] == &e;
    for (int64_t l = a.num_layers; l-- > 0;) {
      unit(first_layer_unit + l, [&] {
        Layer(a.first_layer + l, recomputed[static_cast<size_t>(l)] ? b : no_recompute, prefix);
      });
      if (final_pass) {
        BucketsUpTo(c, static_cast<double>(a.num_layers - l) / static_cast<double>(a.num_layers));
      }
    }
    if (a.has_embedding) unit(0, [&] { Module(embedding_, b, prefix + "embedding "); });
    if (final_pass) BucketsUpTo(c, 1.0);
    if (!weight_pass && vs > 0) {
      P2p(ChakraNodeType::kSend, RankOfStage(vs - 1), Tag(mb, vs - 1, true), layer_input_bytes_,
          prefix + "send gradient");
    }
    return absl::OkStatus();
  }

  void Layer(int64_t layer, const PassPhases& phases, const std::string& prefix) {
    // Under selective recompute the table's recompute ops are its modules' (by default the
    // attention core's): every layer.
    PassPhases run = phases;
    if (s_.training.recompute == Recompute::kSelective && (phases.dgrad || phases.wgrad)) {
      run.recompute = phases.dgrad;
    }
    Module(s_.model.IsMoeLayer(layer) ? moe_ : dense_, run,
           absl::StrCat(prefix, "layer ", layer, " "));
  }

  void Tail(const TimelineEvent* optimizer) {
    const ParallelConfig& par = s_.parallel;
    const ProcessGroup dp = par.DpCpGroup();
    const double params = static_cast<size_t>(stage_) < p_.memory.stages.size()
                              ? p_.memory.stages[static_cast<size_t>(stage_)].parameters
                              : 0.0;
    // Under FSDP the units reduce-scattered the gradients; the optimizer waits for the last.
    const bool sync = dp.size > 1 && params > 0 && !par.fsdp;
    if (par.fsdp && last_fsdp_) pending_deps_.push_back(*last_fsdp_);
    // Buckets reduced after the last pass (no overlap_grad_reduce), in order.
    BucketsUpTo(-1, 1.0);
    if (sync && !last_bucket_) {  // without buckets, one reduce of the whole stage
      const bool sharded = par.distributed_optimizer;
      CollectiveNode(sharded ? "dp gradient reduce-scatter" : "dp gradient all-reduce",
                     sharded ? ChakraCollective::kReduceScatter : ChakraCollective::kAllReduce,
                     params * GradReduceBytesPerParam(s_.training), dp, 0);
    }
    ChakraNode opt;
    opt.name = "optimizer step";
    opt.type = ChakraNodeType::kCompute;
    if (last_bucket_) opt.data_deps.push_back(*last_bucket_);
    if (optimizer != nullptr) opt.duration_us = Micros(optimizer->end - optimizer->start);
    Add(std::move(opt), /*chain=*/true);
    if (sync && par.distributed_optimizer) {
      CollectiveNode("dp parameter all-gather", ChakraCollective::kAllGather,
                     params * kWeightBytesPerParam, dp, 0);
    }
  }

  // Tags of ring steps inside layers, above every pipeline tag CheckChakraExport allows.
  static constexpr int32_t kRingTagBase = 1 << 30;

  const Scenario& s_;
  const Projection& p_;
  const int64_t rank_;
  ChakraGroups& groups_;
  int64_t pp_ = 1, v_ = 1, pp_stride_ = 1, stage_ = 0;
  std::vector<ChunkAssignment> chunks_;
  LaidOutTable dense_, moe_, embedding_, output_;
  double layer_input_bytes_ = 0;
  std::vector<ChakraNode> nodes_;
  std::optional<uint64_t> last_;
  // The stage's DP gradient buckets (timeline order), each chunk's final pass, and what has
  // been issued.
  std::vector<const TimelineEvent*> buckets_;
  std::vector<const TimelineEvent*> final_pass_;
  absl::flat_hash_set<const TimelineEvent*> bucket_issued_;
  std::optional<uint64_t> last_bucket_;
  int64_t buckets_emitted_ = 0;
  // FSDP: the last unit collective (their own stream), and the gathers the next chained node
  // (a unit's first op, the optimizer) waits for.
  static constexpr uint64_t kNotGathered = ~uint64_t{0};
  std::optional<uint64_t> last_fsdp_;
  std::vector<uint64_t> pending_deps_;
  int32_t ring_steps_ = 0;
};

absl::Status ExportError(std::string message) {
  return absl::InvalidArgumentError(absl::StrCat("--chakra-out: ", message));
}

}  // namespace

std::string ChakraGroups::NameOf(int64_t rank, const ProcessGroup& group) {
  const int64_t first = FirstMemberOf(rank, group);
  const auto key = std::make_tuple(group.size, group.stride, first);
  auto it = names_.find(key);
  if (it != names_.end()) return it->second;
  std::string name = absl::StrCat(names_.size());
  std::vector<int64_t>& members = groups_[name];
  for (int64_t j = 0; j < group.size; ++j) members.push_back(first + j * group.stride);
  names_.emplace(key, name);
  return name;
}

absl::Status CheckChakraExport(const Scenario& scenario, const Projection& projection) {
  if (projection.op_tables.empty() || projection.timeline.empty()) {
    return ExportError("the projection was made without its op tables or replayed timeline");
  }
  const int64_t stages =
      std::max<int64_t>(1, scenario.parallel.pp) * std::max<int64_t>(1, scenario.parallel.vpp);
  if (2 * (projection.micro_batches * stages + stages) >= (int64_t{1} << 30)) {
    return ExportError(absl::StrFormat(
        "%d micro-batches on %d virtual stages need more pipeline tags than 32 bits hold; "
        "export fewer micro-batches (a smaller global batch)",
        projection.micro_batches, stages));
  }
  // Every rank of a pipeline stage runs the same program; count one per stage.
  const int64_t pp = std::max<int64_t>(1, scenario.parallel.pp);
  const int64_t per_stage = scenario.num_gpus / pp;
  ChakraGroups scratch;
  int64_t total = 0;
  for (int64_t stage = 0; stage < pp; ++stage) {
    PROJECTOR_ASSIGN_OR_RETURN(
        const std::vector<ChakraNode> program,
        ChakraRankProgram(scenario, projection, stage * scenario.parallel.PpGroup().stride,
                          scratch));
    total += static_cast<int64_t>(program.size()) * per_stage;
  }
  if (total > kMaxChakraNodes) {
    return ExportError(absl::StrFormat(
        "the traces would hold %d nodes over %d ranks, more than the %d an export writes; "
        "export a smaller run (fewer GPUs, or fewer micro-batches: a smaller global batch)",
        total, scenario.num_gpus, kMaxChakraNodes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ChakraNode>> ChakraRankProgram(const Scenario& scenario,
                                                          const Projection& projection,
                                                          int64_t rank, ChakraGroups& groups) {
  if (rank < 0 || rank >= scenario.num_gpus) {
    return absl::InvalidArgumentError(
        absl::StrFormat("chakra: rank %d is not one of the %d GPUs", rank, scenario.num_gpus));
  }
  return ProgramBuilder(scenario, projection, rank, groups).Build();
}

}  // namespace projector
