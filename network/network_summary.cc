#include "network/network_summary.h"

#include <algorithm>

namespace projector {
namespace {

// Connections one NPU has in a dimension: ring 2 (1 one way round, or with two NPUs), fully
// connected n - 1, mesh and torus up to 4 (a grid's interior; fewer on a line or an edge), one
// up-link to a switch or a leaf.
int64_t NpuConnections(const NetworkDimension& dim) {
  if (dim.npus < 2) return 0;
  switch (dim.topology) {
    case TopologyKind::kRing:
      return dim.bidirectional && dim.npus > 2 ? 2 : 1;
    case TopologyKind::kFullyConnected:
      return dim.npus - 1;
    case TopologyKind::kMesh2d:
    case TopologyKind::kTorus2d: {
      const bool wrap = dim.topology == TopologyKind::kTorus2d;
      const auto axis = [wrap](int64_t side) -> int64_t {
        if (side < 2) return 0;
        return side == 2 || !wrap ? std::min<int64_t>(side - 1, 2) : 2;
      };
      return axis(dim.x) + axis(dim.y);
    }
    case TopologyKind::kSwitch:
    case TopologyKind::kFatTree:
      return 1;
  }
  return 0;
}

}  // namespace

NetworkSummary Summarize(const Topology& topology) {
  const NetworkSpec& spec = topology.spec();
  NetworkSummary summary{.name = spec.name,
                         .source_file = spec.source_file,
                         .npus = topology.npu_count(),
                         .switches = topology.switch_count(),
                         .links = static_cast<int64_t>(topology.links().size()),
                         .diameter_hops = topology.Diameter(),
                         .bisection = topology.BisectionBandwidth(),
                         .dimensions = {}};
  for (size_t d = 0; d < spec.dimensions.size(); ++d) {
    const NetworkDimension& dim = spec.dimensions[d];
    const int64_t instances = topology.Instances(d);
    int64_t switches = 0;
    for (int64_t node = topology.npu_count(); node < topology.node_count(); ++node) {
      if (topology.DescribeNode(node).dimension == static_cast<int32_t>(d)) ++switches;
    }
    summary.dimensions.push_back(
        {.dimension = dim,
         .instances = instances,
         .links = topology.LinkCount(d),
         .switches = switches,
         .fat_tree_tiers = topology.FatTreeTiers(d),
         .diameter_hops = topology.DimensionDiameter(d),
         .bisection = topology.DimensionBisection(d) * static_cast<double>(instances),
         .injection = dim.link_bandwidth * static_cast<double>(dim.links * NpuConnections(dim))});
  }
  return summary;
}

RouteSummary DescribeRoute(const Topology& topology, int64_t from, int64_t to, bool shortest) {
  const std::vector<int32_t> path =
      shortest ? topology.ShortestRoute(from, to) : topology.Route(from, to);
  RouteSummary route{.network = topology.spec().name,
                     .from = from,
                     .to = to,
                     .shortest = shortest,
                     .hops = {},
                     .latency = Seconds(0),
                     .bottleneck = BytesPerSecond(0)};
  for (const int32_t id : path) {
    const NetworkLink& link = topology.links()[id];
    route.hops.push_back({.from = link.from,
                          .to = link.to,
                          .from_name = topology.NodeName(link.from),
                          .to_name = topology.NodeName(link.to),
                          .dimension = link.dimension,
                          .bandwidth = link.bandwidth,
                          .latency = link.latency});
    route.latency += link.latency;
    if (route.hops.size() == 1 || link.bandwidth < route.bottleneck) {
      route.bottleneck = link.bandwidth;
    }
  }
  return route;
}

}  // namespace projector
