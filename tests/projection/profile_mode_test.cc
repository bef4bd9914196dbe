#include "projection/profile_mode.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;

using ::testing::HasSubstr;

std::string Profiles(const std::string& name) {
  return std::string(PROJECTOR_TESTDATA_DIR) + "/profiles/" + name;
}

TEST(ProfileModeTest, ScenarioFromProfileResolvesAndValidates) {
  auto profile = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(profile, IsOk());
  auto s = ScenarioFromProfile(*profile);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->hw.name, "h100-sxm");
  EXPECT_EQ(s->parallel.dp, 8);
  EXPECT_EQ(s->training.global_batch, 8);  // micro_batch · dp
}

TEST(ProfileModeTest, UnknownModelNamesTheField) {
  auto profile = LoadProfileFile(Profiles("bad_unknown_model.json"));
  ASSERT_THAT(profile, IsOk());
  EXPECT_THAT(ScenarioFromProfile(*profile),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bad_unknown_model.json: /scenario/model")));
}

// Builds a profile whose ops are the scenario's own ops with made-up times, so every compute
// op of the profile's own scenario is measured.
Profile OwnOpsProfile(const Scenario& s, const Profile& base) {
  Profile p = base;
  p.ops.clear();
  p.modules.clear();
  auto ops = ScenarioComputeOps(s);
  EXPECT_THAT(ops, IsOk());
  for (const Op& op : *ops) {
    ProfiledOp q;
    switch (op.kind) {
      case OpKind::kGemm:
        q.kind = ProfiledOpKind::kGemm;
        q.gemm = op.gemm;
        break;
      case OpKind::kAttention:
        q.kind = ProfiledOpKind::kAttention;
        q.attention = op.attention;
        q.pass = op.attention_pass;
        break;
      case OpKind::kMemory:
        q.kind = ProfiledOpKind::kMemory;
        q.memory = op.memory;
        break;
      case OpKind::kCollective:
        continue;
    }
    q.time = {.median = Microseconds(10), .min = Microseconds(10), .max = Microseconds(10),
              .repetitions = 3};
    p.ops.push_back(q);
  }
  return p;
}

TEST(ProfileModeTest, OwnScenarioOpsAreMeasuredAndJsonMarksThem) {
  auto base = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(base, IsOk());
  auto s = ScenarioFromProfile(*base);
  ASSERT_THAT(s, IsOk());
  const Profile profile = OwnOpsProfile(*s, *base);
  auto report = RunProfileMode(*s, profile, /*both=*/false);
  ASSERT_THAT(report, IsOk());
  EXPECT_GT(report->measured_ops, 0);
  const nlohmann::json j = ProfileModeJson(*s, *report);
  EXPECT_EQ(j["mode"], "profile");
  int measured = 0;
  for (const auto& row : j["ops"]) {
    ASSERT_TRUE(row.contains("provenance"));
    const std::string prov = row["provenance"];
    EXPECT_THAT(prov, ::testing::AnyOf("measured", "scaled_from_measured", "simulated"));
    if (prov == "measured") {
      ++measured;
      EXPECT_DOUBLE_EQ(row["projected_us"].get<double>(), 10.0);
    }
  }
  EXPECT_GT(measured, 0);
  bool compute_measured = false;
  for (const auto& t : j["terms"]) {
    if (t["term"] == "compute") compute_measured = t["provenance"] == "measured";
  }
  EXPECT_TRUE(compute_measured) << j["terms"].dump();
  EXPECT_TRUE(j.contains("projection"));
}

TEST(ProfileModeTest, LargerTensorParallelTargetIsScaledFromMeasured) {
  auto base = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(base, IsOk());
  auto measured = ScenarioFromProfile(*base);
  ASSERT_THAT(measured, IsOk());
  const Profile profile = OwnOpsProfile(*measured, *base);
  Scenario target = *measured;
  target.parallel.tp = 2;
  target.parallel.dp = 32;
  target.num_gpus = 64;
  target.training.global_batch = 32;
  auto report = RunProfileMode(target, profile, /*both=*/false);
  ASSERT_THAT(report, IsOk());
  EXPECT_GT(report->scaled_ops, 0);
  const nlohmann::json j = ProfileModeJson(target, *report);
  EXPECT_GT(j["provenance_counts"]["scaled_from_measured"].get<int64_t>(), 0);
}

TEST(ProfileModeTest, BothModeComparesEveryMeasuredOpAndModule) {
  auto profile = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(profile, IsOk());
  auto s = ScenarioFromProfile(*profile);
  ASSERT_THAT(s, IsOk());
  auto report = RunProfileMode(*s, *profile, /*both=*/true);
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->comparison_ops.size(), profile->ops.size());
  EXPECT_EQ(report->comparison_modules.size(), profile->modules.size());
  EXPECT_TRUE(report->simulated_projection.has_value());
  const std::string text = ProfileModeText(*s, *report);
  EXPECT_THAT(text, HasSubstr("Measured ops vs simulate model"));
  EXPECT_THAT(text, HasSubstr("mean |error|"));
  const nlohmann::json j = ProfileModeJson(*s, *report);
  EXPECT_TRUE(j["comparison"]["ops"][0].contains("error_pct"));
}

TEST(ProfileModeTest, OtherGpuIsRejected) {
  auto profile = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(profile, IsOk());
  auto s = ScenarioFromProfile(*profile);
  ASSERT_THAT(s, IsOk());
  Scenario target = *s;
  target.hw.name = "mi300x";
  EXPECT_THAT(RunProfileMode(target, *profile, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/scenario/gpu")));
}

}  // namespace
}  // namespace projector
