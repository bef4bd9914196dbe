#include "network/collectives.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <cstddef>
#include <span>
#include <tuple>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace projector {
namespace {

using Algo = CollectiveAlgorithm;

double D(int64_t x) { return static_cast<double>(x); }
bool IsPowerOfTwo(int64_t x) { return x > 0 && std::has_single_bit(static_cast<uint64_t>(x)); }

// One step pattern: concurrent flows, repeated `repeat` times back to back, plus pipeline-fill
// latency beyond the flows' own (a tree's depth).
struct Step {
  std::vector<Flow> flows;
  int64_t repeat = 1;
  int64_t extra_latency_hops = 0;  // multiples of the step's longest route latency
};

// A flat collective over `g` (NPU ids in rank order) with data S, as steps; empty when the
// algorithm does not apply (the caller says why).
using Steps = std::vector<Step>;

void AllPairs(std::span<const int64_t> g, double bytes, Step& step) {
  for (const int64_t src : g) {
    for (const int64_t dst : g) {
      if (src != dst) step.flows.push_back({.src = src, .dst = dst, .bytes = bytes});
    }
  }
}

// One ring step: every rank sends `bytes` to its successor, or half to each neighbour.
Step RingStep(std::span<const int64_t> g, double bytes, bool both_ways, int64_t repeat) {
  Step step;
  step.repeat = repeat;
  const size_t n = g.size();
  for (size_t i = 0; i < n; ++i) {
    const int64_t next = g[(i + 1) % n];
    if (!both_ways) {
      step.flows.push_back({.src = g[i], .dst = next, .bytes = bytes});
      continue;
    }
    step.flows.push_back({.src = g[i], .dst = next, .bytes = bytes / 2});
    step.flows.push_back({.src = g[i], .dst = g[(i + n - 1) % n], .bytes = bytes / 2});
  }
  return step;
}

Steps RingSteps(CollectiveKind kind, std::span<const int64_t> g, double s, bool both_ways) {
  const auto n = static_cast<int64_t>(g.size());
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return {RingStep(g, s / D(n), both_ways, 2 * (n - 1))};
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return {RingStep(g, s / D(n), both_ways, n - 1)};
    case CollectiveKind::kBroadcast: {
      // A pipelined chain from rank 0: every link of the chain carries S, the last rank hears
      // the first chunk n-2 hops after the second.
      Step chain;
      chain.extra_latency_hops = n - 2;
      for (int64_t i = 0; i + 1 < n; ++i) {
        chain.flows.push_back({.src = g[i], .dst = g[i + 1], .bytes = s});
      }
      return {chain};
    }
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kSendRecv:
      break;
  }
  return {};
}

Steps DirectSteps(CollectiveKind kind, std::span<const int64_t> g, double s) {
  const double n = D(static_cast<int64_t>(g.size()));
  Step pairs;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      AllPairs(g, s / n, pairs);
      pairs.repeat = 2;  // reduce-scatter, then all-gather
      return {pairs};
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      AllPairs(g, s / n, pairs);
      return {pairs};
    case CollectiveKind::kBroadcast:
      for (size_t i = 1; i < g.size(); ++i) pairs.flows.push_back({g[0], g[i], s});
      return {pairs};
    case CollectiveKind::kSendRecv:
      pairs.flows.push_back({g[0], g[1], s});
      return {pairs};
  }
  return {};
}

// Exchange with the partner at index distance `distance` (i XOR distance), `bytes` each way.
Step ExchangeStep(std::span<const int64_t> g, int64_t distance, double bytes) {
  Step step;
  for (size_t i = 0; i < g.size(); ++i) {
    step.flows.push_back({.src = g[i], .dst = g[i ^ static_cast<size_t>(distance)],
                          .bytes = bytes});
  }
  return step;
}

Steps HalvingDoublingSteps(CollectiveKind kind, std::span<const int64_t> g, double s) {
  const auto n = static_cast<int64_t>(g.size());
  if (!IsPowerOfTwo(n)) return {};
  Steps halving;  // reduce-scatter: S/2 with the partner n/2 away, S/4 at n/4, ...
  for (int64_t distance = n / 2, k = 1; distance >= 1; distance /= 2, ++k) {
    halving.push_back(ExchangeStep(g, distance, s / D(int64_t{1} << k)));
  }
  Steps doubling(halving.rbegin(), halving.rend());  // all-gather: the mirror
  switch (kind) {
    case CollectiveKind::kReduceScatter:
      return halving;
    case CollectiveKind::kAllGather:
      return doubling;
    case CollectiveKind::kAllReduce:
      halving.insert(halving.end(), doubling.begin(), doubling.end());
      return halving;
    case CollectiveKind::kBroadcast: {
      // Binomial tree: in step k the 2^k ranks that hold the data send it 2^k further.
      Steps binomial;
      for (int64_t holders = 1; holders < n; holders *= 2) {
        Step step;
        for (int64_t i = 0; i < holders; ++i) step.flows.push_back({g[i], g[i + holders], s});
        binomial.push_back(std::move(step));
      }
      return binomial;
    }
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kSendRecv:
      break;
  }
  return {};
}

// Double binary tree over positions 0..n-1 (heap order: parent (p-1)/2); the second tree
// mirrors the ranks (position p holds rank n-1-p), so the first tree's leaves are its inner
// ranks. All-reduce: each tree carries S/2, reduced up and broadcast down, pipelined, so every
// edge carries S/2 each way at once; the first chunk crosses 2·depth edges.
Steps TreeSteps(CollectiveKind kind, std::span<const int64_t> g, double s) {
  const auto n = static_cast<int64_t>(g.size());
  const int64_t depth = std::bit_width(static_cast<uint64_t>(n)) - 1;  // floor(log2 n)
  Step step;
  if (kind == CollectiveKind::kAllReduce) {
    step.extra_latency_hops = 2 * depth - 1;
    for (const bool mirrored : {false, true}) {
      for (int64_t p = 1; p < n; ++p) {
        const int64_t child = g[mirrored ? n - 1 - p : p];
        const int64_t parent = g[mirrored ? n - 1 - (p - 1) / 2 : (p - 1) / 2];
        step.flows.push_back({child, parent, s / 2});
        step.flows.push_back({parent, child, s / 2});
      }
    }
    return {step};
  }
  if (kind == CollectiveKind::kBroadcast) {
    step.extra_latency_hops = depth - 1;
    for (int64_t p = 1; p < n; ++p) step.flows.push_back({g[(p - 1) / 2], g[p], s});
    return {step};
  }
  return {};
}

// How the group lies on the dimensions: the dimensions where its ranks differ, and for each the
// sub-groups (ranks equal in every other coordinate), when the group is their product.
struct GroupShape {
  std::vector<int32_t> dimensions;              // innermost first
  std::vector<std::vector<std::vector<int64_t>>> subgroups;  // per spanned dimension
  bool product = false;
};

GroupShape ShapeOf(const Topology& topology, std::span<const int64_t> g) {
  GroupShape shape;
  const size_t dims = topology.spec().dimensions.size();
  int64_t product = 1;
  for (size_t d = 0; d < dims; ++d) {
    absl::flat_hash_set<int64_t> coords;
    for (const int64_t npu : g) coords.insert(topology.Coordinate(npu, d));
    if (coords.size() < 2) continue;
    shape.dimensions.push_back(static_cast<int32_t>(d));
    product *= static_cast<int64_t>(coords.size());
  }
  shape.product = product == static_cast<int64_t>(g.size());
  if (!shape.product) return shape;
  for (const int32_t d : shape.dimensions) {
    // Members equal in every other coordinate form one sub-group, in rank order.
    std::vector<std::vector<int64_t>> groups;
    absl::flat_hash_map<int64_t, size_t> index_of;  // the NPU with coordinate 0 in d -> group
    for (const int64_t npu : g) {
      const int64_t base = npu - topology.Coordinate(npu, d) * topology.Stride(d);
      auto [it, inserted] = index_of.emplace(base, groups.size());
      if (inserted) groups.emplace_back();
      groups[it->second].push_back(npu);
    }
    shape.subgroups.push_back(std::move(groups));
  }
  return shape;
}

std::string AlgoName(Algo a) { return std::string(CollectiveAlgorithmName(a)); }

}  // namespace

double BusBandwidthFactor(CollectiveKind kind, int64_t ranks) {
  const double n = D(ranks);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * (n - 1) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return (n - 1) / n;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kSendRecv:
      return 1;
  }
  return 1;
}

std::vector<CollectiveAlgorithm> NetworkAlgorithmsFor(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return {Algo::kRing, Algo::kDirect, Algo::kHalvingDoubling, Algo::kTree,
              Algo::kHierarchical};
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return {Algo::kRing, Algo::kDirect, Algo::kHalvingDoubling, Algo::kHierarchical};
    case CollectiveKind::kAllToAll:
      return {Algo::kDirect, Algo::kHierarchical};
    case CollectiveKind::kBroadcast:
      return {Algo::kRing, Algo::kDirect, Algo::kHalvingDoubling, Algo::kTree};
    case CollectiveKind::kSendRecv:
      return {Algo::kDirect};
  }
  return {};
}

namespace {

// Step patterns are timed once at this size and scaled: every flow of a pattern is a fixed share
// of S, so max-min rates do not depend on S and the transfer time is linear in it.
constexpr double kReferenceBytes = 1024.0 * 1024 * 1024;

Steps FlatSteps(Algo algo, CollectiveKind kind, std::span<const int64_t> g, double s,
                bool ring_both_ways) {
  switch (algo) {
    case Algo::kRing:
      return RingSteps(kind, g, s, ring_both_ways);
    case Algo::kDirect:
      return DirectSteps(kind, g, s);
    case Algo::kHalvingDoubling:
      return HalvingDoublingSteps(kind, g, s);
    case Algo::kTree:
      return TreeSteps(kind, g, s);
    case Algo::kAuto:
    case Algo::kHierarchical:
    case Algo::kPxn:
      break;
  }
  return {};
}


std::string KindWord(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kSendRecv:
      return "send/recv";
  }
  return "";
}




// One way to run one phase, as a line in S: time(S) = latency + seconds_per_byte · S.
struct PhaseOption {
  Algo algorithm = Algo::kRing;
  int64_t steps = 0;
  Seconds latency;
  double seconds_per_byte = 0;
  int32_t busiest_link = -1;
  double busiest_utilisation = 0;

  Seconds At(double bytes) const { return latency + Seconds(seconds_per_byte * bytes); }
};

struct PlannedPhase {
  std::string what;  // "reduce-scatter along dim 0 (switch), 8 ranks x 4 groups"
  int32_t dimension = -1;
  std::vector<PhaseOption> options;
};

// A candidate algorithm for the whole collective: its phases in order.
struct Plan {
  Algo algorithm = Algo::kRing;
  bool pipelined = false;  // hierarchical: chunks pipeline the phases
  std::vector<PlannedPhase> phases;
};

// Times `steps` (built for kReferenceBytes) into a phase option.
PhaseOption TimeSteps(FlowModel& model, const Steps& steps, Congestion congestion, Algo algo) {
  PhaseOption option;
  option.algorithm = algo;
  Seconds transfer;
  for (const Step& step : steps) {
    const FlowPhaseResult r = model.Run(step.flows, congestion);
    const double repeat = D(step.repeat);
    option.steps += step.repeat;
    transfer += r.data_time * repeat;
    option.latency += r.latency * (D(1 + step.extra_latency_hops) * repeat);
    if (r.busiest_utilisation > option.busiest_utilisation) {
      option.busiest_utilisation = r.busiest_utilisation;
      option.busiest_link = r.busiest_link;
    }
  }
  option.seconds_per_byte = transfer.value() / kReferenceBytes;
  return option;
}

// A flat algorithm over several groups at once (a hierarchical phase's sub-groups run together
// and share links): their step patterns merged step by step; empty when it does not apply.
Steps MergedSteps(Algo algo, CollectiveKind kind, const std::vector<std::vector<int64_t>>& groups,
                  double s, bool ring_both_ways) {
  Steps merged;
  for (const std::vector<int64_t>& g : groups) {
    Steps steps = FlatSteps(algo, kind, g, s, ring_both_ways);
    if (steps.empty()) return {};
    if (merged.empty()) {
      merged = std::move(steps);
      continue;
    }
    for (size_t i = 0; i < merged.size() && i < steps.size(); ++i) {
      merged[i].flows.insert(merged[i].flows.end(), steps[i].flows.begin(),
                             steps[i].flows.end());
    }
  }
  return merged;
}

// The options of `algos` for `kind` on these groups, with `share` of the collective's S each;
// the ring both ways round and one way round are two options.
std::vector<PhaseOption> Options(FlowModel& model, std::span<const Algo> algos,
                                 CollectiveKind kind,
                                 const std::vector<std::vector<int64_t>>& groups, double share,
                                 Congestion congestion) {
  std::vector<PhaseOption> options;
  for (const Algo algo : algos) {
    for (const bool both_ways : {true, false}) {
      if (!both_ways && algo != Algo::kRing) continue;
      const Steps steps = MergedSteps(algo, kind, groups, share * kReferenceBytes, both_ways);
      if (!steps.empty()) options.push_back(TimeSteps(model, steps, congestion, algo));
    }
  }
  return options;
}

// Direct (one-shot) all-reduce, all-gather and reduce-scatter are what NCCL and RCCL run inside
// the scale-up domain (NVLS and one-shot kernels on NVSwitch, direct copies on a fully connected
// xGMI mesh); between nodes they run rings, trees or halving-doubling. Dimension 0 is the
// scale-up domain (ASTRA-sim's convention), so auto offers direct there, on a switch or fully
// connected dimension, only; all-to-all is all pairs everywhere.
bool AutoOffersDirect(const Topology& topology, CollectiveKind kind, const GroupShape& shape) {
  if (kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kSendRecv) return true;
  if (shape.dimensions.size() != 1 || shape.dimensions[0] != 0) return false;
  const TopologyKind t = topology.spec().dimensions[shape.dimensions[0]].topology;
  return t == TopologyKind::kSwitch || t == TopologyKind::kFullyConnected;
}

std::vector<Algo> FlatAlgorithms(const Topology& topology, Algo requested, CollectiveKind kind,
                                 const GroupShape& shape) {
  if (requested != Algo::kAuto) return {requested};
  std::vector<Algo> algos;
  for (const Algo a : NetworkAlgorithmsFor(kind)) {
    if (a == Algo::kHierarchical) continue;
    if (a == Algo::kDirect && !AutoOffersDirect(topology, kind, shape)) continue;
    algos.push_back(a);
  }
  return algos;
}

std::string DimensionWords(const Topology& topology, int32_t d) {
  const NetworkDimension& dim = topology.spec().dimensions[d];
  return absl::StrCat("dim ", d, " (",
                      dim.label.empty() ? std::string(TopologyName(dim.topology)) : dim.label,
                      ")");
}

// One phase of a hierarchical collective: `kind` on the sub-groups along spanned dimension j.
struct PhasePlan {
  CollectiveKind kind;
  size_t j;
  double bytes;
};

std::vector<PhasePlan> HierarchicalPlan(CollectiveKind kind, const GroupShape& shape, double s) {
  const size_t k = shape.dimensions.size();
  // Data a rank holds entering spanned dimension j on the way up: S / (m_0 ... m_{j-1}).
  std::vector<double> share(k, s);
  for (size_t j = 1; j < k; ++j) share[j] = share[j - 1] / D(static_cast<int64_t>(
                                                            shape.subgroups[j - 1][0].size()));
  std::vector<PhasePlan> plan;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      for (size_t j = 0; j + 1 < k; ++j) plan.push_back({CollectiveKind::kReduceScatter, j, share[j]});
      plan.push_back({CollectiveKind::kAllReduce, k - 1, share[k - 1]});
      for (size_t j = k - 1; j-- > 0;) plan.push_back({CollectiveKind::kAllGather, j, share[j]});
      break;
    case CollectiveKind::kReduceScatter:
      for (size_t j = 0; j < k; ++j) plan.push_back({CollectiveKind::kReduceScatter, j, share[j]});
      break;
    case CollectiveKind::kAllGather:
      for (size_t j = k; j-- > 0;) plan.push_back({CollectiveKind::kAllGather, j, share[j]});
      break;
    case CollectiveKind::kAllToAll:
      for (size_t j = 0; j < k; ++j) plan.push_back({CollectiveKind::kAllToAll, j, s});
      break;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kSendRecv:
      break;
  }
  return plan;
}


// The sub-groups along one spanned dimension, as a shape of their own (for AutoOffersDirect).
GroupShape AlongOneDimension(const GroupShape& shape, size_t j) {
  GroupShape along;
  along.dimensions = {shape.dimensions[j]};
  along.product = true;
  return along;
}

std::optional<Plan> HierarchicalPlanFor(FlowModel& model, CollectiveKind kind,
                                        const GroupShape& shape, Congestion congestion) {
  if (!shape.product || shape.dimensions.empty()) return std::nullopt;
  const std::vector<PhasePlan> phases = HierarchicalPlan(kind, shape, 1.0);
  if (phases.empty()) return std::nullopt;
  Plan plan{.algorithm = Algo::kHierarchical, .pipelined = true, .phases = {}};
  for (const PhasePlan& p : phases) {
    const std::vector<std::vector<int64_t>>& groups = shape.subgroups[p.j];
    const std::vector<Algo> algos =
        FlatAlgorithms(model.topology(), Algo::kAuto, p.kind, AlongOneDimension(shape, p.j));
    PlannedPhase phase{
        .what = absl::StrCat(KindWord(p.kind), " along ",
                             DimensionWords(model.topology(), shape.dimensions[p.j]), ", ",
                             groups[0].size(), " ranks x ", groups.size(), " group",
                             groups.size() == 1 ? "" : "s"),
        .dimension = shape.dimensions[p.j],
        .options = Options(model, algos, p.kind, groups, p.bytes, congestion)};
    if (phase.options.empty()) return std::nullopt;
    plan.phases.push_back(std::move(phase));
  }
  return plan;
}

std::optional<Plan> FlatPlanFor(FlowModel& model, Algo algo, CollectiveKind kind,
                                const std::vector<int64_t>& ranks, Congestion congestion) {
  const Algo algos[] = {algo};
  PlannedPhase phase{.what = absl::StrCat(KindWord(kind), " over ", ranks.size(), " ranks"),
                     .dimension = -1,
                     .options = Options(model, algos, kind, {ranks}, 1.0, congestion)};
  if (phase.options.empty()) return std::nullopt;
  return Plan{.algorithm = algo, .pipelined = false, .phases = {std::move(phase)}};
}

// Phases run one after another; with c chunks each phase's per-chunk time is its latency plus
// 1/c of its transfer time, and the chunks pipeline: sum + (c-1) x the slowest stage.
Seconds PipelinedTime(std::span<const CollectivePhase> phases, int64_t chunks) {
  Seconds sum;
  Seconds slowest;
  for (const CollectivePhase& p : phases) {
    const Seconds stage = p.latency + (p.time - p.latency) / D(chunks);
    sum += stage;
    slowest = std::max(slowest, stage);
  }
  return sum + slowest * D(chunks - 1);
}

// A plan at size S: each phase's fastest option, the phases summed (or pipelined). The phases'
// descriptions are written only when `describe` (the chosen plan).
NetworkCollectiveEstimate Evaluate(const Plan& plan, double bytes, int64_t chunks,
                                   bool describe) {
  NetworkCollectiveEstimate e;
  e.algorithm = plan.algorithm;
  for (const PlannedPhase& phase : plan.phases) {
    const PhaseOption* best = &phase.options[0];
    for (const PhaseOption& o : phase.options) {
      if (o.At(bytes) < best->At(bytes)) best = &o;
    }
    e.phases.push_back({.what = describe ? absl::StrCat(phase.what, ": ",
                                                        AlgoName(best->algorithm), ", ",
                                                        best->steps, " step",
                                                        best->steps == 1 ? "" : "s")
                                         : std::string(),
                        .dimension = phase.dimension,
                        .algorithm = best->algorithm,
                        .steps = best->steps,
                        .time = best->At(bytes),
                        .latency = best->latency,
                        .busiest_link = best->busiest_link,
                        .busiest_utilisation = best->busiest_utilisation});
  }
  if (plan.pipelined) {
    e.time = PipelinedTime(e.phases, chunks);
  } else {
    for (const CollectivePhase& p : e.phases) e.time += p.time;
  }
  if (plan.algorithm != Algo::kHierarchical) e.algorithm = e.phases[0].algorithm;
  return e;
}

absl::Status CheckRequest(const Topology& topology, const NetworkCollectiveRequest& r) {
  if (r.ranks.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a collective needs a group of at least 2 ranks, got ", r.ranks.size()));
  }
  if (r.kind == CollectiveKind::kSendRecv && r.ranks.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("send/recv is between 2 ranks, got ", r.ranks.size()));
  }
  if (!(r.bytes.value() >= 0)) {
    return absl::InvalidArgumentError("a collective's size must be >= 0 bytes");
  }
  if (r.chunks < 1) return absl::InvalidArgumentError("chunks must be >= 1");
  for (const int64_t npu : r.ranks) {
    if (npu < 0 || npu >= topology.npu_count()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank on NPU ", npu, ": the network has NPUs 0 to ", topology.npu_count() - 1));
    }
  }
  return absl::OkStatus();
}

// Checked when a group is first planned (a set per group, not per call).
absl::Status CheckDistinct(std::span<const int64_t> ranks) {
  absl::flat_hash_set<int64_t> seen;
  for (const int64_t npu : ranks) {
    if (!seen.insert(npu).second) {
      return absl::InvalidArgumentError(absl::StrCat("NPU ", npu, " appears twice in the group"));
    }
  }
  return absl::OkStatus();
}

std::string WhyNot(const Topology& topology, Algo algo, const NetworkCollectiveRequest& r,
                   const GroupShape& shape) {
  if (algo == Algo::kHalvingDoubling && !IsPowerOfTwo(static_cast<int64_t>(r.ranks.size()))) {
    return absl::StrCat("halving-doubling needs a group whose size is a power of 2, got ",
                        r.ranks.size(), " ranks");
  }
  if (algo == Algo::kHierarchical && !shape.product) {
    std::vector<std::string> dims;
    for (const int32_t d : shape.dimensions) dims.push_back(DimensionWords(topology, d));
    return absl::StrCat(
        "hierarchical needs a group that is a product of sub-groups along the dimensions it "
        "spans (",
        absl::StrJoin(dims, ", "), "); these ", r.ranks.size(), " ranks are not");
  }
  return absl::StrCat("no ", AlgoName(algo), " ", KindWord(r.kind), " for this group");
}

}  // namespace

// The candidate plans of one (kind, algorithm, congestion, group), built on first use.
struct NetworkCollectives::PlanSet {
  std::vector<Plan> plans;
  absl::Status error;  // when plans is empty: why
};

size_t NetworkCollectives::PlanKeyHash::operator()(const PlanLookup& k) const {
  return absl::Hash<std::tuple<CollectiveKind, Algo, Congestion, absl::Span<const int64_t>>>{}(
      std::make_tuple(k.kind, k.algorithm, k.congestion,
                      absl::Span<const int64_t>(k.ranks.data(), k.ranks.size())));
}

bool NetworkCollectives::PlanKeyEq::operator()(const PlanLookup& a, const PlanLookup& b) const {
  return a.kind == b.kind && a.algorithm == b.algorithm && a.congestion == b.congestion &&
         std::equal(a.ranks.begin(), a.ranks.end(), b.ranks.begin(), b.ranks.end());
}

NetworkCollectives::NetworkCollectives(const Topology& topology) : flows_(topology) {}
NetworkCollectives::~NetworkCollectives() = default;

const NetworkCollectives::PlanSet& NetworkCollectives::PlansFor(
    const NetworkCollectiveRequest& r) {
  const PlanLookup lookup{.kind = r.kind, .algorithm = r.algorithm, .congestion = r.congestion,
                          .ranks = r.ranks};
  auto it = plans_.find(lookup);
  if (it != plans_.end()) return *it->second;
  PlanKey key{.kind = r.kind, .algorithm = r.algorithm, .congestion = r.congestion,
              .ranks = r.ranks};
  auto set = std::make_unique<PlanSet>();
  if (absl::Status distinct = CheckDistinct(r.ranks); !distinct.ok()) {
    set->error = distinct;
    return *plans_.emplace(std::move(key), std::move(set)).first->second;
  }
  const GroupShape shape = ShapeOf(topology(), r.ranks);
  for (const Algo algo : NetworkAlgorithmsFor(r.kind)) {
    if (r.algorithm != Algo::kAuto && algo != r.algorithm) continue;
    if (r.algorithm == Algo::kAuto && algo == Algo::kDirect &&
        !AutoOffersDirect(topology(), r.kind, shape)) {
      continue;
    }
    std::optional<Plan> plan = algo == Algo::kHierarchical
                                   ? HierarchicalPlanFor(flows_, r.kind, shape, r.congestion)
                                   : FlatPlanFor(flows_, algo, r.kind, r.ranks, r.congestion);
    if (plan) set->plans.push_back(*std::move(plan));
  }
  if (set->plans.empty()) {
    set->error = absl::UnimplementedError(WhyNot(topology(), r.algorithm, r, shape));
  }
  return *plans_.emplace(std::move(key), std::move(set)).first->second;
}

absl::StatusOr<NetworkCollectiveEstimate> NetworkCollectives::Estimate(
    const NetworkCollectiveRequest& request) {
  if (absl::Status s = CheckRequest(topology(), request); !s.ok()) return s;
  const std::vector<Algo> valid = NetworkAlgorithmsFor(request.kind);
  if (request.algorithm != Algo::kAuto &&
      std::find(valid.begin(), valid.end(), request.algorithm) == valid.end()) {
    std::vector<std::string> names;
    for (const Algo a : valid) names.push_back(AlgoName(a));
    return absl::UnimplementedError(absl::StrCat("no ", AlgoName(request.algorithm), " ",
                                                 KindWord(request.kind),
                                                 " on a network; accepted: auto, ",
                                                 absl::StrJoin(names, ", ")));
  }
  const PlanSet& set = PlansFor(request);
  if (set.plans.empty()) return set.error;
  const double bytes = request.bytes.value();
  size_t chosen = 0;
  Seconds fastest;
  for (size_t i = 0; i < set.plans.size(); ++i) {
    const Seconds t = Evaluate(set.plans[i], bytes, request.chunks, /*describe=*/false).time;
    if (i == 0 || t < fastest) {
      fastest = t;
      chosen = i;
    }
  }
  NetworkCollectiveEstimate best =
      Evaluate(set.plans[chosen], bytes, request.chunks, /*describe=*/true);
  const double seconds = best.time.value();
  best.algorithm_bandwidth = BytesPerSecond(seconds > 0 ? bytes / seconds : 0);
  best.bus_bandwidth = best.algorithm_bandwidth *
                       BusBandwidthFactor(request.kind, static_cast<int64_t>(request.ranks.size()));
  for (const CollectivePhase& p : best.phases) {
    if (p.busiest_utilisation > best.busiest_utilisation) {
      best.busiest_utilisation = p.busiest_utilisation;
      best.busiest_link = p.busiest_link;
    }
  }
  return best;
}

}  // namespace projector
