// ASTRA-sim's semantics replayed (studies/astra_semantics.h) against ASTRA-sim's own figures on
// its microbenchmarks (shared/reference/network_reference.md: sw8_h100 = Switch of 8 NPUs at
// 400 GB/s and 936.25 ns, ASTRA-sim's HGX-H100-validated.yml; fc8 = FullyConnected of 8 at 450
// GB/s per link and 500 ns; system HGX-H100-validated.json), and closed forms.
#include "studies/astra_semantics.h"

#include <cstdio>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/network_specs.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;
using Algo = CollectiveAlgorithm;

constexpr double kMiB = 1024.0 * 1024.0;

NetworkSpec OneDimension(TopologyKind kind, double gbps, double latency_ns, int64_t npus = 8) {
  return testing::OneDimensionNetwork(kind, npus, gbps, latency_ns);
}

struct Case {
  const char* net;
  CollectiveKind kind;
  Algo algo;
  double mib;
  Congestion congestion;
  double astra_us;
};

// All 25 figures of the reference's two tables, within 0.5%.
TEST(AstraSemanticsTest, ReproducesAstraSimsMicrobenchmarks) {
  const NetworkSpec sw8 = OneDimension(TopologyKind::kSwitch, 400, 936.25);
  const NetworkSpec fc8 = OneDimension(TopologyKind::kFullyConnected, 450, 500);
  const CollectiveKind ar = CollectiveKind::kAllReduce, a2a = CollectiveKind::kAllToAll;
  const Congestion aware = Congestion::kAware, unaware = Congestion::kUnaware;
  const Case cases[] = {
      {"sw8", ar, Algo::kRing, 64, aware, 357.3},
      {"sw8", ar, Algo::kDirect, 64, aware, 280.2},
      {"sw8", ar, Algo::kHalvingDoubling, 64, aware, 352.4},
      {"sw8", ar, Algo::kRing, 1024, aware, 4926.5},
      {"sw8", ar, Algo::kDirect, 1024, aware, 4455.0},
      {"sw8", ar, Algo::kHalvingDoubling, 1024, aware, 5355.4},
      {"sw8", a2a, Algo::kRing, 64, aware, 657.2},
      {"sw8", a2a, Algo::kDirect, 64, aware, 143.5},
      {"fc8", ar, Algo::kRing, 64, aware, 243.6},
      {"fc8", ar, Algo::kDirect, 64, aware, 35.2},
      {"fc8", ar, Algo::kHalvingDoubling, 64, aware, 183.7},
      {"fc8", a2a, Algo::kRing, 64, aware, 486.6},
      {"fc8", a2a, Algo::kDirect, 64, aware, 17.9},
      {"sw8", ar, Algo::kRing, 64, unaware, 215.7},
      {"sw8", ar, Algo::kDirect, 64, unaware, 30.8},
      {"sw8", ar, Algo::kHalvingDoubling, 64, unaware, 170.6},
      {"sw8", ar, Algo::kRing, 1024, unaware, 2660.9},
      {"sw8", ar, Algo::kDirect, 1024, unaware, 380.1},
      {"sw8", ar, Algo::kHalvingDoubling, 1024, unaware, 2390.4},
      {"fc8", ar, Algo::kRing, 64, unaware, 162.1},
      {"fc8", ar, Algo::kDirect, 64, unaware, 23.2},
      {"fc8", ar, Algo::kHalvingDoubling, 64, unaware, 138.9},
      {"fc8", ar, Algo::kRing, 1024, unaware, 2379.4},
      {"fc8", ar, Algo::kDirect, 1024, unaware, 339.9},
      {"fc8", ar, Algo::kHalvingDoubling, 1024, unaware, 2130.9},
  };
  for (const Case& c : cases) {
    const NetworkSpec& net = std::string(c.net) == "sw8" ? sw8 : fc8;
    absl::StatusOr<AstraCollectiveResult> r =
        SimulateAstraCollective(net, c.kind, c.algo, Bytes(c.mib * kMiB), c.congestion, {});
    ASSERT_THAT(r, IsOk());
    // Within 0.5% (ASTRA-sim rounds each delay to whole nanoseconds; the replay does not).
    EXPECT_THAT(r->time.value() * 1e6, IsNearRel(c.astra_us, 0.005))
        << c.net << " " << CollectiveKindName(c.kind) << " " << CollectiveAlgorithmName(c.algo)
        << " " << c.mib << " MiB " << CongestionName(c.congestion);
  }
}

// A ring all-reduce of 4 MB on a switch of 4 NPUs at 100 GB/s (decimal) and 500 ns per link, in
// one chunk, endpoint delay 10 ns, local-mem-bw 1000 GB/s: 2(n-1) = 6 messages of S/n = 1 MB, each
// after an endpoint delay; the 2nd to n-th after a reduction of 3 x 1 MB / 1000 B/ns = 3 us; an
// endpoint delay at the end.
//   unaware: a message is 2 x 0.5 us + 1 MB / 100 GB/s = 11 us: 6 x 11.01 + 3 x 3 + 0.01 = 75.07 us
//   aware: store and forward, each link 10 us then 0.5 us: 21 us: 6 x 21.01 + 9 + 0.01 = 135.07 us
// Two chunks, one in flight: the second starts where the first ends: twice half the data.
TEST(AstraSemanticsTest, RingAllReduceClosedForms) {
  const NetworkSpec sw4 = OneDimension(TopologyKind::kSwitch, 100, 500, 4);
  AstraSystem system{.dataset_splits = 1,
                     .active_chunks = 1,
                     .endpoint_delay = Seconds(10e-9),
                     .local_mem_bw_gbps = 1000,
                     .binary_gigabytes = false,
                     .source = "test"};
  const auto run = [&](Congestion congestion, const AstraSystem& s) {
    absl::StatusOr<AstraCollectiveResult> r = SimulateAstraCollective(
        sw4, CollectiveKind::kAllReduce, Algo::kRing, Bytes(4e6), congestion, s);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? r->time.value() * 1e6 : 0.0;
  };
  EXPECT_NEAR(run(Congestion::kUnaware, system), 75.07, 1e-6);
  EXPECT_NEAR(run(Congestion::kAware, system), 135.07, 1e-6);
  AstraSystem two = system;
  two.dataset_splits = 2;
  // Each chunk: 6 x (2 x 0.5 + 5 + 0.01) + 3 x 1.5 + 0.01 = 40.57 us.
  EXPECT_NEAR(run(Congestion::kUnaware, two), 2 * 40.57, 1e-6);
  absl::StatusOr<AstraCollectiveResult> r = SimulateAstraCollective(
      sw4, CollectiveKind::kAllReduce, Algo::kRing, Bytes(4e6), Congestion::kUnaware, system);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->messages, 4 * 6);
}

TEST(AstraSemanticsTest, RefusesWhatItDoesNotReplay) {
  const NetworkSpec sw8 = OneDimension(TopologyKind::kSwitch, 400, 936.25);
  NetworkSpec two_dims = sw8;
  two_dims.dimensions.push_back(two_dims.dimensions[0]);
  const NetworkSpec mesh = OneDimension(TopologyKind::kFatTree, 100, 500);
  const NetworkSpec six = OneDimension(TopologyKind::kSwitch, 100, 500, 6);
  const Bytes s(1e6);
  EXPECT_THAT(SimulateAstraCollective(two_dims, CollectiveKind::kAllReduce, Algo::kRing, s,
                                      Congestion::kAware, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has 2 dimensions")));
  EXPECT_THAT(SimulateAstraCollective(mesh, CollectiveKind::kAllReduce, Algo::kRing, s,
                                      Congestion::kAware, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got fat_tree")));
  EXPECT_THAT(SimulateAstraCollective(six, CollectiveKind::kAllReduce, Algo::kHalvingDoubling, s,
                                      Congestion::kAware, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("power-of-2")));
  EXPECT_THAT(SimulateAstraCollective(sw8, CollectiveKind::kBroadcast, Algo::kRing, s,
                                      Congestion::kAware, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got broadcast with ring")));
  EXPECT_THAT(SimulateAstraCollective(sw8, CollectiveKind::kAllToAll, Algo::kHalvingDoubling, s,
                                      Congestion::kAware, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("all-to-all (ring, direct)")));
}

// ASTRA-sim's system file: the fields the replay reads, the other ASTRA-sim keys accepted, a typo
// or a bad value refused naming the file and key.
TEST(AstraSemanticsTest, ReadsAnAstraSimSystemFile) {
  absl::StatusOr<AstraSystem> s =
      LoadAstraSystem(std::string(PROJECTOR_SOURCE_DIR) + "/networks/astra_hgx_h100_system.json");
  ASSERT_THAT(s, IsOk());
  const AstraSystem built_in;
  EXPECT_EQ(s->dataset_splits, built_in.dataset_splits);
  EXPECT_EQ(s->active_chunks, built_in.active_chunks);
  EXPECT_DOUBLE_EQ(s->endpoint_delay.value(), built_in.endpoint_delay.value());
  EXPECT_DOUBLE_EQ(s->local_mem_bw_gbps, built_in.local_mem_bw_gbps);
  const std::string dir = ::testing::TempDir();
  const auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    return path;
  };
  EXPECT_THAT(LoadAstraSystem(write("typo.json", R"({"local-mem-bandwidth": 3350})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("local-mem-bandwidth")));
  EXPECT_THAT(LoadAstraSystem(write("zero.json", R"({"preferred-dataset-splits": 0})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("preferred-dataset-splits: must be an integer >= 1")));
  EXPECT_THAT(LoadAstraSystem(write("neg.json", R"({"endpoint-delay": -1})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("endpoint-delay")));
  EXPECT_THAT(LoadAstraSystem(dir + "/missing.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.json")));
}

}  // namespace
}  // namespace projector
