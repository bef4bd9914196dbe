#include "studies/compare.h"

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

Projection Step(double compute, double tp, double dp) {
  Projection p;
  p.breakdown.compute = Seconds(compute);
  p.breakdown.exposed_tp_comm = Seconds(tp);
  p.breakdown.exposed_dp_comm = Seconds(dp);
  p.step_time = p.breakdown.Total();
  return p;
}

// A: compute 10, TP 2 (step 12); B: compute 10, TP 5, DP 1 (step 16). B − A = 4: TP +3 (75% of
// the difference), DP +1 (25%); compute does not differ and is not listed.
TEST(CompareTest, MainCausesRankTheTermDifferences) {
  const std::vector<TermChange> causes = MainCauses(Step(10, 2, 0), Step(10, 5, 1));
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[0].term, "tp_comm");
  EXPECT_DOUBLE_EQ(causes[0].share, 0.75);
  EXPECT_EQ(causes[1].term, "dp_comm");
  EXPECT_DOUBLE_EQ(causes[1].share, 0.25);
  EXPECT_TRUE(MainCauses(Step(1, 1, 1), Step(1, 1, 1)).empty());
}

Scenario Llama8bOn(const char* gpu) {
  Scenario s;
  s.name = gpu;
  s.model = *ResolveModel("llama3.1-8b");
  s.hw = *ResolveHardwareProfile(gpu);
  s.num_gpus = 8;
  s.parallel.dp = 8;
  s.training.seq_len = 4096;
  s.training.global_batch = 16;
  EXPECT_THAT(ResolveKernels(s, "test"), IsOk());
  return s;
}

// Each side is projected on its own hardware; the causes are those of B against A.
TEST(CompareTest, ProjectsEverySide) {
  std::vector<CompareSide> sides;
  sides.push_back({.name = "a", .scenario = Llama8bOn("h100-sxm"), .projection = {}});
  sides.push_back({.name = "b", .scenario = Llama8bOn("b200"), .projection = {}});
  absl::StatusOr<Comparison> c = CompareScenarios(std::move(sides));
  ASSERT_THAT(c, IsOk());
  ASSERT_EQ(c->sides.size(), 2u);
  EXPECT_GT(c->sides[1].projection.tokens_per_s_per_gpu,
            c->sides[0].projection.tokens_per_s_per_gpu);
  ASSERT_FALSE(c->causes.empty());
  EXPECT_EQ(c->causes.front().term, "compute");
  std::vector<CompareSide> one;
  one.push_back({.name = "a", .scenario = Llama8bOn("h100-sxm"), .projection = {}});
  EXPECT_THAT(CompareScenarios(std::move(one)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least two")));
}

}  // namespace
}  // namespace projector
