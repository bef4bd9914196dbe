// The high level of detail (issue 25): one training step replayed as events on the discrete-event
// engine (events/), beside the analytical projection (medium).
//
// What the replay holds: every pipeline rank's compute stream (in-order) runs its forward,
// backward and weight-gradient passes of every micro-batch and model chunk in the schedule's
// order, each pass as its chunk's plan lays it out (projection/pass_plan.h): its layers' modules
// and each TP, CP and EP collective where the layer issues it, with the time the medium
// projection left exposed, the pass as long in all as the medium projection times it; under
// FSDP each unit gathered before it runs (the next prefetched) and reduce-scattered after its
// backward, as events beside the stream. The activations (and their gradients) cross between
// neighbouring stages as transfers, on a link of their own where the framework overlaps them
// (interleaved 1F1B, zero bubble), as a receive on the consumer's stream where it does not
// (1F1B's blocking send/receive); each rank's tail (the exposed DP gradient sync and parameter
// gathers, the optimizer step) follows its last pass, as long as the medium projection found it.
// With a network file (`--network`, congestion aware) the DP reduces run as their algorithm's
// steps, the activations as transfers and the layers' exposed collectives and FSDP's as flows on
// their groups' links, max-min fair (studies/network_replay.h). Without contention the replay
// gives the medium step time (FSDP's overlap within a few per cent of its closed form); the
// difference is reported so that it shows when it does not.
#ifndef PROJECTOR_STUDIES_LOD_HIGH_H_
#define PROJECTOR_STUDIES_LOD_HIGH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "network/flow_model.h"
#include "network/network_spec.h"
#include "profilers/op_list.h"
#include "projection/projection.h"
#include "scenario/scenario.h"

namespace projector {

// One task of the replayed step, for its trace: a pass (its kind, micro-batch and chunk; the
// pass after which a chunk's gradients are final runs as one task per gradient bucket it
// completes), the rendezvous receive before one, a transfer on a link between two ranks, a DP
// gradient bucket's reduce on the rank's DP stream (its chunk), a pass's exposed EP All-to-All
// on the rank's NIC (where the NIC is shared), or a rank's tail.
struct ReplayedTask {
  // kTpComm, kCpComm, kFsdpComm: a pass's exposed TP, CP or FSDP collectives, on a network
  // file's links.
  enum class What : uint8_t {
    kPass,
    kReceive,
    kTransfer,
    kGradReduce,
    kEpComm,
    kTpComm,
    kCpComm,
    kFsdpComm,
    kSync,
    kTail
  };
  What what = What::kPass;
  TimelineKind pass = TimelineKind::kForward;  // kPass, kReceive and kTransfer: the pass fed
  int32_t rank = 0;      // the lane it runs on (kTransfer: the sender): a stage's rank, or unfolded
                         // a GPU's (stage + pp · position)
  int32_t to_rank = -1;  // kTransfer: the receiver
  int32_t chunk = -1;
  int32_t micro_batch = -1;
  int32_t resource = 0;  // its stream or link (an index of HighLodResult::resource_use)
  // A piece of a pass: the module or collective it runs ("attention", "tp_allreduce", ...;
  // projection/pass_plan.h) and the model's layer (-1: an end module, or none).
  std::string_view op;
  int32_t layer = -1;
  int32_t unit = -1;  // a piece's FSDP unit in its chunk (projection/pass_plan.h), or -1
  // A collective that ran beside the compute before it (its hidden part on the links too):
  // longer than what the stream waited for it.
  bool overlapped = false;
  Seconds start, end;
};

// A straggler (`--slow-rank R:FACTOR`): global rank R computes FACTOR times as long as its
// peers. Synchronous training waits for it: its tensor-, context- and data-parallel peers at
// every collective of the step, the rest of its pipeline at every transfer, so its pipeline
// stage's passes (not the transfers, not the tail) take FACTOR times as long. What the event
// replay shows and a closed form does not: how much of that the schedule's bubbles absorb.
struct SlowRank {
  int64_t rank = 0;
  double factor = 1;
};

// A degraded link (`--slow-link A:B:FACTOR`): the link between global ranks A and B carries
// data FACTOR times slower (a bad cable, a NIC at a lower rate). Which transfers cross it follows
// from the layout (rank order TP, CP, DP inside a pipeline stage, then PP):
//   - A and B at the same position of adjacent pipeline stages: the activations and their
//     gradients between those stages, both ways;
//   - A and B neighbours in a stage's DP ring (the dense gradients' DP·CP group, stride TP; the
//     expert gradients' group, stride EP·ETP): that stage's gradient bucket reduces on that
//     ring, and its exposed parameter gathers. NCCL's ring moves every byte over every link of
//     the ring, so a bandwidth-bound ring runs at its slowest link: the reduce takes FACTOR times
//     as long (an upper bound for latency-bound buckets).
//   - A and B neighbours on a TP ring (consecutive positions of a TP group, the ring closing) or
//     a CP ring (positions TP apart), or two members of one EP group: that group's collectives
//     in the passes (TP all-reduces, gathers and reduce-scatters; the CP ring's exchanges; the
//     All-to-All) run at the slow link: each takes (FACTOR − 1) · its full time longer, the part
//     it hid behind compute included (an upper bound where the compute outlasted it; an
//     All-to-All sends only 1/(n−1) of its bytes over one pair's link, so an upper bound too).
// The folded replay makes the whole stage wait for its slowest replica, as synchronous training
// does.
struct SlowLink {
  int64_t a = 0;
  int64_t b = 0;
  double factor = 1;
};

// What a slow link slows in the folded replay (ResolveSlowLink).
struct SlowLinkEffect {
  int64_t p2p_rank_a = -1, p2p_rank_b = -1;  // pipeline ranks whose transfers cross it
  int64_t dp_stage = -1;                     // the pipeline rank whose DP ring crosses it
  // A's position inside its stage (rank % tp·cp·dp; B's is the same on a pipeline link, on the
  // same rings on a DP link), and the rings' strides: what the unfolded replay needs to slow
  // only the GPUs behind the link.
  int64_t position_a = -1;
  int64_t dense_stride = 1, expert_stride = 1;
  bool dense_ring = false, expert_ring = false;
  // A TP or CP ring, or an EP group, whose collectives inside the passes cross it: its stage,
  // and for the unfolded replay the group's positions (first, stride, size).
  int64_t comm_stage = -1;
  bool tp_ring = false, cp_ring = false, ep_group = false;
  double factor = 1;
  std::string carries;  // for the report: "the pipeline link between stages 1 and 2 ..."
};

// kInvalidArgument naming --slow-link for a rank that does not exist, A = B, a factor that is
// not finite and > 0, or ranks that exchange nothing in this layout.
// `has_experts`: the model has MoE layers (an expert DP ring exists).
absl::StatusOr<SlowLinkEffect> ResolveSlowLink(const ParallelConfig& parallel, int64_t num_gpus,
                                               bool has_experts, const SlowLink& link);

// With a network file (congestion aware), `--slow-link A:B:FACTOR` names a cable of the network
// instead: nodes A and B (NPUs 0..n−1, then switches, as `project network route` numbers them)
// joined by a link; both directions carry data FACTOR times slower, whatever crosses them. The
// carries text, and the link ids into `links`. kInvalidArgument naming --slow-link for a node
// that does not exist, nodes no link joins, or a factor that is not finite and > 0.
absl::StatusOr<std::string> ResolveNetworkSlowLink(const NetworkSpec& network, const SlowLink& link,
                                                   std::vector<int32_t>& links);

// What the event replay adds to the medium projection's step.
struct HighLodOptions {
  std::optional<SlowRank> slow_rank;
  std::optional<SlowLink> slow_link;
  // kAware (the default): where both cross nodes, a pipeline rank's DP gradient reduces and the
  // activations it sends share its NIC (a shared server: concurrent transfers split its rate),
  // as they share one GPU's NIC on a rail-optimised cluster. kUnaware: each has a stream or link
  // of its own, and without a straggler or slow link the replay is the medium step.
  Congestion congestion = Congestion::kAware;
  // `--no-fold`: simulate every GPU, each its own stream, NIC and links, instead of one rank per
  // pipeline stage. The GPUs that compute a pass together (a TP·CP group; with experts, the
  // EP group too) leave each pass together, as their collectives hold them; the members of a DP
  // ring start each bucket's reduce together.
  bool no_fold = false;
};

// How long one resource of the replay (a rank's stream, a link direction) was busy.
struct ResourceUse {
  std::string name;
  Seconds busy;
  // The capacity it gave (events::SimulationResult::carried): below `busy` on a network link that
  // flows crossed at less than its full rate.
  Seconds carried;
  // A trace track, not a resource: the flows of one kind of a lane on a network file's links
  // ("rank 0 TP collectives"), busy while any of them runs (carried = busy).
  bool track = false;
};
// A GPU's compute stream ("rank 0 stream", "gpu 12 stream"), and a resource that carries
// communication (a link, a NIC, a DP stream), by their names.
inline bool IsComputeStream(const ResourceUse& u) {
  return u.name.ends_with(" stream") && !u.name.ends_with(" DP stream");
}
inline bool IsCommunication(const ResourceUse& u) {
  if (u.track) return false;  // its flows' links are listed themselves
  return u.name.starts_with("link ") || u.name.ends_with(" DP stream") ||
         u.name.ends_with(" EP all-to-all") || u.name.ends_with(" TP collectives") ||
         u.name.ends_with(" CP ring") || u.name.ends_with(" FSDP collectives");
}

struct HighLodResult {
  Projection medium;      // the analytical projection (with its timeline)
  Seconds step_time;      // the event replay's last rank tail end
  Seconds pipeline_time;  // its last pass end (before the tails)
  // Exposed DP communication measured on the replayed timeline: on the rank whose tail ends
  // last, how far its gradient sync and exposed parameter gathers end past pipeline_time (the
  // medium projection's breakdown.exposed_dp_comm by its closed form).
  Seconds exposed_dp_comm;
  // Each group's exposed communication inside the passes read off the replayed timeline: on the
  // lane of the medium breakdown's critical rank, how long its stream waited for that group's
  // collectives (each piece blocks the stream; taken out to a shared NIC or a network file's
  // links, it lasts as long as the contention there makes it). The medium projection's
  // breakdown has each by its closed form (exposed_tp_comm, ...).
  struct GroupExposure {
    Seconds tp, cp, ep, fsdp;
  } exposed_comm;
  int64_t tasks = 0;      // passes, transfers and tails
  int64_t resources = 0;  // compute streams and links
  // Symmetry: the replay simulates one rank per pipeline stage; the tp·cp·dp GPUs of a stage
  // do identical work on identical links, so they are folded into it (gpus_per_rank of them);
  // unfolded (HighLodOptions::no_fold), every GPU is a rank (gpus_per_rank 1).
  int64_t pipeline_ranks = 0;
  int64_t gpus_per_rank = 0;
  bool unfolded = false;
  int64_t events = 0;                     // events the engine took
  std::vector<ReplayedTask> timeline;     // every task, as simulated
  std::vector<ResourceUse> resource_use;  // every stream and link, in id order
  // With a straggler: its pipeline stage; with a slow link: what it carries; and the replay's
  // step time without either.
  std::optional<SlowRank> slow_rank;
  int64_t slow_stage = -1;
  std::optional<SlowLink> slow_link;
  std::string slow_link_carries;
  Seconds step_time_undisturbed;
  // Whether the DP reduces and the pipeline sends shared each rank's NIC (HighLodOptions), and
  // why not when they did not.
  Congestion congestion = Congestion::kAware;
  bool nic_shared = false;
  std::string nic_note;
  // With a network file (`--network`, congestion aware): its name and the links the DP reduces
  // and the pipeline's activations crossed as flows (studies/network_replay.h).
  std::string network;
  int64_t network_links = 0;
  double medium_wall_s = 0;      // the medium projection, timeline kept
  double high_wall_s = 0;        // building and simulating the events
  double DifferencePct() const;  // (high − medium) / medium step time · 100
  // TGS at the replay's step time (the same tokens as the medium projection's step).
  double TokensPerSPerGpu() const;
  // Exposed communication of every group, the replay's (exposed_comm and exposed_dp_comm) and
  // the medium breakdown's (TP, CP, EP, DP, FSDP).
  Seconds ExposedCommunication() const;
  Seconds MediumExposedCommunication() const;
  double Speedup() const;  // high wall time / medium wall time
  // (step with the straggler and slow link − without) / without · 100; 0 without either.
  double DisturbedSlowdownPct() const;
};

// The medium projection of `scenario` (its timeline kept), then its event replay. Refused
// (kInvalidArgument naming --lod) when the step has more passes than a timeline may keep
// (kMaxTimelinePasses).
// `options` as for Project (keep_ops for --show-ops); the timeline is kept whatever it says.
absl::StatusOr<HighLodResult> ProjectAtHighLod(const Scenario& scenario,
                                               const BackendRefs& backends,
                                               ProjectionOptions options = {},
                                               const HighLodOptions& high = {});

}  // namespace projector

#endif  // PROJECTOR_STUDIES_LOD_HIGH_H_
