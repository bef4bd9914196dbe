#include "studies/lod_high.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "events/event_engine.h"
#include "network/topology.h"
#include "projection/layer_composer.h"
#include "studies/network_replay.h"

namespace projector {

double HighLodResult::DifferencePct() const {
  const double medium_s = medium.step_time.value();
  return medium_s > 0 ? (step_time.value() - medium_s) / medium_s * 100.0 : 0.0;
}

double HighLodResult::TokensPerSPerGpu() const {
  return step_time.value() > 0
             ? medium.tokens_per_s_per_gpu * medium.step_time.value() / step_time.value()
             : 0.0;
}

Seconds HighLodResult::ExposedCommunication() const {
  return exposed_comm.tp + exposed_comm.cp + exposed_comm.ep + exposed_comm.fsdp + exposed_dp_comm;
}

Seconds HighLodResult::MediumExposedCommunication() const {
  const StepBreakdown& b = medium.breakdown;
  return b.exposed_tp_comm + b.exposed_cp_comm + b.exposed_ep_comm + b.exposed_fsdp_comm +
         b.exposed_dp_comm;
}

double HighLodResult::DisturbedSlowdownPct() const {
  const double base = step_time_undisturbed.value();
  return (slow_rank || slow_link) && base > 0 ? (step_time.value() - base) / base * 100.0 : 0.0;
}

namespace {

// Whether in-stage positions i and j are neighbours on the ring of `group` (members
// base + stride·k, k = 0..size−1, the ring in k order, closed).
bool RingNeighbours(int64_t i, int64_t j, ProcessGroup group) {
  if (group.size < 2 || group.stride < 1 || i % group.stride != j % group.stride) return false;
  const int64_t d = std::abs(i / group.stride - j / group.stride);
  return d == 1 || d == group.size - 1;
}

// Whether in-stage positions i and j are members of the same group (base + stride·k).
bool SameGroup(int64_t i, int64_t j, ProcessGroup group) {
  if (group.size < 2 || group.stride < 1 || i % group.stride != j % group.stride) return false;
  return i / group.stride / group.size == j / group.stride / group.size;
}

}  // namespace

absl::StatusOr<SlowLinkEffect> ResolveSlowLink(const ParallelConfig& par, int64_t num_gpus,
                                               bool has_experts, const SlowLink& link) {
  for (const int64_t rank : {link.a, link.b}) {
    if (rank < 0 || rank >= num_gpus) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--slow-link: rank %d does not exist; the ranks are 0 to %d", rank, num_gpus - 1));
    }
  }
  if (link.a == link.b) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--slow-link: a link joins two different ranks; got %d:%d", link.a, link.b));
  }
  if (!(link.factor > 0 && std::isfinite(link.factor))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--slow-link: the factor must be a finite number > 0 (2 = half the bandwidth), got %g",
        link.factor));
  }
  const int64_t block = par.PpGroup().stride;  // tp·cp·dp GPUs per pipeline stage
  const int64_t stage_a = link.a / block % par.pp, stage_b = link.b / block % par.pp;
  const int64_t i = link.a % block, j = link.b % block;
  SlowLinkEffect effect;
  effect.factor = link.factor;
  if (stage_a != stage_b) {
    const int64_t d = std::abs(stage_a - stage_b);
    // Adjacent stages exchange activations; the last and the first only when interleaving
    // wraps the model around the pipeline.
    const bool adjacent = d == 1 || (d == par.pp - 1 && par.vpp > 1);
    if (i != j || !adjacent) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--slow-link: ranks %d (stage %d, position %d) and %d (stage %d, position %d) exchange "
          "nothing in this layout; a pipeline link joins the same position of adjacent stages "
          "(ranks r and r + %d), a DP ring neighbouring DP ranks of one stage",
          link.a, stage_a, i, link.b, stage_b, j, block));
    }
    effect.position_a = i;
    effect.p2p_rank_a = std::min(stage_a, stage_b);
    effect.p2p_rank_b = std::max(stage_a, stage_b);
    effect.carries = absl::StrFormat(
        "the pipeline link between stages %d and %d (activations and their gradients, both ways)",
        effect.p2p_rank_a, effect.p2p_rank_b);
    return effect;
  }
  const ProcessGroup expert_group{.size = block / std::max<int64_t>(1, par.ep * par.etp),
                                  .stride = std::max<int64_t>(1, par.ep * par.etp)};
  effect.position_a = i;
  effect.dense_stride = par.DpCpGroup().stride;
  effect.expert_stride = expert_group.stride;
  effect.dense_ring = RingNeighbours(i, j, par.DpCpGroup());
  effect.expert_ring = has_experts && RingNeighbours(i, j, expert_group);
  effect.tp_ring = RingNeighbours(i, j, par.TpGroup());
  effect.cp_ring = RingNeighbours(i, j, par.CpGroup());
  effect.ep_group = has_experts && SameGroup(i, j, par.EpGroup());
  const bool in_passes = effect.tp_ring || effect.cp_ring || effect.ep_group;
  if (!effect.dense_ring && !effect.expert_ring && !in_passes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--slow-link: ranks %d and %d of stage %d exchange nothing in this layout: they are not "
        "neighbours on a TP ring (consecutive positions of a TP group), a CP ring (positions %d "
        "apart), a DP ring (positions %d apart), nor in one EP group; a pipeline link joins the "
        "same position of adjacent stages (ranks r and r + %d)",
        link.a, link.b, stage_a, par.tp, par.tp, block));
  }
  if (in_passes) {
    effect.comm_stage = stage_a;
    std::vector<std::string> groups;
    if (effect.tp_ring) groups.push_back("TP ring (its all-reduces, gathers, reduce-scatters)");
    if (effect.cp_ring) groups.push_back("CP ring (its K/V exchanges)");
    if (effect.ep_group) groups.push_back("EP group (its All-to-All)");
    effect.carries = absl::StrCat("stage ", stage_a, "'s ", absl::StrJoin(groups, ", "),
                                  ", each collective at the slow link for its whole time");
    if (!effect.dense_ring && !effect.expert_ring) return effect;
  }
  effect.dp_stage = stage_a;
  const std::string in_pass_carries = effect.carries;
  effect.carries = absl::StrFormat("stage %d's %s DP ring (its gradient bucket reduces%s)", stage_a,
                                   effect.dense_ring && effect.expert_ring ? "dense and expert"
                                   : effect.dense_ring                     ? "dense"
                                                                           : "expert",
                                   effect.dense_ring ? " and exposed parameter gathers" : "");
  if (!in_pass_carries.empty())
    effect.carries = absl::StrCat(in_pass_carries, "; ", effect.carries);
  return effect;
}

absl::StatusOr<std::string> ResolveNetworkSlowLink(const NetworkSpec& network, const SlowLink& link,
                                                   std::vector<int32_t>& links) {
  const Topology topology(network);
  const int64_t nodes = topology.node_count();
  for (const int64_t node : {link.a, link.b}) {
    if (node < 0 || node >= nodes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--slow-link: with --network, A and B are nodes of '%s': 0 to %d (NPUs 0 to %d, then "
          "switches); got %d",
          network.name, nodes - 1, topology.npu_count() - 1, node));
    }
  }
  if (!(link.factor > 0 && std::isfinite(link.factor))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--slow-link: the factor must be a finite number > 0 (2 = half the bandwidth), got %g",
        link.factor));
  }
  links.clear();
  for (const int32_t id :
       {topology.LinkBetween(link.a, link.b), topology.LinkBetween(link.b, link.a)}) {
    if (id >= 0) links.push_back(id);
  }
  const std::string a = topology.NodeName(link.a), b = topology.NodeName(link.b);
  if (links.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--slow-link: no link joins %s and %s in '%s'; `project network route --network FILE "
        "--from A --to B` lists the nodes and links of a route",
        a, b, network.name));
  }
  return absl::StrFormat(
      "the network link %s ↔ %s (both directions): every DP reduce step, activation transfer and "
      "TP, CP or EP collective that crosses it",
      a, b);
}

double HighLodResult::Speedup() const {
  return medium_wall_s > 0 ? high_wall_s / medium_wall_s : 0.0;
}

namespace {

using events::ResourceId;
using events::ResourceOrder;
using events::TaskGraph;
using events::TaskId;

double WallSeconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

bool IsPass(TimelineKind k) {
  return k == TimelineKind::kForward || k == TimelineKind::kBackward ||
         k == TimelineKind::kWeightGrad;
}

// The pass tasks of a step by (kind, micro-batch, virtual stage), the virtual stage of
// (rank, chunk) being chunk · pp + rank (pipeline_schedule.h).
class PassIndex {
 public:
  PassIndex(int64_t micro_batches, int64_t stages)
      : m_(micro_batches), v_(stages), ids_(static_cast<size_t>(3 * m_ * v_), kNone) {}
  static constexpr TaskId kNone = ~TaskId{0};
  TaskId& at(TimelineKind k, int64_t mb, int64_t stage) {
    return ids_[static_cast<size_t>((static_cast<int64_t>(k) * m_ + mb) * v_ + stage)];
  }

 private:
  int64_t m_, v_;
  std::vector<TaskId> ids_;
};

ReplayedTask Described(ReplayedTask::What what, const TimelineEvent& e) {
  ReplayedTask t;
  t.resource = e.rank;  // the rank's stream, whose id is the rank
  t.what = what;
  t.pass = e.kind;
  t.rank = e.rank;
  t.chunk = e.chunk;
  t.micro_batch = e.micro_batch;
  return t;
}

struct StepGraph {
  TaskGraph graph;
  std::vector<std::string> resource_names;  // by ResourceId
  // Tracks that are not resources (a rank's DP reduces as flows on network links, the
  // transfers between two ranks): ReplayedTask::resource num_resources + k is track k.
  std::vector<std::string> track_names;
  int64_t network_links = 0;       // links of the network file the flows crossed
  std::vector<ReplayedTask> what;  // by TaskId (times filled after the run)
  std::vector<TaskId> last_pass;   // per rank
  // Per rank: the task that follows its gradient sync (exposed parameter gathers and the
  // optimizer), and how much of it is the gathers; kNone without one.
  std::vector<TaskId> after_sync;
  std::vector<Seconds> param_gather;
  // FSDP as events: a piece that waited for its unit's gather, the task before it on its lane
  // (kNone: none) and the gather; the stream's wait for the gather is exposed FSDP time.
  struct FsdpGate {
    TaskId piece, before, gather;
    int32_t lane;
  };
  std::vector<FsdpGate> fsdp_gates;
  // A collective whose hidden part ran beside the compute before it: its last task and that
  // compute's; the stream waited for it from the compute's end to its own.
  struct Overlap {
    TaskId collective, beside;
    int32_t lane;
    ReplayedTask::What what;
  };
  std::vector<Overlap> overlaps;
  std::vector<TaskId> fsdp_last_reduce;  // per lane: its last FSDP reduce-scatter, or kNone
  // Per lane: the compute its FSDP collectives took while hidden (FsdpUnitTraffic's
  // interference), part of its exposed FSDP time as the medium projection counts it.
  std::vector<Seconds> fsdp_interference;
};

// The producer of pass (k, mb, stage) on another virtual stage: the previous stage's forward,
// the next stage's backward; none for the first forward, the last backward, and a W.
bool ProducerStage(TimelineKind k, int64_t stage, int64_t stages, int64_t& producer) {
  if (k == TimelineKind::kForward && stage > 0) {
    producer = stage - 1;
    return true;
  }
  if (k == TimelineKind::kBackward && stage + 1 < stages) {
    producer = stage + 1;
    return true;
  }
  return false;
}

// One DP gradient bucket's reduce of a rank (a kGradReduce event of the medium timeline): ready
// after `fraction` of `chunk`'s last backward (chunk -1: after the rank's last pass).
struct Bucket {
  int32_t chunk;
  double fraction;
  Seconds reduce;
  bool expert;  // of the expert weights' gradients
  CollectiveKind kind;
  Bytes bytes;
};

// A rank's passes, its buckets and, per chunk, the pass after which that chunk's gradients are
// final (its last backward, or last W under zero bubble) and the bucket fractions in it.
struct RankWork {
  std::vector<const TimelineEvent*> passes;
  std::vector<Bucket> buckets;
  std::vector<const TimelineEvent*> final_pass;      // by chunk
  std::vector<std::vector<double>> final_fractions;  // by chunk, sorted, distinct, ending in 1
};

std::vector<RankWork> CollectRankWork(const Projection& medium, int64_t pp, int64_t vpp) {
  std::vector<RankWork> ranks(static_cast<size_t>(pp));
  for (RankWork& w : ranks) {
    w.final_pass.assign(static_cast<size_t>(vpp), nullptr);
    w.final_fractions.resize(static_cast<size_t>(vpp));
  }
  for (const TimelineEvent& e : medium.timeline) {
    if (e.rank < 0 || e.rank >= pp) continue;
    RankWork& w = ranks[static_cast<size_t>(e.rank)];
    if (IsPass(e.kind)) {
      w.passes.push_back(&e);
      if (e.kind != TimelineKind::kForward && e.chunk >= 0 && e.chunk < vpp) {
        const TimelineEvent*& last = w.final_pass[static_cast<size_t>(e.chunk)];
        if (last == nullptr || e.end > last->end) last = &e;
      }
    } else if (e.kind == TimelineKind::kGradReduce) {
      const int32_t chunk = e.chunk < vpp ? e.chunk : -1;
      w.buckets.push_back({.chunk = chunk,
                           .fraction = e.ready_fraction,
                           .reduce = e.end - e.start,
                           .expert = e.expert_buffer,
                           .kind = e.reduce_kind,
                           .bytes = e.reduce_bytes});
      if (chunk >= 0) w.final_fractions[static_cast<size_t>(chunk)].push_back(e.ready_fraction);
    }
  }
  for (RankWork& w : ranks) {
    for (std::vector<double>& f : w.final_fractions) {
      f.push_back(1.0);
      std::sort(f.begin(), f.end());
      f.erase(std::unique(f.begin(), f.end()), f.end());
    }
  }
  return ranks;
}

// What the replay slows: a straggler's stage (-1: none) runs its passes `stage_factor` times as
// long (unfolded: only the GPU at `slow_position` of it); a slow link what SlowLinkEffect says
// (unfolded: only the GPUs behind it).
// What a stretch of a pass is: the layers' compute on the rank's stream, or one collective's
// exposed time (on the stream, or taken out of it: EP on a shared NIC; TP, CP, EP and the FSDP
// units' gathers and reduce-scatters on a network file's links).
enum class PassPart : uint8_t { kCompute, kTp, kCp, kEp, kFsdp };

struct ReplaySlowdowns {
  int64_t slow_stage = -1;
  int64_t slow_position = -1;
  double stage_factor = 1;
  SlowLinkEffect link;
  // On a network file: its links that carry data `network_factor` times slower (both directions
  // of the cable `--slow-link` names).
  std::vector<int32_t> network_links;
  double network_factor = 1;
  bool unfolded = false;
  ProcessGroup tp_group, cp_group, ep_group;  // the layout's, for a slow link inside a pass
  // The factor on the passes of stage r's GPU at position q.
  double Pass(int64_t r, int64_t q) const {
    return r == slow_stage && (!unfolded || q == slow_position) ? stage_factor : 1.0;
  }
  // The factor on transfers between pipeline ranks a and b (either way), of the GPUs at q.
  double Transfer(int64_t a, int64_t b, int64_t q) const {
    const bool on = ((a == link.p2p_rank_a && b == link.p2p_rank_b) ||
                     (a == link.p2p_rank_b && b == link.p2p_rank_a)) &&
                    (!unfolded || q == link.position_a);
    return on ? link.factor : 1.0;
  }
  // The factor on the collectives of `part` inside the passes of stage r's GPU at q: a slow link
  // on its TP or CP ring or in its EP group (unfolded: only that group's GPUs).
  double Comm(PassPart part, int64_t r, int64_t q) const {
    if (r != link.comm_stage) return 1.0;
    const bool on = part == PassPart::kTp   ? link.tp_ring
                    : part == PassPart::kCp ? link.cp_ring
                    : part == PassPart::kEp ? link.ep_group
                                            : false;
    if (!on) return 1.0;
    const ProcessGroup group = part == PassPart::kTp   ? tp_group
                               : part == PassPart::kCp ? cp_group
                                                       : ep_group;
    return !unfolded || SameGroup(q, link.position_a, group) ? link.factor : 1.0;
  }
  // The factor on the dense or expert bucket reduces of stage r's GPU at q.
  double Reduce(int64_t r, int64_t q, bool expert) const {
    if (r != link.dp_stage || !(expert ? link.expert_ring : link.dense_ring)) return 1.0;
    const int64_t stride = expert ? link.expert_stride : link.dense_stride;
    return !unfolded || q % stride == link.position_a % stride ? link.factor : 1.0;
  }
};

// What runs on each rank's NIC, a shared server, when the replay shares it (NicUseOf): its DP
// reduces (still one after another, chained), the activations it sends, its exposed EP
// All-to-All (each MoE layer's, after the layer's compute, the stream waiting for it). What
// does not has a stream or link of its own (a DP stream, a link per pair of ranks), and the
// EP communication stays inside the pass.
struct NicUse {
  bool dp = false, p2p = false, ep = false;
  bool Shared() const { return dp || p2p || ep; }
};

struct Stretch {
  Seconds length;
  PassPart part = PassPart::kCompute;
  CollectiveKind kind = CollectiveKind::kAllReduce;  // a collective's, as the layer issues it
  ProcessGroup group = {};                           // a collective's, as the layer issues it
  std::string_view name = {};                        // the module or the collective
  int32_t layer = -1;                                // the model's layer; -1 for an end module
  int32_t unit = 0;                                  // the chunk's FSDP unit
  // A collective that runs once: its message, for its algorithm's steps; else 0.
  Bytes bytes = {};
  // A collective's time hidden behind compute (its full time less `length`); `overlap` of it
  // runs beside the compute stretch just before it (SplitForOverlap).
  Seconds hidden = {}, overlap = {};
  // A compute stretch that a collective after it overlaps.
  bool overlapped = false;
};

// One dimension's exposed communication in a pass (the medium projection's, for the chunk and
// the pass's kind).
struct PassComm {
  PassPart part;
  Seconds exposed;
};

PassPart PartOf(CommDim dim) {
  return dim == CommDim::kTp ? PassPart::kTp : dim == CommDim::kCp ? PassPart::kCp : PassPart::kEp;
}

// Without FSDP's units as events: a unit's exposed FSDP time, as a piece on the stream.
constexpr std::string_view kFsdpUnitExposure = "fsdp_unit";

// Where a collective's links are replayed (`taken`: on a shared NIC or a network file), the part
// of it the layer hides behind compute runs too, beside the compute stretch just before it: that
// stretch is split so that its last `h` (the hidden time, at most the stretch) runs while the
// collective does, the collective starting where the split is. Without contention the
// collective ends `exposed` after the compute, as the medium projection has it; slowed on its
// links, it shows.
void SplitForOverlap(const std::array<bool, 5>& taken, std::vector<Stretch>& stretches,
                     std::vector<Stretch>& scratch) {
  scratch.clear();
  for (const Stretch& x : stretches) {
    Stretch collective = x;
    if (x.part != PassPart::kCompute && x.hidden.value() > 0 &&
        taken[static_cast<size_t>(x.part)] && !scratch.empty() &&
        scratch.back().part == PassPart::kCompute && !scratch.back().overlapped &&
        scratch.back().length.value() > 0) {
      Stretch& before = scratch.back();
      const Seconds h = std::min(x.hidden, before.length);
      Stretch beside = before;
      before.length -= h;
      beside.length = h;
      beside.overlapped = true;
      scratch.push_back(beside);
      collective.overlap = h;
    }
    scratch.push_back(collective);
  }
  stretches.swap(scratch);
}

// A pass laid out from its chunk's plan (projection/pass_plan.h): each compute segment its share
// of the compute by its time, each collective its share of its dimension's exposed time by its
// own; the FSDP units' exposed time shared over the units, before each (its gather gates it).
// The compute is `alone` less what the collectives take, times `compute_factor` (a straggler);
// a dimension with exposed time but no collective in the plan keeps it in the compute, a
// collective of a dimension without exposed time is left out. No plan: the compute, then the
// collectives, one stretch each.
void PlanStretches(std::span<const PassSegment> plan, Seconds alone, double compute_factor,
                   std::span<const PassComm> comms, std::vector<Stretch>& out) {
  out.clear();
  std::array<Seconds, 5> exposed{}, planned{};
  Seconds compute_weight;
  int32_t units = 0, last_unit = -1;
  for (const PassSegment& s : plan) {
    if (s.dim == CommDim::kNone) {
      compute_weight += s.time;
    } else {
      planned[static_cast<size_t>(PartOf(s.dim))] += s.time;
    }
    if (s.unit != last_unit) ++units;
    last_unit = s.unit;
  }
  Seconds compute = alone;
  for (const PassComm& c : comms) {
    const size_t i = static_cast<size_t>(c.part);
    const bool placed = c.part == PassPart::kFsdp ? units > 0 : planned[i].value() > 0;
    if (c.exposed.value() <= 0 || (!placed && !plan.empty())) continue;
    exposed[i] += c.exposed;
    compute -= c.exposed;
  }
  compute = Max0(compute) * compute_factor;
  if (plan.empty() || compute_weight.value() <= 0) {
    out.push_back({.length = compute});
    for (const PassComm& c : comms) {
      const Seconds e = exposed[static_cast<size_t>(c.part)];
      if (e.value() > 0) out.push_back({.length = e, .part = c.part});
    }
    if (!plan.empty()) out.front().layer = plan.front().layer;
    return;
  }
  const Seconds fsdp_per_unit =
      exposed[static_cast<size_t>(PassPart::kFsdp)] / static_cast<double>(units);
  last_unit = -1;
  for (const PassSegment& s : plan) {
    if (s.unit != last_unit && fsdp_per_unit.value() > 0) {
      out.push_back({.length = fsdp_per_unit,
                     .part = PassPart::kFsdp,
                     .kind = CollectiveKind::kAllGather,
                     .name = kFsdpUnitExposure,
                     .layer = s.layer,
                     .unit = s.unit});
    }
    last_unit = s.unit;
    if (s.dim == CommDim::kNone) {
      out.push_back({.length = compute * (s.time / compute_weight),
                     .name = s.name,
                     .layer = s.layer,
                     .unit = s.unit});
      continue;
    }
    const size_t i = static_cast<size_t>(PartOf(s.dim));
    if (exposed[i].value() <= 0) continue;
    const double scale = exposed[i] / planned[i];
    out.push_back({.length = s.time * scale,
                   .part = PartOf(s.dim),
                   .kind = s.kind,
                   .group = s.group,
                   .name = s.name,
                   .layer = s.layer,
                   .unit = s.unit,
                   .bytes = s.bytes,
                   .hidden = Max0(s.full - s.time) * scale});
  }
}

// The GPUs the replay simulates: one lane per pipeline stage (folded), or per GPU (unfolded:
// lane q · pp + r is stage r's GPU at position q, global rank r · block + q); the groups that
// hold unfolded GPUs together.
struct Lanes {
  int64_t replicas = 1;  // lanes per stage: 1 folded, tp·cp·dp unfolded
  int64_t block = 1;     // GPUs per stage
  int64_t lockstep = 1;  // consecutive positions that leave each pass together
  ProcessGroup dense_dp, expert_dp;
};

// With a network file (congestion aware): the DP gradient reduces and the activations between
// stages as flows on its links (studies/network_replay.h) instead of on NICs and links per pair
// of ranks.
struct NetworkUse {
  const NetworkSpec* spec = nullptr;
  int64_t block = 1;           // GPUs per pipeline stage
  ProcessGroup dense, expert;  // the DP groups of the dense and the expert gradients
  Bytes p2p_bytes;             // one activation between stages, per GPU
  // The layers' exposed TP collectives, CP ring and MoE All-to-All on their groups' links (a
  // pass cut into each layer's compute and its collectives, as on a shared NIC).
  bool tp = false, cp = false, ep = false, fsdp = false;
  ProcessGroup tp_group, cp_group, ep_group, fsdp_group;
};

// Builds the step's task graph from the medium projection, stage by stage and lane by lane:
// its passes (cut into pieces where a bucket's gradients become final, and into each MoE
// layer's compute and All-to-All where the NIC carries it), its gradient buckets, its tail; the
// unfolded lanes' barriers; then the dependencies between passes, through the transfers.
class StepGraphBuilder {
 public:
  StepGraphBuilder(const Projection& medium, int64_t pp, int64_t vpp, const ReplaySlowdowns& slow,
                   NicUse nic_use, const Lanes& lanes, const NetworkUse& net)
      : medium_(medium),
        pp_(pp),
        vpp_(vpp),
        stages_(pp * vpp),
        slow_(slow),
        nic_use_(nic_use),
        lanes_(lanes),
        net_(net),
        g_(out_.graph),
        link_of_(static_cast<size_t>(lanes.replicas * pp * pp), PassIndex::kNone),
        done_(medium.micro_batches, pp * vpp * lanes.replicas),
        entry_(medium.micro_batches, pp * vpp * lanes.replicas),
        receive_(medium.micro_batches, pp * vpp * lanes.replicas) {}

  absl::StatusOr<StepGraph> Build() {
    if (net_.spec != nullptr) {
      network_.emplace(*net_.spec, g_, out_.resource_names);
      network_->SlowLinks(slow_.network_links, slow_.network_factor);
    }
    AddStreams();
    std::vector<RankWork> work = CollectRankWork(medium_, pp_, vpp_);
    const size_t lanes = static_cast<size_t>(pp_ * lanes_.replicas);
    out_.last_pass.assign(lanes, PassIndex::kNone);
    out_.after_sync.assign(lanes, PassIndex::kNone);
    out_.param_gather.assign(lanes, Seconds(0));
    out_.fsdp_last_reduce.assign(lanes, PassIndex::kNone);
    out_.fsdp_interference.assign(lanes, Seconds(0));
    fsdp_link_.assign(lanes, PassIndex::kNone);
    fsdp_gather_.assign(lanes, PassIndex::kNone);
    fsdp_reduce_.assign(lanes, PassIndex::kNone);
    for (int64_t r = 0; r < pp_; ++r) {
      RankWork& w = work[static_cast<size_t>(r)];
      std::stable_sort(
          w.passes.begin(), w.passes.end(),
          [](const TimelineEvent* a, const TimelineEvent* b) { return a->start < b->start; });
      // Per lane and chunk, the tasks of its final pass that end at each bucket fraction.
      std::vector<std::vector<std::vector<TaskId>>> final_pieces(
          static_cast<size_t>(lanes_.replicas),
          std::vector<std::vector<TaskId>>(static_cast<size_t>(vpp_)));
      for (const TimelineEvent* e : w.passes) {
        for (int64_t q = 0; q < lanes_.replicas; ++q) {
          PROJECTOR_RETURN_IF_ERROR(AddPass(q, r, *e, w, final_pieces[static_cast<size_t>(q)]));
        }
        if (lanes_.replicas > 1) LeavePassTogether(r, *e);
      }
      std::vector<std::vector<BucketTasks>> buckets(static_cast<size_t>(lanes_.replicas));
      if (network_ && lanes_.replicas > 1) {
        PROJECTOR_ASSIGN_OR_RETURN(buckets, AddGroupBuckets(r, w, final_pieces));
      } else {
        for (int64_t q = 0; q < lanes_.replicas; ++q) {
          PROJECTOR_ASSIGN_OR_RETURN(buckets[static_cast<size_t>(q)],
                                     AddBuckets(q, r, w, final_pieces[static_cast<size_t>(q)]));
        }
        if (lanes_.replicas > 1) StartReducesTogether(r, w, buckets);
      }
      for (int64_t q = 0; q < lanes_.replicas; ++q) {
        const std::vector<BucketTasks>& b = buckets[static_cast<size_t>(q)];
        AddTail(q, r, b.empty() ? out_.fsdp_last_reduce[Lane(q, r)] : b.back().reduce);
      }
    }
    PROJECTOR_RETURN_IF_ERROR(AddPassDependencies());
    if (network_) out_.network_links = network_->links_used();
    // Tracks after the resources.
    for (ReplayedTask& t : out_.what) {
      if (t.resource < 0) t.resource = static_cast<int32_t>(g_.num_resources()) - t.resource - 1;
    }
    return std::move(out_);
  }

 private:
  struct BucketTasks {
    TaskId ready;  // the piece that completes its gradients (or the lane's last pass)
    TaskId reduce;
  };

  size_t Lane(int64_t q, int64_t r) const { return static_cast<size_t>(q * pp_ + r); }

  // A track for the trace that is not a resource (made when first named): -1 − its index until
  // Build places the tracks after the resources.
  int32_t Track(const std::string& name) {
    auto [it, added] = track_of_.try_emplace(name, static_cast<int32_t>(out_.track_names.size()));
    if (added) out_.track_names.push_back(name);
    return -1 - it->second;
  }

  // A delay resource for network steps that cross no link (all latency).
  ResourceId Delay() {
    if (!delay_) {
      delay_ = g_.AddResource(ResourceOrder::kUnbounded);
      out_.resource_names.push_back("network delays (no link)");
    }
    return *delay_;
  }

  // One network step as a task: a flow on its links, or a delay where it crosses none.
  TaskId AddFlowStep(const FlowStep& step, ReplayedTask what, int32_t track) {
    const TaskId t = step.shares.empty() ? g_.AddTask(Delay(), step.duration)
                                         : g_.AddFlow(step.shares, step.duration);
    what.resource = track;
    out_.what.push_back(what);
    return t;
  }
  int64_t VStage(int64_t q, int64_t stage) const { return q * stages_ + stage; }
  std::string LaneName(int64_t q, int64_t r) const {
    return lanes_.replicas == 1 ? absl::StrCat("rank ", r)
                                : absl::StrCat("gpu ", r * lanes_.block + q);
  }

  void AddStreams() {
    stream_.resize(static_cast<size_t>(pp_ * lanes_.replicas));
    for (int64_t q = 0; q < lanes_.replicas; ++q) {
      for (int64_t r = 0; r < pp_; ++r) {
        stream_[Lane(q, r)] = g_.AddResource(ResourceOrder::kInOrder);
        out_.resource_names.push_back(absl::StrCat(LaneName(q, r), " stream"));
      }
    }
    if (lanes_.replicas > 1) {
      // Zero-length barriers: a shared server never makes them wait.
      sync_ = g_.AddResource(ResourceOrder::kShared);
      out_.resource_names.push_back("sync (collectives holding GPUs together)");
    }
    if (!nic_use_.Shared()) return;
    std::vector<std::string> users;
    if (nic_use_.dp) users.push_back("DP reduces");
    if (nic_use_.p2p) users.push_back("sends");
    if (nic_use_.ep) users.push_back("EP all-to-all");
    nic_.resize(stream_.size());
    for (int64_t q = 0; q < lanes_.replicas; ++q) {
      for (int64_t r = 0; r < pp_; ++r) {
        nic_[Lane(q, r)] = g_.AddResource(ResourceOrder::kShared);
        out_.resource_names.push_back(
            absl::StrCat("link ", LaneName(q, r), " NIC (", absl::StrJoin(users, ", "), ")"));
      }
    }
  }

  // Overlapped transfers without a shared NIC: one link per ordered pair of lanes that exchange
  // activations (the ring of stages wraps from the last rank to the first for interleaving),
  // first come first served; made when first used.
  ResourceId Link(int64_t q, int64_t from, int64_t to) {
    ResourceId& id = link_of_[static_cast<size_t>((q * pp_ + from) * pp_ + to)];
    if (id == PassIndex::kNone) {
      id = g_.AddResource(ResourceOrder::kFirstReady);
      out_.resource_names.push_back(
          absl::StrCat("link ", LaneName(q, from), " → ", LaneName(q, to)));
    }
    return id;
  }

  // Appends a task after `previous` (a task of the same pass), or, for the pass's first, after
  // the lane's previous pass, whose last stretch may be on the NIC.
  TaskId AddChained(size_t lane, ResourceId on, Seconds length, ReplayedTask what,
                    TaskId previous) {
    const TaskId t = g_.AddTask(on, Max0(length));
    what.resource = static_cast<int32_t>(on);
    out_.what.push_back(what);
    const TaskId after = previous != PassIndex::kNone ? previous : out_.last_pass[lane];
    if (after != PassIndex::kNone) g_.AddDependency(after, t);
    return t;
  }

  // One pass of stage r's lane q: the rendezvous receive before it (1F1B), then its stretches
  // (the compute on the stream; each MoE layer's exposed All-to-All on the NIC, which a
  // straggler does not slow), cut at the bucket fractions where it is the chunk's final pass.
  absl::Status AddPass(int64_t q, int64_t r, const TimelineEvent& e, const RankWork& w,
                       std::vector<std::vector<TaskId>>& final_pieces) {
    const size_t lane = Lane(q, r);
    const int64_t stage = static_cast<int64_t>(e.chunk) * pp_ + r;
    if (e.micro_batch < 0 || e.micro_batch >= medium_.micro_batches || stage >= stages_) {
      return absl::InternalError(
          absl::StrFormat("timeline pass of rank %d, chunk %d, micro-batch %d is outside the step",
                          e.rank, e.chunk, e.micro_batch));
    }
    const int64_t vstage = VStage(q, stage);
    int64_t producer = 0;
    if (medium_.p2p_transfer.value() > 0 && !medium_.p2p_overlapped &&
        ProducerStage(e.kind, stage, stages_, producer) && producer % pp_ != r) {
      ReplayedTask what = Described(ReplayedTask::What::kReceive, e);
      what.rank = static_cast<int32_t>(lane);
      const Seconds transfer = medium_.p2p_transfer * slow_.Transfer(producer % pp_, r, q);
      if (network_) {
        // The rendezvous: the transfer starts when the consumer's stream reaches it (and the
        // producer is done, AddPassDependencies), and the stream waits for it.
        const TaskId t = AddFlowStep(StageTransfer(q, producer % pp_, r, transfer), what,
                                     static_cast<int32_t>(stream_[lane]));
        if (out_.last_pass[lane] != PassIndex::kNone) g_.AddDependency(out_.last_pass[lane], t);
        receive_.at(e.kind, e.micro_batch, vstage) = t;
      } else {
        receive_.at(e.kind, e.micro_batch, vstage) =
            AddChained(lane, stream_[lane], transfer, what, PassIndex::kNone);
      }
      out_.last_pass[lane] = receive_.at(e.kind, e.micro_batch, vstage);
    }
    // The pass as its chunk's plan lays it out: its layers' modules and each collective's
    // exposed time, on the stream, or taken out of it (EP on a shared NIC; TP, CP, EP and FSDP
    // on a network file's links). The compute is what a straggler slows.
    const Seconds alone = e.end - e.start;
    std::vector<PassComm>& comms = comms_;
    comms.clear();
    const size_t chunk_index = static_cast<size_t>(r * vpp_ + e.chunk);
    const bool weight_grad = e.kind == TimelineKind::kWeightGrad;
    if (chunk_index < medium_.chunk_comm.size() && !weight_grad) {
      const ChunkComm& parts = medium_.chunk_comm[chunk_index];
      const bool forward = e.kind == TimelineKind::kForward;
      for (const auto& [part, dim] :
           {std::pair{PassPart::kTp, &parts.tp}, std::pair{PassPart::kCp, &parts.cp},
            std::pair{PassPart::kEp, &parts.ep}, std::pair{PassPart::kFsdp, &parts.fsdp}}) {
        comms.push_back({part, forward ? dim->forward : dim->backward});
      }
    }
    Seconds comm_total;
    for (const PassComm& c : comms) comm_total += c.exposed;
    if (comm_total > alone) {  // rounding: never more than the pass
      for (PassComm& c : comms) c.exposed = c.exposed * (alone / comm_total);
    }
    std::span<const PassSegment> plan;
    if (chunk_index < medium_.chunk_plans.size()) {
      const ChunkPlan& p = medium_.chunk_plans[chunk_index];
      plan = e.kind == TimelineKind::kForward ? p.forward : p.backward;
    }
    // FSDP's units as events (FsdpUnits): the medium's exposure of them comes off the pass, whose
    // compute keeps what their collectives take from it.
    const std::vector<FsdpUnitTraffic>* fsdp = nullptr;
    Seconds compute_alone = alone;
    if (chunk_index < medium_.chunk_fsdp.size() && !medium_.chunk_fsdp[chunk_index].empty() &&
        !plan.empty() && !weight_grad) {
      fsdp = &medium_.chunk_fsdp[chunk_index];
      for (PassComm& c : comms) {
        if (c.part != PassPart::kFsdp) continue;
        compute_alone -= c.exposed;
        c.exposed = Seconds(0);
      }
      Seconds interference;
      for (const FsdpUnitTraffic& u : *fsdp) {
        interference +=
            e.kind == TimelineKind::kForward ? u.forward_interference : u.backward_interference;
      }
      compute_alone += interference;
      out_.fsdp_interference[lane] += interference * slow_.Pass(r, q);
    }
    PlanStretches(plan, Max0(compute_alone), slow_.Pass(r, q), comms, stretches_);
    if (weight_grad) {  // W: the backward's modules without their collectives
      std::erase_if(stretches_, [](const Stretch& x) { return x.part != PassPart::kCompute; });
    }
    // A slow link on a TP or CP ring or in an EP group: its collectives at the link's pace, all of
    // their time (exposed or hidden) FACTOR times as long; the compute they hid behind (the
    // hidden time) hides as much as before.
    for (Stretch& x : stretches_) {
      if (x.part == PassPart::kCompute || x.part == PassPart::kFsdp) continue;
      const double f = slow_.Comm(x.part, r, q);
      if (f == 1.0) continue;
      const Seconds full = (x.length + x.hidden) * f;
      x.length = Max0(full - x.hidden);
      x.hidden = std::min(x.hidden, full);
    }
    SplitForOverlap({false, TakenOut(PassPart::kTp), TakenOut(PassPart::kCp),
                     TakenOut(PassPart::kEp), TakenOut(PassPart::kFsdp)},
                    stretches_, stretch_scratch_);
    const bool final_pass = w.final_pass[static_cast<size_t>(e.chunk)] == &e;
    static const std::vector<double> kWhole = {1.0};
    const std::vector<double>& cuts =
        final_pass ? w.final_fractions[static_cast<size_t>(e.chunk)] : kWhole;
    Seconds pass_length;
    for (const Stretch& x : stretches_) pass_length += x.length;
    size_t next_cut = 0;
    Seconds stretch_start;
    TaskId previous = PassIndex::kNone;
    // On a network, each collective taken out as flows on its group's links: folded, one
    // exposed whole as its algorithm's steps (as the DP buckets), else one flow at its busiest
    // link's full rate (Occupancy).
    flows_.assign(stretches_.size(), nullptr);
    steps_.resize(stretches_.size());
    for (size_t i = 0; i < stretches_.size(); ++i) {
      const Stretch& x = stretches_[i];
      steps_[i].clear();
      if (!network_ || x.length.value() <= 0 || !TakenOut(x.part)) continue;
      PROJECTOR_ASSIGN_OR_RETURN(flows_[i], Occupancy(x, q, r));
      // As its algorithm's steps where it runs whole: exposed, or its hidden part overlapping.
      const bool whole = x.hidden <= x.overlap + (x.length + x.hidden) * 1e-9;
      if (x.bytes.value() <= 0 || x.part == PassPart::kCp || !whole) continue;
      const Seconds full = x.length + x.overlap;
      if (lanes_.replicas == 1) {
        PROJECTOR_ASSIGN_OR_RETURN(
            steps_[i],
            network_->Collective(x.kind, x.bytes, GroupOf(x), r * net_.block, net_.block, full));
      } else if (q == GroupBase(x, q)) {
        PROJECTOR_ASSIGN_OR_RETURN(steps_[i], network_->Collective(x.kind, x.bytes, GroupOf(x),
                                                                   r * net_.block + q, 1, full));
      }
    }
    if (&e != group_pass_) {  // a new pass: its groups' collectives so far
      group_pass_ = &e;
      group_steps_.clear();
    }
    size_t stretch_index = 0;
    FsdpUnits units(*this, q, r, e, fsdp, stretches_);
    TaskId gate = PassIndex::kNone;  // the gather the next piece waits for
    // A compute stretch a collective overlaps: the task before its first piece (where the
    // collective starts) and its last piece (what the piece after the collective waits for too).
    TaskId before_beside = PassIndex::kNone, beside_last = PassIndex::kNone,
           after_beside = PassIndex::kNone;
    auto add_piece = [&](const Stretch& x, Seconds length, bool cut) {
      ReplayedTask what = Described(WhatOf(x.part), e);
      what.rank = static_cast<int32_t>(lane);
      what.op = x.name;
      what.layer = x.layer;
      what.unit = x.unit;
      TaskId t = 0;
      const std::vector<FlowStep>& steps = steps_[stretch_index];
      const bool whole = length >= x.length * (1 - 1e-12);
      // A collective overlapping the compute before it starts where that compute does and lasts
      // its overlap longer; cut in pieces, it is its exposed part only.
      const bool overlapping = whole && x.overlap.value() > 0;
      if (x.overlapped && beside_last == PassIndex::kNone && before_beside == PassIndex::kNone) {
        before_beside = previous != PassIndex::kNone ? previous : out_.last_pass[lane];
      }
      what.overlapped = overlapping;
      length += overlapping ? x.overlap : Seconds(0);
      const TaskId arrived = overlapping                    ? before_beside
                             : previous != PassIndex::kNone ? previous
                                                            : out_.last_pass[lane];
      const auto group = lanes_.replicas > 1 && whole
                             ? group_steps_.find({GroupBase(x, q), stretch_index})
                             : group_steps_.end();
      if (!steps.empty() && whole) {
        // The collective's steps, run once for its group (folded: every group of the stage).
        const int32_t track = Track(absl::StrCat(LaneName(q, r), TrackSuffix(x.part)));
        TaskId after = arrived, first = PassIndex::kNone;
        for (const FlowStep& step : steps) {
          t = AddFlowStep(step, what, track);
          if (after != PassIndex::kNone) g_.AddDependency(after, t);
          if (first == PassIndex::kNone) first = t;
          after = t;
        }
        if (lanes_.replicas > 1) group_steps_[{q, stretch_index}] = {first, t};
      } else if (group != group_steps_.end()) {
        // Unfolded, a member of a group whose first GPU runs the steps: they start when it
        // arrives too, and it leaves when they end.
        if (arrived != PassIndex::kNone) g_.AddDependency(arrived, group->second.first);
        t = g_.AddTask(sync_, Seconds(0));
        what.resource = static_cast<int32_t>(sync_);
        out_.what.push_back(what);
        g_.AddDependency(group->second.second, t);
      } else if (const FlowStep* flow = flows_[stretch_index]; flow != nullptr) {
        t = AddFlowStep({.duration = length * flow->stretch, .shares = flow->shares}, what,
                        Track(absl::StrCat(LaneName(q, r), TrackSuffix(x.part))));
        if (arrived != PassIndex::kNone) g_.AddDependency(arrived, t);
      } else if (x.part == PassPart::kEp && nic_use_.ep) {
        t = g_.AddTask(nic_[lane], length);
        what.resource = static_cast<int32_t>(nic_[lane]);
        out_.what.push_back(what);
        if (arrived != PassIndex::kNone) g_.AddDependency(arrived, t);
      } else {
        t = AddChained(lane, stream_[lane], length, what, previous);
      }
      if (x.overlapped) {
        beside_last = t;
      } else if (overlapping) {
        out_.overlaps.push_back({.collective = t,
                                 .beside = beside_last,
                                 .lane = static_cast<int32_t>(lane),
                                 .what = what.what});
        after_beside = beside_last;
        beside_last = before_beside = PassIndex::kNone;
      } else {
        // The piece after an overlapping collective waits for the compute beside it too (a
        // piece off the stream does not follow it by itself).
        if (after_beside != PassIndex::kNone) g_.AddDependency(after_beside, t);
        after_beside = beside_last = before_beside = PassIndex::kNone;
      }
      if (gate != PassIndex::kNone) {
        g_.AddDependency(gate, t);
        const TaskId before = previous != PassIndex::kNone ? previous : out_.last_pass[lane];
        out_.fsdp_gates.push_back(
            {.piece = t, .before = before, .gather = gate, .lane = static_cast<int32_t>(lane)});
        gate = PassIndex::kNone;
      }
      if (previous == PassIndex::kNone) entry_.at(e.kind, e.micro_batch, vstage) = t;
      previous = t;
      if (cut && final_pass) final_pieces[static_cast<size_t>(e.chunk)].push_back(t);
    };
    for (size_t i = 0; i < stretches_.size(); ++i) {
      const Stretch& x = stretches_[i];
      stretch_index = i;
      if (units.Starts(x.unit)) {
        const TaskId start = previous != PassIndex::kNone ? previous : out_.last_pass[lane];
        units.Finish(previous);
        gate = units.Start(x.unit, start);
      }
      const bool last_stretch = i + 1 == stretches_.size();
      const Seconds stretch_end = last_stretch ? pass_length : stretch_start + x.length;
      // One piece up to each cut inside the stretch (the last stretch takes every cut left, 1
      // among them, whatever the rounding), then the rest.
      Seconds at = stretch_start;
      while (next_cut < cuts.size()) {
        const Seconds cut_at = pass_length * cuts[next_cut];
        if (!(cut_at <= stretch_end) && !last_stretch) break;
        const Seconds bound = std::clamp(cut_at, at, stretch_end);
        add_piece(x, bound - at, true);
        at = bound;
        ++next_cut;
      }
      if (at < stretch_end || previous == PassIndex::kNone) add_piece(x, stretch_end - at, false);
      stretch_start = stretch_end;
    }
    if (after_beside != PassIndex::kNone) {
      // The pass ends with an overlapping collective: it ends when the compute beside it does
      // too (a zero-length task on the stream after both).
      ReplayedTask end = Described(ReplayedTask::What::kPass, e);
      end.rank = static_cast<int32_t>(lane);
      previous = AddChained(lane, stream_[lane], Seconds(0), end, previous);
    }
    units.Finish(previous);
    PROJECTOR_RETURN_IF_ERROR(units.status());
    done_.at(e.kind, e.micro_batch, vstage) = previous;
    out_.last_pass[lane] = previous;
    return absl::OkStatus();
  }

  // FSDP's units of one pass as events, as FSDP issues them: a unit's parameters gathered before
  // it runs (the first unit's when the pass starts, each next one's prefetched when the unit
  // before it starts, FSDP's forward and backward prefetch), its gradients reduce-scattered after
  // its backward. Gathers run one after another, reduce-scatters too, on two streams that share
  // the lane's FSDP link (processor sharing: a gather beside a reduce-scatter each at half rate),
  // or as flows on a network file's links over the DP·CP group. Each as long as the medium
  // projection timed it (FsdpUnitTraffic).
  class FsdpUnits {
   public:
    FsdpUnits(StepGraphBuilder& b, int64_t q, int64_t r, const TimelineEvent& e,
              const std::vector<FsdpUnitTraffic>* traffic, const std::vector<Stretch>& stretches)
        : b_(b), q_(q), r_(r), e_(e), traffic_(traffic), lane_(b.Lane(q, r)) {
      if (traffic_ == nullptr) return;
      for (const Stretch& x : stretches) {
        if (order_.empty() || order_.back() != x.unit) order_.push_back(x.unit);
      }
    }
    bool Starts(int32_t unit) const {
      return traffic_ != nullptr && (current_ < 0 || order_[static_cast<size_t>(current_)] != unit);
    }
    // Unit `unit` starts after `start`: its gather (issued now for the first unit), the next
    // unit's prefetched. The gather the unit's first piece waits for.
    TaskId Start(int32_t unit, TaskId start) {
      ++current_;
      if (current_ == 0) gathers_ = {Gather(unit, start)};
      const TaskId mine = gathers_.back();
      if (static_cast<size_t>(current_) + 1 < order_.size()) {
        gathers_.push_back(Gather(order_[static_cast<size_t>(current_) + 1], start));
      }
      return mine;
    }
    // The current unit ended with `last`: in backward, its gradients' reduce-scatter.
    void Finish(TaskId last) {
      if (traffic_ == nullptr || current_ < 0 || e_.kind != TimelineKind::kBackward) return;
      const int32_t unit = order_[static_cast<size_t>(current_)];
      if (finished_ == current_) return;
      finished_ = current_;
      TaskId& chain = b_.fsdp_reduce_[lane_];
      chain = Collective(unit, CollectiveKind::kReduceScatter, {last, chain});
      b_.out_.fsdp_last_reduce[lane_] = chain;
    }
    absl::Status status() const { return status_; }

   private:
    TaskId Gather(int32_t unit, TaskId start) {
      TaskId& chain = b_.fsdp_gather_[lane_];
      chain = Collective(unit, CollectiveKind::kAllGather, {start, chain});
      return chain;
    }
    TaskId Collective(int32_t unit, CollectiveKind kind, std::initializer_list<TaskId> after) {
      const size_t u = static_cast<size_t>(unit);
      const FsdpUnitTraffic none{};
      const FsdpUnitTraffic& t = u < traffic_->size() ? (*traffic_)[u] : none;
      const bool gather = kind == CollectiveKind::kAllGather;
      ReplayedTask what = Described(ReplayedTask::What::kFsdpComm, e_);
      what.rank = static_cast<int32_t>(lane_);
      what.op = gather ? "fsdp_allgather" : "fsdp_reducescatter";
      what.layer = LayerOf(unit);
      what.unit = unit;
      const Seconds time = gather ? t.gather : t.reduce;
      TaskId task = 0;
      if (b_.network_) {
        absl::StatusOr<const FlowStep*> flow =
            b_.Occupancy({.length = time, .part = PassPart::kFsdp, .kind = kind}, q_, r_);
        if (!flow.ok()) status_ = flow.status();
        const FlowStep* f = flow.ok() ? *flow : nullptr;
        task = b_.AddFlowStep(
            {.duration = time * (f != nullptr ? f->stretch : 1.0),
             .shares = f != nullptr ? f->shares : std::vector<events::LinkShare>{}},
            what, b_.Track(absl::StrCat(b_.LaneName(q_, r_), TrackSuffix(PassPart::kFsdp))));
      } else {
        const ResourceId link = b_.FsdpLink(lane_, q_, r_);
        task = b_.g_.AddTask(link, time);
        what.resource = static_cast<int32_t>(link);
        b_.out_.what.push_back(what);
      }
      for (const TaskId before : after) {
        if (before != PassIndex::kNone) b_.g_.AddDependency(before, task);
      }
      return task;
    }
    int32_t LayerOf(int32_t unit) const {
      for (const PassSegment& s : PlanOf()) {
        if (s.unit == unit) return s.layer;
      }
      return -1;
    }
    std::span<const PassSegment> PlanOf() const {
      const size_t chunk = static_cast<size_t>(r_ * b_.vpp_ + e_.chunk);
      if (chunk >= b_.medium_.chunk_plans.size()) return {};
      const ChunkPlan& p = b_.medium_.chunk_plans[chunk];
      return e_.kind == TimelineKind::kForward ? p.forward : p.backward;
    }

    StepGraphBuilder& b_;
    const int64_t q_, r_;
    const TimelineEvent& e_;
    const std::vector<FsdpUnitTraffic>* traffic_;
    const size_t lane_;
    std::vector<int32_t> order_;   // the units in the pass's order
    std::vector<TaskId> gathers_;  // issued so far, in that order
    int32_t current_ = -1, finished_ = -1;
    absl::Status status_;
  };

  // Lane `lane`'s FSDP link (made when first used): its gathers and reduce-scatters share it.
  ResourceId FsdpLink(size_t lane, int64_t q, int64_t r) {
    ResourceId& id = fsdp_link_[lane];
    if (id == PassIndex::kNone) {
      id = g_.AddResource(ResourceOrder::kShared);
      out_.resource_names.push_back(absl::StrCat(LaneName(q, r), " FSDP collectives"));
    }
    return id;
  }

  // A zero-length barrier after `members`' tasks: what waits on it waits for all of them.
  TaskId Barrier(const std::vector<TaskId>& members, int64_t r) {
    const TaskId b = g_.AddTask(sync_, Seconds(0));
    ReplayedTask what;
    what.what = ReplayedTask::What::kSync;
    what.rank = static_cast<int32_t>(r);
    what.resource = static_cast<int32_t>(sync_);
    out_.what.push_back(what);
    for (TaskId m : members) {
      if (m != PassIndex::kNone) g_.AddDependency(m, b);
    }
    return b;
  }

  // Unfolded: the GPUs of stage r that compute a pass together (consecutive positions in groups
  // of `lockstep`) leave it together: their last collective holds them. What follows the pass
  // on each (its next pass, what depends on the pass) waits for the barrier.
  void LeavePassTogether(int64_t r, const TimelineEvent& e) {
    if (lanes_.lockstep == 1) return;  // nothing holds a lone GPU
    const int64_t stage = static_cast<int64_t>(e.chunk) * pp_ + r;
    std::vector<TaskId> members;
    for (int64_t first = 0; first < lanes_.replicas; first += lanes_.lockstep) {
      members.clear();
      for (int64_t q = first; q < first + lanes_.lockstep; ++q) {
        members.push_back(done_.at(e.kind, e.micro_batch, VStage(q, stage)));
      }
      const TaskId b = Barrier(members, r);
      for (int64_t q = first; q < first + lanes_.lockstep; ++q) {
        done_.at(e.kind, e.micro_batch, VStage(q, stage)) = b;
        out_.last_pass[Lane(q, r)] = b;
      }
    }
  }

  // The lane's DP gradient buckets, reduced in order (on its DP stream, or chained on its NIC),
  // each from the piece of its chunk's final pass that completes it.
  absl::StatusOr<std::vector<BucketTasks>> AddBuckets(
      int64_t q, int64_t r, const RankWork& w,
      const std::vector<std::vector<TaskId>>& final_pieces) {
    std::vector<BucketTasks> tasks;
    if (w.buckets.empty()) return tasks;
    const size_t lane = Lane(q, r);
    if (network_) return AddNetworkBuckets(r, w, final_pieces);
    ResourceId dp = 0;
    if (nic_use_.dp) {
      dp = nic_[lane];
    } else {
      dp = g_.AddResource(ResourceOrder::kInOrder);
      out_.resource_names.push_back(absl::StrCat(LaneName(q, r), " DP stream"));
    }
    for (const Bucket& b : w.buckets) {
      const TaskId t = g_.AddTask(dp, b.reduce * slow_.Reduce(r, q, b.expert));
      if (nic_use_.dp && !tasks.empty()) g_.AddDependency(tasks.back().reduce, t);
      ReplayedTask reduce;
      reduce.what = ReplayedTask::What::kGradReduce;
      reduce.rank = static_cast<int32_t>(lane);
      reduce.chunk = b.chunk;
      reduce.resource = static_cast<int32_t>(dp);
      out_.what.push_back(reduce);
      const TaskId ready = BucketReady(lane, w, b, final_pieces);
      if (ready != PassIndex::kNone) g_.AddDependency(ready, t);
      tasks.push_back({.ready = ready, .reduce = t});
    }
    return tasks;
  }

  // The piece of the final pass that completes `b`'s gradients (or the lane's last pass).
  TaskId BucketReady(size_t lane, const RankWork& w, const Bucket& b,
                     const std::vector<std::vector<TaskId>>& final_pieces) const {
    TaskId ready = out_.last_pass[lane];
    if (b.chunk >= 0) {
      const std::vector<double>& cuts = w.final_fractions[static_cast<size_t>(b.chunk)];
      const std::vector<TaskId>& pieces = final_pieces[static_cast<size_t>(b.chunk)];
      const size_t k = static_cast<size_t>(std::lower_bound(cuts.begin(), cuts.end(), b.fraction) -
                                           cuts.begin());
      if (k < pieces.size()) ready = pieces[k];
    }
    return ready;
  }

  // Folded, on a network: stage r's buckets, in order, each its collective's steps as flows on
  // the network's links, run by every DP group of the stage at once (NetworkReplay).
  absl::StatusOr<std::vector<BucketTasks>> AddNetworkBuckets(
      int64_t r, const RankWork& w, const std::vector<std::vector<TaskId>>& final_pieces) {
    std::vector<BucketTasks> tasks;
    const size_t lane = Lane(0, r);
    const int32_t track = Track(absl::StrCat(LaneName(0, r), " DP stream"));
    for (const Bucket& b : w.buckets) {
      const ProcessGroup group = b.expert ? net_.expert : net_.dense;
      const TaskId ready = BucketReady(lane, w, b, final_pieces);
      const TaskId before = tasks.empty() ? PassIndex::kNone : tasks.back().reduce;
      PROJECTOR_ASSIGN_OR_RETURN(
          const TaskId last, AddBucketSteps(b, group, r * net_.block, group.stride, r, 0,
                                            static_cast<int32_t>(lane), track, {ready, before}));
      tasks.push_back({.ready = ready, .reduce = last});
    }
    return tasks;
  }

  // One bucket's collective on every DP group starting in [first, first + span) of stage r, as
  // its algorithm's steps (flows) on `track`: the first after each task of `after` (kNone
  // skipped), the rest in order. Its last step (a zero-length one for a collective that takes no
  // time). `position`: the GPU whose DP link a slow link may slow.
  absl::StatusOr<TaskId> AddBucketSteps(const Bucket& b, ProcessGroup group, int64_t first,
                                        int64_t span, int64_t r, int64_t position, int32_t lane,
                                        int32_t track, std::initializer_list<TaskId> after) {
    PROJECTOR_ASSIGN_OR_RETURN(
        std::vector<FlowStep> steps,
        network_->Collective(b.kind, b.bytes, group, first, span,
                             b.reduce * slow_.Reduce(r, position, b.expert)));
    if (steps.empty()) steps.push_back({.duration = Seconds(0), .shares = {}});
    ReplayedTask reduce;
    reduce.what = ReplayedTask::What::kGradReduce;
    reduce.rank = lane;
    reduce.chunk = b.chunk;
    TaskId previous = PassIndex::kNone;
    for (const FlowStep& step : steps) {
      const TaskId t = AddFlowStep(step, reduce, track);
      if (previous != PassIndex::kNone) {
        g_.AddDependency(previous, t);
      } else {
        for (const TaskId before : after) {
          if (before != PassIndex::kNone) g_.AddDependency(before, t);
        }
      }
      previous = t;
    }
    return previous;
  }

  // Transfers of the activations of stage `from`'s GPUs to stage `to`'s (each to the GPU at its
  // position) as one flow on the network's links: folded, all the stage's GPUs at once;
  // unfolded, lane q's GPU.
  const FlowStep& StageTransfer(int64_t q, int64_t from, int64_t to, Seconds medium) {
    if (lanes_.replicas > 1) {
      return network_->Transfers(from * net_.block + q, to * net_.block + q, 1, net_.p2p_bytes,
                                 medium);
    }
    return network_->Transfers(from * net_.block, to * net_.block, net_.block, net_.p2p_bytes,
                               medium);
  }

  static ReplayedTask::What WhatOf(PassPart part) {
    switch (part) {
      case PassPart::kTp:
        return ReplayedTask::What::kTpComm;
      case PassPart::kCp:
        return ReplayedTask::What::kCpComm;
      case PassPart::kEp:
        return ReplayedTask::What::kEpComm;
      case PassPart::kFsdp:
        return ReplayedTask::What::kFsdpComm;
      case PassPart::kCompute:
        break;
    }
    return ReplayedTask::What::kPass;
  }
  static const char* TrackSuffix(PassPart part) {
    return part == PassPart::kTp     ? " TP collectives"
           : part == PassPart::kCp   ? " CP ring"
           : part == PassPart::kFsdp ? " FSDP collectives"
                                     : " EP all-to-all";
  }

  // The group a collective runs on as the layer issues it; the CP ring on the CP group, an FSDP
  // unit's collectives on the DP·CP group, the dimension's group where the plan has none.
  ProcessGroup GroupOf(const Stretch& x) const {
    if (x.part == PassPart::kCp) return net_.cp_group;
    if (x.part == PassPart::kFsdp) return net_.fsdp_group;
    if (x.group.size >= 2) return x.group;
    return x.part == PassPart::kTp ? net_.tp_group : net_.ep_group;
  }

  // Unfolded: the position of the first GPU of lane q's group for collective `x`.
  int64_t GroupBase(const Stretch& x, int64_t q) const {
    const ProcessGroup group = GroupOf(x);
    const int64_t stride = std::max<int64_t>(1, group.stride);
    return q - (q / stride) % std::max<int64_t>(1, group.size) * stride;
  }

  // Whether a dimension's collectives leave the stream: on a network file's links, or EP on a
  // shared NIC.
  bool TakenOut(PassPart part) const {
    switch (part) {
      case PassPart::kTp:
        return net_.tp;
      case PassPart::kCp:
        return net_.cp;
      case PassPart::kEp:
        return net_.ep || nic_use_.ep;
      case PassPart::kFsdp:
        return net_.fsdp;
      case PassPart::kCompute:
        break;
    }
    return false;
  }

  // The links of one collective of stage r's lane q as the layer issues it (its kind and group;
  // the CP ring as an all-gather's ring over the CP group, each rank sending to the next; an
  // FSDP unit's gather over the DP·CP group). Folded, every group of the dimension in the stage
  // at once; unfolded, what lane q's GPU sends to its group.
  absl::StatusOr<const FlowStep*> Occupancy(const Stretch& x, int64_t q, int64_t r) {
    const ProcessGroup group = GroupOf(x);
    const CollectiveKind kind = x.part == PassPart::kCp ? CollectiveKind::kAllGather : x.kind;
    if (lanes_.replicas == 1) {
      return network_->Occupancy(kind, group, r * net_.block, net_.block);
    }
    const int64_t base = q - (q / group.stride) % group.size * group.stride;
    return network_->Occupancy(kind, group, r * net_.block + base, 1, r * net_.block + q);
  }

  // Unfolded, on a network: stage r's buckets for every DP group of it (the dense gradients' or
  // the experts', its members `stride` positions apart), each group's steps once, as flows,
  // after all its members have the bucket's gradients and have reduced their previous bucket
  // (each GPU reduces its buckets one after another, dense and expert, as folded). Per lane, its
  // buckets (the reduce: its group's last step).
  absl::StatusOr<std::vector<std::vector<BucketTasks>>> AddGroupBuckets(
      int64_t r, const RankWork& w,
      const std::vector<std::vector<std::vector<TaskId>>>& final_pieces) {
    std::vector<std::vector<BucketTasks>> lanes(static_cast<size_t>(lanes_.replicas));
    std::vector<TaskId> members, waits;
    std::vector<TaskId> lane_previous(static_cast<size_t>(lanes_.replicas), PassIndex::kNone);
    for (const Bucket& b : w.buckets) {
      const ProcessGroup group = b.expert ? lanes_.expert_dp : lanes_.dense_dp;
      const int64_t stride = std::max<int64_t>(1, group.stride);
      for (int64_t base = 0; base < stride; ++base) {
        members.clear();
        waits.clear();
        for (int64_t q = base; q < lanes_.replicas; q += stride) {
          members.push_back(BucketReady(Lane(q, r), w, b, final_pieces[static_cast<size_t>(q)]));
          waits.push_back(members.back());
          waits.push_back(lane_previous[static_cast<size_t>(q)]);
        }
        const TaskId together = Barrier(waits, r);
        const int32_t track = Track(absl::StrCat("stage ", r, (b.expert ? " expert" : ""),
                                                 " DP group ", base, " DP stream"));
        PROJECTOR_ASSIGN_OR_RETURN(
            const TaskId previous,
            AddBucketSteps(b, group, r * net_.block + base, 1, r, base,
                           static_cast<int32_t>(Lane(base, r)), track, {together}));
        size_t k = 0;
        for (int64_t q = base; q < lanes_.replicas; q += stride, ++k) {
          lanes[static_cast<size_t>(q)].push_back({.ready = members[k], .reduce = previous});
          lane_previous[static_cast<size_t>(q)] = previous;
        }
      }
    }
    return lanes;
  }

  // Unfolded: the members of a DP ring (the dense gradients' or the expert gradients' group)
  // start each bucket's reduce together, when all have its gradients.
  void StartReducesTogether(int64_t r, const RankWork& w,
                            const std::vector<std::vector<BucketTasks>>& lanes) {
    std::vector<TaskId> members;
    for (size_t j = 0; j < w.buckets.size(); ++j) {
      const ProcessGroup group = w.buckets[j].expert ? lanes_.expert_dp : lanes_.dense_dp;
      const int64_t stride = std::max<int64_t>(1, group.stride);
      for (int64_t base = 0; base < stride; ++base) {
        members.clear();
        for (int64_t q = base; q < lanes_.replicas; q += stride) {
          members.push_back(lanes[static_cast<size_t>(q)][j].ready);
        }
        const TaskId b = Barrier(members, r);
        for (int64_t q = base; q < lanes_.replicas; q += stride) {
          g_.AddDependency(b, lanes[static_cast<size_t>(q)][j].reduce);
        }
      }
    }
  }

  // The tail, as the step composer has it: the backward slowed by the reduces it hid, the wait
  // for the last reduce, then the exposed parameter gathers (slowed with a slow DP link) and the
  // optimizer.
  void AddTail(int64_t q, int64_t r, TaskId last_reduce) {
    const size_t lane = Lane(q, r);
    const RankTailParts parts = static_cast<size_t>(r) < medium_.rank_tails.size()
                                    ? medium_.rank_tails[static_cast<size_t>(r)]
                                    : RankTailParts{};
    ReplayedTask tail;
    tail.what = ReplayedTask::What::kTail;
    tail.rank = static_cast<int32_t>(lane);
    TaskId previous = PassIndex::kNone;
    if (parts.reduce_slowdown.value() > 0) {
      previous = AddChained(lane, stream_[lane], parts.reduce_slowdown, tail, PassIndex::kNone);
    }
    const Seconds gather = parts.param_gather * slow_.Reduce(r, q, false);
    const Seconds after = gather + parts.optimizer;
    if (after.value() <= 0 && last_reduce == PassIndex::kNone) return;
    const TaskId t = AddChained(lane, stream_[lane], after, tail, previous);
    if (last_reduce != PassIndex::kNone) g_.AddDependency(last_reduce, t);
    out_.after_sync[lane] = t;
    out_.param_gather[lane] = gather;
  }

  // A pass on its producer (through the transfer between the lanes' stages), a backward on its
  // own forward, a weight-gradient pass on its backward; lane by lane.
  absl::Status AddPassDependencies() {
    const bool transfers = medium_.p2p_transfer.value() > 0;
    for (int64_t q = 0; q < lanes_.replicas; ++q) {
      for (const TimelineEvent& e : medium_.timeline) {
        if (!IsPass(e.kind) || e.rank < 0 || e.rank >= pp_) continue;
        const int64_t r = e.rank, stage = static_cast<int64_t>(e.chunk) * pp_ + r;
        const TaskId t = entry_.at(e.kind, e.micro_batch, VStage(q, stage));
        if (e.kind == TimelineKind::kBackward) {
          g_.AddDependency(done_.at(TimelineKind::kForward, e.micro_batch, VStage(q, stage)), t);
        }
        if (e.kind == TimelineKind::kWeightGrad) {
          g_.AddDependency(done_.at(TimelineKind::kBackward, e.micro_batch, VStage(q, stage)), t);
        }
        int64_t producer = 0;
        if (!ProducerStage(e.kind, stage, stages_, producer)) continue;
        const TaskId from = done_.at(e.kind, e.micro_batch, VStage(q, producer));
        if (from == PassIndex::kNone) {
          return absl::InternalError("timeline lacks the producer of a pass");
        }
        const int64_t from_rank = producer % pp_;
        if (!transfers || from_rank == r) {
          g_.AddDependency(from, t);
        } else if (medium_.p2p_overlapped) {
          const Seconds time = medium_.p2p_transfer * slow_.Transfer(from_rank, r, q);
          ReplayedTask transfer = Described(ReplayedTask::What::kTransfer, e);
          transfer.rank = static_cast<int32_t>(Lane(q, from_rank));
          transfer.to_rank = static_cast<int32_t>(Lane(q, r));
          TaskId move = 0;
          if (network_) {
            move = AddFlowStep(
                StageTransfer(q, from_rank, r, time), transfer,
                Track(absl::StrCat("link ", LaneName(q, from_rank), " → ", LaneName(q, r))));
          } else {
            const ResourceId on = nic_use_.p2p ? nic_[Lane(q, from_rank)] : Link(q, from_rank, r);
            move = g_.AddTask(on, time);
            transfer.resource = static_cast<int32_t>(on);
            out_.what.push_back(transfer);
          }
          g_.AddDependency(from, move);
          g_.AddDependency(move, t);
        } else {
          const TaskId recv = receive_.at(e.kind, e.micro_batch, VStage(q, stage));
          g_.AddDependency(from, recv);
          g_.AddDependency(recv, t);
        }
      }
    }
    return absl::OkStatus();
  }

  const Projection& medium_;
  const int64_t pp_, vpp_, stages_;
  const ReplaySlowdowns& slow_;
  const NicUse nic_use_;
  const Lanes lanes_;
  const NetworkUse net_;
  StepGraph out_;
  TaskGraph& g_;
  std::optional<NetworkReplay> network_;
  std::optional<ResourceId> delay_;
  absl::flat_hash_map<std::string, int32_t> track_of_;
  std::vector<ResourceId> stream_, nic_;
  ResourceId sync_ = 0;
  std::vector<ResourceId> link_of_;
  PassIndex done_;     // a pass's last task (what depends on the pass waits for it)
  PassIndex entry_;    // a pass's first task (what the pass waits for gates it)
  PassIndex receive_;  // the rendezvous receive before a pass, or kNone
  // FSDP as events, per lane: its link (without a network), its last gather and reduce-scatter.
  std::vector<ResourceId> fsdp_link_, fsdp_gather_, fsdp_reduce_;
  std::vector<Stretch> stretches_;            // scratch
  std::vector<Stretch> stretch_scratch_;      // scratch
  std::vector<PassComm> comms_;               // scratch
  std::vector<const FlowStep*> flows_;        // scratch: each stretch's flow on the network
  std::vector<std::vector<FlowStep>> steps_;  // scratch: each stretch's algorithm steps, or none
  // Unfolded, the pass being built and its groups' collectives run as steps so far: by (first
  // GPU's position, stretch), the first and the last step.
  const TimelineEvent* group_pass_ = nullptr;
  absl::flat_hash_map<std::pair<int64_t, size_t>, std::pair<TaskId, TaskId>> group_steps_;
};

absl::StatusOr<StepGraph> BuildStepGraph(const Projection& medium, int64_t pp, int64_t vpp,
                                         const ReplaySlowdowns& slow, NicUse nic_use,
                                         const Lanes& lanes, const NetworkUse& net) {
  return StepGraphBuilder(medium, pp, vpp, slow, nic_use, lanes, net).Build();
}

}  // namespace

// What would cross each rank's NIC (a pipeline stage, tp·cp·dp GPUs, spans nodes when it holds
// more than a node: its DP ring leaves the node; an EP group spanning more than a node sends its
// All-to-All through it; a stage of at least a node sends its activations to another node, on
// their own stream where the schedule overlaps them). The replay shares the NIC where congestion
// is aware and two of them use it; `note` says what shares it, or why nothing does.
NicUse NicUseOf(const Scenario& s, const Projection& medium, Congestion congestion,
                std::string& note) {
  const ParallelConfig& par = s.parallel;
  const int64_t node = s.hw.gpus_per_node, block = par.PpGroup().stride;
  bool buckets = false, ep = false;
  for (const TimelineEvent& e : medium.timeline) buckets |= e.kind == TimelineKind::kGradReduce;
  for (const ChunkComm& c : medium.chunk_comm) {
    ep |= c.ep.layers > 0 && c.ep.forward + c.ep.backward > Seconds(0);
  }
  NicUse use{.dp = buckets && block > node,
             .p2p = par.pp > 1 && medium.p2p_transfer.value() > 0 && medium.p2p_overlapped &&
                    block >= node,
             .ep = ep && par.ep * par.etp > node};
  std::vector<std::string> users;
  if (use.dp) users.push_back("DP reduces");
  if (use.p2p) users.push_back("the activations it sends");
  if (use.ep) users.push_back("exposed EP all-to-all");
  if (congestion == Congestion::kUnaware) {
    note = "congestion unaware: each on its own";
    return {};
  }
  if (users.size() < 2) {
    note = users.empty() ? "no DP reduce, overlapped send or EP All-to-All leaves the node"
                         : absl::StrCat("only ", users.front(),
                                        " cross nodes (the DP group inside a node, 1F1B's "
                                        "blocking receives, or EP inside a node leave it alone)");
    return {};
  }
  note = absl::StrCat("each rank's ", absl::StrJoin(users, ", "), " (they cross nodes)");
  return use;
}

// Tasks the replay builds at most: 12 million. A task takes about 200 bytes (the graph, its
// timeline entry, the queue; measured: 6.8 M tasks of Llama-3.1-70B on 1,024 GPUs unfolded,
// 1.3 GB resident, 2.9 s on one core), so about 2.5 GB and a few seconds. Tool choice, like
// kMaxTimelinePasses.
constexpr double kMaxReplayTasks = 12e6;

// About the tasks the replay of `medium`'s timeline builds on `replicas` lanes per stage: each
// pass's pieces (its chunk's plan) and the receive before it, each bucket reduce and tail; with
// `overlaps` (collectives on a network's links), two more for each collective that hides behind
// compute (the compute split for it, the pass's end after both).
double EstimatedTasks(const Projection& medium, int64_t vpp, int64_t replicas, bool overlaps) {
  std::vector<std::array<double, 2>> hidden(medium.chunk_plans.size(), {0.0, 0.0});
  for (size_t c = 0; overlaps && c < medium.chunk_plans.size(); ++c) {
    for (size_t k = 0; k < 2; ++k) {
      const ChunkPlan& plan = medium.chunk_plans[c];
      for (const PassSegment& s : k == 0 ? plan.forward : plan.backward) {
        hidden[c][k] += s.dim != CommDim::kNone && s.full > s.time ? 2.0 : 0.0;
      }
    }
  }
  double per_lane_set = 0;
  for (const TimelineEvent& e : medium.timeline) {
    const size_t chunk = static_cast<size_t>(e.rank * vpp + e.chunk);
    if (!IsPass(e.kind) || e.chunk < 0 || chunk >= medium.chunk_plans.size()) {
      per_lane_set += 1;
      continue;
    }
    const ChunkPlan& plan = medium.chunk_plans[chunk];
    const size_t pieces =
        e.kind == TimelineKind::kForward ? plan.forward.size() : plan.backward.size();
    per_lane_set += static_cast<double>(std::max<size_t>(pieces, 1) + 1) +
                    hidden[chunk][e.kind == TimelineKind::kForward ? 0 : 1];
  }
  return per_lane_set * static_cast<double>(replicas);
}

// The lanes of the replay and, unfolded, the groups that hold GPUs together: a pass's GPUs are
// a TP·CP group (consecutive positions; with experts, widened to the EP group's span, ep·etp
// consecutive positions, whichever is larger: their All-to-All holds them too); the DP rings
// are the dense gradients' DP·CP group (stride TP) and the experts' (stride EP·ETP).
Lanes LanesOf(const Scenario& s, bool unfold) {
  const ParallelConfig& par = s.parallel;
  Lanes lanes;
  lanes.block = par.PpGroup().stride;
  if (!unfold) return lanes;
  lanes.replicas = lanes.block;
  const int64_t experts = std::max<int64_t>(1, par.ep * par.etp);
  lanes.lockstep = par.tp * par.cp;
  if (s.model.moe.has_value()) lanes.lockstep = std::max(lanes.lockstep, experts);
  lanes.lockstep = std::clamp<int64_t>(lanes.lockstep, 1, lanes.block);
  while (lanes.block % lanes.lockstep != 0) ++lanes.lockstep;  // whole groups of the stage
  lanes.dense_dp = par.DpCpGroup();
  lanes.expert_dp = {.size = lanes.block / experts, .stride = experts};
  return lanes;
}

// The busy time of each track that is not a resource: the union of its tasks' intervals (flows
// on one track may overlap).
void AddTrackUse(const std::vector<std::string>& tracks, HighLodResult& out) {
  if (tracks.empty()) return;
  const size_t first = out.resource_use.size();
  std::vector<std::vector<std::pair<Seconds, Seconds>>> spans(tracks.size());
  for (const ReplayedTask& t : out.timeline) {
    if (static_cast<size_t>(t.resource) >= first) {
      spans[static_cast<size_t>(t.resource) - first].emplace_back(t.start, t.end);
    }
  }
  for (size_t k = 0; k < tracks.size(); ++k) {
    std::sort(spans[k].begin(), spans[k].end());
    Seconds busy, covered_to(-1);
    for (const auto& [start, end] : spans[k]) {
      const Seconds from = std::max(start, covered_to);
      if (end > from) busy += end - from;
      covered_to = std::max(covered_to, end);
    }
    out.resource_use.push_back({.name = tracks[k], .busy = busy, .carried = busy, .track = true});
  }
}

// A collective piece the critical lane's stream waited `waited` for, to its group's exposure (an
// FSDP piece only where it stands for a unit's exposed time on the stream).
void AddExposure(ReplayedTask::What what, std::string_view op, Seconds waited,
                 HighLodResult::GroupExposure& into) {
  switch (what) {
    case ReplayedTask::What::kTpComm:
      into.tp += waited;
      break;
    case ReplayedTask::What::kCpComm:
      into.cp += waited;
      break;
    case ReplayedTask::What::kEpComm:
      into.ep += waited;
      break;
    case ReplayedTask::What::kFsdpComm:
      if (op == kFsdpUnitExposure) into.fsdp += waited;
      break;
    default:
      break;
  }
}

absl::StatusOr<HighLodResult> ProjectAtHighLod(const Scenario& scenario,
                                               const BackendRefs& backends,
                                               ProjectionOptions options,
                                               const HighLodOptions& high) {
  const std::optional<SlowRank>& slow_rank = high.slow_rank;
  const std::optional<SlowLink>& slow_link = high.slow_link;
  if (slow_rank && (slow_rank->rank < 0 || slow_rank->rank >= scenario.num_gpus)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--slow-rank: rank %d does not exist; the ranks are 0 to %d",
                        slow_rank->rank, scenario.num_gpus - 1));
  }
  if (slow_rank && !(slow_rank->factor > 0 && std::isfinite(slow_rank->factor))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--slow-rank: the factor must be a finite number > 0 (2 = twice as slow), got %g",
        slow_rank->factor));
  }
  ReplaySlowdowns slow;
  const bool on_network = scenario.backends.network && high.congestion == Congestion::kAware;
  if (slow_link && on_network) {
    PROJECTOR_ASSIGN_OR_RETURN(
        slow.link.carries,
        ResolveNetworkSlowLink(*scenario.backends.network, *slow_link, slow.network_links));
    slow.network_factor = slow_link->factor;
  } else if (slow_link) {
    PROJECTOR_ASSIGN_OR_RETURN(slow.link,
                               ResolveSlowLink(scenario.parallel, scenario.num_gpus,
                                               scenario.model.moe.has_value(), *slow_link));
  }
  const double passes = ReplayedPasses(scenario);
  if (passes > kMaxTimelinePasses) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--lod high: the step replays %.0f passes (pp·vpp·micro-batches·passes per micro-batch), "
        "more than the %d the event replay takes; project fewer micro-batches (a smaller global "
        "batch) or --lod medium",
        passes, kMaxTimelinePasses));
  }
  HighLodResult out;
  const auto medium_start = std::chrono::steady_clock::now();
  options.keep_timeline = true;
  options.keep_pass_plans = true;
  PROJECTOR_ASSIGN_OR_RETURN(out.medium, Project(scenario, backends, options));
  out.medium_wall_s = WallSeconds(medium_start);
  const int64_t replicas = high.no_fold ? scenario.parallel.PpGroup().stride : 1;
  if (const double tasks = EstimatedTasks(out.medium, scenario.parallel.vpp, replicas, on_network);
      tasks > kMaxReplayTasks) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--lod high: the replay would build about %.0f tasks (every pass as its layers' modules "
        "and collectives%s), more than the %.0f it takes (about 200 bytes each); %sproject fewer "
        "micro-batches (a smaller global batch) or --lod medium",
        tasks, high.no_fold ? absl::StrFormat(", on each of %d GPUs per stage", replicas) : "",
        kMaxReplayTasks,
        high.no_fold ? "drop --no-fold (the folded replay simulates one GPU per stage), " : ""));
  }

  const auto high_start = std::chrono::steady_clock::now();
  const int64_t pp = scenario.parallel.pp, vpp = scenario.parallel.vpp;
  events::Simulator sim;
  events::SimulationResult run;
  const ParallelConfig& par = scenario.parallel;
  const Lanes lanes = LanesOf(scenario, high.no_fold);
  slow.unfolded = high.no_fold;
  slow.tp_group = par.TpGroup();
  slow.cp_group = par.CpGroup();
  slow.ep_group = par.EpGroup();
  if (slow_rank) {
    // Global rank r sits on pipeline stage r / (tp·cp·dp) (the layout's rank order), at
    // position r % (tp·cp·dp) in it.
    slow.slow_stage = slow_rank->rank / par.PpGroup().stride % pp;
    slow.slow_position = slow_rank->rank % par.PpGroup().stride;
    slow.stage_factor = slow_rank->factor;
    out.slow_rank = slow_rank;
    out.slow_stage = slow.slow_stage;
  }
  if (slow_link) {
    out.slow_link = slow_link;
    out.slow_link_carries = slow.link.carries;
  }
  out.congestion = high.congestion;
  NetworkUse net;
  NicUse nic_use;
  if (on_network) {
    // The network's links carry what the NICs would.
    net = {.spec = scenario.backends.network.get(),
           .block = par.PpGroup().stride,
           .dense = par.DpCpGroup(),
           .expert = ExpertDpGroup(par),
           .p2p_bytes = LayerInputBytes(scenario.model, par, scenario.training),
           .tp = par.tp > 1,
           .cp = par.cp > 1,
           .ep = par.ep > 1,
           .fsdp = par.fsdp && par.DpCpGroup().size > 1,
           .tp_group = par.TpGroup(),
           .cp_group = par.CpGroup(),
           .ep_group = par.EpGroup(),
           .fsdp_group = par.DpCpGroup()};
    out.network = scenario.backends.network->name;
    out.nic_note = absl::StrCat("the network '", out.network,
                                "' carries the DP reduces, the layers' TP, CP and EP collectives, "
                                "FSDP's and the pipeline's activations as flows on its links");
  } else {
    nic_use = NicUseOf(scenario, out.medium, high.congestion, out.nic_note);
  }
  out.nic_shared = nic_use.Shared();
  if (slow_rank || slow_link) {
    PROJECTOR_ASSIGN_OR_RETURN(StepGraph plain,
                               BuildStepGraph(out.medium, pp, vpp, {}, nic_use, lanes, net));
    PROJECTOR_RETURN_IF_ERROR(sim.Run(plain.graph, run));
    out.step_time_undisturbed = run.makespan;
  }
  PROJECTOR_ASSIGN_OR_RETURN(StepGraph step,
                             BuildStepGraph(out.medium, pp, vpp, slow, nic_use, lanes, net));
  PROJECTOR_RETURN_IF_ERROR(sim.Run(step.graph, run));
  out.high_wall_s = WallSeconds(high_start);
  out.step_time = run.makespan;
  for (TaskId t : step.last_pass) {
    if (t != PassIndex::kNone) out.pipeline_time = std::max(out.pipeline_time, run.tasks[t].finish);
  }
  Seconds last_tail_end(-1), fsdp_tail_wait;
  for (size_t lane = 0; lane < step.after_sync.size(); ++lane) {
    const TaskId t = step.after_sync[lane];
    if (t == PassIndex::kNone || run.tasks[t].finish <= last_tail_end) continue;
    last_tail_end = run.tasks[t].finish;
    out.exposed_dp_comm =
        std::max(Seconds(0), run.tasks[t].start + step.param_gather[lane] - out.pipeline_time);
    // Under FSDP the tail waits for the last units' reduce-scatters, not for DP buckets: FSDP
    // time, as the medium projection counts it.
    fsdp_tail_wait = Seconds(0);
    if (step.fsdp_last_reduce[lane] != PassIndex::kNone) {
      std::swap(fsdp_tail_wait, out.exposed_dp_comm);
    }
  }
  // Lane r is stage r's (first) GPU, folded or not.
  const int32_t critical = static_cast<int32_t>(out.medium.critical_rank);
  for (TaskId t = 0; t < step.what.size(); ++t) {
    const ReplayedTask& w = step.what[t];
    if (w.rank != critical || w.overlapped) continue;
    AddExposure(w.what, w.op, run.tasks[t].finish - run.tasks[t].start, out.exposed_comm);
  }
  for (const StepGraph::Overlap& o : step.overlaps) {
    if (o.lane != critical) continue;
    AddExposure(o.what, {}, Max0(run.tasks[o.collective].finish - run.tasks[o.beside].finish),
                out.exposed_comm);
  }
  out.exposed_comm.fsdp += fsdp_tail_wait;
  if (static_cast<size_t>(critical) < step.fsdp_interference.size()) {
    out.exposed_comm.fsdp += step.fsdp_interference[static_cast<size_t>(critical)];
  }
  for (const StepGraph::FsdpGate& g : step.fsdp_gates) {
    if (g.lane != critical) continue;
    const Seconds from = g.before != PassIndex::kNone ? run.tasks[g.before].finish : Seconds(0);
    out.exposed_comm.fsdp += std::clamp(run.tasks[g.gather].finish - from, Seconds(0),
                                        Max0(run.tasks[g.piece].start - from));
  }
  out.tasks = static_cast<int64_t>(step.graph.num_tasks());
  out.resources = static_cast<int64_t>(step.graph.num_resources());
  out.unfolded = high.no_fold;
  out.pipeline_ranks = pp * lanes.replicas;
  out.gpus_per_rank = par.PpGroup().stride / lanes.replicas;
  out.events = run.events;
  out.timeline = std::move(step.what);
  for (ResourceId id = 0; id < step.graph.num_resources(); ++id) {
    out.resource_use.push_back(
        {.name = step.resource_names[id], .busy = run.busy[id], .carried = run.carried[id]});
  }
  for (TaskId t = 0; t < out.timeline.size(); ++t) {
    out.timeline[t].start = run.tasks[t].start;
    out.timeline[t].end = run.tasks[t].finish;
  }
  AddTrackUse(step.track_names, out);
  out.network_links = step.network_links;
  return out;
}

}  // namespace projector
