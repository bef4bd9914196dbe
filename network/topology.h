// Topology: the physical links of a NetworkSpec built explicitly, and routes over them.
// Nodes are the NPUs (ids 0..N-1, dimension 0's coordinate varying fastest) and then the
// switches; every link is directed and carries one connection's bandwidth (links x link
// bandwidth) and one hop's latency. Routes go dimension by dimension, innermost first, and
// inside a dimension by its topology's rule:
//
//   ring      the shorter way round (forward on a tie; forward only when unidirectional)
//   fully_connected, switch   directly, or through the dimension's switch
//   mesh2d    XY: along x to the target column, then along y      0 - 1 - 2 - 3
//   torus2d   XY, each axis the shorter way round (wrap links)     |   |   |   |
//   fat_tree  up to the lowest common tier and down (the up-link   4 - 5 - 6 - 7   1 -> 7:
//             picked by the destination, D-mod-k)                  ...             1, 2, 3, 7
// A shared (not rail-optimised) fabric reaches every NPU of its block directly: when it is the
// outermost dimension two NPUs differ in, the route takes it without crossing the inner ones.
//
// ShortestRoute (breadth-first search) is the fallback that any routing can be checked against.
// Immutable after Build; routing allocates only the caller's path vector.
#ifndef PROJECTOR_NETWORK_TOPOLOGY_H_
#define PROJECTOR_NETWORK_TOPOLOGY_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/units.h"
#include "network/network_spec.h"

namespace projector {

struct NetworkLink {
  int32_t from = 0;
  int32_t to = 0;
  int32_t dimension = 0;
  BytesPerSecond bandwidth;  // one direction: links x link bandwidth
  Seconds latency;
};

// What a node is: an NPU, or a switch of one dimension's instance (tier 1 = the switch NPUs
// attach to: a `switch` dimension's switch, a fat tree's leaf; 2 = spine or aggregation;
// 3 = core).
struct NodeInfo {
  bool is_switch = false;
  int32_t dimension = -1;  // switches only
  int32_t tier = 0;
  int64_t instance = 0;  // which instance of the dimension
  int64_t index = 0;     // NPU id, or the switch's index inside its tier
};

class Topology {
 public:
  // Precondition: ValidateNetworkSpec(spec) is OK.
  explicit Topology(NetworkSpec spec);

  const NetworkSpec& spec() const { return spec_; }
  int64_t npu_count() const { return npu_count_; }
  int64_t node_count() const { return static_cast<int64_t>(out_offsets_.size()) - 1; }
  int64_t switch_count() const { return node_count() - npu_count_; }
  std::span<const NetworkLink> links() const { return links_; }
  // Links of one dimension (all its instances).
  int64_t LinkCount(size_t dimension) const;

  // NPU `npu`'s coordinate in `dimension`, and the id distance between neighbours in it.
  int64_t Coordinate(int64_t npu, size_t dimension) const;
  int64_t Stride(size_t dimension) const { return strides_[dimension]; }
  // Tiers of a fat-tree dimension's switches (1, 2 or 3); 0 for other topologies.
  int FatTreeTiers(size_t dimension) const;
  // Instances of a dimension's fabric (fewer when it is shared, not rail-optimised).
  int64_t Instances(size_t dimension) const { return layouts_[dimension].instances; }

  // The link ids from `from` to `to` (NPU ids), dimension-order routed; empty when equal.
  // Precondition: both in [0, npu_count()).
  void Route(int64_t from, int64_t to, std::vector<int32_t>& path) const;
  std::vector<int32_t> Route(int64_t from, int64_t to) const;
  // The same by breadth-first search over every node: a path with the fewest hops.
  std::vector<int32_t> ShortestRoute(int64_t from, int64_t to) const;
  // Id of the link from node `from` to node `to`; -1 when there is none.
  int32_t LinkBetween(int64_t from, int64_t to) const;
  // Precondition: 0 <= node < node_count().
  NodeInfo DescribeNode(int64_t node) const;
  // "npu 29 [5,3]" (id and coordinates), "dim 1 leaf 0 #5" (the switch's dimension, tier name,
  // index and instance).
  std::string NodeName(int64_t node) const;
  // Node ids a path visits, `from` first.
  std::vector<int64_t> PathNodes(int64_t from, std::span<const int32_t> path) const;

  // Most hops of a dimension-order route between two NPUs: the sum of each dimension's
  // diameter (ring n/2 or n-1 one way, fully connected 1, switch 2, mesh (x-1)+(y-1),
  // torus x/2+y/2, fat tree 2 per tier); with a shared (not rail-optimised) outermost fabric,
  // the larger of it and the inner dimensions' sum.
  int64_t Diameter() const;
  int64_t DimensionDiameter(size_t dimension) const;
  // Bandwidth across the worst cut into two halves of the NPUs, one direction: the least over
  // dimensions of (instances x one instance's bisection).
  BytesPerSecond BisectionBandwidth() const;
  BytesPerSecond DimensionBisection(size_t dimension) const;

 private:
  struct DimensionLayout {
    int64_t stride = 1;
    int64_t instances = 1;
    int64_t hosts = 1;         // NPUs on one instance's fabric (npus, or npus x inner NPUs shared)
    bool shared = false;       // not rail-optimised: one fabric for every inner position
    int64_t first_switch = 0;  // node id of instance 0's first switch
    int64_t switches_per_instance = 0;
    int64_t leaves = 0;  // fat tree: leaf switches, pods, tiers
    int64_t pods = 0;
    int tiers = 0;
    LeafPorts ports;         // fat tree: a leaf's ports down and up
    int64_t pod_leaves = 1;  // fat tree: leaves per pod (radix / 2)
  };

  void BuildDimension(size_t dimension);
  void AddLink(int64_t from, int64_t to, size_t dimension);
  void AddConnection(int64_t a, int64_t b, size_t dimension);
  void IndexLinks();
  // An NPU's index on its instance's fabric (its coordinate; on a shared fabric its offset in
  // the block of NPUs the fabric serves), and the NPU at index `local` of that instance.
  int64_t LocalIndex(int64_t npu, size_t dimension) const;
  int64_t Member(int64_t npu, size_t dimension, int64_t local) const;
  int64_t SwitchOf(int64_t npu, size_t dimension, int64_t index) const;
  void RouteInDimension(int64_t from, int64_t to, size_t dimension,
                        std::vector<int32_t>& path) const;
  void Hop(int64_t& at, int64_t next, std::vector<int32_t>& path) const;
  void RouteFatTree(int64_t from, int64_t to, size_t dimension, std::vector<int32_t>& path) const;

  NetworkSpec spec_;
  int64_t npu_count_ = 0;
  std::vector<int64_t> strides_;
  std::vector<DimensionLayout> layouts_;
  std::vector<NetworkLink> links_;
  std::vector<int64_t> out_offsets_;  // CSR over links sorted by `from`
  std::vector<int32_t> out_links_;
};

}  // namespace projector

#endif  // PROJECTOR_NETWORK_TOPOLOGY_H_
