#include "projection/pass_plan.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <vector>

namespace projector {
namespace {

enum class Phase { kForward, kBackward, kRecompute };

// The ModuleTimes entries that are not a module's compute (layer_composer.cc's AddCommModules and
// the host exposure).
bool IsComputeModule(std::string_view module) {
  return module != "tp_comm" && module != "cp_comm" && module != "ep_comm" && module != "host";
}

// The recompute forward repeats the forward's collectives.
bool InPhase(const Op& op, Phase phase) {
  return phase == Phase::kBackward
             ? op.phase == OpPhase::kBackwardDgrad || op.phase == OpPhase::kBackwardWgrad
             : op.phase == OpPhase::kForward;
}

size_t DimIndex(CommDim dim) { return dim == CommDim::kTp ? 0 : dim == CommDim::kCp ? 1 : 2; }

bool Communicates(CommDim dim) {
  return dim == CommDim::kTp || dim == CommDim::kCp || dim == CommDim::kEp;
}

Seconds ComputeOf(const ModuleTimes& m, Phase phase) {
  return phase == Phase::kForward    ? m.forward
         : phase == Phase::kBackward ? m.backward
                                     : m.recompute;
}

// Where a module's collective runs: gathers feed the module and run before it; reductions and
// the CP ring's last exchange after it. An All-to-All pair brackets the experts: the dispatch
// (in backward the combine's gradient) before, the combine (the dispatch's gradient) after; an
// op that times the pair as one (repeat 2) is split in halves.
void PlaceCollective(const PassSegment& segment, const Op& op, bool& a2a_before,
                     std::vector<PassSegment>& before, std::vector<PassSegment>& after) {
  if (op.collective.kind == CollectiveKind::kAllGather) {
    before.push_back(segment);
  } else if (op.collective.kind != CollectiveKind::kAllToAll) {
    after.push_back(segment);
  } else if (op.repeat == 2) {  // a dispatch and a combine: one run each
    PassSegment half = segment;
    half.time = segment.time / 2.0;
    half.bytes = op.collective.bytes;
    half.full = op.time / 2.0;
    before.push_back(half);
    after.push_back(half);
  } else {
    (a2a_before ? before : after).push_back(segment);
    a2a_before = !a2a_before;
  }
}

// One layer kind's segments of one phase: its modules in execution order (reversed in
// backward), each with its collectives around it; each dimension's exposed time of the phase
// shared over its collectives by their full time.
std::vector<PassSegment> LayerSegments(const ComposedLayer& k, Phase phase) {
  const ExposedComm& exposed = phase == Phase::kForward    ? k.forward_comm
                               : phase == Phase::kBackward ? k.backward_comm
                                                           : k.recompute_comm;
  const std::array<Seconds, 3> exposed_by_dim = {exposed.tp, exposed.cp, exposed.ep};
  std::array<Seconds, 3> full_by_dim{};
  for (const Op& op : k.comm_ops) {
    if (Communicates(op.comm_dim) && InPhase(op, phase))
      full_by_dim[DimIndex(op.comm_dim)] += op.time;
  }
  std::vector<const ModuleTimes*> modules;
  for (const ModuleTimes& m : k.modules) {
    if (IsComputeModule(m.module)) modules.push_back(&m);
  }
  if (phase == Phase::kBackward) std::reverse(modules.begin(), modules.end());
  std::vector<PassSegment> out, before, after;
  auto place_module_collectives = [&](std::string_view module, bool any_module) {
    bool a2a_before = true;
    for (const Op& op : k.comm_ops) {
      if (!Communicates(op.comm_dim) || !InPhase(op, phase)) continue;
      const bool known = std::any_of(modules.begin(), modules.end(),
                                     [&](const ModuleTimes* m) { return m->module == op.module; });
      if (any_module ? known : op.module != module) continue;
      const size_t d = DimIndex(op.comm_dim);
      if (full_by_dim[d].value() <= 0) continue;
      const Seconds share = exposed_by_dim[d] * (op.time / full_by_dim[d]);
      if (share.value() <= 0) continue;
      const bool once = op.repeat == 1;
      PlaceCollective({.dim = op.comm_dim,
                       .kind = op.collective.kind,
                       .group = op.collective.group,
                       .name = op.name,
                       .time = share,
                       .bytes = once ? op.collective.bytes : Bytes(0),
                       .full = op.time},
                      op, a2a_before, before, after);
    }
  };
  for (const ModuleTimes* m : modules) {
    before.clear();
    after.clear();
    place_module_collectives(m->module, false);
    // Gathers first: the dispatch needs the gathered token counts (ep_count_gather).
    std::stable_partition(before.begin(), before.end(), [](const PassSegment& x) {
      return x.kind == CollectiveKind::kAllGather;
    });
    out.insert(out.end(), before.begin(), before.end());
    const Seconds compute = ComputeOf(*m, phase);
    if (compute.value() > 0) out.push_back({.name = m->module, .time = compute});
    out.insert(out.end(), after.begin(), after.end());
  }
  // Collectives of a module without compute entries (none in today's layers) at the layer's end.
  before.clear();
  after.clear();
  place_module_collectives({}, true);
  out.insert(out.end(), before.begin(), before.end());
  out.insert(out.end(), after.begin(), after.end());
  return out;
}

// A layer kind's segments, by phase.
struct KindSegments {
  std::vector<PassSegment> forward, backward, recompute;
  explicit KindSegments(const ComposedLayer& k)
      : forward(LayerSegments(k, Phase::kForward)),
        backward(LayerSegments(k, Phase::kBackward)),
        recompute(LayerSegments(k, Phase::kRecompute)) {}
};

void Append(std::vector<PassSegment>& into, const std::vector<PassSegment>& segments, int32_t unit,
            int32_t layer) {
  for (PassSegment s : segments) {
    s.unit = unit;
    s.layer = layer;
    into.push_back(s);
  }
}

// One unit of a chunk, in forward order: a layer (its kind, whether it is recomputed) or an
// end module (its vocab-parallel collectives inside its compute).
struct PlannedUnit {
  const KindSegments* layer = nullptr;
  bool recomputed = false;
  const ComposedEndModule* end = nullptr;
  std::string_view end_name = {};
  std::string_view tp_name = {};  // its TP collectives' segment
  int32_t unit = 0;
  int32_t layer_index = -1;
};

// An end module: its compute, then its vocab-parallel TP collectives (the embedding's
// all-reduce, the cross-entropy's, the output's input-gradient reduction) as one all-reduce
// after it.
void AppendEnd(std::vector<PassSegment>& into, const PlannedUnit& u, Seconds compute, Seconds tp) {
  if (compute.value() > 0) into.push_back({.name = u.end_name, .unit = u.unit, .time = compute});
  if (tp.value() > 0) {
    into.push_back({.dim = CommDim::kTp,
                    .kind = CollectiveKind::kAllReduce,
                    .name = u.tp_name,
                    .unit = u.unit,
                    .time = tp});
  }
}

ChunkPlan PlanChunk(const StepInputs& in, const ChunkAssignment& a, const KindSegments* dense,
                    const KindSegments* moe) {
  const Recompute mode = in.training.recompute;
  std::vector<PlannedUnit> units;
  int32_t unit = 0;
  if (a.has_embedding) {
    units.push_back(
        {.end = &in.embedding, .end_name = "embedding", .tp_name = "embedding_tp", .unit = unit++});
  }
  const int64_t recomputed_layers = a.recomputed_dense + a.recomputed_moe;
  for (int64_t l = 0; l < a.num_layers; ++l) {
    const int64_t index = a.first_layer + l;
    const bool is_moe = in.model.moe.has_value() && in.model.IsMoeLayer(index);
    units.push_back({.layer = is_moe ? moe : dense,
                     .recomputed = mode == Recompute::kSelective ||
                                   (mode == Recompute::kFull && l < recomputed_layers),
                     .unit = unit++,
                     .layer_index = static_cast<int32_t>(index)});
  }
  if (a.has_output) {
    units.push_back(
        {.end = &in.output, .end_name = "output", .tp_name = "output_tp", .unit = unit++});
  }
  const KindSegments* mtp_kind = in.model.MtpIsMoe() ? moe : dense;
  const ComposedEndModule& head = in.mtp_output ? *in.mtp_output : in.output;
  for (int64_t k = 0; k < a.mtp_layers; ++k) {
    const int32_t index = static_cast<int32_t>(in.model.num_layers + k);
    units.push_back({.layer = mtp_kind,
                     .recomputed = mode == Recompute::kSelective || k < a.recomputed_mtp,
                     .unit = unit,
                     .layer_index = index});
    // The module's pass of the output head belongs to its FSDP unit.
    units.push_back(
        {.end = &head, .end_name = "mtp_output", .tp_name = "mtp_output_tp", .unit = unit++});
  }
  ChunkPlan plan;
  plan.units = unit;
  size_t forward = 0, backward = 0;
  for (const PlannedUnit& u : units) {
    forward += u.layer != nullptr ? u.layer->forward.size() : 2;
    backward += u.layer != nullptr
                    ? u.layer->backward.size() + (u.recomputed ? u.layer->recompute.size() : 0)
                    : 2;
  }
  plan.forward.reserve(forward);
  plan.backward.reserve(backward);
  for (const PlannedUnit& u : units) {
    if (u.layer == nullptr && u.end == nullptr) continue;  // a layer kind that was not composed
    if (u.layer != nullptr) {
      Append(plan.forward, u.layer->forward, u.unit, u.layer_index);
    } else {
      AppendEnd(plan.forward, u, u.end->forward_compute, u.end->forward_tp_comm);
    }
  }
  for (auto it = units.rbegin(); it != units.rend(); ++it) {
    const PlannedUnit& u = *it;
    if (u.layer == nullptr && u.end == nullptr) continue;
    if (u.layer != nullptr) {
      if (u.recomputed) Append(plan.backward, u.layer->recompute, u.unit, u.layer_index);
      Append(plan.backward, u.layer->backward, u.unit, u.layer_index);
    } else {
      AppendEnd(plan.backward, u, u.end->backward_compute, u.end->backward_tp_comm);
    }
  }
  return plan;
}

}  // namespace

std::vector<ChunkPlan> PlanChunks(const StepInputs& in,
                                  const std::vector<ChunkAssignment>& chunks) {
  std::optional<KindSegments> dense, moe;
  if (in.dense != nullptr) dense.emplace(*in.dense);
  if (in.moe != nullptr) moe.emplace(*in.moe);
  std::vector<ChunkPlan> plans;
  plans.reserve(chunks.size());
  for (const ChunkAssignment& a : chunks) {
    plans.push_back(PlanChunk(in, a, dense ? &*dense : nullptr, moe ? &*moe : nullptr));
  }
  return plans;
}

}  // namespace projector
