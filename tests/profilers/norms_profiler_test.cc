#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "tests/profilers/profiler_test_util.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::CountOps;
using ::projector::testing::FindOp;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using Case = ::projector::testing::ProfilerCase;

// Two norms and two residual adds, each memory-bound; under SP over T/t tokens.
TEST(ProfileNormsTest, SequenceParallelDividesTokensByTp) {
  for (bool sp : {false, true}) {
    Case c(testing::Llama31_8B());
    c.parallel.tp = 4;
    c.parallel.sequence_parallel = sp;
    c.training.seq_len = 4096;
    c.training.micro_batch = 2;
    absl::StatusOr<ModuleProfile> p = ProfileNorms(c.Ctx());
    ASSERT_THAT(p, IsOk());
    const double n = (sp ? 8192.0 / 4 : 8192.0) * 4096;
    EXPECT_EQ(p->tokens, sp ? 2048 : 8192);
    EXPECT_EQ(CountOps(p->ops, OpKind::kMemory, OpPhase::kForward), 4);
    EXPECT_EQ(CountOps(p->ops, OpKind::kMemory, OpPhase::kBackwardDgrad), 4);
    // Norm: read x + write y; residual: read two, write one (bf16).
    EXPECT_THAT(FindOp(p->ops, "input_norm", OpPhase::kForward)->bytes.value(),
                IsNearRel(2 * 2 * n, 1e-12));
    EXPECT_THAT(FindOp(p->ops, "mlp_residual_add", OpPhase::kForward)->bytes.value(),
                IsNearRel(3 * 2 * n, 1e-12));
    // Korthikanti: the two norm inputs, 4sbh (/t under SP).
    EXPECT_THAT(p->activation_bytes.value(), IsNearRel(2 * 2 * n, 1e-12));
    EXPECT_THAT(p->dense_parameters, IsNearRel(2 * 4096, 1e-12));
  }
}

TEST(ProfileNormsTest, LayerNormHasScaleAndBias) {
  Case c(testing::GptMha());
  absl::StatusOr<ModuleProfile> p = ProfileNorms(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_THAT(p->dense_parameters, IsNearRel(4 * 2048, 1e-12));
}

}  // namespace
}  // namespace projector
