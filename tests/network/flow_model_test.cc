#include "network/flow_model.h"

#include <vector>

#include "gtest/gtest.h"
#include "network/topology.h"
#include "tests/testing/network_specs.h"

namespace projector {
namespace {

NetworkSpec OneDimension(TopologyKind kind, int64_t npus, double gbps, double latency_ns,
                         bool bidirectional = true) {
  return testing::OneDimensionNetwork(kind, npus, gbps, latency_ns, bidirectional);
}

// 1 GB over two 100 GB/s links (NPU -> switch -> NPU): 10 ms, plus 2 x 500 ns.
TEST(FlowModelTest, OneFlowTakesBytesOverBandwidthPlusRouteLatency) {
  const Topology t(OneDimension(TopologyKind::kSwitch, 8, 100, 500));
  FlowModel model(t);
  const std::vector<Flow> flows = {{0, 3, 1e9}};
  const FlowPhaseResult r = model.Run(flows, Congestion::kAware);
  EXPECT_DOUBLE_EQ(r.data_time.value(), 10e-3);
  EXPECT_DOUBLE_EQ(r.latency.value(), 1e-6);
  EXPECT_DOUBLE_EQ(r.time.value(), 10e-3 + 1e-6);
  EXPECT_DOUBLE_EQ(r.busiest_utilisation, 1.0);
}

// Two flows into NPU 2 share the switch's link to it: 50 GB/s each until the 0.5 GB one ends
// (10 ms), then the other's last 0.5 GB at the full 100 GB/s (5 ms).
TEST(FlowModelTest, TwoFlowsShareALinkAndTheSurvivorSpeedsUp) {
  const Topology t(OneDimension(TopologyKind::kSwitch, 4, 100, 0));
  FlowModel model(t);
  const std::vector<Flow> flows = {{0, 2, 1e9}, {1, 2, 0.5e9}};
  EXPECT_DOUBLE_EQ(model.Run(flows, Congestion::kAware).time.value(), 15e-3);
  // Unaware: each as if alone.
  EXPECT_DOUBLE_EQ(model.Run(flows, Congestion::kUnaware).time.value(), 10e-3);
}

// Max-min fairness, not an even split per link. One-way ring 0 -> 1 -> 2 at 100 GB/s:
//   L1 = 0->1 carries f1 (0->2) and f2 (0->1, 2 GB); L2 = 1->2 carries f1, f3, f4 (1->2).
// L2 is the bottleneck: f1, f3, f4 get 100/3 GB/s, and f2 gets what f1 leaves on L1: 200/3.
// All end at 30 ms (1 GB at 100/3, 2 GB at 200/3). Halving L1 per link would give f2 50 GB/s
// and 40 ms.
TEST(FlowModelTest, MaxMinFairSharingGivesTheLeftoverToTheUnbottleneckedFlow) {
  const Topology t(OneDimension(TopologyKind::kRing, 3, 100, 0, /*bidirectional=*/false));
  FlowModel model(t);
  const std::vector<Flow> flows = {{0, 2, 1e9}, {0, 1, 2e9}, {1, 2, 1e9}, {1, 2, 1e9}};
  const FlowPhaseResult r = model.Run(flows, Congestion::kAware);
  EXPECT_NEAR(r.time.value(), 30e-3, 1e-12);
  EXPECT_NEAR(r.busiest_utilisation, 1.0, 1e-9);  // L1 and L2 both full throughout
}

TEST(FlowModelTest, EfficiencyScalesEveryLink) {
  NetworkSpec spec = OneDimension(TopologyKind::kSwitch, 2, 100, 0);
  spec.dimensions[0].efficiency = 0.8;
  const Topology t(spec);
  FlowModel model(t);
  const std::vector<Flow> flows = {{0, 1, 1e9}};
  EXPECT_DOUBLE_EQ(model.Run(flows, Congestion::kAware).time.value(), 1e9 / 80e9);
}

TEST(FlowModelTest, LocalAndEmptyFlowsCostNothing) {
  const Topology t(OneDimension(TopologyKind::kSwitch, 4, 100, 500));
  FlowModel model(t);
  const std::vector<Flow> flows = {{1, 1, 1e9}, {0, 2, 0}};
  const FlowPhaseResult r = model.Run(flows, Congestion::kAware);
  EXPECT_DOUBLE_EQ(r.data_time.value(), 0);
  EXPECT_DOUBLE_EQ(r.time.value(), 1e-6);  // the empty flow's route latency
}

// Loads: what flows at once ask of each link, bytes / capacity. On a switch of 4 at 100 GB/s
// (efficiency 0.5: 50 GB/s carried), 1 GB 0 -> 2 and 0.5 GB 1 -> 2: the uplinks of 0 and 1 take
// 20 and 10 ms, the switch's link to 2 carries both: 30 ms.
TEST(FlowModelTest, LoadsAreBytesOverCapacityPerLink) {
  NetworkSpec spec = OneDimension(TopologyKind::kSwitch, 4, 100, 500);
  spec.dimensions[0].efficiency = 0.5;
  const Topology t(spec);
  FlowModel model(t);
  const std::vector<Flow> flows = {{0, 2, 1e9}, {1, 2, 0.5e9}};
  std::vector<FlowModel::LinkLoad> loads;
  model.LoadsOf(flows, loads);
  ASSERT_EQ(loads.size(), 3u);
  double into_two = 0, total = 0;
  for (const FlowModel::LinkLoad& l : loads) {
    total += l.busy.value();
    if (t.links()[static_cast<size_t>(l.link)].to == 2) into_two = l.busy.value();
  }
  EXPECT_DOUBLE_EQ(into_two, 30e-3);
  EXPECT_DOUBLE_EQ(total, 60e-3);
  // Appended: a second call adds its links after the first's.
  model.LoadsOf(flows, loads);
  EXPECT_EQ(loads.size(), 6u);
}

TEST(FlowModelTest, ParsesCongestionNames) {
  EXPECT_EQ(*ParseCongestion("aware"), Congestion::kAware);
  EXPECT_EQ(*ParseCongestion("unaware"), Congestion::kUnaware);
  EXPECT_FALSE(ParseCongestion("none").ok());
}

}  // namespace
}  // namespace projector
