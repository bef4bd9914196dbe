#include "studies/convnet_training.h"

#include "backends/backend_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "projection/projection.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;

struct Fixture {
  ConvNetSpec spec = *ResolveConvNet("resnet50");
  HardwareProfile hw = *ResolveHardwareProfile("v100-sxm2-16gb");
  BackendSet set = *MakeBackendSet(BackendSelection{}, hw);
};

// The step is its parts: forward + backward + the all-reduce the backward does not hide + the
// optimizer; images/s = images per GPU / step; model TFLOP/s = 3 · 2 · MACs · images/s.
TEST(ConvNetTrainingTest, StepIsItsPartsAndThroughputFollows) {
  Fixture f;
  absl::StatusOr<ConvNetTraining> t =
      ProjectConvNetTraining(f.spec, f.hw, RefsOf(f.set), 256, 8, DType::kFp16);
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(
      t->step.value(),
      IsNearRel((t->forward + t->backward + t->exposed_allreduce + t->optimizer).value(), 1e-12));
  EXPECT_GT(t->allreduce.value(), 0);
  EXPECT_LE(t->exposed_allreduce.value(), t->allreduce.value());
  EXPECT_THAT(t->images_per_s_per_gpu, IsNearRel(256.0 / t->step.value(), 1e-12));
  EXPECT_THAT(t->model_tflops_per_gpu,
              IsNearRel(6.0 * 4089184256.0 * t->images_per_s_per_gpu * 1e-12, 1e-12));
  // The backward's GEMMs are twice the forward's: it takes longer.
  EXPECT_GT(t->backward, t->forward);
  // One GPU has no all-reduce, and more GPUs never raise the per-GPU rate.
  absl::StatusOr<ConvNetTraining> one =
      ProjectConvNetTraining(f.spec, f.hw, RefsOf(f.set), 256, 1, DType::kFp16);
  ASSERT_THAT(one, IsOk());
  EXPECT_EQ(one->allreduce.value(), 0);
  EXPECT_GE(one->images_per_s_per_gpu, t->images_per_s_per_gpu);
}

TEST(ConvNetTrainingTest, RefusesAPrecisionTheGpuLacks) {
  Fixture f;
  EXPECT_THAT(ProjectConvNetTraining(f.spec, f.hw, RefsOf(f.set), 256, 8, DType::kBf16),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("no bf16")));
  EXPECT_THAT(ProjectConvNetTraining(f.spec, f.hw, RefsOf(f.set), 256, 0, DType::kFp16),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("--num-gpus")));
}

}  // namespace
}  // namespace projector
