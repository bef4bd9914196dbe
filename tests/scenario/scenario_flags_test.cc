#include "scenario/scenario_flags.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/given_flags.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::GivenFlags;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ScenarioFlagsTest, NoFlagsIsTheDefaultScenarioWithItsDefaultsNoted) {
  absl::StatusOr<Scenario> s = ScenarioFromFlags(FlagValues());
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->defaults_used, Contains(HasSubstr("(not given: the built-in default)")));
}

// A V100 has no bf16 tensor cores: without --precision it trains in fp16, and says so; a given
// --precision bf16 is refused with the precisions it has; an H100 keeps bf16.
TEST(ScenarioFlagsTest, PrecisionDefaultsToFp16WhereThereIsNoBf16) {
  absl::StatusOr<Scenario> v100 = ScenarioFromFlags(
      GivenFlags({{"model", "gpt2-xl"}, {"gpu-arch", "v100"}, {"num-gpus", "8"}}));
  ASSERT_THAT(v100, IsOk());
  EXPECT_EQ(v100->training.precision, DType::kFp16);
  EXPECT_THAT(v100->defaults_used, Contains(HasSubstr("precision=fp16 (auto: v100-sxm2-32gb")));
  EXPECT_THAT(ScenarioFromFlags(GivenFlags(
                  {{"model", "gpt2-xl"}, {"gpu-arch", "v100"}, {"precision", "bf16"}})),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("has no bf16 matrix rate; accepted: fp32, fp16")));
  absl::StatusOr<Scenario> search =
      ScenarioFromFlags(GivenFlags({{"model", "gpt2-xl"}, {"gpu-arch", "v100"}, {"num-gpus", "8"},
                                    {"seq-len", "1024"}, {"global-batch", "64"}}),
                        ScenarioUse::kSearchBase);
  ASSERT_THAT(search, IsOk());
  EXPECT_EQ(search->training.precision, DType::kFp16);
  absl::StatusOr<Scenario> h100 = ScenarioFromFlags(
      GivenFlags({{"model", "gpt2-xl"}, {"gpu-arch", "h100"}, {"num-gpus", "8"}}));
  ASSERT_THAT(h100, IsOk());
  EXPECT_EQ(h100->training.precision, DType::kBf16);
}

// DP is what the GPU count leaves: 64 / (tp 8 · pp 2 · cp 1) = 4.
TEST(ScenarioFlagsTest, DataParallelIsDerivedFromTheGpuCount) {
  absl::StatusOr<Scenario> s = ScenarioFromFlags(GivenFlags({{"model", "llama3.1-8b"},
                                                             {"gpu-arch", "h100-sxm"},
                                                             {"num-gpus", "64"},
                                                             {"tp", "8"},
                                                             {"pp", "2"},
                                                             {"seq-len", "8192"},
                                                             {"micro-batch", "1"},
                                                             {"global-batch", "64"}}));
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->parallel.dp, 4);
  EXPECT_EQ(s->num_gpus, 64);
  EXPECT_EQ(s->training.seq_len, 8192);
  EXPECT_THAT(s->defaults_used, Not(Contains(HasSubstr("model="))));
}

// Given --dp without --num-gpus, the GPU count follows: tp 4 · dp 2 = 8.
TEST(ScenarioFlagsTest, GpuCountFollowsAnExplicitDp) {
  absl::StatusOr<Scenario> s = ScenarioFromFlags(GivenFlags({{"model", "llama3.1-8b"},
                                                             {"gpu-arch", "h100-sxm"},
                                                             {"tp", "4"},
                                                             {"pp", "1"},
                                                             {"dp", "2"},
                                                             {"global-batch", "8"},
                                                             {"micro-batch", "1"}}));
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->num_gpus, 8);
}

TEST(ScenarioFlagsTest, BadFlagsAreNamed) {
  EXPECT_THAT(ScenarioFromFlags(GivenFlags({{"num-gpus", "60"}, {"tp", "8"}, {"pp", "1"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--num-gpus: 60 GPUs are not divisible by tp·pp·cp = 8")));
  EXPECT_THAT(ScenarioFromFlags(GivenFlags({{"scenario", "a.json"}, {"case", "b.jsonl:1"}})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exclusive")));
  EXPECT_THAT(ScenarioFromFlags(GivenFlags({{"precision", "int4"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--precision: unknown precision 'int4'; accepted: bf16, fp16, fp8"));
  EXPECT_THAT(ScenarioFromFlags(GivenFlags({{"hidden-dropout", "1"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--hidden-dropout: '1' is not a dropout probability")));
  EXPECT_THAT(ScenarioFromFlags(GivenFlags({{"fsdp", "maybe"}})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--fsdp: 'maybe'")));
}

TEST(ScenarioFlagsTest, SearchBaseNeedsTheJobAndLeavesTheLayoutToTheSearch) {
  EXPECT_THAT(ScenarioFromFlags(FlagValues(), ScenarioUse::kSearchBase),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--model: required")));
  absl::StatusOr<Scenario> base = ScenarioFromFlags(GivenFlags({{"model", "llama3.1-8b"},
                                                                {"gpu-arch", "h100-sxm"},
                                                                {"num-gpus", "16"},
                                                                {"seq-len", "4096"},
                                                                {"global-batch", "32"}}),
                                                    ScenarioUse::kSearchBase);
  ASSERT_THAT(base, IsOk());
  EXPECT_EQ(base->parallel.dp, 16);
  EXPECT_EQ(base->parallel.tp, 1);
  EXPECT_THAT(ScenarioFromFlags(GivenFlags({{"model", "llama3.1-8b"},
                                            {"gpu-arch", "h100-sxm"},
                                            {"num-gpus", "12"},
                                            {"seq-len", "4096"},
                                            {"global-batch", "32"}}),
                                ScenarioUse::kSearchBase),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--num-gpus: 12 GPUs do not fill whole nodes of 8 GPUs")));
}

TEST(ScenarioFlagsTest, EveryDeclaredFlagHasHelpAndAUniqueName) {
  std::set<std::string> names;
  for (const FlagGroup& group : ScenarioFlagGroups()) {
    for (const FlagSpec& spec : group.flags) {
      EXPECT_FALSE(spec.help.empty()) << spec.name;
      EXPECT_TRUE(names.insert(std::string(spec.name)).second) << spec.name;
    }
  }
  EXPECT_THAT(names, Contains("tp"));
  EXPECT_THAT(names, Contains("stack"));
}

}  // namespace
}  // namespace projector
