#include "projection/calibrate.h"

#include "backends/backend_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

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
                                {"efficiency", 0.7}}) {
    SCOPED_TRACE(name);
    const CalibratedConstant* c = Find(*result, name);
    ASSERT_NE(c, nullptr);
    // The compute constants must be identifiable; a collective one may not be used by the
    // collective model for this GPU (e.g. NVLS all-reduce ignores allreduce_efficiency).
    if (!c->identifiable) {
      EXPECT_THAT(std::string(name), ::testing::AnyOf("allreduce_efficiency",
                                                      "alltoall_efficiency", "efficiency"));
      continue;
    }
    if (std::string(name).find("efficiency") != std::string::npos) ++identified;
    EXPECT_THAT(c->fitted, IsNearRel(expected, 0.01));
  }
  EXPECT_LT(result->rms_error_after_pct, result->rms_error_before_pct);
  EXPECT_LT(result->rms_error_after_pct, 1.0);
  EXPECT_GE(identified, 5);  // the four compute constants and at least one collective one
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
