#include "network/topology.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "network/network_spec.h"

namespace projector {
namespace {

using ::testing::ElementsAre;

NetworkDimension Dim(TopologyKind kind, int64_t npus) {
  NetworkDimension dim;
  dim.topology = kind;
  dim.npus = npus;
  dim.link_bandwidth = GigabytesPerSecond(100);
  dim.link_latency = Seconds(500e-9);
  return dim;
}

NetworkDimension Grid(TopologyKind kind, int64_t x, int64_t y) {
  NetworkDimension dim = Dim(kind, x * y);
  dim.x = x;
  dim.y = y;
  return dim;
}

NetworkDimension FatTree(int64_t npus, int64_t radix, double oversubscription = 1) {
  NetworkDimension dim = Dim(TopologyKind::kFatTree, npus);
  dim.radix = radix;
  dim.oversubscription = oversubscription;
  return dim;
}

Topology Build(std::vector<NetworkDimension> dims) {
  NetworkSpec spec;
  spec.name = "test";
  spec.dimensions = std::move(dims);
  EXPECT_TRUE(ValidateNetworkSpec(spec, "test").ok());
  return Topology(std::move(spec));
}

std::vector<int64_t> RouteNodes(const Topology& t, int64_t from, int64_t to) {
  return t.PathNodes(from, t.Route(from, to));
}

// Directed link counts by hand: a connection is two links.
TEST(TopologyTest, RingLinksDiameterAndShorterWayRound) {
  const Topology ring = Build({Dim(TopologyKind::kRing, 8)});
  EXPECT_EQ(ring.links().size(), 16u);  // 8 connections
  EXPECT_EQ(ring.Diameter(), 4);        // n/2
  EXPECT_THAT(RouteNodes(ring, 0, 5), ElementsAre(0, 7, 6, 5));
  EXPECT_THAT(RouteNodes(ring, 0, 4), ElementsAre(0, 1, 2, 3, 4));  // tie: forward
}

TEST(TopologyTest, UnidirectionalRingGoesForwardOnly) {
  NetworkDimension dim = Dim(TopologyKind::kRing, 8);
  dim.bidirectional = false;
  const Topology ring = Build({dim});
  EXPECT_EQ(ring.links().size(), 8u);
  EXPECT_EQ(ring.Diameter(), 7);
  EXPECT_EQ(ring.Route(1, 0).size(), 7u);
  EXPECT_EQ(ring.LinkBetween(1, 0), -1);
}

TEST(TopologyTest, RingOfTwoIsOneConnection) {
  EXPECT_EQ(Build({Dim(TopologyKind::kRing, 2)}).links().size(), 2u);
}

TEST(TopologyTest, FullyConnectedAndSwitch) {
  const Topology fc = Build({Dim(TopologyKind::kFullyConnected, 8)});
  EXPECT_EQ(fc.links().size(), 56u);  // n(n-1)
  EXPECT_EQ(fc.Diameter(), 1);
  EXPECT_EQ(fc.switch_count(), 0);
  const Topology sw = Build({Dim(TopologyKind::kSwitch, 8)});
  EXPECT_EQ(sw.links().size(), 16u);  // one up and one down per NPU
  EXPECT_EQ(sw.switch_count(), 1);
  EXPECT_EQ(sw.Diameter(), 2);
  EXPECT_THAT(RouteNodes(sw, 3, 6), ElementsAre(3, 8, 6));
}

// 4x4 mesh, ids ix + 4·iy:   0  1  2  3
//                            4  5  6  7
// XY: along the row to column 3, then down.
TEST(TopologyTest, MeshXyRouting) {
  const Topology mesh = Build({Grid(TopologyKind::kMesh2d, 4, 4)});
  EXPECT_EQ(mesh.links().size(), 48u);  // 2·(3·4 + 4·3)
  EXPECT_EQ(mesh.Diameter(), 6);        // (x-1) + (y-1)
  EXPECT_THAT(RouteNodes(mesh, 1, 7), ElementsAre(1, 2, 3, 7));
  EXPECT_THAT(RouteNodes(mesh, 15, 0), ElementsAre(15, 14, 13, 12, 8, 4, 0));
}

TEST(TopologyTest, TorusWrapsAround) {
  const Topology torus = Build({Grid(TopologyKind::kTorus2d, 4, 4)});
  EXPECT_EQ(torus.links().size(), 64u);                             // 2·(4·4 + 4·4)
  EXPECT_EQ(torus.Diameter(), 4);                                   // x/2 + y/2
  EXPECT_THAT(RouteNodes(torus, 0, 3), ElementsAre(0, 3));          // x wrap
  EXPECT_THAT(RouteNodes(torus, 0, 12), ElementsAre(0, 12));        // y wrap
  EXPECT_THAT(RouteNodes(torus, 1, 15), ElementsAre(1, 2, 3, 15));  // x: a tie, forward
  // A side of two has no separate wrap link: 2x3 torus = 2·(3·1 + 2·3) links.
  EXPECT_EQ(Build({Grid(TopologyKind::kTorus2d, 2, 3)}).links().size(), 18u);
}

// 16 NPUs, radix 8, non-blocking: leaves of 4 down / 4 up ports, 4 leaves <= radix: two tiers,
// 4 spines. Connections: 16 NPU + 4·4 leaf-spine = 32.
TEST(TopologyTest, TwoTierFatTree) {
  const Topology tree = Build({FatTree(16, 8)});
  EXPECT_EQ(tree.FatTreeTiers(0), 2);
  EXPECT_EQ(tree.switch_count(), 8);
  EXPECT_EQ(tree.links().size(), 64u);
  EXPECT_EQ(tree.Diameter(), 4);
  // 0 -> 5: leaf 0 (node 16), spine 5 mod 4 = 1 (node 16 + 4 + 1), leaf 1 (node 17).
  EXPECT_THAT(RouteNodes(tree, 0, 5), ElementsAre(0, 16, 21, 17, 5));
  EXPECT_THAT(RouteNodes(tree, 0, 1), ElementsAre(0, 16, 1));
  // Four leaves' up-links (16) carry half the NPUs' traffic: 8 x 100 GB/s.
  EXPECT_DOUBLE_EQ(tree.BisectionBandwidth().value(), 8 * 100e9);
}

// The classic k = 4 fat tree (Al-Fares et al. 2008): 16 hosts, 8 edge, 8 aggregation and 4 core
// switches, 48 connections.
TEST(TopologyTest, ThreeTierFatTreeIsTheClassicKAryTree) {
  const Topology tree = Build({FatTree(16, 4)});
  EXPECT_EQ(tree.FatTreeTiers(0), 3);
  EXPECT_EQ(tree.switch_count(), 20);
  EXPECT_EQ(tree.links().size(), 96u);
  EXPECT_EQ(tree.Diameter(), 6);
  EXPECT_EQ(tree.Route(0, 15).size(), 6u);
  EXPECT_EQ(tree.Route(0, 3).size(), 4u);  // same pod
}

TEST(TopologyTest, OversubscribedLeavesHaveFewerUplinks) {
  // radix 8 at 3:1: 6 down, 2 up; 12 NPUs on 2 leaves; 2 spines.
  const Topology tree = Build({FatTree(12, 8, 3)});
  EXPECT_EQ(FatTreeLeafPorts(tree.spec().dimensions[0]).down, 6);
  EXPECT_EQ(tree.switch_count(), 4);
  // Bisection: min(12/2 NPU links, 2 leaves · 2 up / 2) = 2 links.
  EXPECT_DOUBLE_EQ(tree.BisectionBandwidth().value(), 2 * 100e9);
}

// Every dimension-order route is a shortest path on these topologies (BFS as the check).
TEST(TopologyTest, DimensionOrderRoutesAreShortest) {
  const std::vector<std::vector<NetworkDimension>> networks = {
      {Dim(TopologyKind::kRing, 7)},
      {Grid(TopologyKind::kMesh2d, 3, 4)},
      {Grid(TopologyKind::kTorus2d, 5, 4)},
      {FatTree(16, 4)},
      {Dim(TopologyKind::kSwitch, 4), Dim(TopologyKind::kRing, 3),
       Dim(TopologyKind::kFullyConnected, 2)}};
  for (const auto& dims : networks) {
    const Topology t = Build(dims);
    for (int64_t a = 0; a < t.npu_count(); ++a) {
      for (int64_t b = 0; b < t.npu_count(); ++b) {
        const std::vector<int32_t> path = t.Route(a, b);
        ASSERT_EQ(path.size(), t.ShortestRoute(a, b).size()) << a << " -> " << b;
        for (const int32_t link : path) ASSERT_GE(link, 0);
        ASSERT_EQ(t.PathNodes(a, path).back(), b);
      }
    }
  }
}

// Dimension order: NPU 0 -> 29 on {switch 8, fat tree 4}: 29 = 5 + 8·3. Inside the node to
// local rank 5 (through the switch, node 32), then rail 5's one-leaf tree (node 36 + 5: one switch
// per instance, after the 4 node switches).
TEST(TopologyTest, StackedDimensionsRouteInnermostFirst) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8), FatTree(4, 8)});
  EXPECT_EQ(t.npu_count(), 32);
  EXPECT_EQ(t.Coordinate(29, 0), 5);
  EXPECT_EQ(t.Coordinate(29, 1), 3);
  EXPECT_THAT(RouteNodes(t, 0, 29), ElementsAre(0, 32, 5, 41, 29));
  EXPECT_EQ(t.Diameter(), 4);
}

// {switch 8 at 400 GB/s} x {ring 4 at 50 GB/s}: cutting the ring dimension crosses
// 8 rings · 2 links · 50 GB/s = 800 GB/s; cutting the switches 4 · 4 · 400 = 6,400 GB/s.
TEST(TopologyTest, BisectionIsTheWeakestDimensionsCut) {
  NetworkDimension inner = Dim(TopologyKind::kSwitch, 8);
  inner.link_bandwidth = GigabytesPerSecond(400);
  NetworkDimension outer = Dim(TopologyKind::kRing, 4);
  outer.link_bandwidth = GigabytesPerSecond(50);
  const Topology t = Build({inner, outer});
  EXPECT_DOUBLE_EQ(t.DimensionBisection(0).value(), 4 * 400e9);
  EXPECT_DOUBLE_EQ(t.BisectionBandwidth().value(), 800e9);
}

TEST(TopologyTest, ParallelLinksMultiplyAConnection) {
  NetworkDimension dim = Dim(TopologyKind::kSwitch, 8);
  dim.links = 18;
  dim.link_bandwidth = GigabytesPerSecond(25);
  const Topology t = Build({dim});
  EXPECT_DOUBLE_EQ(t.links()[0].bandwidth.value(), 450e9);
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// {switch 8} x {fat tree of 4 nodes, radix 8}, not rail-optimised: one tree of 32 host ports
// (leaves of 4 down / 4 up: 8 leaves <= radix, two tiers, 4 spines), a node's 8 NPUs on leaves
// 2k and 2k+1. NPU 0 -> 11 (node 1, local rank 3) takes the tree directly: leaf 0, spine
// 11 mod 4 = 3, leaf 2, NPU 11. Rail-optimised, it first crosses the NVSwitch to local rank 3.
TEST(TopologyTest, SharedScaleOutFabricIsOneTreeForEveryRank) {
  NetworkDimension nodes = FatTree(4, 8);
  nodes.rail_optimized = false;
  const Topology shared = Build({Dim(TopologyKind::kSwitch, 8), nodes});
  EXPECT_EQ(shared.Instances(1), 1);
  EXPECT_EQ(shared.FatTreeTiers(1), 2);
  EXPECT_EQ(shared.switch_count(), 4 + 8 + 4);  // 4 NVSwitches, 8 leaves, 4 spines
  EXPECT_EQ(shared.LinkCount(1), 2 * (32 + 8 * 4));
  // Nodes 32..35 are the NVSwitches, 36..43 the leaves, 44..47 the spines.
  EXPECT_THAT(RouteNodes(shared, 0, 11), ElementsAre(0, 36, 47, 38, 11));
  EXPECT_EQ(shared.Diameter(), 4);  // max(2 through a node's NVSwitch, 4 through the tree)
  const Topology rails = Build({Dim(TopologyKind::kSwitch, 8), FatTree(4, 8)});
  EXPECT_EQ(rails.Instances(1), 8);
  EXPECT_THAT(rails.PathNodes(0, rails.Route(0, 11)).size(), 5u);
  EXPECT_EQ(rails.Route(0, 11).size(), 4u);
  EXPECT_EQ(rails.LinkBetween(0, 32), rails.Route(0, 11)[0]);  // NVSwitch first
}

}  // namespace
}  // namespace projector
