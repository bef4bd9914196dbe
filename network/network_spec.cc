#include "network/network_spec.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/name_table.h"

namespace projector {

std::string_view TopologyName(TopologyKind kind) {
  return kTopologyNames[static_cast<size_t>(kind)];
}

absl::StatusOr<TopologyKind> ParseTopology(std::string_view name) {
  return ParseByName<TopologyKind>(name, kTopologyNames, "topology");
}

std::string_view LinkTypeName(LinkType type) { return kLinkTypeNames[static_cast<size_t>(type)]; }

absl::StatusOr<LinkType> ParseLinkType(std::string_view name) {
  return ParseByName<LinkType>(name, kLinkTypeNames, "link type");
}

LinkType NetworkSpec::LinkTypeOf(size_t dimension) const {
  const LinkType type = dimensions[dimension].link_type;
  if (type != LinkType::kAuto) return type;
  return dimension == 0 ? LinkType::kNvlink : LinkType::kNetwork;
}

int64_t NetworkSpec::NpuCount() const {
  int64_t npus = 1;
  for (const NetworkDimension& dim : dimensions) npus *= dim.npus;
  return npus;
}

LeafPorts FatTreeLeafPorts(const NetworkDimension& dim) {
  const double radix = static_cast<double>(dim.radix);
  const auto down = static_cast<int64_t>(
      std::llround(radix * dim.oversubscription / (1.0 + dim.oversubscription)));
  const int64_t clamped = std::clamp<int64_t>(down, 1, std::max<int64_t>(1, dim.radix - 1));
  return {.down = clamped, .up = std::max<int64_t>(1, dim.radix - clamped)};
}

int64_t FabricHosts(const NetworkSpec& spec, size_t d) {
  int64_t hosts = spec.dimensions[d].npus;
  if (!spec.dimensions[d].rail_optimized) {
    for (size_t inner = 0; inner < d; ++inner) hosts *= spec.dimensions[inner].npus;
  }
  return hosts;
}

int64_t FatTreePodLeaves(const NetworkDimension& dim) {
  return std::max<int64_t>(1, dim.radix / 2);
}

int64_t FatTreeCapacity(const NetworkDimension& dim) {
  return FatTreeLeafPorts(dim).down * FatTreePodLeaves(dim) * dim.radix;
}

namespace {

absl::Status DimensionError(std::string_view origin, size_t index, std::string_view field,
                            std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(origin), ": /dimensions/", index, "/",
                                                 std::string(field), ": ", std::string(problem)));
}

absl::Status ValidateGrid(const NetworkDimension& dim, std::string_view origin, size_t index) {
  if (dim.x < 1) return DimensionError(origin, index, "x", "must be an integer >= 1");
  if (dim.y < 1) return DimensionError(origin, index, "y", "must be an integer >= 1");
  if (dim.x * dim.y != dim.npus) {
    return DimensionError(origin, index, "npus",
                          absl::StrCat(dim.npus, " is not x*y = ", dim.x, "*", dim.y, " = ",
                                       dim.x * dim.y, "; give npus = x*y or leave it out"));
  }
  return absl::OkStatus();
}

absl::Status ValidateFatTree(const NetworkDimension& dim, int64_t hosts, std::string_view origin,
                             size_t index) {
  if (dim.radix < 2) {
    return DimensionError(origin, index, "radix",
                          absl::StrCat(dim.radix, " ports; a fat tree's switches need >= 2"));
  }
  if (!(dim.oversubscription >= 1)) {
    return DimensionError(origin, index, "oversubscription",
                          absl::StrCat(dim.oversubscription,
                                       "; accepted: >= 1 (down:up ports of a leaf, 1 = "
                                       "non-blocking)"));
  }
  if (hosts > FatTreeCapacity(dim)) {
    return DimensionError(
        origin, index, "npus",
        absl::StrCat(hosts, " NPUs do not fit a three-tier fat tree of radix ", dim.radix,
                     " (at most ", FatTreeCapacity(dim), "); raise radix or add a dimension"));
  }
  return absl::OkStatus();
}

absl::Status ValidateDimension(const NetworkDimension& dim, int64_t hosts, std::string_view origin,
                               size_t index) {
  if (dim.npus < 1) return DimensionError(origin, index, "npus", "must be an integer >= 1");
  if (!(dim.link_bandwidth.value() > 0) || !std::isfinite(dim.link_bandwidth.value())) {
    return DimensionError(origin, index, "bandwidth_gbps",
                          absl::StrCat(dim.link_bandwidth.value() / 1e9,
                                       "; accepted: a bandwidth > 0 (GB/s, one link, one way)"));
  }
  if (dim.links < 1) return DimensionError(origin, index, "links", "must be an integer >= 1");
  if (!(dim.link_latency.value() >= 0) || !std::isfinite(dim.link_latency.value())) {
    return DimensionError(origin, index, "latency_ns", "must be a number >= 0 (ns)");
  }
  if (!(dim.in_network_reduction.value() >= 0) ||
      !std::isfinite(dim.in_network_reduction.value())) {
    return DimensionError(origin, index, "in_network_reduction_gbps", "must be a rate >= 0 (GB/s)");
  }
  if (dim.in_network_reduction.value() > 0 && dim.topology != TopologyKind::kSwitch) {
    return DimensionError(origin, index, "in_network_reduction_gbps",
                          "only a switch reduces in the network; this dimension is a " +
                              std::string(TopologyName(dim.topology)));
  }
  if (!dim.rail_optimized) {
    if (dim.topology != TopologyKind::kSwitch && dim.topology != TopologyKind::kFatTree) {
      return DimensionError(origin, index, "rail_optimized",
                            "false needs a switch or fat_tree fabric to share");
    }
    if (index == 0) {
      return DimensionError(origin, index, "rail_optimized",
                            "dimension 0 has no inner NPUs to share a fabric with");
    }
  }
  if (!(dim.efficiency > 0 && dim.efficiency <= 1)) {
    return DimensionError(origin, index, "efficiency",
                          absl::StrCat(dim.efficiency, "; accepted: a fraction in (0, 1]"));
  }
  switch (dim.topology) {
    case TopologyKind::kMesh2d:
    case TopologyKind::kTorus2d:
      return ValidateGrid(dim, origin, index);
    case TopologyKind::kFatTree:
      return ValidateFatTree(dim, hosts, origin, index);
    case TopologyKind::kRing:
    case TopologyKind::kFullyConnected:
    case TopologyKind::kSwitch:
      break;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateNetworkSpec(const NetworkSpec& spec, std::string_view origin) {
  if (spec.dimensions.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(origin), ": /dimensions: no dimension; give at least one, innermost first"));
  }
  // Node ids are 32-bit in the built topology, and routing tables are per NPU.
  constexpr int64_t kMaxNpus = int64_t{1} << 24;
  int64_t npus = 1;
  for (size_t i = 0; i < spec.dimensions.size(); ++i) {
    const int64_t hosts = spec.dimensions[i].rail_optimized
                              ? spec.dimensions[i].npus
                              : std::min(spec.dimensions[i].npus, kMaxNpus + 1) * npus;
    if (absl::Status s = ValidateDimension(spec.dimensions[i], hosts, origin, i); !s.ok()) {
      return s;
    }
    npus *= std::min(spec.dimensions[i].npus, kMaxNpus + 1);
    if (npus > kMaxNpus) {
      return DimensionError(origin, i, "npus",
                            absl::StrCat("the dimensions up to this one hold more than ", kMaxNpus,
                                         " NPUs, the most a network may have"));
    }
  }
  return absl::OkStatus();
}

}  // namespace projector
