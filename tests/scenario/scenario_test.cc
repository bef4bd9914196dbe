#include "scenario/scenario.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "projection/projection.h"
#include "scenario/training_defaults.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Data(const std::string& name) {
  return std::string(PROJECTOR_TESTDATA_DIR) + "/scenarios/" + name;
}

Scenario Default() {
  auto s = DefaultScenario();
  EXPECT_THAT(s, IsOk());
  return *s;
}

// The default scenario with a library model swapped in.
Scenario DefaultWithModel(const std::string& name) {
  Scenario s = Default();
  auto model = ResolveModel(name);
  EXPECT_THAT(model, IsOk());
  if (model.ok()) s.model = *model;
  return s;
}

// A measured run's source names the framework that ran it; one naming none leaves the stack auto.
TEST(ScenarioTest, MxBlockScalingIsBlackwellAndCdna4) {
  EXPECT_TRUE(HasMxBlockScaling("sm_100"));
  EXPECT_TRUE(HasMxBlockScaling("sm_120"));
  EXPECT_TRUE(HasMxBlockScaling("gfx950"));
  EXPECT_FALSE(HasMxBlockScaling("sm_90"));
  EXPECT_FALSE(HasMxBlockScaling("sm_80"));
  EXPECT_FALSE(HasMxBlockScaling("gfx942"));
}

// Auto: megatron runs MXFP8 on NVIDIA Blackwell, delayed scaling on Hopper and on AMD;
// torchtitan tensorwise; a stated recipe is kept; no recipe applies under bf16.
TEST(ScenarioTest, AutoFp8RecipeFollowsTheStackAndGpu) {
  TrainingConfig t;
  t.precision = DType::kFp8;
  ParallelConfig p;
  t.stack = TrainingStack::kMegatron;
  EXPECT_EQ(ResolvedFp8Recipe(t, p, "sm_100"), Fp8Recipe::kMxfp8);
  EXPECT_EQ(ResolvedFp8Recipe(t, p, "sm_90"), Fp8Recipe::kDelayed);
  EXPECT_EQ(ResolvedFp8Recipe(t, p, "gfx950"), Fp8Recipe::kDelayed);
  t.stack = TrainingStack::kTorchTitan;
  EXPECT_EQ(ResolvedFp8Recipe(t, p, "sm_90"), Fp8Recipe::kTensorwise);
  t.fp8_recipe = Fp8Recipe::kBlockwise;
  EXPECT_EQ(ResolvedFp8Recipe(t, p, "sm_90"), Fp8Recipe::kBlockwise);
  t.precision = DType::kBf16;
  EXPECT_EQ(ResolvedFp8Recipe(t, p, "sm_90"), Fp8Recipe::kDelayed);
  EXPECT_EQ(AutoFp8RecipeNote(t, p, "sm_90", "h100-sxm"), "");
}

// Transformer Engine swizzles block scales before every fp8 GEMM under MXFP8 (the megatron
// stack's Blackwell default) and under blockwise where it emulates blockwise as MXFP8 (Blackwell),
// not blockwise on Hopper (scales stored GEMM-ready), nor per-tensor recipes, ROCm's TE (MI355X's
// MXFP8), torchtitan's torchao, or bf16.
TEST(ScenarioTest, GemmScaleSwizzleFollowsRecipeAndGpu) {
  TrainingConfig t;
  t.precision = DType::kFp8;
  t.stack = TrainingStack::kMegatron;
  ParallelConfig p;
  EXPECT_TRUE(ResolvedGemmScaleSwizzle(t, p, "sm_100"));
  EXPECT_FALSE(ResolvedGemmScaleSwizzle(t, p, "sm_90"));
  t.fp8_recipe = Fp8Recipe::kBlockwise;
  EXPECT_TRUE(ResolvedGemmScaleSwizzle(t, p, "sm_100"));
  EXPECT_FALSE(ResolvedGemmScaleSwizzle(t, p, "sm_90"));
  t.fp8_recipe = Fp8Recipe::kTensorwise;
  EXPECT_FALSE(ResolvedGemmScaleSwizzle(t, p, "sm_100"));
  t.fp8_recipe = Fp8Recipe::kMxfp8;
  EXPECT_TRUE(ResolvedGemmScaleSwizzle(t, p, "sm_100"));
  EXPECT_FALSE(ResolvedGemmScaleSwizzle(t, p, "gfx950"));  // ROCm TE: no swizzle kernel
  t.stack = TrainingStack::kTorchTitan;
  EXPECT_FALSE(ResolvedGemmScaleSwizzle(t, p, "sm_100"));
  t.stack = TrainingStack::kMegatron;
  t.precision = DType::kBf16;
  EXPECT_FALSE(ResolvedGemmScaleSwizzle(t, p, "sm_100"));
}

// A case naming no dispatcher takes DeepEP on the megatron stack for a dropless MoE with
// group-limited routing whose EP group crosses nodes: DeepSeek-V3 (4 of 8 groups) at EP 64 with
// ETP 1 spans 64 GPUs > 8 per node; not at EP 8 (one node), not with a capacity factor, not
// without group routing (Qwen3-style), not on torchtitan.
TEST(ScenarioTest, CaseDispatchesWithDeepEpOnlyWhereGroupRoutingCrossesNodes) {
  Scenario s = DefaultWithModel("deepseek-v3");
  s.training.stack = TrainingStack::kMegatron;
  s.parallel.ep = 64;
  EXPECT_TRUE(CaseDispatchesWithDeepEp(s.model, s.parallel, s.training, 8));
  s.parallel.ep = 8;
  EXPECT_FALSE(CaseDispatchesWithDeepEp(s.model, s.parallel, s.training, 8));
  s.parallel.etp = 2;  // 8 EP ranks 2 apart span 16 GPUs
  EXPECT_TRUE(CaseDispatchesWithDeepEp(s.model, s.parallel, s.training, 8));
  s.training.moe_capacity_factor = 1.0;
  EXPECT_FALSE(CaseDispatchesWithDeepEp(s.model, s.parallel, s.training, 8));
  s.training.moe_capacity_factor = 0;
  s.training.stack = TrainingStack::kTorchTitan;
  EXPECT_FALSE(CaseDispatchesWithDeepEp(s.model, s.parallel, s.training, 8));
  s.training.stack = TrainingStack::kMegatron;
  s.model.moe->num_groups = 0;
  s.model.moe->topk_groups = 0;
  EXPECT_FALSE(CaseDispatchesWithDeepEp(s.model, s.parallel, s.training, 8));
}

TEST(ScenarioTest, StackNamedBySourceReadsTheFramework) {
  EXPECT_EQ(StackNamedBySource("pytorch/torchtitan benchmarks.md"), TrainingStack::kTorchTitan);
  EXPECT_EQ(StackNamedBySource("mosaicml/llm-foundry scripts/train/benchmarking/README.md"),
            TrainingStack::kLlmFoundry);
  EXPECT_EQ(StackNamedBySource("NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md"),
            TrainingStack::kMegatron);
  EXPECT_EQ(StackNamedBySource("NVIDIA/NeMo performance summary"), TrainingStack::kMegatron);
  EXPECT_EQ(StackNamedBySource("NVIDIA/dgxc-benchmarking llama3.1"), TrainingStack::kMegatron);
  EXPECT_EQ(StackNamedBySource("a blog post"), std::nullopt);
}

// An FSDP-only case whose source is Megatron-Bridge runs the megatron stack (Megatron-FSDP,
// Megatron's loss), and says why.
TEST(ScenarioTest, CaseSourceSetsTheStack) {
  absl::StatusOr<Scenario> s =
      LoadCalibrationCase(std::string(PROJECTOR_CALIBRATION_DIR) +
                          "/public.jsonl:mbridge_2509_h100_llama3_8b_fp8_8gpu");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->training.stack, TrainingStack::kMegatron);
  EXPECT_THAT(s->defaults_used, Contains(HasSubstr("stack named by the case's source: megatron "
                                                   "(NVIDIA-NeMo/Megatron-Bridge")));
}

TEST(ScenarioTest, SourceIsMegatronSc21ReadsThePaper) {
  EXPECT_TRUE(SourceIsMegatronSc21(
      "Narayanan et al., SC21, 'Efficient Large-Scale Language Model Training on GPU Clusters "
      "Using Megatron-LM', Table 1"));
  EXPECT_TRUE(SourceIsMegatronSc21("Megatron-LM paper (SC21), Table 1"));
  EXPECT_FALSE(SourceIsMegatronSc21("NVIDIA/Megatron-LM README.md (2024-07-15)"));
  EXPECT_FALSE(SourceIsMegatronSc21("SC21 poster on a CNN"));
}

// A case of the SC21 paper runs Megatron-LM as of 2021: unfused attention, the gradients
// all-reduced after the backward, a replicated optimizer state, each noted; what the case's
// training object or parallel.distributed_optimizer states wins.
TEST(ScenarioTest, Sc21CaseRunsMegatronOf2021) {
  const std::string path = std::string(PROJECTOR_CALIBRATION_DIR) + "/public.jsonl";
  absl::StatusOr<Scenario> s = LoadCalibrationCase(path + ":megatron_sc21_table1_1.7b");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->training.attention_kernel, AttentionKernel::kUnfused);
  EXPECT_EQ(s->attention_kernel_used, "unfused");
  EXPECT_FALSE(s->training.overlap_grad_reduce);
  EXPECT_FALSE(s->parallel.distributed_optimizer);
  EXPECT_THAT(s->defaults_used, Contains(HasSubstr("attention_kernel=unfused (the case's source, "
                                                   "the SC21 Megatron-LM paper")));
  EXPECT_THAT(s->defaults_used, Contains(HasSubstr("overlap_grad_reduce=false (the case's")));
  EXPECT_THAT(s->defaults_used, Contains(HasSubstr("distributed_optimizer=false (the case's")));
  EXPECT_THAT(s->defaults_used, Not(Contains(HasSubstr("overlap_grad_reduce=true"))));

  nlohmann::json stated = nlohmann::json::parse(R"({"id": "x",
    "source": "Narayanan et al., SC21, Megatron-LM",
    "model": {"name": "GPT 1.7B", "layers": 24, "hidden": 2304, "ffn_hidden": 9216, "heads": 24,
              "kv_heads": 24, "vocab": 51200, "head_dim": null, "mlp": "gelu", "moe": null,
              "mla": null},
    "gpu": "a100-sxm-80gb", "num_gpus": 32, "gpus_per_node": 8, "precision": "fp16",
    "parallel": {"tp": 1, "pp": 1, "vpp": 1, "cp": 1, "ep": 1, "dp": 32,
                 "sequence_parallel": false, "fsdp": false, "distributed_optimizer": true},
    "seq_len": 2048, "micro_batch": 16, "global_batch": 512, "recompute": "full",
    "measured": {"tokens_per_s_per_gpu": 9287.93},
    "training": {"attention_kernel": "flash", "overlap_grad_reduce": true}})");
  absl::StatusOr<Scenario> kept = ScenarioFromCase(stated, "stated");
  ASSERT_THAT(kept, IsOk());
  EXPECT_EQ(kept->attention_kernel_used, "fa2");
  EXPECT_TRUE(kept->training.overlap_grad_reduce);
  EXPECT_TRUE(kept->parallel.distributed_optimizer);
  EXPECT_THAT(kept->defaults_used, Not(Contains(HasSubstr("SC21 Megatron-LM paper"))));
}

// Only the notes on that key go: "key=..." entries, not those of a longer key or other text.
TEST(ScenarioTest, DropDefaultNoteForgetsThatKeyOnly) {
  Scenario s;
  s.defaults_used = {"overlap_grad_reduce=false (source)", "overlap_grad_reduce_x=1",
                     "distributed_optimizer=false (source)", "overlap_grad_reduce"};
  DropDefaultNote("overlap_grad_reduce", s);
  EXPECT_THAT(s.defaults_used, ElementsAre("overlap_grad_reduce_x=1",
                                           "distributed_optimizer=false (source)",
                                           "overlap_grad_reduce"));
}

TEST(ScenarioTest, RecomputeModulesParseAndPrint) {
  absl::StatusOr<RecomputeModules> m = ParseRecomputeModules("moe,mla_up_proj");
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(*m, RecomputeBit(RecomputeModule::kMlaUpProj) | RecomputeBit(RecomputeModule::kMoe));
  EXPECT_EQ(RecomputeModulesName(*m), "mla_up_proj,moe");
  EXPECT_EQ(RecomputePhrase(Recompute::kSelective, *m), "selective (mla_up_proj,moe)");
  EXPECT_EQ(RecomputePhrase(Recompute::kSelective, kDefaultRecomputeModules), "selective");
  EXPECT_EQ(RecomputePhrase(Recompute::kSelective, 0), "selective (no module)");
  EXPECT_THAT(ParseRecomputeModules(""), IsOk());
  EXPECT_EQ(*ParseRecomputeModules(""), 0);
  EXPECT_THAT(ParseRecomputeModules("core_attn,experts"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("unknown recompute module 'experts'"),
                             HasSubstr("accepted: core_attn, mla_up_proj, layernorm, moe_act, "
                                       "mlp, shared_experts, moe"))));
  EXPECT_THAT(ParseRecomputeModules("core_attn,"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty recompute module")));
  // A what-if to another mode takes the default modules back.
  TrainingConfig t;
  t.recompute = Recompute::kSelective;
  t.recompute_modules = *m;
  EXPECT_TRUE(t.Recomputes(RecomputeModule::kMoe));
  EXPECT_FALSE(t.Recomputes(RecomputeModule::kCoreAttn));
  t.SetRecompute(Recompute::kFull);
  EXPECT_EQ(t.recompute_modules, kDefaultRecomputeModules);
  EXPECT_FALSE(t.Recomputes(RecomputeModule::kMoe));
}

// training.recompute_modules: a list of names, read, round-tripped through the scenario JSON;
// a bad name, a string or an empty name names the file and the field.
TEST(ScenarioTest, RecomputeModulesAreReadFromAFile) {
  absl::StatusOr<Scenario> s = LoadScenarioFile(Data("recompute_modules.json"));
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->training.recompute_modules,
            RecomputeBit(RecomputeModule::kMlaUpProj) | RecomputeBit(RecomputeModule::kMoeAct));
  EXPECT_EQ(ScenarioToJson(*s)["training"]["recompute_modules"],
            nlohmann::json::array({"mla_up_proj", "moe_act"}));
  EXPECT_THAT(LoadScenarioFile(Data("bad_recompute_modules_name.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("bad_recompute_modules_name.json"),
                             HasSubstr("/training/recompute_modules"),
                             HasSubstr("unknown recompute module 'experts'"))));
  EXPECT_THAT(LoadScenarioFile(Data("bad_recompute_modules_string.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/training/recompute_modules"),
                             HasSubstr("expected an array"))));
  EXPECT_THAT(LoadScenarioFile(Data("bad_recompute_modules_empty_name.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/training/recompute_modules"),
                             HasSubstr("must be a list of module names"))));
}

// Recompute modules are Megatron-Core's selective recompute, each one the model has.
TEST(ScenarioTest, RecomputeModulesAreChecked) {
  Scenario s = DefaultWithModel("llama3.1-8b");
  s.training.recompute_modules = RecomputeBit(RecomputeModule::kMlp);
  EXPECT_THAT(ValidateScenario(s, "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/training/recompute_modules"),
                             HasSubstr("apply to recompute selective"))));
  s.training.recompute = Recompute::kSelective;
  EXPECT_THAT(ValidateScenario(s, "x"), IsOk());
  s.training.recompute_modules = RecomputeBit(RecomputeModule::kMlaUpProj);
  EXPECT_THAT(ValidateScenario(s, "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("mla_up_proj re-runs nothing: model llama3.1-8b has no "
                                 "multi-latent attention")));
  for (RecomputeModule m : {RecomputeModule::kMoeAct, RecomputeModule::kMoe,
                            RecomputeModule::kSharedExperts, RecomputeModule::kLayernorm}) {
    s.training.recompute_modules = RecomputeBit(m);
    EXPECT_THAT(ValidateScenario(s, "x"),
                StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("re-runs nothing")))
        << RecomputeModuleName(m);
  }
  s.training.recompute_modules = kDefaultRecomputeModules;
  s.training.stack = TrainingStack::kTorchTitan;
  s.training.recompute_modules = RecomputeBit(RecomputeModule::kMlp);
  EXPECT_THAT(ValidateScenario(s, "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("recompute_modules are Megatron-Core's; the torchtitan stack")));
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
  EXPECT_THAT(
      LoadScenarioFile(Data("unknown_model.json")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("/model"), HasSubstr("llama9-1t"), HasSubstr("llama3.1-8b"))));
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
  EXPECT_THAT(
      LoadScenarioFile(Data("bad_attention_kernel.json")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("/training/attention_kernel"), HasSubstr("flash, unfused"))));
  s->parallel.cp = 2;
  s->parallel.dp = 4;
  EXPECT_THAT(ValidateScenario(*s, "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/training/attention_kernel"), HasSubstr("cp > 1"))));
}

TEST(ScenarioTest, CommSwitchesAreReadAndRoundTrip) {
  EXPECT_FALSE(Default().training.tp_comm_overlap);
  EXPECT_EQ(Default().training.grad_reduce_dtype, DType::kFp32);
  auto s = LoadScenarioFile(Data("comm_switches.json"));
  ASSERT_THAT(s, IsOk());
  EXPECT_TRUE(s->training.tp_comm_overlap);
  EXPECT_EQ(s->training.grad_reduce_dtype, DType::kBf16);
  EXPECT_DOUBLE_EQ(GradReduceBytesPerParam(s->training), 2.0);
  const auto j = ScenarioToJson(*s);
  EXPECT_EQ(j["training"]["tp_comm_overlap"], true);
  EXPECT_EQ(j["training"]["grad_reduce_dtype"], "bf16");
  EXPECT_THAT(LoadScenarioFile(Data("bad_grad_reduce_dtype.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("bad_grad_reduce_dtype.json"),
                             HasSubstr("/training/grad_reduce_dtype"), HasSubstr("fp32, bf16"))));
}

TEST(ScenarioTest, LossKernelIsReadAndRoundTrips) {
  EXPECT_EQ(Default().training.loss_kernel, LossKernel::kAuto);
  auto s = LoadScenarioFile(Data("loss_kernel_fused.json"));
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->training.loss_kernel, LossKernel::kFused);
  EXPECT_EQ(ScenarioToJson(*s)["training"]["loss_kernel"], "fused");
  EXPECT_THAT(s->defaults_used, Not(Contains(HasSubstr("loss_kernel="))));
  EXPECT_THAT(LoadScenarioFile(Data("bad_loss_kernel.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("bad_loss_kernel.json"), HasSubstr("/training/loss_kernel"),
                             HasSubstr("auto, megatron, pytorch, fused"))));
}

// training.train_metric_passes: absent is auto (2 on an FSDP-only layout, 0 otherwise, and a
// defaults note); a count applies to any layout, round-trips as the count that runs and leaves
// no note; anything but "auto" or an integer 0..16 names the file and field.
TEST(ScenarioTest, TrainMetricPassesAreReadAndRoundTrip) {
  EXPECT_EQ(Default().training.train_metric_passes, kAutoTrainMetricPasses);
  EXPECT_EQ(ScenarioToJson(Default())["training"]["train_metric_passes"], 0);
  EXPECT_THAT(Default().defaults_used,
              Contains(HasSubstr("train_metric_passes=0 (auto: the megatron stack evaluates no "
                                 "metric")));
  auto fsdp = LoadScenarioFile(Data("loss_kernel_fused.json"));
  ASSERT_THAT(fsdp, IsOk());
  EXPECT_EQ(ScenarioToJson(*fsdp)["training"]["train_metric_passes"], 2);
  EXPECT_THAT(fsdp->defaults_used,
              Contains(HasSubstr("train_metric_passes=2 (auto: the llm-foundry stack, where "
                                 "Composer evaluates")));
  auto one = LoadScenarioFile(Data("train_metric_passes.json"));
  ASSERT_THAT(one, IsOk());
  EXPECT_EQ(one->training.train_metric_passes, 1);
  EXPECT_EQ(ScenarioToJson(*one)["training"]["train_metric_passes"], 1);
  EXPECT_THAT(one->defaults_used, Not(Contains(HasSubstr("train_metric_passes="))));
  // null is absent, as for every optional field: auto.
  auto null = LoadScenarioFile(Data("train_metric_passes_null.json"));
  ASSERT_THAT(null, IsOk());
  EXPECT_EQ(null->training.train_metric_passes, kAutoTrainMetricPasses);
  for (const char* bad : {"m1", "17", "two", "1_5", "true"}) {
    const std::string file = absl::StrCat("bad_train_metric_passes_", bad, ".json");
    EXPECT_THAT(LoadScenarioFile(Data(file)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(file), HasSubstr("/training/train_metric_passes"),
                               HasSubstr("\"auto\" or an integer from 0 to 16"))))
        << bad;
  }
}

// training.hidden_dropout / attention_dropout: absent, null or "auto" resolve from the stack and
// the model (Megatron's 0.1 for the GPT-style gpt3-1.3b on the megatron stack, 0 for the Llama
// default scenario), round-trip as the probability that runs and leave a defaults note only
// for the fields left auto; anything but "auto" or a number in [0, 1) names the file and field.
TEST(ScenarioTest, DropoutIsReadAndRoundTrips) {
  EXPECT_EQ(Default().training.hidden_dropout, kAutoDropout);
  EXPECT_EQ(ScenarioToJson(Default())["training"]["hidden_dropout"], 0.0);
  EXPECT_THAT(Default().defaults_used,
              Contains("hidden_dropout=0, attention_dropout=0 (auto: the Megatron/NeMo recipes of "
                       "Llama-style models set no dropout; --hidden-dropout, --attention-dropout "
                       "to set)"));
  auto gpt = LoadScenarioFile(Data("dropout_auto.json"));
  ASSERT_THAT(gpt, IsOk());
  EXPECT_EQ(ScenarioToJson(*gpt)["training"]["hidden_dropout"], 0.1);
  EXPECT_EQ(ScenarioToJson(*gpt)["training"]["attention_dropout"], 0.1);
  EXPECT_THAT(gpt->defaults_used,
              Contains(HasSubstr("hidden_dropout=0.1, attention_dropout=0.1 (auto: Megatron-LM's "
                                 "default")));
  EXPECT_THAT(DropoutPhrase(*gpt), ", dropout 0.1");
  auto set = LoadScenarioFile(Data("dropout.json"));
  ASSERT_THAT(set, IsOk());
  EXPECT_EQ(ScenarioToJson(*set)["training"]["hidden_dropout"], 0.05);
  EXPECT_EQ(ScenarioToJson(*set)["training"]["attention_dropout"], 0.0);
  EXPECT_THAT(set->defaults_used, Not(Contains(HasSubstr("dropout="))));
  EXPECT_THAT(DropoutPhrase(*set), ", dropout hidden 0.05, attention 0");
  for (const char* bad : {"one", "negative", "word", "bool"}) {
    const std::string file = absl::StrCat("bad_hidden_dropout_", bad, ".json");
    EXPECT_THAT(LoadScenarioFile(Data(file)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(file), HasSubstr("/training/hidden_dropout"),
                               HasSubstr("must be \"auto\" or a probability in [0, 1)"))))
        << bad;
  }
}

// training.fsdp_impl: absent is auto, the stack's (llm-foundry's FSDP1 for an FSDP-only
// layout, with a defaults note; no note without FSDP); a named implementation round-trips and
// shows on the training line; an unknown one names the file, field and accepted values.
TEST(ScenarioTest, FsdpImplIsReadAndRoundTrips) {
  auto fsdp = LoadScenarioFile(Data("loss_kernel_fused.json"));
  ASSERT_THAT(fsdp, IsOk());
  EXPECT_EQ(ScenarioToJson(*fsdp)["training"]["fsdp_impl"], "fsdp1");
  EXPECT_THAT(fsdp->defaults_used,
              Contains(HasSubstr("fsdp_impl=fsdp1 (auto: the llm-foundry stack wraps the model "
                                 "in PyTorch FSDP1")));
  EXPECT_EQ(FsdpImplPhrase(*fsdp), ", FSDP1");
  EXPECT_THAT(Default().defaults_used, Not(Contains(HasSubstr("fsdp_impl="))));
  EXPECT_EQ(FsdpImplPhrase(Default()), "");
  auto set = LoadScenarioFile(Data("fsdp_impl.json"));
  ASSERT_THAT(set, IsOk());
  EXPECT_EQ(set->training.fsdp_impl, FsdpImpl::kFsdp2);
  EXPECT_EQ(ScenarioToJson(*set)["training"]["fsdp_impl"], "fsdp2");
  EXPECT_THAT(set->defaults_used, Not(Contains(HasSubstr("fsdp_impl="))));
  EXPECT_EQ(FsdpImplPhrase(*set), ", FSDP2");
  EXPECT_THAT(LoadScenarioFile(Data("bad_fsdp_impl.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("bad_fsdp_impl.json"), HasSubstr("/training/fsdp_impl"),
                             HasSubstr("zero3"), HasSubstr("megatron-fsdp"))));
}

// training.torch_compile: false when absent; true is read and round-trips; a non-boolean names
// the file and the field.
TEST(ScenarioTest, TorchCompileIsReadAndRoundTrips) {
  EXPECT_FALSE(Default().training.torch_compile);
  EXPECT_EQ(ScenarioToJson(Default())["training"]["torch_compile"], false);
  auto on = LoadScenarioFile(Data("torch_compile.json"));
  ASSERT_THAT(on, IsOk());
  EXPECT_TRUE(on->training.torch_compile);
  EXPECT_EQ(ScenarioToJson(*on)["training"]["torch_compile"], true);
  EXPECT_THAT(
      LoadScenarioFile(Data("bad_torch_compile.json")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("bad_torch_compile.json"), HasSubstr("/training/torch_compile"))));
}

// Llama-3.1-70B, TP8 SP over 16 H100 with the distributed optimizer: overlapping the TP
// collectives with their GEMMs can only shorten the step (each layer's exposed TP time is
// max(0, comm - GEMM window) instead of comm), and a bf16 gradient reduction halves the DP
// traffic (4 -> 2 B/param) and Megatron's main-grad buffer; the compute is untouched.
TEST(ScenarioTest, CommSwitchesChangeOnlyTheirTerms) {
  auto on = LoadScenarioFile(Data("comm_switches.json"));
  ASSERT_THAT(on, IsOk());
  Scenario off = *on;
  off.training.tp_comm_overlap = false;
  off.training.grad_reduce_dtype = DType::kFp32;
  auto p_on = Project(*on);
  auto p_off = Project(off);
  ASSERT_THAT(p_on, IsOk());
  ASSERT_THAT(p_off, IsOk());
  EXPECT_LT(p_on->breakdown.exposed_tp_comm, p_off->breakdown.exposed_tp_comm);
  EXPECT_LE(p_on->breakdown.exposed_dp_comm, p_off->breakdown.exposed_dp_comm);
  EXPECT_LT(p_on->step_time, p_off->step_time);
  EXPECT_THAT(p_on->memory.stages[0].gradients.value(),
              IsNearRel(p_off->memory.stages[0].gradients.value() / 2, 1e-12));
  auto has_tp_note = [](const Projection& p) {
    for (const std::string& d : p.defaults_used) {
      if (d.starts_with("tp_comm_overlap=false")) return true;
    }
    return false;
  };
  EXPECT_FALSE(has_tp_note(*p_on));
  EXPECT_TRUE(has_tp_note(*p_off));
}

// Sizes beyond any training run are rejected with the field named, before any integer
// product of them (tokens x hidden, micro-batches per step) could overflow.
TEST(ScenarioTest, SizesBeyondAnyTrainingRunAreRejected) {
  auto rejected = [](auto mutate, const std::string& pointer, const std::string& text) {
    Scenario s = Default();
    mutate(s);
    EXPECT_THAT(ValidateScenario(s, "x.json"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("x.json: " + pointer), HasSubstr(text))));
  };
  rejected([](Scenario& s) { s.training.micro_batch = int64_t{1} << 62; }, "/training/micro_batch",
           "must be <= 1048576 (beyond any training run)");
  rejected([](Scenario& s) { s.training.seq_len = int64_t{1} << 40; }, "/training/seq_len",
           "must be <= 16777216");
  rejected([](Scenario& s) { s.training.global_batch = int64_t{1} << 40; },
           "/training/global_batch", "must be <= 1073741824");
  // 8 GPUs of DP with micro-batch 1: 2^21 micro-batches per step.
  rejected([](Scenario& s) { s.training.global_batch = int64_t{8} << 21; },
           "/training/global_batch", "2097152 micro-batches per step");
  // 2^20 sequences of 2^13 tokens: 2^33 tokens per micro-batch.
  rejected(
      [](Scenario& s) {
        s.training.micro_batch = int64_t{1} << 20;
        s.training.seq_len = int64_t{1} << 13;
        s.training.global_batch = int64_t{8} << 20;
      },
      "/training/micro_batch", "8589934592 tokens per micro-batch");
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

// Uneven first/last stages combine with vpp when every stage has a layer per model chunk:
// DeepSeek-V3's 61 layers over pp 16 as 3 + 14·4 + 2 fill vpp 2 but not vpp 3 (the last
// stage's 2 layers).
TEST(ScenarioTest, UnevenSplitWithInterleavingNeedsALayerPerChunk) {
  Scenario s = DefaultWithModel("deepseek-v3");
  s.num_gpus = 512;
  s.parallel.pp = 16;
  s.parallel.ep = 32;
  s.parallel.dp = 32;
  s.parallel.first_stage_layers = 3;
  s.parallel.last_stage_layers = 2;
  s.training.global_batch = 512;
  s.parallel.vpp = 2;
  EXPECT_THAT(ValidateScenario(s, "x.json"), IsOk());
  s.parallel.vpp = 3;
  EXPECT_THAT(ValidateScenario(s, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/parallel/vpp"),
                             HasSubstr("a stage of 2 layers cannot fill vpp 3"))));
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

TEST(ScenarioTest, MoeRoutingIsReadAndRoundTrips) {
  EXPECT_DOUBLE_EQ(MoeExpertLoad(Default().training), 1.0);
  auto s = LoadScenarioFile(Data("moe_routing.json"));
  ASSERT_THAT(s, IsOk());
  EXPECT_DOUBLE_EQ(s->training.moe_capacity_factor, 1.5);
  EXPECT_FALSE(s->training.moe_pad_to_capacity);
  EXPECT_DOUBLE_EQ(s->training.moe_imbalance, 1.3);
  EXPECT_DOUBLE_EQ(MoeExpertLoad(s->training), 1.3);
  const auto j = ScenarioToJson(*s);
  EXPECT_EQ(j["training"]["moe_capacity_factor"], 1.5);
  EXPECT_EQ(j["training"]["moe_pad_to_capacity"], false);
  EXPECT_EQ(j["training"]["moe_imbalance"], 1.3);
  EXPECT_EQ(s->training.moe_permute_fusion, std::optional<bool>(false));
  EXPECT_EQ(j["training"]["moe_permute_fusion"], false);
  EXPECT_EQ(ScenarioToJson(Default()).at("training").count("moe_permute_fusion"), 0u);
  EXPECT_THAT(LoadScenarioFile(Data("bad_moe_permute_fusion.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/training/moe_permute_fusion"),
                             HasSubstr("must be true, false or \"auto\""))));
  EXPECT_EQ(s->training.moe_router_padding, std::nullopt);
  EXPECT_EQ(j["training"].count("moe_router_padding"), 0u);
  auto padded = LoadScenarioFile(Data("moe_router_padding.json"));
  ASSERT_THAT(padded, IsOk());
  EXPECT_EQ(padded->training.moe_router_padding, std::optional<bool>(true));
  EXPECT_EQ(ScenarioToJson(*padded)["training"]["moe_router_padding"], true);
  EXPECT_THAT(LoadScenarioFile(Data("bad_moe_router_padding.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("bad_moe_router_padding.json"),
                             HasSubstr("/training/moe_router_padding"),
                             HasSubstr("must be true, false or \"auto\""))));
  EXPECT_THAT(
      LoadScenarioFile(Data("bad_moe_imbalance.json")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("bad_moe_imbalance.json"), HasSubstr("/training/moe_imbalance"))));
}

// Mixtral-8x7B (8 experts, top-2) with EP 8: one expert per rank, so the busiest rank can take
// at most min(2, 1) of every token's 2 pairs: ep·1/2 = 4 times the balanced share. Capacity at
// most E/top_k = 4. Every bound and the dense-model case name their field.
TEST(ScenarioTest, MoeRoutingBoundsNameTheirField) {
  Scenario s = DefaultWithModel("mixtral-8x7b");
  s.num_gpus = 8;
  s.parallel.ep = 8;
  s.parallel.dp = 8;
  s.training.global_batch = 8;
  ASSERT_THAT(ValidateScenario(s, "x.json"), IsOk());
  EXPECT_DOUBLE_EQ(MaxMoeImbalance(s.model, s.parallel), 4.0);
  s.parallel.ep = 2;  // 4 local experts: min(2, 4) = 2 → 2·2/2 = 2
  EXPECT_DOUBLE_EQ(MaxMoeImbalance(s.model, s.parallel), 2.0);
  s.parallel.ep = 1;
  EXPECT_DOUBLE_EQ(MaxMoeImbalance(s.model, s.parallel), 1.0);
  s.parallel.ep = 8;
  auto expect_error = [&](const char* field, const char* text,
                          absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
    EXPECT_THAT(ValidateScenario(s, "x.json"),
                StatusIs(code, AllOf(HasSubstr("x.json"), HasSubstr(field), HasSubstr(text))));
  };
  s.training.moe_imbalance = 4.0;
  EXPECT_THAT(ValidateScenario(s, "x.json"), IsOk());
  s.training.moe_imbalance = 4.5;
  expect_error("/training/moe_imbalance", "must be in [1, 4]");
  s.training.moe_imbalance = 0.9;
  expect_error("/training/moe_imbalance", "must be in [1, 4]");
  s.training.moe_imbalance = 1.0;
  s.training.moe_capacity_factor = 4.5;
  expect_error("/training/moe_capacity_factor", "(0, 4]");
  s.training.moe_capacity_factor = -1;
  expect_error("/training/moe_capacity_factor", "(0, 4]");
  s.training.moe_capacity_factor = 0;
  s.training.moe_pad_to_capacity = true;
  expect_error("/training/moe_pad_to_capacity", "set moe_capacity_factor > 0",
               absl::StatusCode::kFailedPrecondition);
  s.training.moe_pad_to_capacity = false;
  s.training.stack = TrainingStack::kTorchTitan;
  s.training.moe_permute_fusion = true;
  expect_error("/training/moe_permute_fusion", "torchtitan's MoE permutes with torch.gather",
               absl::StatusCode::kFailedPrecondition);
  s.training.moe_permute_fusion = false;
  EXPECT_THAT(ValidateScenario(s, "x.json"), IsOk());
  // Router padding: Megatron-Core's, under fp8, where the counts vary.
  s.training.moe_router_padding = true;
  expect_error("/training/moe_router_padding", "other stacks align the expert rows",
               absl::StatusCode::kFailedPrecondition);
  s.training.stack = TrainingStack::kMegatron;
  expect_error("/training/moe_router_padding", "the precision is bf16",
               absl::StatusCode::kFailedPrecondition);
  s.training.precision = DType::kFp8;
  EXPECT_THAT(ValidateScenario(s, "x.json"), IsOk());
  s.training.moe_capacity_factor = 1.0;
  s.training.moe_pad_to_capacity = true;
  expect_error("/training/moe_router_padding", "take fixed token counts",
               absl::StatusCode::kFailedPrecondition);
  s.training.moe_router_padding = std::nullopt;
  EXPECT_THAT(ValidateScenario(s, "x.json"), IsOk());
  Scenario dense = Default();
  dense.training.moe_imbalance = 1.2;
  EXPECT_THAT(ValidateScenario(dense, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/training/moe_imbalance"), HasSubstr("has no experts"))));
  dense.training.moe_imbalance = 1.0;
  dense.training.moe_permute_fusion = false;
  EXPECT_THAT(ValidateScenario(dense, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/training/moe_permute_fusion"),
                             HasSubstr("has no experts"))));
  dense.training.moe_permute_fusion = std::nullopt;
  dense.training.moe_router_padding = false;
  EXPECT_THAT(
      ValidateScenario(dense, "x.json"),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr("/training/moe_router_padding"), HasSubstr("has no experts"))));
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

// A classic case (DeepLearningExamples' BERT-Large on a DGX-1V 32 GB, 8 GPUs, batch 64 at seq
// 128): 1,443.05 sequences/s in all = 1443.05 · 128 / 8 = 23,088.8 tokens/s per GPU; plain DP
// over the 8 GPUs, one micro-batch of 64 per GPU and step, fp16 (amp), TF1's attention as GEMMs.
TEST(ScenarioTest, ClassicCaseLoadsAsDataParallelTraining) {
  auto s = LoadCalibrationCase(std::string(PROJECTOR_CALIBRATION_DIR) +
                               "/classic_public.jsonl:dle_tf1_bertL_v100-32gb_amp_p1_bs64_8gpu");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->model.name, "bert-large");
  EXPECT_EQ(s->hw.name, "v100-sxm2-32gb");
  EXPECT_EQ(s->parallel.dp, 8);
  EXPECT_FALSE(s->parallel.distributed_optimizer);
  EXPECT_EQ(s->training.micro_batch, 64);
  EXPECT_EQ(s->training.global_batch, 512);
  EXPECT_EQ(s->training.seq_len, 128);
  EXPECT_EQ(s->training.precision, DType::kFp16);
  EXPECT_EQ(s->training.attention_kernel, AttentionKernel::kUnfused);
  ASSERT_TRUE(s->measured_tokens_per_s_per_gpu.has_value());
  EXPECT_NEAR(*s->measured_tokens_per_s_per_gpu, 1443.05 * 128 / 8, 1e-9);
  // An image model is not modelled yet: refused with the reason, not projected as something else.
  EXPECT_THAT(LoadCalibrationCase(std::string(PROJECTOR_CALIBRATION_DIR) +
                                  "/classic_public.jsonl:dle_tf1_rn50_v100-16gb_amp_xla_bs256_1gpu"),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("resnet50 is an image model"), HasSubstr("/model"))));
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

// A suggested {first, last} stage split.
std::optional<std::pair<int64_t, int64_t>> Split(int64_t first, int64_t last) {
  return std::make_pair(first, last);
}

// Middle stages at m = ceil(L/pp), the rest over first and last, the last taking the smaller
// half: 61 over 8 → m 8, rest 61 − 48 = 13 → 7 + 6; 61 over 16 → m 4, rest 5 → 3 + 2;
// 61 over 2 → 31 + 30; 5 over 4 → m 2, rest 1: no split gives every stage a layer.
TEST(ScenarioTest, SuggestedUnevenSplitMinimisesTheCriticalStage) {
  EXPECT_EQ(SuggestUnevenSplit(61, 8, 1, 0), Split(7, 6));
  EXPECT_EQ(SuggestUnevenSplit(61, 16, 1, 0), Split(3, 2));
  EXPECT_EQ(SuggestUnevenSplit(61, 2, 1, 0), Split(31, 30));
  EXPECT_EQ(SuggestUnevenSplit(5, 4, 1, 0), std::nullopt);
  EXPECT_EQ(SuggestUnevenSplit(10, 1, 1, 0), std::nullopt);
  EXPECT_EQ(SuggestUnevenSplit(3, 4, 1, 0), std::nullopt);
}

// With an MTP module (on the last stage) and no VPP the first stage takes m and the last the
// rest, Megatron-Bridge's DeepSeek-V3 layouts: 61 over 16 → m 4, rest 5 → 4 + 1 (embedding + 4
// | 4 × 14 | 1 + MTP + loss); over 8 → m 8, rest 13 → 8 + 5; over 4 → m 16, rest 29 → 16 + 13.
// With VPP 4 over pp 8 the even share stands, 7 + 6, as its layout Et|(tt|)*30mL places them.
TEST(ScenarioTest, SuggestedUnevenSplitLeavesTheMtpStageTheRest) {
  EXPECT_EQ(SuggestUnevenSplit(61, 16, 1, 1), Split(4, 1));
  EXPECT_EQ(SuggestUnevenSplit(61, 8, 1, 1), Split(8, 5));
  EXPECT_EQ(SuggestUnevenSplit(61, 4, 1, 1), Split(16, 13));
  EXPECT_EQ(SuggestUnevenSplit(61, 8, 4, 1), Split(7, 6));
}

// UnevenSplitAccepted is exactly what ValidateScenario accepts of a first/last stage split, on
// 13 layers. By hand (f, l = first, last; 0 = dealt like a middle stage):
//   pp 2: both set, f + l = 13: 12 pairs (10 with vpp 2: each >= 2); one set, the other stage
//         takes the rest: 13 each way (10 with vpp 2)                     -> 38 | 30
//   pp 3: both set, one middle stage holds 13 − f − l >= 0: 78 (f, l, middle >= 2: 36); one set,
//         two stages split 13 − f evenly: f odd, 7 each way (middle >= 2: 4)   -> 92 | 44
//   pp 4: both set, 13 − f − l even: f + l odd, 42 pairs (>= 2 each, middle >= 2: 12); one set,
//         3 stages take 13 − f: f in {1, 4, 7, 10, 13}, 5 each way ({4, 7}: 2) -> 52 | 16
// 272 in all.
TEST(ScenarioTest, UnevenSplitAcceptedAgreesWithValidation) {
  absl::StatusOr<Scenario> base = LoadScenarioFile(Data("good.json"));
  ASSERT_THAT(base, IsOk());
  Scenario s = *base;
  s.model.num_layers = 13;
  s.parallel.tp = 1;
  s.parallel.cp = 1;
  s.parallel.dp = 1;
  s.parallel.ep = 1;
  s.parallel.etp = 1;
  s.parallel.sequence_parallel = false;
  s.parallel.fsdp = false;
  s.parallel.distributed_optimizer = false;
  s.training.micro_batch = 1;
  s.training.global_batch = 12;  // micro-batches divisible by every pp (interleaving needs it)
  int64_t accepted = 0;
  for (int64_t pp : {2, 3, 4}) {
    for (int64_t vpp : {1, 2}) {
      s.parallel.pp = pp;
      s.parallel.vpp = vpp;
      s.num_gpus = pp;
      for (int64_t first = 0; first <= 14; ++first) {
        for (int64_t last = 0; last <= 14; ++last) {
          if (first == 0 && last == 0) continue;
          s.parallel.first_stage_layers = first;
          s.parallel.last_stage_layers = last;
          const absl::Status valid = ValidateScenario(s, "test");
          EXPECT_EQ(UnevenSplitAccepted(13, pp, vpp, first, last), valid.ok())
              << "pp " << pp << " vpp " << vpp << " split " << first << "/" << last << ": "
              << valid.message();
          accepted += valid.ok();
        }
      }
    }
  }
  EXPECT_EQ(accepted, 272);
}

// A case whose layers pp does not divide ran with some uneven split the format cannot state:
// the suggested one is applied and named under defaults_used; `project` without a case names it
// in the error instead. DeepSeek-V3 takes its MTP module from the library model, so its last
// stage holds the rest after the first took m = 8: 61 − 6 · 8 − 8 = 5.
TEST(ScenarioTest, CaseWithIndivisibleLayersGetsTheSuggestedSplit) {
  auto s = LoadCalibrationCase(Data("cases_uneven.jsonl") + ":dsv3_pp8");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->model.mtp_layers, 1);
  EXPECT_EQ(s->parallel.first_stage_layers, 8);
  EXPECT_EQ(s->parallel.last_stage_layers, 5);
  EXPECT_THAT(s->defaults_used, ::testing::Contains(HasSubstr("first_stage_layers=8")));
  Scenario plain = *s;
  plain.parallel.first_stage_layers = 0;
  plain.parallel.last_stage_layers = 0;
  EXPECT_THAT(ValidateScenario(plain, "x.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("e.g. first_stage_layers 8, last_stage_layers 5")));
}

// Beyond the published schema a case may state how its run executed: a training object with
// the scenario's stack, kernel and communication fields, and the sustained gpu_clock_mhz.
// Unstated ones stay defaults (and are listed as such); the training object takes no field the
// case states at its top level, and bad values name the line and the field.
TEST(ScenarioTest, CalibrationCaseMayStateItsStackAndClock) {
  const std::string file = Data("cases_stated_stack.jsonl");
  auto plain = LoadCalibrationCase(file + ":plain");
  auto stated = LoadCalibrationCase(file + ":stated");
  ASSERT_THAT(plain, IsOk());
  ASSERT_THAT(stated, IsOk());
  EXPECT_EQ(ResolvedStack(plain->training, plain->parallel), TrainingStack::kLlmFoundry);
  EXPECT_FALSE(plain->training.torch_compile);
  EXPECT_DOUBLE_EQ(ToMegahertz(plain->hw.gpu.sustained_clock), 1830.0);
  EXPECT_THAT(
      plain->defaults_used,
      Contains("overlap_grad_reduce=true, overlap_param_gather=true, grad_reduce_dtype=fp32"));
  EXPECT_EQ(stated->training.stack, TrainingStack::kTorchTitan);
  EXPECT_TRUE(stated->training.torch_compile);
  EXPECT_EQ(stated->training.grad_reduce_dtype, DType::kBf16);
  EXPECT_DOUBLE_EQ(ToMegahertz(stated->hw.gpu.sustained_clock), 1500.0);
  EXPECT_THAT(stated->defaults_used,
              Contains("overlap_grad_reduce=true, overlap_param_gather=true"));
  EXPECT_THAT(stated->defaults_used, Not(Contains(HasSubstr("stack="))));
  const std::pair<const char*, const char*> bad[] = {
      {"bad_key",
       "/training/seq_len: unknown key 'seq_len'; accepted keys: attention_dropout, "
       "attention_kernel,"},
      {"bad_value", "/training/stack: unknown value 'nemo'"},
      {"bad_clock", "/gpu_clock_mhz: must be > 0"}};
  for (const auto& [id, message] : bad) {
    const std::string path = Data(absl::StrCat("cases_stated_", id, ".jsonl"));
    EXPECT_THAT(LoadCalibrationCase(absl::StrCat(path, ":", id)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(absl::StrCat(path, ":1")), HasSubstr(message))))
        << id;
  }
}

TEST(ScenarioTest, CaseSpecMustHaveFileAndId) {
  EXPECT_THAT(LoadCalibrationCase("justafile"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("FILE:ID")));
}

// ---------------------------------------------------------------------------------------------
// ResolveKernels: which flash kernel runs, and its efficiencies in the scenario's hw.

Scenario OnGpu(const std::string& gpu, bool fsdp, const std::string& kernel = "auto") {
  Scenario s = Default();
  auto hw = ResolveHardwareProfile(gpu);
  EXPECT_THAT(hw, IsOk());
  s.hw = *hw;
  s.parallel.fsdp = fsdp;
  s.parallel.distributed_optimizer = !fsdp;
  s.training.flash_kernel = kernel;
  EXPECT_THAT(ResolveKernels(s, "test"), IsOk());
  return s;
}

std::vector<std::string> KernelNotes(const Scenario& s) {
  std::vector<std::string> notes;
  for (const std::string& d : s.defaults_used) {
    if (d.starts_with("attention_kernel=")) notes.push_back(d);
  }
  return notes;
}

TEST(ResolveKernelsTest, AutoPicksPyTorchsFa2ForFsdpOnH100) {
  Scenario s = OnGpu("h100-sxm", /*fsdp=*/true);
  EXPECT_EQ(s.attention_kernel_used, "fa2");
  // FA2 on H100: 370 / 322 TFLOPS of 989.4 (FA3 paper).
  EXPECT_NEAR(s.hw.gpu.attention_fwd_efficiency, 0.374, 1e-3);
  EXPECT_NEAR(s.hw.gpu.attention_bwd_efficiency, 0.325, 1e-3);
  EXPECT_THAT(KernelNotes(s),
              ElementsAre("attention_kernel=fa2 (auto: the llm-foundry stack runs PyTorch SDPA, "
                          "which runs fa2 on h100-sxm)"));
  EXPECT_EQ(ScenarioToJson(s)["training"]["attention_kernel"], "fa2");
}

// The stack decides what the auto kernels take, on any layout: megatron runs the profile's
// default attention (FA3 on H100), Megatron's loss and no metric; llm-foundry PyTorch SDPA's
// kernel (FA2 on H100 for a RoPE model), the fused loss and 2 metric passes; torchtitan SDPA and
// the eager fp32 loss. auto takes llm-foundry for the FSDP-only layout, megatron otherwise; an
// explicit stack gets no "stack=" note, and an explicit kernel wins over the stack.
TEST(ResolveKernelsTest, TheStackPicksTheAutoKernels) {
  struct Want {
    TrainingStack request;
    bool fsdp;
    TrainingStack stack;
    std::string attention;
    LossKernel loss;
    int64_t metric_passes;
  };
  for (const Want& w :
       {Want{TrainingStack::kAuto, true, TrainingStack::kLlmFoundry, "fa2", LossKernel::kFused, 2},
        Want{TrainingStack::kAuto, false, TrainingStack::kMegatron, "fa3", LossKernel::kMegatron,
             0},
        Want{TrainingStack::kMegatron, true, TrainingStack::kMegatron, "fa3", LossKernel::kMegatron,
             0},
        Want{TrainingStack::kLlmFoundry, false, TrainingStack::kLlmFoundry, "fa2",
             LossKernel::kFused, 2},
        Want{TrainingStack::kTorchTitan, true, TrainingStack::kTorchTitan, "fa2",
             LossKernel::kPyTorch, 0}}) {
    Scenario s = Default();
    auto hw = ResolveHardwareProfile("h100-sxm");
    ASSERT_THAT(hw, IsOk());
    s.hw = *hw;
    s.parallel.fsdp = w.fsdp;
    s.parallel.distributed_optimizer = !w.fsdp;
    s.training.stack = w.request;
    ASSERT_THAT(ResolveKernels(s, "test"), IsOk());
    SCOPED_TRACE(std::string(TrainingStackName(w.request)) + (w.fsdp ? " fsdp" : ""));
    EXPECT_EQ(ResolvedStack(s.training, s.parallel), w.stack);
    EXPECT_EQ(s.attention_kernel_used, w.attention);
    EXPECT_EQ(ResolvedLossKernel(s.training, s.parallel), w.loss);
    EXPECT_EQ(ResolvedTrainMetricPasses(s.training, s.parallel), w.metric_passes);
    EXPECT_EQ(ScenarioToJson(s)["training"]["stack"], std::string(TrainingStackName(w.stack)));
    EXPECT_EQ(std::count_if(s.defaults_used.begin(), s.defaults_used.end(),
                            [](const std::string& d) { return d.starts_with("stack="); }),
              w.request == TrainingStack::kAuto ? 1 : 0);
  }
  Scenario s = OnGpu("h100-sxm", /*fsdp=*/true, "fa3");
  s.training.stack = TrainingStack::kTorchTitan;
  s.training.loss_kernel = LossKernel::kFused;
  ASSERT_THAT(ResolveKernels(s, "test"), IsOk());
  EXPECT_EQ(s.attention_kernel_used, "fa3");
  EXPECT_EQ(ResolvedLossKernel(s.training, s.parallel), LossKernel::kFused);
}

TEST(ScenarioTest, StackIsReadAndBadValuesNameTheField) {
  auto s = LoadScenarioFile(Data("stack_torchtitan.json"));
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->training.stack, TrainingStack::kTorchTitan);
  EXPECT_EQ(ScenarioToJson(*s)["training"]["stack"], "torchtitan");
  EXPECT_EQ(ScenarioToJson(*s)["training"]["loss_kernel"], "pytorch");
  EXPECT_THAT(LoadScenarioFile(Data("bad_stack.json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("bad_stack.json"), HasSubstr("/training/stack"),
                             HasSubstr("auto, megatron, llm-foundry, torchtitan"))));
}

TEST(ResolveKernelsTest, AutoKeepsTheDefaultForFsdpWithTensorOrPipelineParallelism) {
  // FSDP with TP or PP is a Megatron-style stack (Transformer Engine attention), not PyTorch's.
  for (auto [tp, pp] : {std::pair<int64_t, int64_t>{2, 1}, {1, 2}}) {
    ParallelConfig p;
    p.fsdp = true;
    p.tp = tp;
    p.pp = pp;
    EXPECT_FALSE(IsPyTorchNativeLayout(p)) << "tp " << tp << " pp " << pp;
  }
  ParallelConfig fsdp_only;
  fsdp_only.fsdp = true;
  EXPECT_TRUE(IsPyTorchNativeLayout(fsdp_only));
}

TEST(ResolveKernelsTest, AutoPicksTheDefaultFa3WithoutFsdpOnH100) {
  Scenario s = OnGpu("h100-sxm", /*fsdp=*/false);
  EXPECT_EQ(s.attention_kernel_used, "fa3");
  // FA3 on H100: 648 / 561 TFLOPS of 989.4.
  EXPECT_NEAR(s.hw.gpu.attention_fwd_efficiency, 0.655, 1e-3);
  EXPECT_NEAR(s.hw.gpu.attention_bwd_efficiency, 0.567, 1e-3);
  EXPECT_THAT(KernelNotes(s),
              ElementsAre("attention_kernel=fa3 (auto: the profile's default kernel)"));
}

TEST(ResolveKernelsTest, ResolvingAgainRestoresTheDefaultKernel) {
  Scenario s = OnGpu("h100-sxm", /*fsdp=*/true);
  ASSERT_EQ(s.attention_kernel_used, "fa2");
  s.parallel.fsdp = false;
  ASSERT_THAT(ResolveKernels(s, "test"), IsOk());
  EXPECT_EQ(s.attention_kernel_used, "fa3");
  EXPECT_NEAR(s.hw.gpu.attention_fwd_efficiency, 0.655, 1e-3);
  EXPECT_THAT(KernelNotes(s), ElementsAre(HasSubstr("fa3")));  // the fa2 note is gone
}

TEST(ResolveKernelsTest, AutoPicksTheDefaultKernelOnA100AndMi300x) {
  // A100: PyTorch's kernel is the default FA2 itself; MI300X names no PyTorch kernel.
  Scenario a100 = OnGpu("a100-sxm-80gb", /*fsdp=*/true);
  EXPECT_EQ(a100.attention_kernel_used, "fa2");
  EXPECT_DOUBLE_EQ(a100.hw.gpu.attention_fwd_efficiency, 0.7);
  Scenario mi300x = OnGpu("mi300x", /*fsdp=*/true);
  EXPECT_EQ(mi300x.attention_kernel_used, "ck");
  EXPECT_DOUBLE_EQ(mi300x.hw.gpu.attention_fwd_efficiency, 0.785);
  EXPECT_THAT(KernelNotes(mi300x),
              ElementsAre("attention_kernel=ck (auto: the profile's default kernel)"));
}

TEST(ResolveKernelsTest, NamedOrFlashKernelIgnoresTheLayout) {
  Scenario named = OnGpu("h100-sxm", /*fsdp=*/true, "fa3");
  EXPECT_EQ(named.attention_kernel_used, "fa3");
  EXPECT_THAT(KernelNotes(named), ::testing::IsEmpty());
  Scenario flash = OnGpu("h100-sxm", /*fsdp=*/true, "flash");
  EXPECT_EQ(flash.attention_kernel_used, "fa3");
  EXPECT_NEAR(flash.hw.gpu.attention_bwd_efficiency, 0.567, 1e-3);
  Scenario fa2 = OnGpu("h100-sxm", /*fsdp=*/false, "fa2");
  EXPECT_EQ(fa2.attention_kernel_used, "fa2");
  EXPECT_NEAR(fa2.hw.gpu.attention_bwd_efficiency, 0.325, 1e-3);
}

TEST(ResolveKernelsTest, KernelTheGpuLacksNamesFieldGpuAndValidValues) {
  Scenario s = Default();  // mi300x
  s.training.flash_kernel = "fa2";
  EXPECT_THAT(ResolveKernels(s, "x.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("x.json: /training/attention_kernel: 'fa2' is not an attention "
                                 "kernel of mi300x; valid: auto, flash, unfused, ck")));
  auto h100 = ResolveHardwareProfile("h100-sxm");
  ASSERT_THAT(h100, IsOk());
  s.hw = *h100;
  s.training.flash_kernel = "fa4";
  EXPECT_THAT(ResolveKernels(s, "x.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'fa4' is not an attention kernel of h100-sxm; valid: auto, "
                                 "flash, unfused, fa3, fa1, fa2")));
}

TEST(ResolveKernelsTest, UnfusedRunsNoFlashKernel) {
  Scenario s = Default();
  ASSERT_THAT(SetAttentionKernel("unfused", s.training), IsOk());
  ASSERT_THAT(ResolveKernels(s, "test"), IsOk());
  EXPECT_EQ(s.attention_kernel_used, "unfused");
  EXPECT_THAT(KernelNotes(s), ::testing::IsEmpty());
  EXPECT_THAT(SetAttentionKernel("", s.training),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty attention kernel")));
}

TEST(ResolveKernelsTest, ProfileNamingNoKernelRunsItsFigures) {
  Scenario s = Default();
  auto hw = ResolveHardwareProfile(std::string(PROJECTOR_TESTDATA_DIR) +
                                   "/hw_profiles/user_minimal.json");
  ASSERT_THAT(hw, IsOk());
  s.hw = *hw;
  s.parallel.fsdp = true;
  ASSERT_THAT(ResolveKernels(s, "test"), IsOk());
  EXPECT_EQ(s.attention_kernel_used, "flash");
  EXPECT_DOUBLE_EQ(s.hw.gpu.attention_fwd_efficiency, GpuSpec{}.attention_fwd_efficiency);
  EXPECT_THAT(KernelNotes(s),
              ElementsAre("attention_kernel=flash (auto: the profile's default kernel)"));
}

TEST(ResolveKernelsTest, ScenarioFileAndCaseAreResolved) {
  auto file = LoadScenarioFile(Data("h100_fa2.json"));
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(file->attention_kernel_used, "fa2");
  EXPECT_NEAR(file->hw.gpu.attention_fwd_efficiency, 0.374, 1e-3);
  EXPECT_THAT(
      LoadScenarioFile(Data("empty_attention_kernel.json")),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("/training/attention_kernel"),
                                                         HasSubstr("empty attention kernel"))));
  // llm-foundry trains MPT (ALiBi, from the library model of the same name and shape) with
  // PyTorch FSDP: SDPA with an additive bias runs the memory-efficient kernel, fa1.
  auto fsdp_case = LoadCalibrationCase(std::string(PROJECTOR_CALIBRATION_DIR) +
                                       "/public.jsonl:llmfoundry_h100_80gb_70b_seq2048_512gpu_"
                                       "amp_bf16");
  ASSERT_THAT(fsdp_case, IsOk());
  EXPECT_EQ(fsdp_case->model.position_embedding, PositionEmbedding::kAlibi);
  EXPECT_EQ(fsdp_case->attention_kernel_used, "fa1");
  EXPECT_THAT(KernelNotes(*fsdp_case), ElementsAre(HasSubstr("with ALiBi's additive bias")));
}

TEST(ResolveKernelsTest, AutoTakesThePyTorchBiasKernelOnlyForAlibiFsdpOnlyLayouts) {
  for (const char* gpu : {"a100-sxm-80gb", "h100-sxm"}) {
    SCOPED_TRACE(gpu);
    Scenario alibi = OnGpu(gpu, /*fsdp=*/true);
    alibi.model.position_embedding = PositionEmbedding::kAlibi;
    ASSERT_THAT(ResolveKernels(alibi, "test"), IsOk());
    EXPECT_EQ(alibi.attention_kernel_used, "fa1");
    const AttentionKernelSpec* fa1 = alibi.hw.gpu.FindAttentionKernel("fa1");
    ASSERT_NE(fa1, nullptr);
    EXPECT_DOUBLE_EQ(alibi.hw.gpu.attention_fwd_efficiency, fa1->fwd_efficiency);
    // Megatron-style (TP > 1): Transformer Engine's attention takes the bias; the default kernel.
    alibi.parallel.tp = 2;
    ASSERT_THAT(ResolveKernels(alibi, "test"), IsOk());
    EXPECT_EQ(alibi.attention_kernel_used, alibi.hw.gpu.attention_kernels.front().name);
    // RoPE on the same FSDP-only layout: SDPA's flash backend, fa2.
    Scenario rope = OnGpu(gpu, /*fsdp=*/true);
    ASSERT_THAT(ResolveKernels(rope, "test"), IsOk());
    EXPECT_EQ(rope.attention_kernel_used, "fa2");
  }
  // A GPU whose profile names no bias kernel keeps attention_kernel_pytorch (or the default).
  Scenario mi300x = OnGpu("mi300x", /*fsdp=*/true);
  mi300x.model.position_embedding = PositionEmbedding::kAlibi;
  ASSERT_THAT(ResolveKernels(mi300x, "test"), IsOk());
  EXPECT_EQ(mi300x.attention_kernel_used, "ck");
}

// attention_core forward of Llama-3.1-8B (32 query heads, d_qk = d_v = 128, causal) at seq 8192,
// micro-batch 1, on one H100 with the roofline attention backend: F = 2·B·H·S²·(d_qk + d_v)/2
// = 2·32·8192²·256/2 = 5.498e11 FLOP at 132 SMs x 4096 FLOP/clk x 1.83 GHz = 989.4 TFLOPS times
// the kernel's forward efficiency (FA2 0.374 = 1.486 ms, FA3 0.655 = 0.848 ms), plus one 2.8 us
// launch. Compute-bound: Q, K, V, O are ~0.17 GB, ~56 us at 3.0 TB/s.
TEST(ResolveKernelsTest, AttentionCoreTimeScalesWithTheKernelEfficiency) {
  auto forward_core_s = [](const std::string& kernel) {
    Scenario s = OnGpu("h100-sxm", /*fsdp=*/false, kernel);
    s.num_gpus = 1;
    s.parallel.dp = 1;
    s.parallel.distributed_optimizer = false;
    s.training.global_batch = 1;
    s.backends.attention = "roofline";
    ProjectionOptions options;
    options.keep_ops = true;
    auto p = Project(s, options);
    EXPECT_THAT(p, IsOk());
    for (const Op& op : p->op_tables.front().ops) {
      if (op.name == "attention_core" && op.phase == OpPhase::kForward) return op.time.value();
    }
    ADD_FAILURE() << "no forward attention_core op";
    return 0.0;
  };
  const double flops = 2.0 * 32 * 8192.0 * 8192.0 * 256 / 2;
  const double peak = 132 * 4096 * 1.83e9;
  const double launch_s = 2.8e-6;
  const double fa2 = forward_core_s("fa2");
  const double fa3 = forward_core_s("fa3");
  EXPECT_THAT(fa2, IsNearRel(flops / (peak * 0.374) + launch_s, 1e-9));
  EXPECT_THAT(fa3, IsNearRel(flops / (peak * 0.655) + launch_s, 1e-9));
  EXPECT_THAT((fa2 - launch_s) / (fa3 - launch_s), IsNearRel(0.655 / 0.374, 1e-9));
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
