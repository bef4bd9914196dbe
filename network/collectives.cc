#include "network/collectives.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "core/status_macros.h"
#include "network/collective_library.h"

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
    step.flows.push_back(
        {.src = g[i], .dst = g[i ^ static_cast<size_t>(distance)], .bytes = bytes});
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

// NVLS all-reduce (NVLink SHARP): every NPU writes its whole buffer into the switch, which
// reduces it and multicasts the sum back, so each NPU link carries S each way: one step in which
// NPU i sends S towards NPU i+1 loads every up- and down-link with exactly that. The switch's
// reduction rate caps it beyond the links (Options).
Steps NvlsSteps(std::span<const int64_t> g, double s) {
  Step step;
  for (size_t i = 0; i < g.size(); ++i) step.flows.push_back({g[i], g[(i + 1) % g.size()], s});
  return {step};
}

// How the group lies on the dimensions: the dimensions where its ranks differ, and for each the
// sub-groups (ranks equal in every other coordinate), when the group is their product. A 2D mesh
// or torus counts as two: its x axis and its y axis (rows and columns of the grid), so a
// hierarchical collective can run along the rows, then the columns, as on a TPU-style torus.
struct GroupShape {
  std::vector<int32_t> dimensions;  // innermost first (a grid's twice: x, then y)
  std::vector<int8_t> axes;         // per entry: -1 the whole dimension, 0 x, 1 y
  std::vector<std::vector<std::vector<int64_t>>> subgroups;  // per entry
  bool product = false;
};

bool IsGrid(const NetworkDimension& dim) {
  return dim.topology == TopologyKind::kMesh2d || dim.topology == TopologyKind::kTorus2d;
}

// The coordinate of `npu` along one entry, and the id distance of one step along it.
int64_t AxisCoordinate(const Topology& topology, int64_t npu, int32_t d, int8_t axis) {
  const int64_t c = topology.Coordinate(npu, d);
  if (axis < 0) return c;
  const int64_t x = topology.spec().dimensions[d].x;
  return axis == 0 ? c % x : c / x;
}

int64_t AxisStride(const Topology& topology, int32_t d, int8_t axis) {
  return axis == 1 ? topology.Stride(d) * topology.spec().dimensions[d].x : topology.Stride(d);
}

GroupShape ShapeOf(const Topology& topology, std::span<const int64_t> g) {
  GroupShape shape;
  const size_t dims = topology.spec().dimensions.size();
  int64_t product = 1;
  for (size_t d = 0; d < dims; ++d) {
    const bool grid = IsGrid(topology.spec().dimensions[d]);
    for (const int8_t axis : grid ? std::vector<int8_t>{0, 1} : std::vector<int8_t>{-1}) {
      absl::flat_hash_set<int64_t> coords;
      for (const int64_t npu : g) {
        coords.insert(AxisCoordinate(topology, npu, static_cast<int32_t>(d), axis));
      }
      if (coords.size() < 2) continue;
      shape.dimensions.push_back(static_cast<int32_t>(d));
      shape.axes.push_back(axis);
      product *= static_cast<int64_t>(coords.size());
    }
  }
  shape.product = product == static_cast<int64_t>(g.size());
  if (!shape.product) return shape;
  for (size_t j = 0; j < shape.dimensions.size(); ++j) {
    const int32_t d = shape.dimensions[j];
    const int8_t axis = shape.axes[j];
    // Members equal in every other coordinate form one sub-group, in rank order.
    std::vector<std::vector<int64_t>> groups;
    absl::flat_hash_map<int64_t, size_t> index_of;  // the member at coordinate 0 -> group
    for (const int64_t npu : g) {
      const int64_t base =
          npu - AxisCoordinate(topology, npu, d, axis) * AxisStride(topology, d, axis);
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
      return {Algo::kRing, Algo::kDirect, Algo::kHalvingDoubling,
              Algo::kTree, Algo::kNvls,   Algo::kHierarchical};
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
    case Algo::kNvls:
      return kind == CollectiveKind::kAllReduce ? NvlsSteps(g, s) : Steps{};
    case Algo::kAuto:
    case Algo::kHierarchical:
    case Algo::kPxn:
    case Algo::kLowLatency:
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
  bool both_ways = true;  // a ring's two directions (false: one way round)
  // Transfer time over what the links alone give (> 1 when the switch's NVLS reduction rate
  // binds); concurrent collectives stretch the transfers by it.
  double beyond_links = 1;
  int64_t steps = 0;
  StepCounts latency_steps;  // the library's per-step costs, by link type
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
  // What its step patterns are rebuilt from (concurrent collectives): the phase's collective,
  // its groups, and its share of the collective's S.
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::vector<std::vector<int64_t>> groups;
  double share = 1;
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
      merged[i].flows.insert(merged[i].flows.end(), steps[i].flows.begin(), steps[i].flows.end());
    }
  }
  return merged;
}

// The options of `algos` for `kind` on these groups, with `share` of the collective's S each;
// the ring both ways round and one way round are two options.
// Where a phase's groups lie: the link types of the innermost and outermost dimensions they
// span, how many ranks each has along the outermost, and the switch reduction rate when they
// span one switch dimension that reduces (NVLS).
struct PhaseSpan {
  LinkType inner = LinkType::kNvlink;
  LinkType outer = LinkType::kNvlink;
  int64_t outer_ranks = 1;  // ranks along the outer dimensions (1: one dimension)
  BytesPerSecond reduction;
};

PhaseSpan SpanOf(const Topology& topology, const GroupShape& shape) {
  PhaseSpan span;
  if (shape.dimensions.empty()) return span;
  const NetworkSpec& spec = topology.spec();
  span.inner = spec.LinkTypeOf(shape.dimensions.front());
  span.outer = spec.LinkTypeOf(shape.dimensions.back());
  if (shape.dimensions.size() == 1) {
    span.reduction = spec.dimensions[shape.dimensions[0]].in_network_reduction;
  } else if (shape.product) {
    const auto inner_ranks = static_cast<int64_t>(shape.subgroups.front()[0].size());
    int64_t total = 1;
    for (const auto& groups : shape.subgroups) total *= static_cast<int64_t>(groups[0].size());
    span.outer_ranks = total / inner_ranks;
  }
  return span;
}

void AddSteps(StepCounts& counts, LinkType type, double steps) {
  switch (type) {
    case LinkType::kNvlink:
    case LinkType::kAuto:
      counts.nvlink += steps;
      return;
    case LinkType::kPcie:
      counts.pcie += steps;
      return;
    case LinkType::kNetwork:
      counts.network += steps;
      return;
  }
}

// The per-step latencies a library charges, by link type. A ring over several dimensions
// crosses the outer ones 2(m-1) times in an all-reduce (m-1 in a reduce-scatter or all-gather,
// m ranks along them) and its other steps stay inside, as NCCL counts nInterSteps; a tree pays
// 2·depth steps; other algorithms' steps are charged to the outermost dimension.
StepCounts LatencySteps(Algo algo, CollectiveKind kind, int64_t steps, int64_t group_size,
                        const PhaseSpan& span) {
  StepCounts counts;
  if (algo == Algo::kTree) {
    const double depth = static_cast<double>(std::bit_width(static_cast<uint64_t>(group_size)) - 1);
    AddSteps(counts, span.outer, 2 * depth);
    return counts;
  }
  if (algo == Algo::kRing && span.outer_ranks > 1) {
    const int64_t crossings = (kind == CollectiveKind::kAllReduce ? 2 : 1) * (span.outer_ranks - 1);
    AddSteps(counts, span.outer, D(std::min(crossings, steps)));
    AddSteps(counts, span.inner, D(steps - std::min(crossings, steps)));
    return counts;
  }
  AddSteps(counts, span.outer, D(steps));
  return counts;
}

std::vector<PhaseOption> Options(FlowModel& model, std::span<const Algo> algos, CollectiveKind kind,
                                 const std::vector<std::vector<int64_t>>& groups, double share,
                                 Congestion congestion, const PhaseSpan& span) {
  std::vector<PhaseOption> options;
  const auto group_size = static_cast<int64_t>(groups[0].size());
  for (const Algo algo : algos) {
    if (algo == Algo::kNvls && !(span.reduction.value() > 0 && span.outer_ranks == 1)) continue;
    for (const bool both_ways : {true, false}) {
      if (!both_ways && algo != Algo::kRing) continue;
      const Steps steps = MergedSteps(algo, kind, groups, share * kReferenceBytes, both_ways);
      if (steps.empty()) continue;
      PhaseOption option = TimeSteps(model, steps, congestion, algo);
      option.both_ways = both_ways;
      if (algo == Algo::kNvls && option.seconds_per_byte > 0) {
        const double capped = std::max(option.seconds_per_byte, share / span.reduction.value());
        option.beyond_links = capped / option.seconds_per_byte;
        option.seconds_per_byte = capped;
      }
      option.latency_steps = LatencySteps(algo, kind, option.steps, group_size, span);
      options.push_back(option);
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

// What auto chooses from. With NCCL's costs, what NCCL runs: ring, tree and NVLS (all-to-all
// and send/recv are point to point); direct and halving-doubling are left to the library none
// (and to being asked for).
bool AutoOffers(const Topology& topology, Algo a, CollectiveKind kind, const GroupShape& shape,
                CollectiveLibrary library) {
  const bool point_to_point =
      kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kSendRecv;
  // On a fully connected dimension 0 (AMD's xGMI mesh) RCCL reaches 70% of all seven links
  // (8 x MI300X: 312.9 of 448 GB/s, hardware_models.md 4.3), which a ring over two of them
  // cannot: it runs all-pairs kernels there, and direct stands for them.
  const bool full_mesh = shape.dimensions.size() == 1 && shape.dimensions[0] == 0 &&
                         topology.spec().dimensions[0].topology == TopologyKind::kFullyConnected;
  if (library == CollectiveLibrary::kNccl && !point_to_point &&
      (a == Algo::kHalvingDoubling || (a == Algo::kDirect && !full_mesh))) {
    return false;
  }
  return a != Algo::kDirect || AutoOffersDirect(topology, kind, shape);
}

std::vector<Algo> FlatAlgorithms(const Topology& topology, Algo requested, CollectiveKind kind,
                                 const GroupShape& shape, CollectiveLibrary library) {
  if (requested != Algo::kAuto) return {requested};
  std::vector<Algo> algos;
  for (const Algo a : NetworkAlgorithmsFor(kind)) {
    if (a != Algo::kHierarchical && AutoOffers(topology, a, kind, shape, library)) {
      algos.push_back(a);
    }
  }
  return algos;
}

std::string DimensionWords(const Topology& topology, int32_t d) {
  const NetworkDimension& dim = topology.spec().dimensions[d];
  return absl::StrCat("dim ", d, " (",
                      dim.label.empty() ? std::string(TopologyName(dim.topology)) : dim.label, ")");
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
  for (size_t j = 1; j < k; ++j)
    share[j] = share[j - 1] / D(static_cast<int64_t>(shape.subgroups[j - 1][0].size()));
  std::vector<PhasePlan> plan;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      for (size_t j = 0; j + 1 < k; ++j)
        plan.push_back({CollectiveKind::kReduceScatter, j, share[j]});
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
  along.axes = {shape.axes[j]};
  along.product = true;
  return along;
}

std::optional<Plan> HierarchicalPlanFor(FlowModel& model, CollectiveKind kind,
                                        const GroupShape& shape, Congestion congestion,
                                        CollectiveLibrary library) {
  // On one dimension the hierarchical collective is the flat one.
  if (!shape.product || shape.dimensions.size() < 2) return std::nullopt;
  const std::vector<PhasePlan> phases = HierarchicalPlan(kind, shape, 1.0);
  if (phases.empty()) return std::nullopt;
  Plan plan{.algorithm = Algo::kHierarchical, .pipelined = true, .phases = {}};
  for (const PhasePlan& p : phases) {
    const std::vector<std::vector<int64_t>>& groups = shape.subgroups[p.j];
    const std::vector<Algo> algos = FlatAlgorithms(model.topology(), Algo::kAuto, p.kind,
                                                   AlongOneDimension(shape, p.j), library);
    const int8_t axis = shape.axes[p.j];
    PlannedPhase phase{
        .what = absl::StrCat(KindWord(p.kind), " along ",
                             DimensionWords(model.topology(), shape.dimensions[p.j]),
                             axis < 0 ? "" : (axis == 0 ? " x" : " y"), ", ", groups[0].size(),
                             " ranks x ", groups.size(), " group", groups.size() == 1 ? "" : "s"),
        .dimension = shape.dimensions[p.j],
        .options = Options(model, algos, p.kind, groups, p.bytes, congestion,
                           SpanOf(model.topology(), AlongOneDimension(shape, p.j))),
        .kind = p.kind,
        .groups = groups,
        .share = p.bytes};
    if (phase.options.empty()) return std::nullopt;
    plan.phases.push_back(std::move(phase));
  }
  return plan;
}

std::optional<Plan> FlatPlanFor(FlowModel& model, Algo algo, CollectiveKind kind,
                                const std::vector<int64_t>& ranks, Congestion congestion,
                                const GroupShape& shape) {
  const Algo algos[] = {algo};
  PlannedPhase phase{.what = absl::StrCat(KindWord(kind), " over ", ranks.size(), " ranks"),
                     .dimension = -1,
                     .options = Options(model, algos, kind, {ranks}, 1.0, congestion,
                                        SpanOf(model.topology(), shape)),
                     .kind = kind,
                     .groups = {ranks},
                     .share = 1.0};
  if (phase.options.empty()) return std::nullopt;
  return Plan{.algorithm = algo, .pipelined = false, .phases = {std::move(phase)}};
}

// Phases one after another, their data cut into c chunks that pipeline through them: every
// phase's latency, the slowest phase's transfer, and 1/c of the others' (the first chunk fills
// the pipeline, the last drains it). c = 1: the plain sum.
Seconds PipelinedTime(std::span<const CollectivePhase> phases, int64_t chunks) {
  Seconds latency;
  Seconds transfer;
  Seconds slowest;
  for (const CollectivePhase& p : phases) {
    latency += p.latency;
    transfer += p.time - p.latency;
    slowest = std::max(slowest, p.time - p.latency);
  }
  return latency + slowest + (transfer - slowest) / D(chunks);
}

// NCCL moves a collective in pieces of its channel buffer (NCCL_BUFFSIZE, 4 MiB by default; the
// Primus PXN model's 4 MB chunk, shared/reference/primus.md 6.6), so a multi-dimensional
// collective pipelines its phases over S / 4 MiB chunks.
constexpr double kLibraryChunkBytes = 4.0 * 1024 * 1024;

// RDMA warm-up of a multi-node all-reduce (AMD Primus PR #644, shared/reference/primus.md 6.8):
// NIC queue pairs ramp up over the first tens of MB, costing
//   260 us · ceil(log2 nodes) · (1 - min(1, per-NIC bytes / 32 MiB)^2.5),
// per-NIC bytes = S / ranks per node. Fitted on MI300X clusters; it also gives the B200 + EFA
// figure of hardware_models.md 4.3 (64 MiB over 4 x 8 GPUs: 157 GB/s measured).
Seconds RdmaWarmup(double bytes, int64_t nodes, int64_t ranks_per_node) {
  if (nodes < 2) return Seconds(0);
  const double per_nic = bytes / D(ranks_per_node) / (32.0 * 1024 * 1024);
  const double log_nodes = std::ceil(std::log2(D(nodes)));
  return Microseconds(260.0) * log_nodes * (1 - std::pow(std::min(1.0, per_nic), 2.5));
}

// One option's time at size S under a library protocol: its links' latency, the library's
// per-step latencies, and its transfers at the protocol's share of the bandwidth. Negative when
// the option has no such protocol (NVLS runs Simple only).
Seconds OptionTime(const PhaseOption& o, double bytes, CollectiveLibrary library, Protocol p,
                   bool single_node) {
  const std::span<const Protocol> offered = ProtocolsFor(library, o.algorithm);
  if (std::find(offered.begin(), offered.end(), p) == offered.end()) return Seconds(-1);
  const ProtocolCost cost = CostOf(library, o.algorithm, p, single_node);
  return o.latency + cost.StepLatency(o.latency_steps) +
         Seconds(o.seconds_per_byte * bytes / cost.bandwidth_share);
}

// A plan at size S: under each protocol the library offers, each phase's fastest option, the
// phases summed (or pipelined) after one launch; the fastest protocol wins. The phases'
// descriptions are written only when `describe` (the chosen plan).
// What Evaluate needs to know of the request and its group beyond the plan.
struct EvalContext {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  CollectiveLibrary library = CollectiveLibrary::kNone;
  int64_t chunks = 1;
  bool single_node = true;       // the group stays in one dimension-0 instance
  int64_t nodes = 1;             // dimension-0 instances the group spans
  int64_t ranks_per_node = 1;    // group ranks in each
  bool crosses_network = false;  // a dimension it spans has network links
};

// The choices behind an estimate: the protocol and each phase's option.
struct Choice {
  Protocol protocol = Protocol::kSimple;
  std::vector<const PhaseOption*> options;
};

NetworkCollectiveEstimate Evaluate(const Plan& plan, double bytes, bool describe,
                                   const EvalContext& ctx, Choice* choice = nullptr) {
  const CollectiveLibrary library = ctx.library;
  const bool single_node = ctx.single_node;
  NetworkCollectiveEstimate best;
  bool have = false;
  for (const Protocol p : ProtocolsFor(library, plan.algorithm)) {
    NetworkCollectiveEstimate e;
    e.algorithm = plan.algorithm;
    bool complete = true;
    Choice made{.protocol = p, .options = {}};
    for (const PlannedPhase& phase : plan.phases) {
      const PhaseOption* chosen = nullptr;
      Seconds chosen_time;
      for (const PhaseOption& o : phase.options) {
        const Seconds t = OptionTime(o, bytes, library, p, single_node);
        if (t.value() >= 0 && (chosen == nullptr || t < chosen_time)) {
          chosen = &o;
          chosen_time = t;
        }
      }
      if (chosen == nullptr) {
        complete = false;
        break;
      }
      made.options.push_back(chosen);
      const Seconds transfer = Seconds(chosen->seconds_per_byte * bytes) /
                               CostOf(library, chosen->algorithm, p, single_node).bandwidth_share;
      e.phases.push_back(
          {.what = describe ? absl::StrCat(phase.what, ": ", AlgoName(chosen->algorithm), ", ",
                                           chosen->steps, " step", chosen->steps == 1 ? "" : "s")
                            : std::string(),
           .dimension = phase.dimension,
           .algorithm = chosen->algorithm,
           .steps = chosen->steps,
           .time = chosen_time,
           .latency = chosen_time - transfer,
           .busiest_link = chosen->busiest_link,
           .busiest_utilisation = chosen->busiest_utilisation});
    }
    if (!complete) continue;
    if (plan.pipelined) {
      const int64_t chunks =
          library == CollectiveLibrary::kNccl
              ? std::max<int64_t>(ctx.chunks,
                                  static_cast<int64_t>(std::ceil(bytes / kLibraryChunkBytes)))
              : ctx.chunks;
      e.time = PipelinedTime(e.phases, std::max<int64_t>(1, chunks));
    } else {
      for (const CollectivePhase& ph : e.phases) e.time += ph.time;
    }
    // One launch: the costliest of the algorithms the phases run (a hierarchical collective
    // whose top phase is NVLS pays NVLS's launch).
    Seconds base = CostOf(library, plan.algorithm, p, single_node).base;
    for (const CollectivePhase& ph : e.phases) {
      base = std::max(base, CostOf(library, ph.algorithm, p, single_node).base);
    }
    e.time += base;
    if (library == CollectiveLibrary::kNccl && ctx.kind == CollectiveKind::kAllReduce &&
        ctx.crosses_network) {
      e.time += RdmaWarmup(bytes, ctx.nodes, ctx.ranks_per_node);
    }
    if (plan.algorithm != Algo::kHierarchical) e.algorithm = e.phases[0].algorithm;
    e.protocol = library == CollectiveLibrary::kNone ? "" : std::string(ProtocolName(p));
    if (!have || e.time < best.time) {
      best = std::move(e);
      if (choice != nullptr) *choice = std::move(made);
    }
    have = true;
  }
  return best;
}

absl::Status CheckRequest(const Topology& topology, const NetworkCollectiveRequest& r) {
  if (r.ranks.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("a collective needs a group of at least 2 ranks, got ", r.ranks.size()));
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
  if (algo == Algo::kNvls) {
    return "nvls needs a group inside one switch dimension that reduces in the network "
           "(in_network_reduction_gbps > 0)";
  }
  return absl::StrCat("no ", AlgoName(algo), " ", KindWord(r.kind), " for this group");
}

}  // namespace

// The candidate plans of one (kind, algorithm, congestion, group), built on first use.
struct NetworkCollectives::PlanSet {
  std::vector<Plan> plans;
  absl::Status error;  // when plans is empty: why
  EvalContext group;   // the group's part of the evaluation context
};

size_t NetworkCollectives::PlanKeyHash::operator()(const PlanLookup& k) const {
  return absl::Hash<
      std::tuple<CollectiveKind, Algo, Congestion, CollectiveLibrary, absl::Span<const int64_t>>>{}(
      std::make_tuple(k.kind, k.algorithm, k.congestion, k.library,
                      absl::Span<const int64_t>(k.ranks.data(), k.ranks.size())));
}

bool NetworkCollectives::PlanKeyEq::operator()(const PlanLookup& a, const PlanLookup& b) const {
  return a.kind == b.kind && a.algorithm == b.algorithm && a.congestion == b.congestion &&
         a.library == b.library &&
         std::equal(a.ranks.begin(), a.ranks.end(), b.ranks.begin(), b.ranks.end());
}

NetworkCollectives::NetworkCollectives(const Topology& topology) : flows_(topology) {}
NetworkCollectives::~NetworkCollectives() = default;

const NetworkCollectives::PlanSet& NetworkCollectives::PlansFor(const NetworkCollectiveRequest& r) {
  const PlanLookup lookup{.kind = r.kind,
                          .algorithm = r.algorithm,
                          .congestion = r.congestion,
                          .library = r.library,
                          .ranks = r.ranks};
  auto it = plans_.find(lookup);
  if (it != plans_.end()) return *it->second;
  PlanKey key{.kind = r.kind,
              .algorithm = r.algorithm,
              .congestion = r.congestion,
              .library = r.library,
              .ranks = r.ranks};
  auto set = std::make_unique<PlanSet>();
  if (absl::Status distinct = CheckDistinct(r.ranks); !distinct.ok()) {
    set->error = distinct;
    return *plans_.emplace(std::move(key), std::move(set)).first->second;
  }
  const GroupShape shape = ShapeOf(topology(), r.ranks);
  set->group.single_node = shape.dimensions.empty() || shape.dimensions.back() == 0;
  absl::flat_hash_set<int64_t> nodes;
  for (const int64_t npu : r.ranks) nodes.insert(npu / topology().spec().dimensions[0].npus);
  set->group.nodes = static_cast<int64_t>(nodes.size());
  set->group.ranks_per_node = static_cast<int64_t>(r.ranks.size()) / set->group.nodes;
  for (const int32_t d : shape.dimensions) {
    if (topology().spec().LinkTypeOf(d) == LinkType::kNetwork) set->group.crosses_network = true;
  }
  for (const Algo algo : NetworkAlgorithmsFor(r.kind)) {
    if (r.algorithm != Algo::kAuto && algo != r.algorithm) continue;
    if (r.algorithm == Algo::kAuto && !AutoOffers(topology(), algo, r.kind, shape, r.library)) {
      continue;
    }
    std::optional<Plan> plan =
        algo == Algo::kHierarchical
            ? HierarchicalPlanFor(flows_, r.kind, shape, r.congestion, r.library)
            : FlatPlanFor(flows_, algo, r.kind, r.ranks, r.congestion, shape);
    if (plan) set->plans.push_back(*std::move(plan));
  }
  if (set->plans.empty()) {
    set->error = absl::UnimplementedError(WhyNot(topology(), r.algorithm, r, shape));
  }
  return *plans_.emplace(std::move(key), std::move(set)).first->second;
}

absl::StatusOr<NetworkCollectiveEstimate> NetworkCollectives::Estimate(
    const NetworkCollectiveRequest& request) {
  PROJECTOR_ASSIGN_OR_RETURN(Chosen chosen, Choose(request));
  return std::move(chosen.estimate);
}

absl::StatusOr<NetworkCollectives::Chosen> NetworkCollectives::Choose(
    const NetworkCollectiveRequest& request) {
  if (absl::Status s = CheckRequest(topology(), request); !s.ok()) return s;
  const std::vector<Algo> valid = NetworkAlgorithmsFor(request.kind);
  if (request.algorithm != Algo::kAuto &&
      std::find(valid.begin(), valid.end(), request.algorithm) == valid.end()) {
    std::vector<std::string> names;
    for (const Algo a : valid) names.push_back(AlgoName(a));
    return absl::UnimplementedError(
        absl::StrCat("no ", AlgoName(request.algorithm), " ", KindWord(request.kind),
                     " on a network; accepted: auto, ", absl::StrJoin(names, ", ")));
  }
  const PlanSet& set = PlansFor(request);
  if (set.plans.empty()) return set.error;
  const double bytes = request.bytes.value();
  EvalContext ctx = set.group;
  ctx.kind = request.kind;
  ctx.library = request.library;
  ctx.chunks = request.chunks;
  size_t best_plan = 0;
  Seconds fastest;
  bool found = false;
  for (size_t i = 0; i < set.plans.size(); ++i) {
    const NetworkCollectiveEstimate e = Evaluate(set.plans[i], bytes, /*describe=*/false, ctx);
    if (e.phases.empty()) continue;
    if (!found || e.time < fastest) {
      fastest = e.time;
      best_plan = i;
      found = true;
    }
  }
  Choice choice;
  Chosen chosen{.set = &set,
                .plan = best_plan,
                .protocol = Protocol::kSimple,
                .options = {},
                .estimate = Evaluate(set.plans[best_plan], bytes, /*describe=*/true, ctx, &choice)};
  chosen.protocol = choice.protocol;
  const Plan& plan = set.plans[best_plan];
  for (size_t i = 0; i < choice.options.size(); ++i) {
    chosen.options.push_back(
        static_cast<size_t>(choice.options[i] - plan.phases[i].options.data()));
  }
  NetworkCollectiveEstimate& best = chosen.estimate;
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
  return chosen;
}

namespace {

// A collective's chosen plan as its steps, one after another (the phases of a hierarchical
// collective in order, not pipelined).
std::vector<NetworkCollectives::LiveStep> Unroll(const Plan& plan, std::span<const size_t> options,
                                                 Protocol protocol, double bytes,
                                                 CollectiveLibrary library, bool single_node) {
  std::vector<NetworkCollectives::LiveStep> steps;
  for (size_t i = 0; i < plan.phases.size(); ++i) {
    const PlannedPhase& phase = plan.phases[i];
    const PhaseOption& option = phase.options[options[i]];
    const double share = CostOf(library, option.algorithm, protocol, single_node).bandwidth_share;
    const Steps pattern =
        MergedSteps(option.algorithm, phase.kind, phase.groups,
                    phase.share * bytes / share * option.beyond_links, option.both_ways);
    for (const Step& step : pattern) steps.push_back({.flows = step.flows, .repeat = step.repeat});
  }
  return steps;
}

}  // namespace

// The steps of collectives started together, transfers sharing links; each one's arrival.
std::vector<double> NetworkCollectives::SimulateTogether(
    std::span<const std::vector<LiveStep>> collectives, Congestion congestion) {
  struct Running {
    const std::vector<LiveStep>* steps = nullptr;
    size_t step = 0;
    int64_t repeats_done = 0;  // of the current step
    double start = 0;  // when the current step's transfers begin
    std::vector<double> remaining;
    double step_latency = 0;
    bool done = false;
    double finish = 0;
  };
  const auto begin_step = [](Running& run, double at) {
    run.start = at;
    run.remaining.clear();
    for (const Flow& f : (*run.steps)[run.step].flows) run.remaining.push_back(f.bytes);
    run.step_latency = 0;  // the longest route of the step, seen while it moves
  };
  std::vector<Running> running(collectives.size());
  for (size_t c = 0; c < collectives.size(); ++c) {
    running[c].steps = &collectives[c];
    if (collectives[c].empty()) {
      running[c].done = true;
    } else {
      begin_step(running[c], 0);
    }
  }
  double now = 0;
  std::vector<Flow> flows;
  std::vector<std::pair<size_t, size_t>> owner;  // (collective, transfer of its step)
  while (std::any_of(running.begin(), running.end(), [](const Running& r) { return !r.done; })) {
    flows.clear();
    owner.clear();
    double next_start = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < running.size(); ++c) {
      const Running& run = running[c];
      if (run.done) continue;
      if (run.start > now) {
        next_start = std::min(next_start, run.start);
        continue;
      }
      const std::vector<Flow>& step_flows = (*run.steps)[run.step].flows;
      for (size_t f = 0; f < step_flows.size(); ++f) {
        if (run.remaining[f] <= 0) continue;
        flows.push_back(step_flows[f]);
        owner.emplace_back(c, f);
      }
    }
    const FlowModel::Rates rates = flows_.RatesOf(flows, congestion);
    double step = next_start - now;
    for (size_t i = 0; i < flows.size(); ++i) {
      Running& run = running[owner[i].first];
      run.step_latency = std::max(run.step_latency, rates.latency[i].value());
      if (rates.rate[i] > 0) {
        step = std::min(step, run.remaining[owner[i].second] / rates.rate[i]);
      } else {
        run.remaining[owner[i].second] = 0;  // no link to cross
        step = 0;
      }
    }
    if (!std::isfinite(step)) step = 0;
    now += step;
    for (size_t i = 0; i < flows.size(); ++i) {
      double& left = running[owner[i].first].remaining[owner[i].second];
      left -= rates.rate[i] * step;
      if (left <= kFlowDoneFraction * flows[i].bytes) left = 0;
    }
    for (Running& run : running) {
      if (run.done || run.start > now) continue;
      if (std::any_of(run.remaining.begin(), run.remaining.end(), [](double b) { return b > 0; })) {
        continue;
      }
      const double after = now + run.step_latency;
      if (++run.repeats_done < (*run.steps)[run.step].repeat) {
        begin_step(run, after);
      } else if (run.repeats_done = 0; ++run.step == run.steps->size()) {
        run.done = true;
        run.finish = after;
      } else {
        begin_step(run, after);
      }
    }
  }
  std::vector<double> finish;
  for (const Running& run : running) finish.push_back(run.finish);
  return finish;
}

absl::StatusOr<NetworkCollectives::StepPlan> NetworkCollectives::Steps(
    const NetworkCollectiveRequest& request) {
  PROJECTOR_ASSIGN_OR_RETURN(Chosen chosen, Choose(request));
  StepPlan out{.estimate = chosen.estimate,
               .steps = Unroll(chosen.set->plans[chosen.plan], chosen.options, chosen.protocol,
                               request.bytes.value(), request.library,
                               chosen.set->group.single_node)};
  return out;
}

absl::StatusOr<std::vector<ConcurrentEstimate>> NetworkCollectives::EstimateConcurrent(
    std::span<const NetworkCollectiveRequest> requests, Congestion congestion) {
  std::vector<ConcurrentEstimate> out;
  std::vector<std::vector<LiveStep>> unrolled;
  for (const NetworkCollectiveRequest& r : requests) {
    PROJECTOR_ASSIGN_OR_RETURN(Chosen chosen, Choose(r));
    const Plan& plan = chosen.set->plans[chosen.plan];
    unrolled.push_back(Unroll(plan, chosen.options, chosen.protocol, r.bytes.value(), r.library,
                              chosen.set->group.single_node));
    out.push_back({.alone = chosen.estimate, .together = chosen.estimate});
  }
  // The slowdown each collective's own steps suffer beside the others, applied to its estimate
  // alone (which keeps what the step replay leaves out: library costs, chunk pipelining).
  const std::vector<double> together = SimulateTogether(unrolled, congestion);
  for (size_t c = 0; c < out.size(); ++c) {
    const std::vector<double> alone =
        SimulateTogether(std::span<const std::vector<LiveStep>>(&unrolled[c], 1), congestion);
    const double slowdown = alone[0] > 0 ? std::max(1.0, together[c] / alone[0]) : 1.0;
    NetworkCollectiveEstimate& e = out[c].together;
    e.time = out[c].alone.time * slowdown;
    e.algorithm_bandwidth = out[c].alone.algorithm_bandwidth / slowdown;
    e.bus_bandwidth = out[c].alone.bus_bandwidth / slowdown;
  }
  return out;
}

}  // namespace projector
