// The event replay's network traffic as flows on a network file's links (`--lod high --network
// FILE`): a DP gradient bucket's collective as the steps of the algorithm the medium projection
// priced it with, the activations between pipeline stages as transfers, each an event-engine
// flow (events/event_engine.h) whose shares of the links it crosses come from its routed
// transfers, so that what runs at once (two stages' reduces on a shared spine, a reduce beside
// the activations a stage sends) slows where it shares links and nowhere else.
//
// Folding: the replay simulates one rank per pipeline stage, whose TP and CP replicas run the
// same collective at the same time on their own groups. A step's transfers are therefore laid
// out for every group of the stage at once (the first group's, shifted by one NPU per group), so
// the stage's own groups contend where they share links (a leaf's up-links, a non-rail-optimised
// fabric), which pricing one group alone cannot show.
//
// Time: each step lasts its share of the medium projection's time for the collective (which
// holds NCCL's launch and per-step costs), in proportion to the step's time alone on the
// network; a link's share is what the step's transfers ask of it in that time (bytes over
// capacity over duration). Where the stage's groups together ask more of a link than it carries
// in that time, the step lasts as long as that link needs. The repeats of one step (a ring's
// 2(n-1)) run as one flow of their summed time: the same under fluid sharing.
#ifndef PROJECTOR_STUDIES_NETWORK_REPLAY_H_
#define PROJECTOR_STUDIES_NETWORK_REPLAY_H_

#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "events/event_engine.h"
#include "network/collectives.h"
#include "network/flow_model.h"
#include "network/network_spec.h"
#include "network/topology.h"

namespace projector {

// One engine task's worth of network traffic: its time alone and its shares of the links.
struct FlowStep {
  Seconds duration;
  std::vector<events::LinkShare> shares;
  // NetworkReplay::Occupancy: how many times its given length the flow lasts (> 1 where a slowed
  // link asks more than the collective's busiest link).
  double stretch = 1;
};

class NetworkReplay {
 public:
  // The network's links become shared resources of `graph` as steps first cross them, each
  // named in `names` ("link npu 3 [3,0] → dim 1 leaf 0 #3").
  NetworkReplay(const NetworkSpec& spec, events::TaskGraph& graph, std::vector<std::string>& names);

  // A collective of `kind` and `bytes` on every group {size, stride} that starts in the NPUs
  // [first, first + span) (the layout's groups: first + i for each i < span with
  // (i / stride) % size == 0; span 1: the group at `first` alone, span size·stride: the stride
  // groups interleaved there), all at once, the medium projection having timed one group at
  // `medium`: its algorithm's steps (NCCL's choice, as the medium priced it), in order. Empty for
  // a collective that takes no time. Errors: a group beyond the network's NPUs, an algorithm that
  // does not apply (as NetworkCollectives::Estimate).
  absl::StatusOr<std::vector<FlowStep>> Collective(CollectiveKind kind, Bytes bytes,
                                                   ProcessGroup group, int64_t first, int64_t span,
                                                   Seconds medium);
  // The links of the same groups' collective as the shares of a flow that runs at the full rate
  // of its busiest link (share 1 there, the other links in proportion to what its steps ask of
  // them), for the exposed part of a collective whose size the replay does not keep (a MoE
  // layer's All-to-All after its overlap); the caller gives the duration. With a `sender` (an
  // NPU of the group; span 1), only what it sends, in the same proportions: the senders of the
  // group together make the whole. Valid as long as the NetworkReplay.
  absl::StatusOr<const FlowStep*> Occupancy(CollectiveKind kind, ProcessGroup group, int64_t first,
                                            int64_t span, int64_t sender = -1);
  // Transfers of `bytes` from each of the NPUs from, from + 1, ..., from + copies − 1 to the NPU
  // `to − from` further, all at once, the medium projection having timed one at `medium`. The
  // reference stays valid as long as the NetworkReplay.
  const FlowStep& Transfers(int64_t from, int64_t to, int64_t copies, Bytes bytes, Seconds medium);

  // Links that carry data `factor` times slower (a degraded cable, `--slow-link` on a network
  // file): what a step's transfers ask of them is `factor` times as long. Before any step is laid.
  void SlowLinks(std::span<const int32_t> links, double factor);

  const Topology& topology() const { return topology_; }
  // Links the replay's steps crossed (resources made).
  int64_t links_used() const { return links_used_; }

 private:
  // Steps of one group laid out on each of `shifts` (NPU offsets), into flow steps lasting their
  // share of `medium`.
  std::vector<FlowStep> Lay(const std::vector<NetworkCollectives::LiveStep>& steps,
                            std::span<const int64_t> shifts, Seconds medium);
  // `flows` copied at each shift (NPU offset), into scratch valid until the next call.
  std::span<const Flow> Shifted(std::span<const Flow> flows, std::span<const int64_t> shifts);
  // The steps of `kind` on the group at `first` and the shifts of the span's groups from it.
  absl::StatusOr<NetworkCollectives::StepPlan> GroupSteps(CollectiveKind kind, Bytes bytes,
                                                          ProcessGroup group, int64_t first,
                                                          int64_t span,
                                                          std::vector<int64_t>& shifts);
  events::ResourceId LinkResource(int32_t link);

  Topology topology_;
  NetworkCollectives collectives_;
  FlowModel flows_;
  events::TaskGraph& graph_;
  std::vector<std::string>& names_;
  std::vector<events::ResourceId> resource_of_link_;  // kNoResource until crossed
  std::vector<double> link_slowdown_;                 // per link id, 1 unless slowed
  int64_t links_used_ = 0;
  // Collectives laid out, by (kind, bytes, size, stride, first, span, medium); occupancies by
  // the same with the sender for bytes.
  using Key = std::tuple<int, double, int64_t, int64_t, int64_t, int64_t, double>;
  absl::node_hash_map<Key, std::vector<FlowStep>> memo_;
  absl::node_hash_map<Key, FlowStep> occupancy_memo_;
  // Transfers laid out, by (from, to, copies, bytes, medium).
  using TransferKey = std::tuple<int64_t, int64_t, int64_t, double, double>;
  absl::node_hash_map<TransferKey, FlowStep> transfer_memo_;
  // Scratch.
  std::vector<Flow> laid_;
  std::vector<FlowModel::LinkLoad> loads_;
};

}  // namespace projector

#endif  // PROJECTOR_STUDIES_NETWORK_REPLAY_H_
