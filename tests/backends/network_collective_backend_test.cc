#include "backends/simulate/network_collective_backend.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "network/hardware_network.h"
#include "tests/testing/network_hardware.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

// 2 nodes: {switch of 8 at 100 GB/s, 500 ns a link} x {switch of 2 at 10 GB/s, no latency}.
NetworkSpec TwoNodes() {
  NetworkDimension node;
  node.topology = TopologyKind::kSwitch;
  node.npus = 8;
  node.link_bandwidth = GigabytesPerSecond(100);
  NetworkDimension nics = node;
  nics.npus = 2;
  nics.link_bandwidth = GigabytesPerSecond(10);
  node.link_latency = Seconds(500e-9);
  NetworkSpec spec;
  spec.name = "two-nodes";
  spec.dimensions = {node, nics};
  return spec;
}

// A TP all-reduce of 1 GB inside a node, with NCCL's costs: a ring (NCCL runs no direct
// all-reduce; this switch does not reduce, so no NVLS), 2 · 7/8 GB at 100 GB/s = 17.5 ms, its
// 14 steps over 2 links of 500 ns (14 us), Simple's launch 8.4 us and 14 NVLink steps of 3.4 us
// (LL128's 0.92 share costs more at this size), plus the profile's kernel launch (2.8 us).
TEST(NetworkCollectiveBackendTest, PricesAGroupOnTheNetworkPlusOneLaunch) {
  const HardwareProfile hw = testing::EightGpuNodeWithRailNics();
  const auto backend = MakeNetworkCollectiveBackend(hw, TwoNodes());
  const CollectiveOp tp{
      .kind = CollectiveKind::kAllReduce, .bytes = Bytes(1e9), .group = {.size = 8, .stride = 1}};
  const auto e = backend->Estimate(tp);
  ASSERT_THAT(e, IsOk());
  EXPECT_NEAR(e->time.value(), 17.5e-3 + 14e-6 + 8.4e-6 + 14 * 3.4e-6 + 2.8e-6, 1e-12);
  EXPECT_EQ(e->algorithm, CollectiveAlgorithm::kRing);
  EXPECT_EQ(e->nodes_spanned, 1);
  EXPECT_EQ(e->ranks_per_node, 8);
  EXPECT_EQ(backend->name(), "network");
}

// A DP group {2, stride 8} crosses the nodes on one rail: all-gather of 1 GB output at
// 10 GB/s: 1/2 GB / 10 GB/s = 50 ms; one ring step over the network (Simple: 8.4 + 14 us).
TEST(NetworkCollectiveBackendTest, StridedGroupCrossesNodes) {
  const auto backend =
      MakeNetworkCollectiveBackend(testing::EightGpuNodeWithRailNics(), TwoNodes());
  const CollectiveOp dp{
      .kind = CollectiveKind::kAllGather, .bytes = Bytes(1e9), .group = {.size = 2, .stride = 8}};
  const auto e = backend->Estimate(dp);
  ASSERT_THAT(e, IsOk());
  EXPECT_NEAR(e->time.value(), 50e-3 + 8.4e-6 + 14e-6 + 2.8e-6, 1e-12);
  EXPECT_EQ(e->nodes_spanned, 2);
  const std::vector<CollectiveDecision> decisions = backend->Decisions();
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].placement, "dim 1 x 2");
}

// DeepEP's PXN all-to-all is the hierarchical one: inside the node first, then across.
TEST(NetworkCollectiveBackendTest, PxnIsTheHierarchicalAllToAll) {
  const auto backend =
      MakeNetworkCollectiveBackend(testing::EightGpuNodeWithRailNics(), TwoNodes());
  const CollectiveOp ep{
      .kind = CollectiveKind::kAllToAll, .bytes = Bytes(1e9), .group = {.size = 16, .stride = 1}};
  const auto e = backend->Estimate(ep, CollectiveAlgorithm::kPxn);
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->algorithm, CollectiveAlgorithm::kHierarchical);
  // Inside: 7/8 GB at 100 GB/s = 8.75 ms and 2 links of 500 ns; across: 1/2 GB at 10 GB/s
  // = 50 ms. NCCL pipelines the two phases over ceil(1 GB / 4 MiB) = 239 chunks: the slower
  // phase's 50 ms plus 8.75 ms / 239; Simple: launch 8.4 us, one NVLink step 3.4 us, one network
  // step 14 us.
  EXPECT_NEAR(e->time.value(), 50e-3 + 8.75e-3 / 239 + 1e-6 + (8.4 + 3.4 + 14) * 1e-6 + 2.8e-6,
              1e-12);
}

// DeepEP's low-latency copies on an explicit network: every rank straight to every peer.
TEST(NetworkCollectiveBackendTest, LowLatencyIsTheDirectAllToAll) {
  const auto backend =
      MakeNetworkCollectiveBackend(testing::EightGpuNodeWithRailNics(), TwoNodes());
  const CollectiveOp ep{
      .kind = CollectiveKind::kAllToAll, .bytes = Bytes(1e9), .group = {.size = 16, .stride = 1}};
  const auto low_latency = backend->Estimate(ep, CollectiveAlgorithm::kLowLatency);
  const auto direct = backend->Estimate(ep, CollectiveAlgorithm::kDirect);
  ASSERT_THAT(low_latency, IsOk());
  ASSERT_THAT(direct, IsOk());
  EXPECT_EQ(low_latency->algorithm, CollectiveAlgorithm::kDirect);
  EXPECT_EQ(low_latency->time, direct->time);
}

TEST(NetworkCollectiveBackendTest, GroupBeyondTheNetworkIsRefused) {
  const auto backend =
      MakeNetworkCollectiveBackend(testing::EightGpuNodeWithRailNics(), TwoNodes());
  const CollectiveOp big{
      .kind = CollectiveKind::kAllReduce, .bytes = Bytes(1e6), .group = {.size = 4, .stride = 8}};
  EXPECT_THAT(backend->Estimate(big),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has 16 NPUs")));
}

// The profile's built-in network as a spec: NVSwitch fabric then a rail switch per local rank,
// the per-GPU NIC share, latencies split over a switch's two links.
TEST(HardwareNetworkTest, ProfileNetworkAsTwoDimensions) {
  HardwareProfile hw = testing::EightGpuNodeWithRailNics();
  hw.name = "h100-like";
  hw.scale_up.topology = FabricTopology::kSwitch;
  hw.scale_up.per_link_bandwidth = GigabytesPerSecond(25);
  hw.scale_up.links_per_gpu = 18;
  hw.scale_up.latency = Microseconds(0.45);
  hw.scale_up.allreduce_efficiency = 0.82;
  const absl::StatusOr<NetworkSpec> spec = NetworkFromHardware(hw, 32);
  ASSERT_THAT(spec, IsOk());
  ASSERT_EQ(spec->dimensions.size(), 2u);
  EXPECT_EQ(spec->dimensions[0].topology, TopologyKind::kSwitch);
  EXPECT_EQ(spec->dimensions[0].links, 18);
  EXPECT_DOUBLE_EQ(spec->dimensions[0].link_latency.value(), 0.225e-6);
  EXPECT_DOUBLE_EQ(spec->dimensions[0].efficiency, 0.82);
  EXPECT_EQ(spec->dimensions[1].npus, 4);
  EXPECT_DOUBLE_EQ(spec->dimensions[1].link_bandwidth.value(), 50e9);  // 8 x 400 Gb/s / 8
  EXPECT_DOUBLE_EQ(spec->dimensions[1].efficiency, 0.73);
  EXPECT_EQ(NetworkFromHardware(hw, 4)->dimensions.size(), 1u);  // half a node
  EXPECT_THAT(NetworkFromHardware(hw, 12),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("do not fill whole nodes")));
  // A full mesh: one link per peer.
  hw.scale_up.topology = FabricTopology::kFullMesh;
  EXPECT_EQ(NetworkFromHardware(hw, 8)->dimensions[0].topology, TopologyKind::kFullyConnected);
}

}  // namespace
}  // namespace projector
