#include "studies/what_if.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/what_if_report.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/toy_scenario.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

// Compute fakes run at 1 PFLOP/s at 2000 MHz and scale with the clock; memory and network
// do not.
absl::StatusOr<BackendSet> ClockedFakes(const BackendSelection&, const HardwareProfile& hw) {
  Seconds per_flop(1e-15 * 2000.0 / ToMegahertz(hw.gpu.sustained_clock));
  BackendSet set;
  set.gemm = std::make_unique<testing::FakeGemmBackend>(per_flop);
  set.attention = std::make_unique<testing::FakeAttentionBackend>(per_flop);
  set.memory = std::make_unique<testing::FakeMemoryBackend>();
  set.collective = std::make_unique<testing::FakeCollectiveBackend>();
  return set;
}

TEST(ClockWhatIfTest, ComputeOnlyScenarioScalesWithTheClock) {
  Scenario s = projector::testing::ToyScenario();
  s.parallel.dp = 1;
  s.num_gpus = 1;
  s.training.global_batch = 2;
  auto rows = ClockWhatIf(s, {2000, 1000}, {}, ClockedFakes);
  ASSERT_THAT(rows, IsOk());
  ASSERT_EQ(rows->size(), 2u);
  const ClockRow& fast = (*rows)[0];
  const ClockRow& slow = (*rows)[1];
  EXPECT_DOUBLE_EQ(fast.clock_mhz, 2000);
  // Halving the clock doubles the clock-scaled part: T(1000) = T(2000)·(1 + share(2000)).
  EXPECT_THAT(slow.step_time.value(),
              IsNearRel(fast.step_time.value() * (1 + fast.clock_scaled_share), 1e-9));
  EXPECT_LT(slow.tokens_per_s_per_gpu, fast.tokens_per_s_per_gpu);
  EXPECT_GT(slow.clock_scaled_share, fast.clock_scaled_share);
  nlohmann::json j = ClockWhatIfJson(s, *rows);
  ASSERT_EQ(j["clock_sweep"].size(), 2u);
  EXPECT_TRUE(j["clock_sweep"][0]["step_time_s"].is_number());
  EXPECT_TRUE(j["clock_sweep"][0]["tokens_per_s_per_gpu"].is_number());
  EXPECT_TRUE(j["clock_sweep"][0]["clock_scaled_share"].is_number());
  EXPECT_THAT(ClockWhatIfText(s, *rows), HasSubstr("clock MHz"));
}

// The row at the profile's sustained clock is the baseline: its TGS change is 0 and every other
// row's is TGS/TGS_base − 1; with a measured TGS each row carries its error against it.
TEST(ClockWhatIfTest, RowsCompareWithTheProfileClockAndTheMeasurement) {
  Scenario s = projector::testing::ToyScenario();
  s.parallel.dp = 1;
  s.num_gpus = 1;
  s.training.global_batch = 2;
  const double base_mhz = ToMegahertz(s.hw.gpu.sustained_clock);
  auto rows = ClockWhatIf(s, {base_mhz, base_mhz / 2}, {}, ClockedFakes);
  ASSERT_THAT(rows, IsOk());
  s.measured_tokens_per_s_per_gpu = (*rows)[0].tokens_per_s_per_gpu / 2;
  nlohmann::json j = ClockWhatIfJson(s, *rows);
  const nlohmann::json& base = j["clock_sweep"][0];
  const nlohmann::json& half = j["clock_sweep"][1];
  EXPECT_TRUE(base["is_profile_clock"].get<bool>());
  EXPECT_FALSE(half["is_profile_clock"].get<bool>());
  EXPECT_DOUBLE_EQ(base["tgs_vs_profile_clock_pct"].get<double>(), 0.0);
  EXPECT_THAT(half["tgs_vs_profile_clock_pct"].get<double>(),
              IsNearRel(((*rows)[1].tokens_per_s_per_gpu / (*rows)[0].tokens_per_s_per_gpu - 1) *
                            100,
                        1e-12));
  // Measured is half the baseline's TGS: the baseline row is +100% over it.
  EXPECT_THAT(base["error_pct"].get<double>(), IsNearRel(100.0, 1e-12));
  const std::string text = ClockWhatIfText(s, *rows);
  EXPECT_THAT(text, HasSubstr("(profile clock)"));
  EXPECT_THAT(text, HasSubstr("vs measured"));
}

TEST(ClockWhatIfTest, RejectsEmptyListsAndNonPositiveClocks) {
  Scenario s = projector::testing::ToyScenario();
  EXPECT_THAT(ClockWhatIf(s, {}, {}, ClockedFakes),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no clocks")));
  EXPECT_THAT(ClockWhatIf(s, {1500, 0}, {}, ClockedFakes),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("> 0 MHz")));
}

}  // namespace
}  // namespace projector
