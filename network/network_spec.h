// NetworkSpec: a cluster network as a stack of dimensions, innermost first (ASTRA-sim's
// multi-dimensional model): NPU i has one coordinate per dimension, dimension 0 varying fastest,
// and the NPUs that differ only in dimension d form one instance of d's topology. A DGX pod is
// {switch of 8 (NVSwitch), fat_tree of N nodes (one rail per local rank)}; a TPU-style slice is
// {torus2d 16x16}. Plain data and its validation; network/topology.h builds the links.
#ifndef PROJECTOR_NETWORK_NETWORK_SPEC_H_
#define PROJECTOR_NETWORK_NETWORK_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/units.h"

namespace projector {

enum class TopologyKind { kRing, kFullyConnected, kSwitch, kMesh2d, kTorus2d, kFatTree };
inline constexpr std::string_view kTopologyNames[] = {"ring",   "fully_connected", "switch",
                                                      "mesh2d", "torus2d",         "fat_tree"};
std::string_view TopologyName(TopologyKind kind);
// kInvalidArgument "unknown topology 'x'; accepted: ring, ...".
absl::StatusOr<TopologyKind> ParseTopology(std::string_view name);

// What a dimension's links are, for the collective library's per-step costs (NCCL tunes NVLink,
// PCIe and network hops apart). kAuto: dimension 0 is NVLink-class scale-up, the others network.
enum class LinkType { kAuto, kNvlink, kPcie, kNetwork };
inline constexpr std::string_view kLinkTypeNames[] = {"auto", "nvlink", "pcie", "network"};
std::string_view LinkTypeName(LinkType type);
absl::StatusOr<LinkType> ParseLinkType(std::string_view name);

struct NetworkDimension {
  TopologyKind topology = TopologyKind::kSwitch;
  std::string label;          // for people: "NVLink 4 + NVSwitch"; empty = the topology's name
  int64_t npus = 1;           // NPUs in one instance (x·y for mesh2d and torus2d)
  int64_t x = 0;              // mesh2d / torus2d: columns (0 for the others)
  int64_t y = 0;              // mesh2d / torus2d: rows
  bool bidirectional = true;  // ring: a link each way between neighbours (false: one way)
  // One link, one direction, and the parallel links on every connection an NPU has in this
  // dimension (to a ring, mesh or torus neighbour, to each peer when fully connected, to its
  // switch); a connection carries links · link_bandwidth each way.
  BytesPerSecond link_bandwidth;
  int64_t links = 1;
  Seconds link_latency;  // one hop (one link), per message
  // switch and fat_tree beyond dimension 0: one fabric per position in the inner dimensions (a
  // rail per local GPU rank, rail-optimised: true), or one fabric that every NPU of the inner
  // dimensions shares (false: a node's NICs all go to the same leaves, and a route between
  // nodes takes the fabric directly instead of first moving inside the node).
  bool rail_optimized = true;
  // fat_tree: switch ports, and the leaf switches' down:up port ratio (1 = non-blocking).
  int64_t radix = 0;
  double oversubscription = 1;
  LinkType link_type = LinkType::kAuto;
  // switch: the rate at which the switch reduces one NPU's data in an all-reduce (NVLink SHARP /
  // NVLS), GB/s as B/s; 0 = the switch does not reduce.
  BytesPerSecond in_network_reduction;
  // Fraction of the link bandwidth a collective's transfers achieve (measured bus bandwidth over
  // line rate, protocol and headers included); 1 = the ideal link, as ASTRA-sim assumes.
  double efficiency = 1;
};

struct NetworkSpec {
  std::string name;
  std::string source_file;                   // where it was read from; empty when built in code
  std::vector<NetworkDimension> dimensions;  // innermost first

  // Product of the dimensions' NPU counts.
  int64_t NpuCount() const;
  // The dimension's link type with kAuto resolved by position.
  LinkType LinkTypeOf(size_t dimension) const;
};

// Ranges and cross-field checks: at least one dimension, npus >= 1, mesh2d/torus2d with
// x·y == npus (x and y >= 1), positive bandwidth and links, latency >= 0, efficiency in (0, 1],
// fat_tree radix >= 2 and oversubscription >= 1 and its NPUs within what three tiers of that
// radix hold. kInvalidArgument "<origin>: /dimensions/<i>/<field>: <problem>; <accepted>".
absl::Status ValidateNetworkSpec(const NetworkSpec& spec, std::string_view origin);

// Ports of a fat tree's leaf switch that face NPUs and that face the next tier:
// down = round(radix · o / (1 + o)) (at least 1, at most radix - 1), up = radix - down.
struct LeafPorts {
  int64_t down = 1;
  int64_t up = 1;
};
LeafPorts FatTreeLeafPorts(const NetworkDimension& dim);
// Leaves of one pod of a three-tier fat tree (an aggregation switch's down ports): radix / 2.
int64_t FatTreePodLeaves(const NetworkDimension& dim);
// The most NPUs a fat tree of this radix and oversubscription holds in three tiers of folded
// Clos: leaf down ports · (radix / 2 leaves per pod) · (radix pods).
int64_t FatTreeCapacity(const NetworkDimension& dim);
// NPUs attached to one fabric of dimension `d`: its NPU count, times the NPUs of the inner
// dimensions when it is not rail-optimised.
int64_t FabricHosts(const NetworkSpec& spec, size_t d);

}  // namespace projector

#endif  // PROJECTOR_NETWORK_NETWORK_SPEC_H_
