// Collective algorithms on a built network: each algorithm is a sequence of steps, each step a
// set of concurrent point-to-point flows between the group's NPUs, timed by the flow model
// (network/flow_model.h) on the routes they take, so a ring laid over a mesh, two groups sharing
// a NIC or a halving-doubling partner across a slow dimension cost what their links allow.
//
//   ring             2(n-1) steps of S/n for all-reduce, n-1 for reduce-scatter/all-gather;
//                    two counter-rotating rings of S/2n each where that is faster (NCCL runs
//                    its channels both ways round)
//   direct           every rank to every other at once: S/n per pair (all-reduce: a
//                    reduce-scatter then an all-gather, 2 steps); all-to-all; broadcast from
//                    the root
//   halving-doubling log2 n steps of S/2, S/4, ... with the partner at distance n/2, n/4, ...
//                    (Rabenseifner's reduce-scatter, mirrored for the all-gather); n a power of 2
//   nvls             all-reduce reduced inside a switch that can (in_network_reduction_gbps):
//                    every NPU link carries S each way, capped by the switch's reduction rate
//   tree             NCCL's double binary tree: two trees of S/2 whose leaves are each other's
//                    inner ranks, reduce up and broadcast down pipelined (all-reduce, broadcast)
//   hierarchical     the multi-dimensional collective (a 2D mesh or torus counts as its x and
//                    y axes): reduce-scatter along the innermost dimension the group spans,
//                    then the next on 1/n of the data, ..., an all-reduce on the outermost,
//                    all-gathers back down (all-to-all: one exchange per dimension); each
//                    dimension's phase takes its fastest flat algorithm; `chunks` > 1
//                    pipelines the phases
//   auto             the fastest of those that apply, as NCCL's tuner picks by size and group;
//                    with the NCCL library, what NCCL runs (ring, tree, NVLS, hierarchical as
//                    its multi-node stand-in), each at its fastest protocol
//
// S is the nccl-tests size (all-reduce and broadcast the buffer, all-gather the output,
// reduce-scatter the input, all-to-all what one rank sends in all).
#ifndef PROJECTOR_NETWORK_COLLECTIVES_H_
#define PROJECTOR_NETWORK_COLLECTIVES_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "network/collective_library.h"
#include "network/flow_model.h"
#include "network/topology.h"

namespace projector {

struct NetworkCollectiveRequest {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Bytes bytes;
  std::vector<int64_t> ranks;  // NPU ids in rank order (SendRecv: the two ends)
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  Congestion congestion = Congestion::kAware;
  int64_t chunks = 1;  // hierarchical: pieces pipelined through the dimensions' phases
  // kNone: the network's transfers alone; kNccl: NCCL's launch, per-step and protocol costs on
  // top, the fastest protocol taken (network/collective_library.h).
  CollectiveLibrary library = CollectiveLibrary::kNone;
};

struct CollectivePhase {
  std::string what;        // "reduce-scatter along dim 0 (switch), 8 ranks x 128 groups"
  int32_t dimension = -1;  // -1: over the whole group
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  int64_t steps = 0;
  Seconds time;     // all its steps
  Seconds latency;  // the part of `time` that is latency (routes and library steps)
  int32_t busiest_link = -1;
  double busiest_utilisation = 0;
};

struct NetworkCollectiveEstimate {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  std::string protocol;  // the library's protocol taken ("LL", "LL128", "Simple"); "" for none
  Seconds time;
  BytesPerSecond algorithm_bandwidth;  // S / time
  BytesPerSecond bus_bandwidth;        // nccl-tests: algbw x 2(n-1)/n (all-reduce), (n-1)/n ...
  int32_t busiest_link = -1;           // over all phases
  double busiest_utilisation = 0;      // > 1 only when congestion-unaware
  std::vector<CollectivePhase> phases;
};

// Each (kind, algorithm, congestion, group) is planned once: its step patterns are timed on the
// flow model at a reference size and kept as lines in S, so later sizes cost a few multiplies.
// Not thread-safe (the flow model's scratch and the plan memo): one per thread, or a lock.
// A collective priced alone and beside others (EstimateConcurrent).
struct ConcurrentEstimate {
  NetworkCollectiveEstimate alone;
  NetworkCollectiveEstimate together;  // `time` and the bandwidths with the others running
};

class NetworkCollectives {
 public:
  explicit NetworkCollectives(const Topology& topology);
  ~NetworkCollectives();

  // kInvalidArgument for a group of fewer than 2 ranks (1 for a no-op), an NPU id outside the
  // network, repeated ranks, negative bytes, SendRecv without 2 ranks, chunks < 1;
  // kUnimplemented naming what applies when `algorithm` does not exist for the kind or the
  // group (halving-doubling on a group that is not a power of 2, hierarchical on a group that is
  // not a product of per-dimension sub-groups, tree for other than all-reduce and broadcast).
  absl::StatusOr<NetworkCollectiveEstimate> Estimate(const NetworkCollectiveRequest& request);

  // Collectives started together: each runs its chosen algorithm's steps in order (a step when
  // the last transfer of the one before has arrived), and the transfers of all of them share
  // the links max-min fairly (or not, unaware), so a TP all-reduce inside a node beside a DP
  // reduce-scatter across the NICs, or an EP all-to-all against it, costs what it would. Each
  // collective's steps are replayed alone and with the others; the ratio (at least 1) scales its
  // estimate alone, which keeps what the replay leaves out (library costs, chunk pipelining).
  // The requests' own errors as Estimate gives them.
  absl::StatusOr<std::vector<ConcurrentEstimate>> EstimateConcurrent(
      std::span<const NetworkCollectiveRequest> requests, Congestion congestion);

  // One step of a collective's algorithm: its concurrent transfers, run `repeat` times back to
  // back.
  struct LiveStep {
    std::vector<Flow> flows;
    int64_t repeat = 1;
  };
  // The steps of the algorithm Estimate chooses for `request`, in order (a hierarchical
  // collective's phases one after another, not pipelined), with that estimate. The transfers'
  // bytes include the protocol's bandwidth share (LL's half rate as twice the bytes). Errors as
  // Estimate gives them.
  struct StepPlan {
    NetworkCollectiveEstimate estimate;
    std::vector<LiveStep> steps;
  };
  absl::StatusOr<StepPlan> Steps(const NetworkCollectiveRequest& request);

  const Topology& topology() const { return flows_.topology(); }

 private:
  struct PlanSet;
  // The estimate with the choices behind it: the plan of the set, the protocol, and each
  // phase's option (indices).
  struct Chosen {
    const PlanSet* set = nullptr;
    size_t plan = 0;
    Protocol protocol = Protocol::kSimple;
    std::vector<size_t> options;
    NetworkCollectiveEstimate estimate;
  };
  absl::StatusOr<Chosen> Choose(const NetworkCollectiveRequest& request);
  std::vector<double> SimulateTogether(std::span<const std::vector<LiveStep>> collectives,
                                       Congestion congestion);
  // A group's plans are found by a view of the request (no copy of its ranks per call).
  struct PlanLookup {
    CollectiveKind kind;
    CollectiveAlgorithm algorithm;
    Congestion congestion;
    CollectiveLibrary library;
    std::span<const int64_t> ranks;
  };
  struct PlanKey {
    CollectiveKind kind;
    CollectiveAlgorithm algorithm;
    Congestion congestion;
    CollectiveLibrary library;
    std::vector<int64_t> ranks;

    operator PlanLookup() const { return {kind, algorithm, congestion, library, ranks}; }
  };
  struct PlanKeyHash {
    using is_transparent = void;
    size_t operator()(const PlanLookup& k) const;
    size_t operator()(const PlanKey& k) const { return (*this)(PlanLookup(k)); }
  };
  struct PlanKeyEq {
    using is_transparent = void;
    bool operator()(const PlanLookup& a, const PlanLookup& b) const;
  };
  const PlanSet& PlansFor(const NetworkCollectiveRequest& request);

  FlowModel flows_;
  absl::flat_hash_map<PlanKey, std::unique_ptr<PlanSet>, PlanKeyHash, PlanKeyEq> plans_;
};

// The algorithms `kind` has here, for messages and auto: ring, direct, halving-doubling, tree,
// hierarchical (those that exist for the kind).
std::vector<CollectiveAlgorithm> NetworkAlgorithmsFor(CollectiveKind kind);

// nccl-tests bus-bandwidth factor: 2(n-1)/n all-reduce, (n-1)/n all-gather, reduce-scatter and
// all-to-all, 1 broadcast and send/recv.
double BusBandwidthFactor(CollectiveKind kind, int64_t ranks);

}  // namespace projector

#endif  // PROJECTOR_NETWORK_COLLECTIVES_H_
