#include "studies/scale.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

// 1000, 900, 600 tokens/s/GPU: efficiencies 1, 0.9, 0.6; the third falls under 70%.
TEST(ScaleTest, EfficiencyAndBreakdownOnAHandMadeSeries) {
  const std::vector<double> tgs = {1000, 900, 600};
  const std::vector<double> e = ScalingEfficiencies(tgs);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_DOUBLE_EQ(e[0], 1.0);
  EXPECT_DOUBLE_EQ(e[1], 0.9);
  EXPECT_DOUBLE_EQ(e[2], 0.6);
  EXPECT_EQ(BreakdownIndex(e, 0.7), std::optional<size_t>(2));
  EXPECT_EQ(BreakdownIndex(std::vector<double>{1, 0.8}, 0.7), std::nullopt);
}

// Speedups drawn from Amdahl's law with a serial fraction of 5%, S = 1 / (0.05 + 0.95/p), give
// back 0.05; perfectly linear speedups give 0.
TEST(ScaleTest, AmdahlFitRecoversTheSerialFraction) {
  const std::vector<double> p = {1, 2, 4, 8, 16, 64};
  std::vector<double> s;
  for (double x : p) s.push_back(1.0 / (0.05 + 0.95 / x));
  EXPECT_NEAR(FitAmdahlSerialFraction(p, s), 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(FitAmdahlSerialFraction(p, p), 0.0);
  EXPECT_DOUBLE_EQ(FitAmdahlSerialFraction(std::vector<double>{1}, std::vector<double>{1}), 0.0);
}

Scenario Llama8b() {
  Scenario s;
  s.name = "scale";
  s.model = *ResolveModel("llama3.1-8b");
  s.hw = *ResolveHardwareProfile("h100-sxm");
  s.num_gpus = 8;
  s.parallel.dp = 8;
  s.training.seq_len = 2048;
  s.training.global_batch = 64;
  return s;
}

ScaleSearchOptions SmallSpace() {
  return [](const Scenario&) -> absl::StatusOr<SearchOptions> {
    SearchOptions o;
    o.space.tp = {1, 2};
    o.space.pp = {1};
    o.space.vpp = {1};
    o.space.cp = {1};
    o.space.ep = {1};
    o.space.etp = {1};
    o.space.micro_batch = {1};
    o.space.recompute = {Recompute::kNone, Recompute::kFull};
    o.space.sequence_parallel = {false};
    o.space.sharding = {DpSharding::kDistributedOptimizer};
    o.space.turbo_grouped_gemm = {true};
    o.space.deepep = {false};
    o.threads = 1;
    o.exact_top = 1;
    return o;
  };
}

// Every count gets its best layout; efficiency and speedup are against the first
// (speedup = efficiency x N/8), and weak scaling doubles the global batch with the GPUs.
TEST(ScaleTest, StrongAndWeakScalingOfARealJob) {
  const std::vector<int64_t> counts = {8, 16, 32};
  absl::StatusOr<ScaleResult> strong =
      RunScaling(Llama8b(), counts, ScalingMode::kStrong, SmallSpace());
  ASSERT_THAT(strong, IsOk());
  ASSERT_EQ(strong->points.size(), 3u);
  for (const ScalePoint& p : strong->points) {
    ASSERT_TRUE(p.found) << p.num_gpus;
    EXPECT_EQ(p.global_batch, 64);
    EXPECT_NEAR(p.speedup, p.efficiency * static_cast<double>(p.num_gpus) / 8.0, 1e-12);
  }
  EXPECT_DOUBLE_EQ(strong->points[0].efficiency, 1.0);
  EXPECT_GE(strong->serial_fraction, 0.0);
  int calls = 0;
  absl::StatusOr<ScaleResult> weak = RunScaling(Llama8b(), counts, ScalingMode::kWeak, SmallSpace(),
                                                [&calls](int64_t, int64_t) { ++calls; });
  ASSERT_THAT(weak, IsOk());
  EXPECT_EQ(weak->points[1].global_batch, 128);
  EXPECT_EQ(weak->points[2].global_batch, 256);
  EXPECT_EQ(calls, 3);
}

// A count with no valid layout is a point that says why (the search's message), not the end of
// the study: on one GPU the space's only sharding, the distributed optimizer, has no DP group to
// shard over; the curve starts at the next count.
TEST(ScaleTest, ACountWhereNothingFitsIsReportedAndTheCurveGoesOn) {
  const std::vector<int64_t> counts = {1, 8, 16};
  absl::StatusOr<ScaleResult> r =
      RunScaling(Llama8b(), counts, ScalingMode::kStrong, SmallSpace());
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->points.size(), 3u);
  EXPECT_FALSE(r->points[0].found);
  EXPECT_THAT(r->points[0].why_not, HasSubstr("no valid layout among 4 candidates"));
  EXPECT_THAT(r->points[0].why_not, HasSubstr("sharding_without_dp"));
  EXPECT_TRUE(r->points[1].found);
  EXPECT_DOUBLE_EQ(r->points[1].efficiency, 1.0);  // against the first count that fits
  EXPECT_TRUE(r->points[2].found);
}

TEST(ScaleTest, CountsMustRise) {
  EXPECT_THAT(
      RunScaling(Llama8b(), std::vector<int64_t>{16, 8}, ScalingMode::kStrong, SmallSpace()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must rise")));
  EXPECT_THAT(RunScaling(Llama8b(), std::vector<int64_t>{}, ScalingMode::kStrong, SmallSpace()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least one")));
}

}  // namespace
}  // namespace projector
