#include "profilers/convnet_profiler.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;

double GemmFlops(const OpList& ops, OpPhase phase) {
  double f = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kGemm && op.phase == phase) f += op.flops.value();
  }
  return f;
}

// 32 images of ResNet-50: the forward GEMMs are 2 FLOPs per multiply-add of the network
// (4,089,184,256 per image), the input- and weight-gradient GEMMs as many each; the stem is the
// implicit GEMM M = 32·112², N = 64, K = 3·7².
TEST(ProfileConvNetTest, ResNet50GemmsAreTheNetworksMultiplyAdds) {
  absl::StatusOr<ConvNetSpec> r = ResolveConvNet("resnet50");
  ASSERT_THAT(r, IsOk());
  absl::StatusOr<ModuleProfile> p = ProfileConvNet(*r, 32, DType::kFp16);
  ASSERT_THAT(p, IsOk());
  const double forward = 2.0 * 32 * 4089184256.0;
  EXPECT_THAT(GemmFlops(p->ops, OpPhase::kForward), IsNearRel(forward, 1e-12));
  EXPECT_THAT(GemmFlops(p->ops, OpPhase::kBackwardDgrad), IsNearRel(forward, 1e-12));
  EXPECT_THAT(GemmFlops(p->ops, OpPhase::kBackwardWgrad), IsNearRel(forward, 1e-12));
  const Op& stem = p->ops.front();
  EXPECT_EQ(stem.kind, OpKind::kGemm);
  EXPECT_EQ(stem.gemm, (GemmShape{.m = 32 * 112 * 112, .n = 64, .k = 147, .dtype = DType::kFp16}));
  // Batch norm + ReLU after every convolution: 3 bytes of fp16 traffic per output element
  // forward (a statistics pass and an apply pass); the stem's 32·112²·64 outputs.
  const Op* bn = testing::FindOp(p->ops, "batch_norm", OpPhase::kForward);
  ASSERT_NE(bn, nullptr);
  EXPECT_THAT(bn->bytes.value(), IsNearRel(3.0 * 2.0 * 32 * 112 * 112 * 64, 1e-12));
  // One max pool after the stem, one residual add per bottleneck block (3 + 4 + 6 + 3).
  int pools = 0, adds = 0;
  for (const Op& op : p->ops) {
    if (op.phase != OpPhase::kForward) continue;
    pools += op.name == "max_pool";
    adds += op.name == "residual_add";
  }
  EXPECT_EQ(pools, 1);
  EXPECT_EQ(adds, 16);
  EXPECT_DOUBLE_EQ(p->dense_parameters, 25557032.0);
  EXPECT_GT(p->activation_bytes.value(), 0);
}

TEST(ProfileConvNetTest, RefusesNoImagesAndFp8) {
  absl::StatusOr<ConvNetSpec> r = ResolveConvNet("resnet50");
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(ProfileConvNet(*r, 0, DType::kFp16),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr(">= 1")));
  EXPECT_THAT(ProfileConvNet(*r, 8, DType::kFp8),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("fp32, fp16")));
}

}  // namespace
}  // namespace projector
