// Network traffic of the event replay as flows (studies/network_replay.h), in closed form on a
// one-way ring of 4 NPUs at B = 100 GB/s without latency, where every route is the shortest
// way forward: 0 -> 2 crosses 0->1 and 1->2, 2 -> 0 crosses 2->3 and 3->0.
#include "studies/network_replay.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/network_specs.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

constexpr double kB = 100e9;  // B/s
constexpr double kS = 1e9;    // bytes of the collective

NetworkSpec OneWayRing() {
  return testing::OneDimensionNetwork(TopologyKind::kRing, 4, 100, 0, /*bidirectional=*/false);
}

double Sum(const FlowStep& step) {
  double total = 0;
  for (const events::LinkShare& s : step.shares) total += s.share;
  return total;
}

// A ring all-reduce of S over the group {0, 2}: 2(n-1) = 2 steps of S/2 per rank, 0 -> 2 and
// 2 -> 0, each over two links: S/B in all, one flow step (the repeats as one) whose four links
// are each busy S/B. Timed by the medium projection at S/B, the step lasts S/B and takes every
// link whole; at 2·S/B (NCCL's costs beyond the links), half of each.
TEST(NetworkReplayTest, ACollectivesStepsTakeTheirShareOfTheLinks) {
  const NetworkSpec spec = OneWayRing();
  events::TaskGraph graph;
  std::vector<std::string> names;
  NetworkReplay replay(spec, graph, names);
  const ProcessGroup group{.size = 2, .stride = 2};
  auto steps =
      replay.Collective(CollectiveKind::kAllReduce, Bytes(kS), group, 0, 1, Seconds(kS / kB));
  ASSERT_THAT(steps, IsOk());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_DOUBLE_EQ((*steps)[0].duration.value(), kS / kB);
  ASSERT_EQ((*steps)[0].shares.size(), 4u);
  for (const events::LinkShare& s : (*steps)[0].shares) EXPECT_DOUBLE_EQ(s.share, 1.0);
  EXPECT_EQ(replay.links_used(), 4);
  EXPECT_EQ(graph.num_resources(), 4u);
  EXPECT_THAT(names[0], HasSubstr("link npu"));

  steps =
      replay.Collective(CollectiveKind::kAllReduce, Bytes(kS), group, 0, 1, Seconds(2 * kS / kB));
  ASSERT_THAT(steps, IsOk());
  EXPECT_DOUBLE_EQ((*steps)[0].duration.value(), 2 * kS / kB);
  for (const events::LinkShare& s : (*steps)[0].shares) EXPECT_DOUBLE_EQ(s.share, 0.5);
  EXPECT_EQ(replay.links_used(), 4);  // the same links, made once
}

// Two groups at once ({0, 2} and {1, 3}, a stage's two TP positions): every link carries a flow
// of each, 2·S/B of work, more than the S/B the medium projection gives one group alone: the
// step lasts 2·S/B, each link whole.
TEST(NetworkReplayTest, AStagesGroupsTogetherLastAsLongAsTheirBusiestLink) {
  const NetworkSpec spec = OneWayRing();
  events::TaskGraph graph;
  std::vector<std::string> names;
  NetworkReplay replay(spec, graph, names);
  auto steps = replay.Collective(CollectiveKind::kAllReduce, Bytes(kS), {.size = 2, .stride = 2}, 0,
                                 2, Seconds(kS / kB));
  ASSERT_THAT(steps, IsOk());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_DOUBLE_EQ((*steps)[0].duration.value(), 2 * kS / kB);
  EXPECT_DOUBLE_EQ(Sum((*steps)[0]), 4.0);
  // A group beyond the network.
  EXPECT_THAT(replay.Collective(CollectiveKind::kAllReduce, Bytes(kS), {.size = 2, .stride = 2}, 2,
                                2, Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reaches NPU 5")));
  // A collective that takes no time has no steps.
  steps = replay.Collective(CollectiveKind::kAllReduce, Bytes(kS), {.size = 2, .stride = 2}, 0, 1,
                            Seconds(0));
  ASSERT_THAT(steps, IsOk());
  EXPECT_TRUE(steps->empty());
}

// A slowed link: 0->1 at half its rate asks 2·S/B of the step that took S/B: the step lasts 2·S/B,
// whole on 0->1 and half on the other three links. An All-to-All's occupancy stretches likewise.
TEST(NetworkReplayTest, ASlowedLinkLengthensTheStepsThatCrossIt) {
  const NetworkSpec spec = OneWayRing();
  events::TaskGraph graph;
  std::vector<std::string> names;
  NetworkReplay replay(spec, graph, names);
  const Topology& t = replay.topology();
  const std::vector<int32_t> slow = {t.LinkBetween(0, 1)};
  replay.SlowLinks(slow, 2);
  auto steps = replay.Collective(CollectiveKind::kAllReduce, Bytes(kS), {.size = 2, .stride = 2}, 0,
                                 1, Seconds(kS / kB));
  ASSERT_THAT(steps, IsOk());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_DOUBLE_EQ((*steps)[0].duration.value(), 2 * kS / kB);
  EXPECT_DOUBLE_EQ(Sum((*steps)[0]), 1.0 + 3 * 0.5);
  auto a2a = replay.Occupancy(CollectiveKind::kAllToAll, {.size = 4, .stride = 1}, 0, 1);
  ASSERT_THAT(a2a, IsOk());
  EXPECT_GT((*a2a)->stretch, 1.0);
  for (const events::LinkShare& share : (*a2a)->shares) EXPECT_LE(share.share, 1.0);
}

// Transfers of 1 GB from NPUs 0 and 1 to 2 and 3 at once: 0 -> 2 crosses 0->1 and 1->2, 1 -> 3
// crosses 1->2 and 2->3, so 1->2 carries 2 GB: 20 ms, twice one transfer's 10 ms; the other two
// links are busy half of it.
TEST(NetworkReplayTest, TransfersOfAStageShareTheLinksTheyCross) {
  const NetworkSpec spec = OneWayRing();
  events::TaskGraph graph;
  std::vector<std::string> names;
  NetworkReplay replay(spec, graph, names);
  const FlowStep& step = replay.Transfers(0, 2, 2, Bytes(1e9), Seconds(10e-3));
  EXPECT_DOUBLE_EQ(step.duration.value(), 20e-3);
  ASSERT_EQ(step.shares.size(), 3u);
  EXPECT_DOUBLE_EQ(Sum(step), 2.0);
  const FlowStep& one = replay.Transfers(0, 2, 1, Bytes(1e9), Seconds(10e-3));
  EXPECT_DOUBLE_EQ(one.duration.value(), 10e-3);
  EXPECT_DOUBLE_EQ(Sum(one), 2.0);  // two links, each whole
}

}  // namespace
}  // namespace projector
