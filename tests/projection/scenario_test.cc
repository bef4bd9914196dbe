#include "projection/scenario.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Data(const std::string& name) {
  return std::string(PROJECTOR_TESTDATA_DIR) + "/scenarios/" + name;
}

Scenario Default() {
  auto s = DefaultScenario();
  EXPECT_THAT(s, IsOk());
  return *s;
}

TEST(ScenarioTest, DefaultIsLlama8bOnEightMi300x) {
  Scenario s = Default();
  EXPECT_EQ(s.model.name.find("Llama") != std::string::npos ||
                s.model.name.find("llama") != std::string::npos,
            true);
  EXPECT_EQ(s.hw.name, "mi300x");
  EXPECT_EQ(s.num_gpus, 8);
  EXPECT_EQ(s.parallel.dp, 8);
  EXPECT_THAT(ValidateScenario(s, "default"), IsOk());
}

TEST(ScenarioTest, LoadsScenarioFileAndDerivesDp) {
  auto s = LoadScenarioFile(Data("good.json"));
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->num_gpus, 64);
  EXPECT_EQ(s->parallel.dp, 64);  // 64 / (tp1·pp1·cp1)
  EXPECT_TRUE(s->parallel.fsdp);
  EXPECT_EQ(s->training.recompute, Recompute::kFull);
}

TEST(ScenarioTest, InlineModelInCaseSchemaLoads) {
  auto s = LoadScenarioFile(Data("inline_model.json"));
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->model.num_layers, 4);
  EXPECT_EQ(s->parallel.dp, 4);
}

TEST(ScenarioTest, TypoKeyNamesFileAndPointer) {
  EXPECT_THAT(LoadScenarioFile(Data("typo_key.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("typo_key.json"), HasSubstr("/parallel/pipline"),
                             HasSubstr("unknown key"))));
}

TEST(ScenarioTest, WrongTypeNamesFileAndPointer) {
  EXPECT_THAT(LoadScenarioFile(Data("wrong_type.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("wrong_type.json"), HasSubstr("/parallel/tp"),
                             HasSubstr("integer"))));
}

TEST(ScenarioTest, NonPositiveSizeRejected) {
  EXPECT_THAT(LoadScenarioFile(Data("non_positive.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/training/seq_len"), HasSubstr("must be > 0"))));
}

TEST(ScenarioTest, UnknownModelListsValidNames) {
  EXPECT_THAT(LoadScenarioFile(Data("unknown_model.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/model"), HasSubstr("llama9-1t"),
                             HasSubstr("llama3.1-8b"))));
}

TEST(ScenarioTest, UnknownGpuListsValidNames) {
  EXPECT_THAT(LoadScenarioFile(Data("unknown_gpu.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/gpu"), HasSubstr("mi900x"), HasSubstr("mi300x"))));
}

TEST(ScenarioTest, UnknownPrecisionListsAccepted) {
  EXPECT_THAT(LoadScenarioFile(Data("bad_precision.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/training/precision"), HasSubstr("bf16, fp16, fp8"))));
}

TEST(ScenarioTest, AttentionKernelIsReadAndChecked) {
  EXPECT_EQ(Default().training.attention_kernel, AttentionKernel::kFlash);
  auto s = LoadScenarioFile(Data("unfused_attention.json"));
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->training.attention_kernel, AttentionKernel::kUnfused);
  EXPECT_EQ(ScenarioToJson(*s)["training"]["attention_kernel"], "unfused");
  EXPECT_THAT(LoadScenarioFile(Data("bad_attention_kernel.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/training/attention_kernel"), HasSubstr("flash, unfused"))));
  s->parallel.cp = 2;
  s->parallel.dp = 4;
  EXPECT_THAT(ValidateScenario(*s, "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/training/attention_kernel"), HasSubstr("cp > 1"))));
}

TEST(ScenarioTest, UnreadableFileIsNotFound) {
  EXPECT_THAT(LoadScenarioFile(Data("missing.json")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.json")));
}

TEST(ScenarioTest, SyntaxErrorNamesFile) {
  EXPECT_THAT(LoadScenarioFile(Data("not_json.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("not_json.json"), HasSubstr("invalid JSON"))));
}

TEST(ScenarioTest, HeadsNotDivisibleByTp) {
  Scenario s = Default();  // 32 heads
  s.parallel.tp = 3;
  s.parallel.dp = 1;
  s.num_gpus = 3;
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("x.json"), HasSubstr("/parallel/tp"),
                             HasSubstr("not divisible by tp 3"))));
}

TEST(ScenarioTest, LayersNotDivisibleAcrossPipeline) {
  Scenario s = Default();  // 32 layers
  s.parallel.pp = 2;
  s.parallel.vpp = 3;
  s.parallel.dp = 4;
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/parallel/pp"), HasSubstr("pp·vpp = 6"))));
}

TEST(ScenarioTest, EmbeddingAndLossAwareSplitAccepted) {
  Scenario s = Default();
  s.model.num_layers = 30;  // 30 % 8 != 0 but (30 + 2) % (pp 4 · vpp 2) == 0
  s.parallel.pp = 4;
  s.parallel.vpp = 2;
  s.parallel.dp = 2;
  EXPECT_THAT(ValidateScenario(s, "x.json"), IsOk());
  s.model.num_layers = 29;  // neither 29 nor 31 divisible by 8
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("/parallel/pp")));
}

TEST(ScenarioTest, UnevenSplitAcceptedWhenItAddsUp) {
  Scenario s = Default();  // 32 layers: first 6, last 6, 20 over 2 middle stages
  s.parallel.pp = 4;
  s.parallel.dp = 2;
  s.parallel.first_stage_layers = 6;
  s.parallel.last_stage_layers = 6;
  s.training.global_batch = 64;
  EXPECT_THAT(ValidateScenario(s, "x.json"), IsOk());
  s.parallel.last_stage_layers = 5;  // 21 over 2 stages
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("do not split evenly")));
}

TEST(ScenarioTest, GpuCountMismatch) {
  Scenario s = Default();
  s.parallel.tp = 2;  // 2·1·1·8 = 16 != 8
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/parallel"), HasSubstr("does not equal num_gpus 8"))));
}

TEST(ScenarioTest, ExpertsNotDivisibleByEp) {
  Scenario s = Default();
  auto moe = ResolveModel("mixtral-8x7b");  // 8 experts
  ASSERT_THAT(moe, IsOk());
  s.model = *moe;
  s.parallel.ep = 3;
  s.parallel.dp = 6;
  s.num_gpus = 6;
  s.training.global_batch = 60;
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/parallel/ep"), HasSubstr("not divisible by ep 3"))));
}

TEST(ScenarioTest, EpOnDenseModelRejected) {
  Scenario s = Default();
  s.parallel.ep = 2;
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("has no experts")));
}

TEST(ScenarioTest, GlobalBatchNotDivisible) {
  Scenario s = Default();
  s.training.global_batch = 12;  // micro 1 · dp 8
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/training/global_batch"), HasSubstr("12"))));
}

TEST(ScenarioTest, VppWithoutPipelineRejected) {
  Scenario s = Default();
  s.parallel.vpp = 2;
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("/parallel/vpp")));
}

TEST(ScenarioTest, SeqLenNotDivisibleByCp) {
  Scenario s = Default();
  s.parallel.cp = 8;
  s.parallel.dp = 1;
  s.training.seq_len = 8196;
  s.training.global_batch = 8;
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("/training/seq_len")));
}

TEST(ScenarioTest, Fp8OnA100IsUnimplemented) {
  Scenario s = Default();
  auto hw = ResolveHardwareProfile("a100-sxm-80gb");
  ASSERT_THAT(hw, IsOk());
  s.hw = *hw;
  s.training.precision = DType::kFp8;
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("/training/precision")));
}

TEST(ScenarioTest, CalibrationCaseLoadsById) {
  auto s = LoadCalibrationCase(std::string(PROJECTOR_CALIBRATION_DIR) +
                               "/public.jsonl:megatron_sc21_table1_1.7b");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->num_gpus, 32);
  EXPECT_EQ(s->parallel.dp, 32);
  ASSERT_TRUE(s->measured_tokens_per_s_per_gpu.has_value());
  EXPECT_NEAR(*s->measured_tokens_per_s_per_gpu, 9287.93, 1e-6);
}

TEST(ScenarioTest, CalibrationCaseUnknownId) {
  EXPECT_THAT(LoadCalibrationCase(std::string(PROJECTOR_CALIBRATION_DIR) + "/public.jsonl:nope"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no case with id 'nope'")));
}

TEST(ScenarioTest, CalibrationCaseBadLineNamesLineAndField) {
  EXPECT_THAT(LoadCalibrationCase(Data("cases_bad_line.jsonl:bad_case")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("cases_bad_line.jsonl:2"), HasSubstr("/seq_len"))));
}

TEST(ScenarioTest, CaseSpecMustHaveFileAndId) {
  EXPECT_THAT(LoadCalibrationCase("justafile"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("FILE:ID")));
}

TEST(ScenarioTest, LayoutSummary) {
  ParallelConfig p;
  p.tp = 8;
  p.pp = 16;
  p.vpp = 4;
  p.dp = 128;
  p.sequence_parallel = true;
  EXPECT_EQ(LayoutSummary(p), "TP8 PP16 VPP4 CP1 DP128 SP");
}

}  // namespace
}  // namespace projector
