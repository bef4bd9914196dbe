#include "network/collectives.h"

#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;
using Algo = CollectiveAlgorithm;

NetworkDimension Dim(TopologyKind kind, int64_t npus, double gbps, double latency_ns = 0) {
  NetworkDimension dim;
  dim.topology = kind;
  dim.npus = npus;
  dim.link_bandwidth = GigabytesPerSecond(gbps);
  dim.link_latency = Seconds(latency_ns * 1e-9);
  return dim;
}

Topology Build(std::vector<NetworkDimension> dims) {
  NetworkSpec spec;
  spec.name = "test";
  spec.dimensions = std::move(dims);
  return Topology(std::move(spec));
}

std::vector<int64_t> FirstRanks(int64_t n) {
  std::vector<int64_t> ranks(static_cast<size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

absl::StatusOr<NetworkCollectiveEstimate> Collective(const Topology& t, CollectiveKind kind,
                                                     double bytes, std::vector<int64_t> ranks,
                                                     Algo algo,
                                                     Congestion congestion = Congestion::kAware) {
  NetworkCollectives collectives(t);
  return collectives.Estimate({.kind = kind,
                               .bytes = Bytes(bytes),
                               .ranks = std::move(ranks),
                               .algorithm = algo,
                               .congestion = congestion});
}

constexpr double kGB = 1e9;

// On a switch of 8 at B = 100 GB/s every algorithm moves 2(n-1)/n·S through each NPU's link:
// 1.75 · 1 GB / 100 GB/s = 17.5 ms, so busbw = B. Route latency tells them apart: ring
// 14 steps x 2 hops, halving-doubling 6 x 2, direct 2 x 2 (500 ns a hop).
TEST(NetworkCollectivesTest, AllReduceOnASwitchClosedForms) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100, 500)});
  const struct {
    Algo algo;
    int64_t steps;
  } cases[] = {{Algo::kRing, 14}, {Algo::kHalvingDoubling, 6}, {Algo::kDirect, 2}};
  for (const auto& c : cases) {
    const auto e = Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(8), c.algo);
    ASSERT_THAT(e, IsOk());
    EXPECT_NEAR(e->time.value(), 17.5e-3 + static_cast<double>(c.steps) * 2 * 500e-9, 1e-12)
        << CollectiveAlgorithmName(c.algo);
    EXPECT_EQ(e->phases[0].steps, c.steps);
  }
  const auto best = Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(8), Algo::kAuto);
  ASSERT_THAT(best, IsOk());
  EXPECT_EQ(best->algorithm, Algo::kDirect);
  EXPECT_NEAR(best->bus_bandwidth.value(), 1.75 * kGB / (17.5e-3 + 2e-6), 1e3);
}

// A bidirectional ring topology: two counter-rotating rings use both directions of every link,
// S/2n each way per step: 14 · 1 GB / 16 / 100 GB/s = 8.75 ms (busbw 2B). Direct all-pairs
// traffic crowds the forward links (ties go forward) and is slower.
TEST(NetworkCollectivesTest, RingAlgorithmUsesBothDirectionsOfARing) {
  const Topology t = Build({Dim(TopologyKind::kRing, 8, 100)});
  const auto ring = Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(8), Algo::kRing);
  ASSERT_THAT(ring, IsOk());
  EXPECT_NEAR(ring->time.value(), 8.75e-3, 1e-12);
  EXPECT_NEAR(ring->bus_bandwidth.value(), 200 * kGB, 1e3);
  const auto direct = Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(8), Algo::kDirect);
  ASSERT_THAT(direct, IsOk());
  EXPECT_GT(direct->time.value(), ring->time.value());
  // One way round only: S/n per step on one direction, 17.5 ms.
  NetworkDimension one_way = Dim(TopologyKind::kRing, 8, 100);
  one_way.bidirectional = false;
  const auto uni =
      Collective(Build({one_way}), CollectiveKind::kAllReduce, kGB, FirstRanks(8), Algo::kRing);
  ASSERT_THAT(uni, IsOk());
  EXPECT_NEAR(uni->time.value(), 17.5e-3, 1e-12);
}

// 32 NPUs: {switch 8 at 100 GB/s} x {switch 4 at 10 GB/s}. Hierarchical all-reduce of 1 GB:
//   reduce-scatter inside each node:  7/8 · 1 GB / 100 GB/s          =  8.75 ms
//   all-reduce across 4 nodes, 8 rails at once on S/8:
//                                     2 · 3/4 · 0.125 GB / 10 GB/s    = 18.75 ms
//   all-gather inside each node:                                       =  8.75 ms
// = 36.25 ms; a flat ring over the 32 sends S/32 per step across the slow links 62 times.
TEST(NetworkCollectivesTest, HierarchicalAllReduceClosedForm) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100), Dim(TopologyKind::kSwitch, 4, 10)});
  const auto h =
      Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(32), Algo::kHierarchical);
  ASSERT_THAT(h, IsOk());
  ASSERT_EQ(h->phases.size(), 3u);
  EXPECT_NEAR(h->phases[0].time.value(), 8.75e-3, 1e-12);
  EXPECT_NEAR(h->phases[1].time.value(), 18.75e-3, 1e-12);
  EXPECT_EQ(h->phases[1].dimension, 1);
  EXPECT_NEAR(h->time.value(), 36.25e-3, 1e-12);
  const auto best = Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(32), Algo::kAuto);
  ASSERT_THAT(best, IsOk());
  EXPECT_EQ(best->algorithm, Algo::kHierarchical);
  const auto ring = Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(32), Algo::kRing);
  ASSERT_THAT(ring, IsOk());
  EXPECT_GT(ring->time.value(), 2 * h->time.value());
}

// Chunked pipelining of the three phases above (no latency): c chunks take
// sum/c + (c-1)·max/c = 36.25/4 + 3 · 18.75/4 = 23.125 ms.
TEST(NetworkCollectivesTest, ChunksPipelineTheHierarchicalPhases) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100), Dim(TopologyKind::kSwitch, 4, 10)});
  NetworkCollectives collectives(t);
  const auto e = collectives.Estimate({.kind = CollectiveKind::kAllReduce,
                                       .bytes = Bytes(kGB),
                                       .ranks = FirstRanks(32),
                                       .algorithm = Algo::kHierarchical,
                                       .congestion = Congestion::kAware,
                                       .chunks = 4});
  ASSERT_THAT(e, IsOk());
  EXPECT_NEAR(e->time.value(), 23.125e-3, 1e-12);
}

// A strided group (one rank per node: a DP group across 4 nodes) lies on dimension 1 only.
TEST(NetworkCollectivesTest, StridedGroupUsesTheOuterDimension) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100), Dim(TopologyKind::kSwitch, 4, 10)});
  // All-gather of 1 GB output over 4 ranks at 10 GB/s: 3/4 · 1 GB / 10 GB/s = 75 ms.
  const auto e = Collective(t, CollectiveKind::kAllGather, kGB, {3, 11, 19, 27}, Algo::kRing);
  ASSERT_THAT(e, IsOk());
  EXPECT_NEAR(e->time.value(), 75e-3, 1e-12);
  EXPECT_NEAR(e->bus_bandwidth.value(), 10 * kGB, 1e3);
}

// A group strided inside the node: {8 ranks, stride 4} on {switch 8 at 100} x {switch 4 at 10}
// holds local ranks 0 and 4 of each of the 4 nodes. Sub-groups along dim 0 are the pairs
// {0,4}, {8,12}, ...; along dim 1 the two rails {0,8,16,24} and {4,12,20,28}, which share no
// link. Hierarchical all-reduce of 1 GB:
//   reduce-scatter in pairs: 1/2 GB at 100 GB/s = 5 ms; all-reduce on the rails over 0.5 GB:
//   2 · 3/4 · 0.5 GB / 10 GB/s = 75 ms; all-gather in pairs: 5 ms.  = 85 ms.
TEST(NetworkCollectivesTest, HierarchicalOverAStridedGroup) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100), Dim(TopologyKind::kSwitch, 4, 10)});
  const auto e = Collective(t, CollectiveKind::kAllReduce, kGB, {0, 4, 8, 12, 16, 20, 24, 28},
                            Algo::kHierarchical);
  ASSERT_THAT(e, IsOk());
  ASSERT_EQ(e->phases.size(), 3u);
  EXPECT_NEAR(e->phases[0].time.value(), 5e-3, 1e-12);
  EXPECT_NEAR(e->time.value(), 85e-3, 1e-12);
}

// All-to-all of 1 GB per rank on a switch of 8: 7/8 GB through each NPU link at 100 GB/s.
TEST(NetworkCollectivesTest, AllToAllDirect) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100)});
  const auto e = Collective(t, CollectiveKind::kAllToAll, kGB, FirstRanks(8), Algo::kAuto);
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->algorithm, Algo::kDirect);
  EXPECT_NEAR(e->time.value(), 8.75e-3, 1e-12);
  EXPECT_NEAR(e->bus_bandwidth.value(), 100 * kGB, 1e3);
}

// A ring laid over a 4x4 mesh in rank order: 3 -> 4 is four hops and shares links with other
// ring edges, so honouring link sharing costs more than the congestion-unaware bound.
TEST(NetworkCollectivesTest, CongestionAwareIsNeverFasterThanUnaware) {
  NetworkDimension mesh = Dim(TopologyKind::kMesh2d, 16, 100, 500);
  mesh.x = 4;
  mesh.y = 4;
  const Topology t = Build({mesh});
  for (const Algo algo : {Algo::kRing, Algo::kDirect, Algo::kHalvingDoubling}) {
    const auto aware = Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(16), algo);
    const auto unaware =
        Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(16), algo, Congestion::kUnaware);
    ASSERT_THAT(aware, IsOk());
    ASSERT_THAT(unaware, IsOk());
    EXPECT_GE(aware->time.value(), unaware->time.value()) << CollectiveAlgorithmName(algo);
  }
  const auto unaware_direct = Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(16),
                                         Algo::kDirect, Congestion::kUnaware);
  EXPECT_GT(unaware_direct->busiest_utilisation, 1.0);  // beyond what a link can carry
}

// Double binary tree all-reduce: every edge carries S/2 each way at once; on a switch each NPU
// sends 2 x S/2 up... bounded below by the ring's bandwidth term and above by 2x it.
TEST(NetworkCollectivesTest, TreeAllReduceIsWithinTwiceTheRing) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100)});
  const auto tree = Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(8), Algo::kTree);
  ASSERT_THAT(tree, IsOk());
  EXPECT_GE(tree->time.value(), 10e-3 - 1e-12);  // S/B: every rank sends S up and down
  EXPECT_LE(tree->time.value(), 2 * 17.5e-3);
}

TEST(NetworkCollectivesTest, RefusesWhatDoesNotApply) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100), Dim(TopologyKind::kSwitch, 4, 10)});
  EXPECT_THAT(Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(6), Algo::kHalvingDoubling),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("power of 2, got 6")));
  EXPECT_THAT(Collective(t, CollectiveKind::kAllGather, kGB, FirstRanks(8), Algo::kTree),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("no tree all-gather on a network; accepted: auto, ring")));
  EXPECT_THAT(Collective(t, CollectiveKind::kAllReduce, kGB, {0, 1, 8}, Algo::kHierarchical),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("product of sub-groups")));
  EXPECT_THAT(Collective(t, CollectiveKind::kAllReduce, kGB, {0}, Algo::kRing),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least 2 ranks")));
  EXPECT_THAT(Collective(t, CollectiveKind::kAllReduce, kGB, {0, 32}, Algo::kRing),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NPUs 0 to 31")));
  EXPECT_THAT(Collective(t, CollectiveKind::kAllReduce, kGB, {0, 1, 1}, Algo::kRing),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("appears twice")));
  EXPECT_THAT(Collective(t, CollectiveKind::kSendRecv, kGB, {0, 1, 2}, Algo::kAuto),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("between 2 ranks")));
}

TEST(NetworkCollectivesTest, SendRecvAcrossNodes) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100), Dim(TopologyKind::kSwitch, 4, 10)});
  // 0 -> 9: inside node 0 to local rank 1, then rail 1 to node 1: narrowest 10 GB/s.
  const auto e = Collective(t, CollectiveKind::kSendRecv, kGB, {0, 9}, Algo::kAuto);
  ASSERT_THAT(e, IsOk());
  EXPECT_NEAR(e->time.value(), 100e-3, 1e-12);
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// NCCL's costs (network/collective_library.h) on a switch of 8 at 100 GB/s, no link latency, the
// ring asked for. 1 KiB: LL wins: launch 6.6 us + 14 NVLink steps x 0.6 us + 1.75 KiB at half
// of 100 GB/s. 1 GB: Simple wins: 8.4 + 14 x 3.4 us + 17.5 ms at the full rate (LL128 would
// take 17.5 / 0.92 ms).
TEST(CollectiveLibraryTest, NcclPicksTheProtocolBySize) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100)});
  NetworkCollectives collectives(t);
  const auto small = collectives.Estimate({.kind = CollectiveKind::kAllReduce,
                                           .bytes = Bytes(1024),
                                           .ranks = FirstRanks(8),
                                           .algorithm = Algo::kRing,
                                           .library = CollectiveLibrary::kNccl});
  ASSERT_THAT(small, IsOk());
  EXPECT_EQ(small->protocol, "LL");
  EXPECT_NEAR(small->time.value(), 6.6e-6 + 14 * 0.6e-6 + 1.75 * 1024 / 50e9, 1e-12);
  const auto large = collectives.Estimate({.kind = CollectiveKind::kAllReduce,
                                           .bytes = Bytes(kGB),
                                           .ranks = FirstRanks(8),
                                           .algorithm = Algo::kRing,
                                           .library = CollectiveLibrary::kNccl});
  ASSERT_THAT(large, IsOk());
  EXPECT_EQ(large->protocol, "Simple");
  EXPECT_NEAR(large->time.value(), 8.4e-6 + 14 * 3.4e-6 + 17.5e-3, 1e-12);
}

// NVLS on a switch that reduces at 50 GB/s per NPU with 100 GB/s links: every link carries S
// each way, so the reduction rate binds: 1 GB / 50 GB/s = 20 ms (NCCL adds its NVLS launch,
// 23 us, and one NVLink step, 25 us). A switch that does not reduce has no NVLS.
TEST(CollectiveLibraryTest, NvlsIsBoundByTheSwitchReductionRate) {
  NetworkDimension nvswitch = Dim(TopologyKind::kSwitch, 8, 100);
  nvswitch.in_network_reduction = GigabytesPerSecond(50);
  const Topology t = Build({nvswitch});
  const auto none = Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(8), Algo::kNvls);
  ASSERT_THAT(none, IsOk());
  EXPECT_NEAR(none->time.value(), 20e-3, 1e-12);
  NetworkCollectives collectives(t);
  const auto nccl = collectives.Estimate({.kind = CollectiveKind::kAllReduce,
                                          .bytes = Bytes(kGB),
                                          .ranks = FirstRanks(8),
                                          .algorithm = Algo::kNvls,
                                          .library = CollectiveLibrary::kNccl});
  ASSERT_THAT(nccl, IsOk());
  EXPECT_NEAR(nccl->time.value(), 20e-3 + 23e-6 + 25e-6, 1e-12);
  const Topology plain = Build({Dim(TopologyKind::kSwitch, 8, 100)});
  EXPECT_THAT(Collective(plain, CollectiveKind::kAllReduce, kGB, FirstRanks(8), Algo::kNvls),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("in_network_reduction_gbps")));
}

// With NCCL's costs, auto keeps to what NCCL runs: no direct all-reduce on an NVSwitch-like
// switch (NVLS or a ring instead), but all pairs on a fully connected mesh, where RCCL uses
// every link.
TEST(CollectiveLibraryTest, AutoRunsWhatTheLibraryRuns) {
  const Topology nvswitch = Build({Dim(TopologyKind::kSwitch, 8, 100, 500)});
  NetworkCollectives on_switch(nvswitch);
  const auto s = on_switch.Estimate({.kind = CollectiveKind::kAllReduce,
                                     .bytes = Bytes(kGB),
                                     .ranks = FirstRanks(8),
                                     .library = CollectiveLibrary::kNccl});
  ASSERT_THAT(s, IsOk());
  EXPECT_NE(s->algorithm, Algo::kDirect);
  const Topology mesh = Build({Dim(TopologyKind::kFullyConnected, 8, 64)});
  NetworkCollectives on_mesh(mesh);
  const auto m = on_mesh.Estimate({.kind = CollectiveKind::kAllReduce,
                                   .bytes = Bytes(kGB),
                                   .ranks = FirstRanks(8),
                                   .library = CollectiveLibrary::kNccl});
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->algorithm, Algo::kDirect);
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// Two collectives at once on a switch of 8 at 100 GB/s (library none, no latency): a direct
// all-reduce and an all-to-all of 1 GB over the same 8 NPUs. Every NPU link carries 7 + 7
// transfers of 1/8 GB, so each moves at 100/14 GB/s: both finish their first step at 17.5 ms;
// the all-reduce's second step then runs alone, 8.75 ms. Alone: 17.5 ms and 8.75 ms.
TEST(ConcurrentCollectivesTest, SharedLinksSlowBoth) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100)});
  NetworkCollectives collectives(t);
  const NetworkCollectiveRequest requests[] = {{.kind = CollectiveKind::kAllReduce,
                                                .bytes = Bytes(kGB),
                                                .ranks = FirstRanks(8),
                                                .algorithm = Algo::kDirect},
                                               {.kind = CollectiveKind::kAllToAll,
                                                .bytes = Bytes(kGB),
                                                .ranks = FirstRanks(8),
                                                .algorithm = Algo::kDirect}};
  const auto e = collectives.EstimateConcurrent(requests, Congestion::kAware);
  ASSERT_THAT(e, IsOk());
  ASSERT_EQ(e->size(), 2u);
  EXPECT_NEAR((*e)[0].alone.time.value(), 17.5e-3, 1e-12);
  EXPECT_NEAR((*e)[0].together.time.value(), 26.25e-3, 1e-12);
  EXPECT_NEAR((*e)[1].alone.time.value(), 8.75e-3, 1e-12);
  EXPECT_NEAR((*e)[1].together.time.value(), 17.5e-3, 1e-12);
  // Congestion-unaware, the collectives do not slow each other: each keeps its time alone.
  const auto unaware = collectives.EstimateConcurrent(requests, Congestion::kUnaware);
  ASSERT_THAT(unaware, IsOk());
  EXPECT_NEAR((*unaware)[0].together.time.value(), 17.5e-3, 1e-12);
}

// TP inside node 0 and DP across the rail of local rank 0 use different links: neither slows.
TEST(ConcurrentCollectivesTest, DisjointLinksDoNotInterfere) {
  const Topology t = Build({Dim(TopologyKind::kSwitch, 8, 100), Dim(TopologyKind::kSwitch, 2, 10)});
  NetworkCollectives collectives(t);
  const NetworkCollectiveRequest requests[] = {
      {.kind = CollectiveKind::kAllReduce, .bytes = Bytes(kGB), .ranks = FirstRanks(8)},
      {.kind = CollectiveKind::kAllGather, .bytes = Bytes(kGB), .ranks = {0, 8}}};
  const auto e = collectives.EstimateConcurrent(requests, Congestion::kAware);
  ASSERT_THAT(e, IsOk());
  for (const ConcurrentEstimate& c : *e) {
    EXPECT_NEAR(c.together.time.value(), c.alone.time.value(), 1e-12);
  }
  EXPECT_NEAR((*e)[1].together.time.value(), 50e-3, 1e-12);
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// A 4x4 torus at 100 GB/s (no latency, library none): the hierarchical all-reduce of 1 GB runs
// along the rows, then the columns, then the rows again (a grid counts as its x and y axes):
//   reduce-scatter along x, 4 rows of 4: a ring both ways round, 3 steps of S/4 split S/8 per
//   direction: 3 x 0.125 GB / 100 GB/s = 3.75 ms;
//   all-reduce along y on S/4, 4 columns: 6 steps of S/32 per direction = 1.875 ms;
//   all-gather along x: 3.75 ms.  = 9.375 ms.
// The steps of the chosen algorithm: a ring all-reduce over a one-way ring of 4 NPUs is one
// step of 4 transfers of S/4 (each rank to its successor) repeated 2(n-1) = 6 times; without a
// library the bytes are the network's alone. The estimate is Estimate's.
TEST(NetworkCollectivesTest, StepsAreTheChosenAlgorithmsTransfers) {
  NetworkDimension one_way = Dim(TopologyKind::kRing, 4, 100, 500);
  one_way.bidirectional = false;
  const Topology t = Build({one_way});
  NetworkCollectives collectives(t);
  const NetworkCollectiveRequest request{.kind = CollectiveKind::kAllReduce,
                                         .bytes = Bytes(kGB),
                                         .ranks = FirstRanks(4),
                                         .algorithm = Algo::kRing};
  const auto plan = collectives.Steps(request);
  ASSERT_THAT(plan, IsOk());
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].repeat, 6);
  ASSERT_EQ(plan->steps[0].flows.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const Flow& f = plan->steps[0].flows[i];
    EXPECT_EQ(f.dst, (f.src + 1) % 4);
    EXPECT_DOUBLE_EQ(f.bytes, kGB / 4);
  }
  const auto alone = collectives.Estimate(request);
  ASSERT_THAT(alone, IsOk());
  EXPECT_DOUBLE_EQ(plan->estimate.time.value(), alone->time.value());
  // 6 x (0.25 GB / 100 GB/s + one hop of 500 ns).
  EXPECT_NEAR(alone->time.value(), 6 * (2.5e-3 + 0.5e-6), 1e-12);
  EXPECT_THAT(collectives.Steps({.kind = CollectiveKind::kAllReduce,
                                 .bytes = Bytes(kGB),
                                 .ranks = FirstRanks(3),
                                 .algorithm = Algo::kHalvingDoubling}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("power of 2")));
}

TEST(NetworkCollectivesTest, TorusAllReduceRunsAlongRowsThenColumns) {
  NetworkDimension torus = Dim(TopologyKind::kTorus2d, 16, 100);
  torus.x = 4;
  torus.y = 4;
  const Topology t = Build({torus});
  const auto e =
      Collective(t, CollectiveKind::kAllReduce, kGB, FirstRanks(16), Algo::kHierarchical);
  ASSERT_THAT(e, IsOk());
  ASSERT_EQ(e->phases.size(), 3u);
  EXPECT_THAT(e->phases[0].what, HasSubstr("reduce-scatter along dim 0 (torus2d) x, 4 ranks x 4"));
  EXPECT_THAT(e->phases[1].what, HasSubstr("all-reduce along dim 0 (torus2d) y"));
  EXPECT_NEAR(e->phases[0].time.value(), 3.75e-3, 1e-12);
  EXPECT_NEAR(e->phases[1].time.value(), 1.875e-3, 1e-12);
  EXPECT_NEAR(e->time.value(), 9.375e-3, 1e-12);
}

}  // namespace
}  // namespace projector
