#include "studies/calibrate.h"

#include <fstream>
#include <set>
#include <string>

#include "backends/backend_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw_profiles/hw_overlay.h"
#include "projection/projection.h"
#include "report/calibrate_report.h"
#include "studies/profile_mode.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/synthetic_cases.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;

using ::testing::HasSubstr;

// Synthetic profile: the ops' "measured" times are the default simulate backends' times on
// `truth` (the H100 profile with known efficiencies), so a correct fit recovers them.
Profile SyntheticProfile(const HardwareProfile& truth) {
  Profile p;
  p.origin = "synthetic";
  p.scenario.model = "llama3.1-8b";
  p.scenario.gpu = "h100-sxm";
  p.scenario.num_gpus = 8;
  p.scenario.parallel.dp = 8;
  auto set = MakeBackendSet(BackendSelection{}, truth);
  EXPECT_THAT(set, IsOk());
  auto add = [&](ProfiledOp op, Seconds t) {
    op.time = {.median = t, .min = t, .max = t, .repetitions = 1};
    p.ops.push_back(op);
  };
  for (auto [m, n, k] : {std::tuple{8192, 8192, 8192}, {4096, 14336, 4096}, {4096, 4096, 14336},
                         {16384, 6144, 4096}}) {
    ProfiledOp op; op.kind = ProfiledOpKind::kGemm;
    op.gemm = GemmShape{.m = m, .n = n, .k = k};
    add(op, (*set).gemm->Estimate(op.gemm)->time);
  }
  for (AttentionPass pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
    for (int64_t seq : {4096, 8192}) {
      ProfiledOp op; op.kind = ProfiledOpKind::kAttention; op.pass = pass;
      op.attention = AttentionShape{.batch = 2, .num_q_heads = 32, .num_kv_heads = 8,
                                    .seq_q = seq, .seq_kv = seq, .qk_head_dim = 128,
                                    .v_head_dim = 128};
      add(op, (*set).attention->Estimate(op.attention, pass)->time);
    }
  }
  for (double mib : {256.0, 1024.0}) {
    ProfiledOp op; op.kind = ProfiledOpKind::kMemory;
    op.memory = MemoryOp{.bytes = Mebibytes(mib), .flops = Flops(0), .launches = 1};
    add(op, (*set).memory->Estimate(op.memory)->time);
  }
  for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                              CollectiveKind::kAllToAll}) {
    for (auto [gib, ranks, stride] : {std::tuple{0.5, 8, 1}, {2.0, 8, 1}, {1.0, 4, 8}}) {
      ProfiledOp op;
      op.kind = ProfiledOpKind::kCollective;
      op.collective = CollectiveOp{.kind = kind, .bytes = Gibibytes(gib),
                                   .group = {.size = ranks, .stride = stride}};
      add(op, (*set).collective->Estimate(op.collective)->time);
    }
  }
  return p;
}

const CalibratedConstant* Find(const CalibrationResult& r, const std::string& name) {
  for (const CalibratedConstant& c : r.constants) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

TEST(CalibrateTest, RecoversKnownConstantsWithinOnePercent) {
  auto hw = ResolveHardwareProfile("h100-sxm");
  ASSERT_THAT(hw, IsOk());
  HardwareProfile truth = *hw;
  truth.gpu.gemm_efficiency = 0.72;
  truth.gpu.attention_fwd_efficiency = 0.55;
  truth.gpu.attention_bwd_efficiency = 0.42;
  truth.gpu.hbm_efficiency = 0.66;
  truth.scale_up.allreduce_efficiency = 0.61;
  truth.scale_up.alltoall_efficiency = 0.58;
  truth.scale_out.efficiency = 0.7;
  truth.scale_out.p2p_efficiency = 0.83;
  const Profile profile = SyntheticProfile(truth);
  auto result = Calibrate(profile, *hw);
  ASSERT_THAT(result, IsOk());
  int identified = 0;
  for (auto [name, expected] : {std::pair<const char*, double>{"gemm_efficiency", 0.72},
                                {"attention_fwd_efficiency", 0.55},
                                {"attention_bwd_efficiency", 0.42},
                                {"hbm_efficiency", 0.66},
                                {"allreduce_efficiency", 0.61},
                                {"alltoall_efficiency", 0.58},
                                {"efficiency", 0.7},
                                {"p2p_efficiency", 0.83}}) {
    SCOPED_TRACE(name);
    const CalibratedConstant* c = Find(*result, name);
    ASSERT_NE(c, nullptr);
    // The compute constants must be identifiable; a collective one may not be used by the
    // collective model for this GPU (e.g. NVLS all-reduce ignores allreduce_efficiency).
    if (!c->identifiable) {
      EXPECT_THAT(std::string(name), ::testing::AnyOf("allreduce_efficiency", "alltoall_efficiency",
                                                      "efficiency", "p2p_efficiency"));
      continue;
    }
    if (std::string(name).find("efficiency") != std::string::npos) ++identified;
    EXPECT_THAT(c->fitted, IsNearRel(expected, 0.01));
  }
  EXPECT_LT(result->rms_error_after_pct, result->rms_error_before_pct);
  EXPECT_LT(result->rms_error_after_pct, 1.0);
  EXPECT_GE(identified, 5);  // the four compute constants and at least one collective one
}

// FP8 GEMMs identify gemm_efficiency_fp8 apart from the bf16 figure, even when the profile
// has no FP8 figure (it then starts at the bf16 one, the fallback GpuSpec::GemmEfficiency uses).
TEST(CalibrateTest, FitsTheFp8GemmEfficiencyApartFromTheBf16One) {
  auto hw = ResolveHardwareProfile("h100-sxm");
  ASSERT_THAT(hw, IsOk());
  HardwareProfile base = *hw;
  base.gpu.gemm_efficiency_fp8.reset();
  HardwareProfile truth = base;
  truth.gpu.gemm_efficiency = 0.74;
  truth.gpu.gemm_efficiency_fp8 = 0.61;
  Profile profile = SyntheticProfile(truth);
  auto set = MakeBackendSet(BackendSelection{}, truth);
  ASSERT_THAT(set, IsOk());
  for (auto [m, n, k] : {std::tuple{8192, 8192, 8192}, {4096, 14336, 4096}}) {
    ProfiledOp op;
    op.kind = ProfiledOpKind::kGemm;
    op.gemm = GemmShape{.m = m, .n = n, .k = k, .dtype = DType::kFp8};
    const Seconds t = (*set).gemm->Estimate(op.gemm)->time;
    op.time = {.median = t, .min = t, .max = t, .repetitions = 1};
    profile.ops.push_back(op);
  }
  auto result = Calibrate(profile, base);
  ASSERT_THAT(result, IsOk());
  const CalibratedConstant* bf16 = Find(*result, "gemm_efficiency");
  const CalibratedConstant* fp8 = Find(*result, "gemm_efficiency_fp8");
  ASSERT_NE(bf16, nullptr);
  ASSERT_NE(fp8, nullptr);
  EXPECT_TRUE(fp8->identifiable);
  EXPECT_EQ(fp8->ops, 2);
  EXPECT_DOUBLE_EQ(fp8->initial, base.gpu.gemm_efficiency);
  EXPECT_THAT(bf16->fitted, IsNearRel(0.74, 0.01));
  EXPECT_THAT(fp8->fitted, IsNearRel(0.61, 0.01));
  EXPECT_EQ(HwOverlayJson(*result)["gpu"]["gemm_efficiency_fp8"], fp8->fitted);
}

// Without FP8 ops the FP8 figure is not identifiable and stays out of the overlay.
TEST(CalibrateTest, Fp8EfficiencyIsNotFittedWithoutFp8Ops) {
  auto hw = ResolveHardwareProfile("h100-sxm");
  ASSERT_THAT(hw, IsOk());
  auto result = Calibrate(SyntheticProfile(*hw), *hw);
  ASSERT_THAT(result, IsOk());
  const CalibratedConstant* fp8 = Find(*result, "gemm_efficiency_fp8");
  ASSERT_NE(fp8, nullptr);
  EXPECT_FALSE(fp8->identifiable);
  EXPECT_FALSE(HwOverlayJson(*result)["gpu"].contains("gemm_efficiency_fp8"));
}

// End to end: the "measured" profile of a real scenario (Llama-3.1-8B, TP2 SP DP4 on 8 H100)
// is the simulate model on a GPU whose efficiency constants were perturbed (`truth`): every
// distinct compute op the scenario runs, a sweep of collectives, and the step throughput. The
// fit on the unperturbed profile must recover the perturbed constants within 1%, and the full
// projection of the profile's own scenario with the overlay must land closer to the "measured"
// throughput than without it.
TEST(CalibrateTest, OverlayBringsTheFullProjectionOfTheProfiledScenarioToTheMeasurement) {
  Profile profile;
  profile.origin = "synthetic_e2e";
  profile.scenario.model = "llama3.1-8b";
  profile.scenario.gpu = "h100-sxm";
  profile.scenario.num_gpus = 8;
  profile.scenario.gpus_per_node = 8;
  profile.scenario.parallel =
      ParallelConfig{.tp = 2, .dp = 4, .sequence_parallel = true};
  profile.scenario.micro_batch = 1;
  profile.scenario.seq_len = 4096;
  profile.scenario.global_batch = 32;
  auto base = ScenarioFromProfile(profile);
  ASSERT_THAT(base, IsOk());

  HardwareProfile truth = base->hw;
  truth.gpu.gemm_efficiency *= 0.85;
  truth.gpu.attention_fwd_efficiency *= 0.8;
  truth.gpu.attention_bwd_efficiency *= 0.9;
  truth.gpu.hbm_efficiency *= 0.75;
  truth.scale_up.allreduce_efficiency *= 0.9;
  truth.scale_up.alltoall_efficiency *= 0.8;
  auto truth_set = MakeBackendSet(BackendSelection{}, truth);
  ASSERT_THAT(truth_set, IsOk());
  const BackendRefs truth_refs{.gemm = *truth_set->gemm, .attention = *truth_set->attention,
                               .memory = *truth_set->memory,
                               .collective = *truth_set->collective};

  // Every distinct compute op of one micro-batch, "measured" on the truth GPU.
  auto ops = ScenarioComputeOps(*base);
  ASSERT_THAT(ops, IsOk());
  ASSERT_THAT(TimeOps(truth_refs, *ops), IsOk());
  std::set<std::string> seen;
  for (const Op& op : *ops) {
    ProfiledOp p = ToProfiledOp(op);
    const std::string key = DescribeProfiledOp(p);
    if (!seen.insert(key).second) continue;
    const Seconds once = op.time / static_cast<double>(op.repeat);
    p.time = {.median = once, .min = once, .max = once, .repetitions = 1};
    profile.ops.push_back(std::move(p));
  }
  // nccl-tests-style collective sweep inside the node.
  for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                              CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
    for (auto [mib, ranks] : {std::pair{64.0, 2}, {256.0, 8}, {1024.0, 8}}) {
      ProfiledOp p;
      p.kind = ProfiledOpKind::kCollective;
      p.collective = CollectiveOp{.kind = kind, .bytes = Mebibytes(mib),
                                  .group = {.size = ranks, .stride = 1}};
      auto e = truth_set->collective->Estimate(p.collective);
      ASSERT_THAT(e, IsOk());
      p.time = {.median = e->time, .min = e->time, .max = e->time, .repetitions = 1};
      profile.ops.push_back(std::move(p));
    }
  }
  Scenario truth_scenario = *base;
  truth_scenario.hw = truth;
  auto measured = Project(truth_scenario);
  ASSERT_THAT(measured, IsOk());
  const double measured_tgs = measured->tokens_per_s_per_gpu;

  auto fit = Calibrate(profile, base->hw);
  ASSERT_THAT(fit, IsOk());
  int identified = 0;
  for (auto [name, expected] :
       {std::pair<const char*, double>{"gemm_efficiency", truth.gpu.gemm_efficiency},
        {"attention_fwd_efficiency", truth.gpu.attention_fwd_efficiency},
        {"attention_bwd_efficiency", truth.gpu.attention_bwd_efficiency},
        {"hbm_efficiency", truth.gpu.hbm_efficiency},
        {"allreduce_efficiency", truth.scale_up.allreduce_efficiency},
        {"alltoall_efficiency", truth.scale_up.alltoall_efficiency}}) {
    SCOPED_TRACE(name);
    const CalibratedConstant* c = Find(*fit, name);
    ASSERT_NE(c, nullptr);
    if (!c->identifiable) continue;  // e.g. NVLS all-reduce does not use allreduce_efficiency
    ++identified;
    EXPECT_THAT(c->fitted, IsNearRel(expected, 0.01));
  }
  EXPECT_GE(identified, 5);  // the four compute constants and at least one collective one

  Scenario with_overlay = *base;
  ASSERT_THAT(ApplyHwOverlay(HwOverlayJson(*fit), "overlay.json", with_overlay.hw), IsOk());
  auto before = Project(*base);
  auto after = Project(with_overlay);
  ASSERT_THAT(before, IsOk());
  ASSERT_THAT(after, IsOk());
  const double error_before = std::abs(before->tokens_per_s_per_gpu / measured_tgs - 1.0);
  const double error_after = std::abs(after->tokens_per_s_per_gpu / measured_tgs - 1.0);
  // Slower kernels on the truth GPU: the unfitted projection is too fast (by 19% today).
  EXPECT_GT(error_before, 0.05);
  EXPECT_LT(error_after, error_before);
  EXPECT_LT(error_after, 0.01);
}

TEST(CalibrateTest, OverlayAppliesTheFittedConstants) {
  auto hw = ResolveHardwareProfile("h100-sxm");
  ASSERT_THAT(hw, IsOk());
  HardwareProfile truth = *hw;
  truth.gpu.gemm_efficiency = 0.7;
  auto result = Calibrate(SyntheticProfile(truth), *hw);
  ASSERT_THAT(result, IsOk());
  HardwareProfile applied = *hw;
  ASSERT_THAT(ApplyHwOverlay(HwOverlayJson(*result), "overlay.json", applied), IsOk());
  EXPECT_DOUBLE_EQ(applied.gpu.gemm_efficiency, result->fitted_hw.gpu.gemm_efficiency);
  EXPECT_THAT(applied.gpu.gemm_efficiency, IsNearRel(0.7, 0.01));
}

TEST(CalibrateTest, OverlayErrorsNameFileAndField) {
  auto hw = ResolveHardwareProfile("h100-sxm");
  ASSERT_THAT(hw, IsOk());
  nlohmann::json overlay = {{"format", "projector-hw-overlay"}, {"version", 1},
                            {"base", "mi300x"}};
  EXPECT_THAT(ApplyHwOverlay(overlay, "o.json", *hw),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("o.json: /base")));
  overlay["base"] = "h100-sxm";
  overlay["gpu"] = {{"gemm_efficiency", 1.5}};
  EXPECT_THAT(ApplyHwOverlay(overlay, "o.json", *hw),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/gpu/gemm_efficiency")));
  overlay["gpu"] = {{"gemm_eficiency", 0.5}};
  EXPECT_THAT(ApplyHwOverlay(overlay, "o.json", *hw),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown key")));
  overlay["version"] = 3;
  EXPECT_THAT(ApplyHwOverlay(overlay, "o.json", *hw),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/version")));
}

// compute_scale multiplies every compute efficiency (GEMM bf16 and FP8, attention of every
// named kernel), each capped at 1, after the overlay's own constants.
TEST(CalibrateTest, ComputeScaleMultipliesEveryComputeEfficiencyCappedAtOne) {
  auto hw = ResolveHardwareProfile("h100-sxm");
  ASSERT_THAT(hw, IsOk());
  HardwareProfile scaled = *hw;
  nlohmann::json overlay = {{"format", "projector-hw-overlay"},
                            {"version", 1},
                            {"base", "h100-sxm"},
                            {"gpu", {{"compute_scale", 0.5}, {"hbm_efficiency", 0.8}}}};
  ASSERT_THAT(ApplyHwOverlay(overlay, "o.json", scaled), IsOk());
  const GpuSpec& g = hw->gpu;
  EXPECT_DOUBLE_EQ(scaled.gpu.gemm_efficiency, 0.5 * g.gemm_efficiency);
  EXPECT_DOUBLE_EQ(scaled.gpu.GemmEfficiency(DType::kFp8), 0.5 * g.GemmEfficiency(DType::kFp8));
  EXPECT_DOUBLE_EQ(scaled.gpu.attention_fwd_efficiency, 0.5 * g.attention_fwd_efficiency);
  EXPECT_DOUBLE_EQ(scaled.gpu.attention_bwd_efficiency, 0.5 * g.attention_bwd_efficiency);
  ASSERT_EQ(scaled.gpu.attention_kernels.size(), g.attention_kernels.size());
  for (size_t i = 0; i < g.attention_kernels.size(); ++i) {
    EXPECT_DOUBLE_EQ(scaled.gpu.attention_kernels[i].fwd_efficiency,
                     0.5 * g.attention_kernels[i].fwd_efficiency);
    EXPECT_DOUBLE_EQ(scaled.gpu.attention_kernels[i].bwd_efficiency,
                     0.5 * g.attention_kernels[i].bwd_efficiency);
  }
  EXPECT_DOUBLE_EQ(scaled.gpu.hbm_efficiency, 0.8);  // set, not scaled
  // 1.9 x the H100 GEMM figure (0.803) exceeds 1: capped.
  HardwareProfile capped = *hw;
  overlay["gpu"] = {{"compute_scale", 1.9}};
  ASSERT_THAT(ApplyHwOverlay(overlay, "o.json", capped), IsOk());
  EXPECT_DOUBLE_EQ(capped.gpu.gemm_efficiency, 1.0);
  for (double bad : {0.0, -0.5, 2.5}) {
    overlay["gpu"] = {{"compute_scale", bad}};
    EXPECT_THAT(ApplyHwOverlay(overlay, "o.json", capped),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("o.json: /gpu/compute_scale: must be in [0.2, 2]")));
  }
}

// Stack calibration on synthetic runs: the "measured" TGS of the test series cases are their
// projections with compute_scale 0.7, so the fit recovers 0.7 (within the search tolerance and
// the flatness of the objective near its minimum: 1%) and the error after the fit vanishes.
TEST(CalibrateTest, StackCalibrationRecoversAKnownComputeScale) {
  const std::string series =
      std::string(PROJECTOR_TESTDATA_DIR) + "/scenarios/cases_series.jsonl";
  ValidationOptions truth;
  truth.hw_overlays.push_back({.value = {{"format", "projector-hw-overlay"},
                                         {"version", 1},
                                         {"base", "h100-sxm"},
                                         {"gpu", {{"compute_scale", 0.7}}}},
                               .origin = "truth",
                               .base = "h100-sxm"});
  auto projected = ValidateCasesFile(series, truth);
  ASSERT_THAT(projected, IsOk());
  const std::string synthetic = ::testing::TempDir() + "/stack_synthetic.jsonl";
  testing::WriteCasesMeasuredAt(series, synthetic, [&](size_t i) {
    return *projected->cases.at(i).projected_tokens_per_s_per_gpu;
  });
  std::vector<std::pair<int64_t, int64_t>> progress;
  auto fit = CalibrateFromCases(synthetic, "h100-sxm", {}, [&](int64_t done, int64_t total) {
    progress.emplace_back(done, total);
  });
  ASSERT_THAT(fit, IsOk());
  EXPECT_THAT(fit->compute_scale, IsNearRel(0.7, 0.01));
  // One progress call per validation, the last at the total CalibrationEvaluations counts: 1 at
  // the start, 2 to open the search, ceil(ln(1e-3 / width) / ln 0.618) steps, 1 at the end.
  // Width 2.0 − 0.2 = 1.8: ln(1e-3 / 1.8) / ln 0.618 = 15.6, so 16 steps and 1 + 2 + 16 + 1 = 20.
  EXPECT_EQ(CalibrationEvaluations(), 20);
  EXPECT_EQ(fit->evaluations, CalibrationEvaluations());
  ASSERT_EQ(static_cast<int64_t>(progress.size()), fit->evaluations);
  EXPECT_EQ(progress.back(), std::make_pair(fit->evaluations, fit->evaluations));
  EXPECT_FALSE(fit->at_bound);
  EXPECT_EQ(fit->after.projected, 5);
  EXPECT_GT(fit->before.median_abs_error_pct, 10.0);
  EXPECT_LT(fit->after.median_abs_error_pct, 1.0);
  // The overlay it writes carries the scale and reads back.
  const nlohmann::json overlay = StackOverlayJson(*fit);
  EXPECT_DOUBLE_EQ(overlay["gpu"]["compute_scale"].get<double>(), fit->compute_scale);
  auto hw = ResolveHardwareProfile("h100-sxm");
  ASSERT_THAT(hw, IsOk());
  EXPECT_THAT(ApplyHwOverlay(overlay, "fit.json", *hw), IsOk());
  EXPECT_THAT(StackCalibrationText(*fit), HasSubstr("compute_scale 0.70"));
  EXPECT_DOUBLE_EQ(StackCalibrationJson(*fit)["compute_scale"].get<double>(), fit->compute_scale);
  // Per (source, GPU) group of a validation: the one group ("test" on h100-sxm, 5 cases) gets
  // the same fit; a source filter that matches nothing gives no group.
  auto report = ValidateCasesFile(synthetic);
  ASSERT_THAT(report, IsOk());
  auto groups = FitScalesBySourceAndGpu(synthetic, *report, {});
  ASSERT_THAT(groups, IsOk());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].source, "test");
  EXPECT_EQ((*groups)[0].fit.gpu, "h100-sxm");
  EXPECT_THAT((*groups)[0].fit.compute_scale, IsNearRel(0.7, 0.01));
  EXPECT_THAT(GroupScalesText(*groups), HasSubstr("test on h100-sxm"));
  EXPECT_EQ(GroupScalesJson(*groups)[0]["source"], "test");
  ValidationOptions only_pairs;
  only_pairs.only = "pair_";  // the 2 pair cases: fewer than kMinCasesForScaleFit
  auto pairs = ValidateCasesFile(synthetic, only_pairs);
  ASSERT_THAT(pairs, IsOk());
  auto none = FitScalesBySourceAndGpu(synthetic, *pairs, only_pairs);
  ASSERT_THAT(none, IsOk());
  EXPECT_TRUE(none->empty());
}

TEST(CalibrateTest, StackCalibrationNeedsProjectedCasesOnTheGpu) {
  const std::string series =
      std::string(PROJECTOR_TESTDATA_DIR) + "/scenarios/cases_series.jsonl";
  EXPECT_THAT(CalibrateFromCases(series, "mi300x", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no case on 'mi300x' could be projected")));
}

TEST(CalibrateTest, NeedsMeasuredOps) {
  auto hw = ResolveHardwareProfile("h100-sxm");
  ASSERT_THAT(hw, IsOk());
  Profile empty;
  empty.origin = "modules_only.json";
  EXPECT_THAT(Calibrate(empty, *hw),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("modules_only.json: /ops")));
}

}  // namespace
}  // namespace projector
