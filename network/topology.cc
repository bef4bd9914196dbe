#include "network/topology.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <utility>

namespace projector {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Signed steps from a to b on a cycle of n: the shorter way, +1 direction on a tie.
int64_t CycleSteps(int64_t a, int64_t b, int64_t n) {
  const int64_t forward = ((b - a) % n + n) % n;
  return forward <= n - forward ? forward : forward - n;
}

}  // namespace

Topology::Topology(NetworkSpec spec) : spec_(std::move(spec)) {
  npu_count_ = spec_.NpuCount();
  int64_t stride = 1;
  int64_t next_switch = npu_count_;
  for (size_t d = 0; d < spec_.dimensions.size(); ++d) {
    const NetworkDimension& dim = spec_.dimensions[d];
    DimensionLayout layout;
    layout.stride = stride;
    layout.instances = npu_count_ / dim.npus;
    layout.hosts = dim.npus;
    layout.shared = !dim.rail_optimized;
    if (layout.shared) {
      layout.hosts = FabricHosts(spec_, d);
      layout.instances = npu_count_ / layout.hosts;
    }
    if (dim.npus > 1 && dim.topology == TopologyKind::kSwitch) layout.switches_per_instance = 1;
    if (dim.npus > 1 && dim.topology == TopologyKind::kFatTree) {
      layout.ports = FatTreeLeafPorts(dim);
      layout.pod_leaves = FatTreePodLeaves(dim);
      const LeafPorts& ports = layout.ports;
      const int64_t half = layout.pod_leaves;
      layout.leaves = CeilDiv(layout.hosts, ports.down);
      if (layout.leaves == 1) {
        layout.tiers = 1;
        layout.switches_per_instance = 1;
      } else if (layout.leaves <= dim.radix) {
        layout.tiers = 2;
        layout.switches_per_instance = layout.leaves + ports.up;
      } else {
        layout.tiers = 3;
        layout.pods = CeilDiv(layout.leaves, half);
        layout.switches_per_instance = layout.leaves + layout.pods * ports.up + ports.up * half;
      }
    }
    layout.first_switch = next_switch;
    next_switch += layout.instances * layout.switches_per_instance;
    strides_.push_back(stride);
    layouts_.push_back(layout);
    stride *= dim.npus;
  }
  out_offsets_.assign(static_cast<size_t>(next_switch) + 1, 0);
  for (size_t d = 0; d < spec_.dimensions.size(); ++d) BuildDimension(d);
  IndexLinks();
}

int64_t Topology::Coordinate(int64_t npu, size_t dimension) const {
  return (npu / strides_[dimension]) % spec_.dimensions[dimension].npus;
}

int64_t Topology::LocalIndex(int64_t npu, size_t dimension) const {
  const DimensionLayout& layout = layouts_[dimension];
  return layout.shared ? npu % layout.hosts : Coordinate(npu, dimension);
}

int64_t Topology::Member(int64_t npu, size_t dimension, int64_t local) const {
  const DimensionLayout& layout = layouts_[dimension];
  if (layout.shared) return npu - npu % layout.hosts + local;
  return npu + (local - Coordinate(npu, dimension)) * strides_[dimension];
}

int64_t Topology::SwitchOf(int64_t npu, size_t dimension, int64_t index) const {
  const DimensionLayout& layout = layouts_[dimension];
  const int64_t block = layout.stride * spec_.dimensions[dimension].npus;
  const int64_t instance =
      layout.shared ? npu / layout.hosts : (npu / block) * layout.stride + npu % layout.stride;
  return layout.first_switch + instance * layout.switches_per_instance + index;
}

int Topology::FatTreeTiers(size_t dimension) const { return layouts_[dimension].tiers; }

NodeInfo Topology::DescribeNode(int64_t node) const {
  if (node < npu_count_) return {.index = node};
  size_t d = 0;
  while (d + 1 < layouts_.size() && node >= layouts_[d + 1].first_switch) ++d;
  const DimensionLayout& layout = layouts_[d];
  const int64_t offset = node - layout.first_switch;
  NodeInfo info{.is_switch = true,
                .dimension = static_cast<int32_t>(d),
                .tier = 1,
                .instance = offset / layout.switches_per_instance,
                .index = offset % layout.switches_per_instance};
  if (layout.tiers >= 2 && info.index >= layout.leaves) {
    const int64_t up = layout.ports.up;
    const int64_t aggregation = layout.tiers == 3 ? layout.pods * up : up;
    info.index -= layout.leaves;
    info.tier = 2;
    if (info.index >= aggregation) {
      info.index -= aggregation;
      info.tier = 3;
    }
  }
  return info;
}

std::string Topology::NodeName(int64_t node) const {
  const NodeInfo info = DescribeNode(node);
  if (!info.is_switch) {
    // One coordinate per dimension; a grid's as x<column>y<row>.
    std::string name = "npu " + std::to_string(node) + " [";
    for (size_t d = 0; d < spec_.dimensions.size(); ++d) {
      const NetworkDimension& dim = spec_.dimensions[d];
      const int64_t c = Coordinate(node, d);
      const bool grid =
          dim.topology == TopologyKind::kMesh2d || dim.topology == TopologyKind::kTorus2d;
      name += (d > 0 ? "," : "") +
              (grid ? "x" + std::to_string(c % dim.x) + "y" + std::to_string(c / dim.x)
                    : std::to_string(c));
    }
    return name + "]";
  }
  const int tiers = layouts_[info.dimension].tiers;
  const char* tier_name = "switch";
  if (tiers > 0) {
    static constexpr const char* kTwoTiers[] = {"leaf", "spine"};
    static constexpr const char* kThreeTiers[] = {"leaf", "aggregation", "core"};
    tier_name = tiers == 3 ? kThreeTiers[info.tier - 1] : kTwoTiers[info.tier - 1];
  }
  return "dim " + std::to_string(info.dimension) + " " + tier_name + " " +
         std::to_string(info.index) + " #" + std::to_string(info.instance);
}

void Topology::AddLink(int64_t from, int64_t to, size_t dimension) {
  const NetworkDimension& dim = spec_.dimensions[dimension];
  links_.push_back({.from = static_cast<int32_t>(from),
                    .to = static_cast<int32_t>(to),
                    .dimension = static_cast<int32_t>(dimension),
                    .bandwidth = dim.link_bandwidth * static_cast<double>(dim.links),
                    .latency = dim.link_latency});
}

void Topology::AddConnection(int64_t a, int64_t b, size_t dimension) {
  AddLink(a, b, dimension);
  AddLink(b, a, dimension);
}

// One instance per loop turn: `first` is its NPU with coordinate 0 in this dimension.
void Topology::BuildDimension(size_t dimension) {
  const NetworkDimension& dim = spec_.dimensions[dimension];
  if (dim.npus < 2) return;
  const int64_t n = layouts_[dimension].hosts;
  for (int64_t first = 0; first < npu_count_; ++first) {
    if (LocalIndex(first, dimension) != 0) continue;
    const auto npu = [&](int64_t local) { return Member(first, dimension, local); };
    switch (dim.topology) {
      case TopologyKind::kRing:
        for (int64_t i = 0; i < n; ++i) {
          const int64_t next = (i + 1) % n;
          if (n == 2 && i == 1) break;  // a ring of two is one connection
          if (dim.bidirectional || n == 2) {
            AddConnection(npu(i), npu(next), dimension);
          } else {
            AddLink(npu(i), npu(next), dimension);
          }
        }
        break;
      case TopologyKind::kFullyConnected:
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t j = i + 1; j < n; ++j) AddConnection(npu(i), npu(j), dimension);
        }
        break;
      case TopologyKind::kSwitch:
        for (int64_t i = 0; i < n; ++i)
          AddConnection(npu(i), SwitchOf(first, dimension, 0), dimension);
        break;
      case TopologyKind::kMesh2d:
      case TopologyKind::kTorus2d: {
        const bool wrap = dim.topology == TopologyKind::kTorus2d;
        for (int64_t iy = 0; iy < dim.y; ++iy) {
          for (int64_t ix = 0; ix < dim.x; ++ix) {
            const int64_t here = npu(ix + dim.x * iy);
            if (ix + 1 < dim.x || (wrap && dim.x > 2)) {
              AddConnection(here, npu((ix + 1) % dim.x + dim.x * iy), dimension);
            }
            if (iy + 1 < dim.y || (wrap && dim.y > 2)) {
              AddConnection(here, npu(ix + dim.x * ((iy + 1) % dim.y)), dimension);
            }
          }
        }
        break;
      }
      case TopologyKind::kFatTree: {
        const DimensionLayout& layout = layouts_[dimension];
        const LeafPorts& ports = layout.ports;
        const int64_t half = layout.pod_leaves;
        const auto sw = [&](int64_t index) { return SwitchOf(first, dimension, index); };
        for (int64_t i = 0; i < n; ++i) AddConnection(npu(i), sw(i / ports.down), dimension);
        if (layout.tiers == 2) {
          for (int64_t leaf = 0; leaf < layout.leaves; ++leaf) {
            for (int64_t s = 0; s < ports.up; ++s) {
              AddConnection(sw(leaf), sw(layout.leaves + s), dimension);
            }
          }
        } else if (layout.tiers == 3) {
          const int64_t first_agg = layout.leaves;
          const int64_t first_core = first_agg + layout.pods * ports.up;
          for (int64_t leaf = 0; leaf < layout.leaves; ++leaf) {
            for (int64_t j = 0; j < ports.up; ++j) {
              AddConnection(sw(leaf), sw(first_agg + (leaf / half) * ports.up + j), dimension);
            }
          }
          for (int64_t pod = 0; pod < layout.pods; ++pod) {
            for (int64_t j = 0; j < ports.up; ++j) {
              for (int64_t c = 0; c < half; ++c) {
                AddConnection(sw(first_agg + pod * ports.up + j), sw(first_core + j * half + c),
                              dimension);
              }
            }
          }
        }
        break;
      }
    }
  }
}

void Topology::IndexLinks() {
  std::stable_sort(links_.begin(), links_.end(),
                   [](const NetworkLink& a, const NetworkLink& b) { return a.from < b.from; });
  for (const NetworkLink& link : links_) ++out_offsets_[static_cast<size_t>(link.from) + 1];
  for (size_t i = 1; i < out_offsets_.size(); ++i) out_offsets_[i] += out_offsets_[i - 1];
  out_links_.resize(links_.size());
  for (size_t i = 0; i < links_.size(); ++i) out_links_[i] = static_cast<int32_t>(i);
}

int64_t Topology::LinkCount(size_t dimension) const {
  return std::count_if(links_.begin(), links_.end(), [&](const NetworkLink& link) {
    return link.dimension == static_cast<int32_t>(dimension);
  });
}

int32_t Topology::LinkBetween(int64_t from, int64_t to) const {
  for (int64_t i = out_offsets_[from]; i < out_offsets_[from + 1]; ++i) {
    if (links_[out_links_[i]].to == to) return out_links_[i];
  }
  return -1;
}

void Topology::Hop(int64_t& at, int64_t next, std::vector<int32_t>& path) const {
  path.push_back(LinkBetween(at, next));
  at = next;
}

void Topology::RouteFatTree(int64_t from, int64_t to, size_t dimension,
                            std::vector<int32_t>& path) const {
  const DimensionLayout& layout = layouts_[dimension];
  const LeafPorts& ports = layout.ports;
  const int64_t half = layout.pod_leaves;
  const int64_t a = LocalIndex(from, dimension);
  const int64_t b = LocalIndex(to, dimension);
  const auto sw = [&](int64_t index) { return SwitchOf(from, dimension, index); };
  const int64_t leaf_a = a / ports.down;
  const int64_t leaf_b = b / ports.down;
  int64_t at = from;
  Hop(at, sw(leaf_a), path);
  if (leaf_a != leaf_b) {
    // D-mod-k: the destination picks the up-link at every tier, so the routes to one NPU
    // converge on one path down.
    const int64_t j = b % ports.up;
    if (layout.tiers == 2) {
      Hop(at, sw(layout.leaves + j), path);
    } else {
      const int64_t first_agg = layout.leaves;
      const int64_t first_core = first_agg + layout.pods * ports.up;
      const int64_t pod_a = leaf_a / half;
      const int64_t pod_b = leaf_b / half;
      Hop(at, sw(first_agg + pod_a * ports.up + j), path);
      if (pod_a != pod_b) {
        Hop(at, sw(first_core + j * half + (b / ports.up) % half), path);
        Hop(at, sw(first_agg + pod_b * ports.up + j), path);
      }
    }
    Hop(at, sw(leaf_b), path);
  }
  Hop(at, to, path);
}

void Topology::RouteInDimension(int64_t from, int64_t to, size_t dimension,
                                std::vector<int32_t>& path) const {
  const NetworkDimension& dim = spec_.dimensions[dimension];
  const int64_t a = Coordinate(from, dimension);
  const int64_t b = Coordinate(to, dimension);
  int64_t at = from;
  switch (dim.topology) {
    case TopologyKind::kRing: {
      const int64_t n = dim.npus;
      const int64_t steps = dim.bidirectional ? CycleSteps(a, b, n) : ((b - a) % n + n) % n;
      for (int64_t s = 1; s <= std::abs(steps); ++s) {
        const int64_t local = ((a + (steps > 0 ? s : -s)) % n + n) % n;
        Hop(at, Member(from, dimension, local), path);
      }
      return;
    }
    case TopologyKind::kFullyConnected:
      Hop(at, to, path);
      return;
    case TopologyKind::kSwitch:
      Hop(at, SwitchOf(from, dimension, 0), path);
      Hop(at, to, path);
      return;
    case TopologyKind::kMesh2d:
    case TopologyKind::kTorus2d: {
      const bool wrap = dim.topology == TopologyKind::kTorus2d;
      int64_t ix = a % dim.x;
      int64_t iy = a / dim.x;
      const int64_t dx = wrap ? CycleSteps(ix, b % dim.x, dim.x) : b % dim.x - ix;
      const int64_t dy = wrap ? CycleSteps(iy, b / dim.x, dim.y) : b / dim.x - iy;
      for (int64_t s = 0; s < std::abs(dx); ++s) {
        ix = ((ix + (dx > 0 ? 1 : -1)) % dim.x + dim.x) % dim.x;
        Hop(at, Member(from, dimension, ix + dim.x * iy), path);
      }
      for (int64_t s = 0; s < std::abs(dy); ++s) {
        iy = ((iy + (dy > 0 ? 1 : -1)) % dim.y + dim.y) % dim.y;
        Hop(at, Member(from, dimension, ix + dim.x * iy), path);
      }
      return;
    }
    case TopologyKind::kFatTree:
      RouteFatTree(from, to, dimension, path);
      return;
  }
}

void Topology::Route(int64_t from, int64_t to, std::vector<int32_t>& path) const {
  path.clear();
  // A shared (not rail-optimised) fabric reaches every NPU of its block: when the outermost
  // dimension the two differ in is one, the route takes it directly.
  for (size_t d = spec_.dimensions.size(); d-- > 0;) {
    if (Coordinate(from, d) == Coordinate(to, d)) continue;
    if (layouts_[d].shared) {
      RouteInDimension(from, to, d, path);
      return;
    }
    break;
  }
  int64_t at = from;
  for (size_t d = 0; d < spec_.dimensions.size(); ++d) {
    const int64_t delta = Coordinate(to, d) - Coordinate(at, d);
    if (delta == 0) continue;
    const int64_t next = at + delta * strides_[d];
    RouteInDimension(at, next, d, path);
    at = next;
  }
}

std::vector<int32_t> Topology::Route(int64_t from, int64_t to) const {
  std::vector<int32_t> path;
  Route(from, to, path);
  return path;
}

std::vector<int32_t> Topology::ShortestRoute(int64_t from, int64_t to) const {
  std::vector<int32_t> via(static_cast<size_t>(node_count()), -1);
  std::deque<int64_t> frontier = {from};
  std::vector<bool> seen(static_cast<size_t>(node_count()), false);
  seen[from] = true;
  while (!frontier.empty() && !seen[to]) {
    const int64_t at = frontier.front();
    frontier.pop_front();
    for (int64_t i = out_offsets_[at]; i < out_offsets_[at + 1]; ++i) {
      const NetworkLink& link = links_[out_links_[i]];
      if (seen[link.to]) continue;
      seen[link.to] = true;
      via[link.to] = out_links_[i];
      frontier.push_back(link.to);
    }
  }
  std::vector<int32_t> path;
  if (!seen[to]) return path;
  for (int64_t at = to; at != from; at = links_[via[at]].from) path.push_back(via[at]);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<int64_t> Topology::PathNodes(int64_t from, std::span<const int32_t> path) const {
  std::vector<int64_t> nodes = {from};
  for (const int32_t link : path) nodes.push_back(links_[link].to);
  return nodes;
}

int64_t Topology::DimensionDiameter(size_t dimension) const {
  const NetworkDimension& dim = spec_.dimensions[dimension];
  if (dim.npus < 2) return 0;
  switch (dim.topology) {
    case TopologyKind::kRing:
      return dim.bidirectional ? dim.npus / 2 : dim.npus - 1;
    case TopologyKind::kFullyConnected:
      return 1;
    case TopologyKind::kSwitch:
      return 2;
    case TopologyKind::kMesh2d:
      return (dim.x - 1) + (dim.y - 1);
    case TopologyKind::kTorus2d:
      return dim.x / 2 + dim.y / 2;
    case TopologyKind::kFatTree:
      return 2 * layouts_[dimension].tiers;
  }
  return 0;
}

int64_t Topology::Diameter() const {
  int64_t inner = 0;
  for (size_t d = 0; d + 1 < spec_.dimensions.size(); ++d) inner += DimensionDiameter(d);
  const size_t outermost = spec_.dimensions.size() - 1;
  // NPUs that differ in a shared outermost fabric take it directly; others cross the inner ones.
  if (layouts_[outermost].shared) return std::max(inner, DimensionDiameter(outermost));
  return inner + DimensionDiameter(outermost);
}

// One instance cut into halves, links counted one way across the cut:
//   ring: 2 links (1 one way round, or when n = 2); fully connected: floor(n/2)·ceil(n/2);
//   switch: floor(n/2) NPU links; mesh: the shorter side's links across the longer side's middle
//   (twice with wrap-around when the longer side exceeds 2); fat tree: floor(n/2) NPU links, or
//   half the leaves' up-links when those are fewer (oversubscription).
BytesPerSecond Topology::DimensionBisection(size_t dimension) const {
  const NetworkDimension& dim = spec_.dimensions[dimension];
  const BytesPerSecond connection = dim.link_bandwidth * static_cast<double>(dim.links);
  const int64_t n = dim.npus;
  double crossing = 0;
  switch (dim.topology) {
    case TopologyKind::kRing:
      crossing = dim.bidirectional && n > 2 ? 2 : 1;
      break;
    case TopologyKind::kFullyConnected:
      crossing = static_cast<double>((n / 2) * (n - n / 2));
      break;
    case TopologyKind::kSwitch:
      crossing = static_cast<double>(layouts_[dimension].hosts / 2);
      break;
    case TopologyKind::kMesh2d:
    case TopologyKind::kTorus2d: {
      const int64_t longer = std::max(dim.x, dim.y);
      const int64_t shorter = std::min(dim.x, dim.y);
      const bool wrap = dim.topology == TopologyKind::kTorus2d && longer > 2;
      crossing = static_cast<double>(shorter * (wrap ? 2 : 1));
      break;
    }
    case TopologyKind::kFatTree: {
      const DimensionLayout& layout = layouts_[dimension];
      const int64_t hosts = layout.hosts;
      const int64_t uplinks = layout.tiers > 1 ? layout.leaves * layout.ports.up : hosts;
      crossing = static_cast<double>(std::min(hosts / 2, uplinks / 2));
      break;
    }
  }
  return connection * crossing;
}

BytesPerSecond Topology::BisectionBandwidth() const {
  BytesPerSecond least;
  bool any = false;
  for (size_t d = 0; d < spec_.dimensions.size(); ++d) {
    if (spec_.dimensions[d].npus < 2) continue;
    const BytesPerSecond cut = DimensionBisection(d) * static_cast<double>(layouts_[d].instances);
    if (!any || cut < least) least = cut;
    any = true;
  }
  return least;
}

}  // namespace projector
