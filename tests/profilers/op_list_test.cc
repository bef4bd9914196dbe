#include "profilers/op_list.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::FakeBackends;
using ::projector::testing::FakeCollectiveBackend;
using ::projector::testing::FakeGemmBackend;
using ::projector::testing::FakeAttentionBackend;
using ::projector::testing::FakeMemoryBackend;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

Op GemmOp(int64_t m, int64_t n, int64_t k, int64_t repeat, OpPhase phase) {
  Op op;
  op.name = "g";
  op.module = "mlp";
  op.kind = OpKind::kGemm;
  op.phase = phase;
  op.gemm = GemmShape{.m = m, .n = n, .k = k};
  op.repeat = repeat;
  op.flops = GemmFlops(op.gemm) * static_cast<double>(repeat);
  return op;
}

TEST(OpListTest, NamesAreStable) {
  EXPECT_EQ(OpKindName(OpKind::kGemm), "gemm");
  EXPECT_EQ(OpKindName(OpKind::kCollective), "collective");
  EXPECT_EQ(OpPhaseName(OpPhase::kBackwardDgrad), "backward_dgrad");
  EXPECT_EQ(OpPhaseName(OpPhase::kBackwardWgrad), "backward_wgrad");
  EXPECT_EQ(OpPhaseName(OpPhase::kRecompute), "recompute");
  EXPECT_EQ(CommDimName(CommDim::kEp), "ep");
  EXPECT_EQ(ProvenanceName(Provenance::kScaledFromMeasured), "scaled_from_measured");
}

// time = repeat × (fake rate × FLOPs of one GEMM); all of it clock-scaled for the fake.
TEST(OpListTest, TimeOpsMultipliesByRepeat) {
  FakeBackends fakes;
  OpList ops = {GemmOp(128, 256, 512, 1, OpPhase::kForward),
                GemmOp(128, 256, 512, 4, OpPhase::kForward)};
  ASSERT_THAT(TimeOps(fakes.Refs(), ops), IsOk());
  const double one = 2.0 * 128 * 256 * 512 * 1e-15;
  EXPECT_THAT(ops[0].time.value(), IsNearRel(one, 1e-12));
  EXPECT_THAT(ops[1].time.value(), IsNearRel(4 * one, 1e-12));
  EXPECT_THAT(ops[1].clock_scaled_time.value(), IsNearRel(4 * one, 1e-12));
  EXPECT_EQ(fakes.gemm.calls(), 2);
}

TEST(OpListTest, TimeOpsDispatchesEveryKind) {
  FakeBackends fakes;
  OpList ops(3);
  ops[0].kind = OpKind::kAttention;
  ops[0].attention = AttentionShape{.batch = 1, .num_q_heads = 8, .num_kv_heads = 2,
                                    .seq_q = 1024, .seq_kv = 1024, .qk_head_dim = 128,
                                    .v_head_dim = 128};
  ops[0].attention_pass = AttentionPass::kBackward;
  ops[1].kind = OpKind::kMemory;
  ops[1].memory = MemoryOp{.bytes = Bytes(1e6), .flops = Flops(0)};
  ops[2].kind = OpKind::kCollective;
  ops[2].collective = CollectiveOp{.kind = CollectiveKind::kAllToAll, .bytes = Bytes(1e6),
                                   .group = {.size = 8, .stride = 1}};
  ops[2].algorithm = CollectiveAlgorithm::kPxn;
  ASSERT_THAT(TimeOps(fakes.Refs(), ops), IsOk());
  EXPECT_THAT(ops[0].time.value(),
              IsNearRel(AttentionFlops(ops[0].attention, AttentionPass::kBackward).value() * 1e-15,
                        1e-12));
  EXPECT_THAT(ops[1].time.value(), IsNearRel(1e6 * 1e-12, 1e-12));
  EXPECT_EQ(ops[1].clock_scaled_time.value(), 0.0);
  EXPECT_THAT(ops[2].time.value(), IsNearRel(1e6 * 1e-10, 1e-12));
  EXPECT_EQ(ops[2].clock_scaled_time.value(), 0.0);
  EXPECT_EQ(fakes.collective.last_algorithm(), CollectiveAlgorithm::kPxn);
}

TEST(OpListTest, SumTimeFiltersPhaseAndModule) {
  FakeBackends fakes;
  OpList ops = {GemmOp(64, 64, 64, 1, OpPhase::kForward),
                GemmOp(64, 64, 64, 1, OpPhase::kBackwardDgrad),
                GemmOp(64, 64, 64, 3, OpPhase::kForward)};
  ops[2].module = "attention";
  ASSERT_THAT(TimeOps(fakes.Refs(), ops), IsOk());
  const double one = 2.0 * 64 * 64 * 64 * 1e-15;
  EXPECT_THAT(SumTime(ops, OpPhase::kForward).value(), IsNearRel(4 * one, 1e-12));
  EXPECT_THAT(SumTime(ops, OpPhase::kForward, "mlp").value(), IsNearRel(one, 1e-12));
  EXPECT_THAT(SumTime(ops, OpPhase::kBackwardDgrad).value(), IsNearRel(one, 1e-12));
  EXPECT_EQ(SumTime(ops, OpPhase::kRecompute).value(), 0.0);
}

TEST(OpListTest, BackendErrorNamesTheOpAndKeepsTheCode) {
  FakeGemmBackend gemm(Seconds(1e-15), DType::kFp8);
  FakeAttentionBackend attention;
  FakeMemoryBackend memory;
  FakeCollectiveBackend collective;
  BackendRefs refs{.gemm = gemm, .attention = attention, .memory = memory,
                   .collective = collective};
  OpList ops = {GemmOp(64, 64, 64, 1, OpPhase::kBackwardWgrad)};
  ops[0].gemm.dtype = DType::kFp8;
  EXPECT_THAT(TimeOps(refs, ops),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("mlp/g"), HasSubstr("backward_wgrad"))));
}

TEST(OpListTest, InvalidShapeIsAnError) {
  FakeBackends fakes;
  OpList ops = {GemmOp(0, 64, 64, 1, OpPhase::kForward)};
  EXPECT_THAT(TimeOps(fakes.Refs(), ops), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   HasSubstr("non-positive")));
}

}  // namespace
}  // namespace projector
