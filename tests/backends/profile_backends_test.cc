#include "backends/profile/profiled_backends.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::projector::testing::FakeAttentionBackend;
using ::projector::testing::FakeCollectiveBackend;
using ::projector::testing::FakeGemmBackend;
using ::projector::testing::FakeMemoryBackend;

ProfiledOp MeasuredGemm(int64_t m, int64_t n, int64_t k, double us) {
  ProfiledOp op; op.kind = ProfiledOpKind::kGemm;
  op.gemm = GemmShape{.m = m, .n = n, .k = k};
  op.time = {.median = Microseconds(us), .min = Microseconds(us), .max = Microseconds(us),
             .repetitions = 10};
  return op;
}

Profile GemmProfile() {
  Profile p;
  p.ops = {MeasuredGemm(4096, 4096, 4096, 200.0)};
  return p;
}

TEST(ProfiledGemmBackendTest, ExactShapeOnSameHardwareIsMeasured) {
  const Profile p = GemmProfile();
  FakeGemmBackend sim(Seconds(1e-15));
  ProfiledGemmBackend backend(p, sim, sim);
  auto r = backend.Resolve(GemmShape{.m = 4096, .n = 4096, .k = 4096});
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->source, TimeSource::kMeasured);
  EXPECT_EQ(r->estimate.bound, Bound::kMeasured);
  EXPECT_DOUBLE_EQ(ToMicroseconds(r->estimate.time), 200.0);
  EXPECT_EQ(r->source_op, &p.ops[0]);
}

// TP 8 splits the column-parallel GEMM's N by 8: simulated(target)/simulated(source) is
// (4096·512·4096)/(4096·4096·4096) = 1/8 with a time-per-FLOP model, so 200 us -> 25 us.
TEST(ProfiledGemmBackendTest, TensorParallelSplitScalesByTheSimulatedRatio) {
  const Profile p = GemmProfile();
  FakeGemmBackend sim(Seconds(1e-15));
  ProfiledGemmBackend backend(p, sim, sim);
  auto r = backend.Resolve(GemmShape{.m = 4096, .n = 512, .k = 4096});
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->source, TimeSource::kScaledFromMeasured);
  EXPECT_NE(r->estimate.bound, Bound::kMeasured);
  EXPECT_NEAR(r->scale, 0.125, 1e-12);
  EXPECT_NEAR(ToMicroseconds(r->estimate.time), 25.0, 1e-9);
  EXPECT_NEAR(ToMicroseconds(r->estimate.clock_scaled_time), 25.0, 1e-9);
}

// The target GPU is simulated 2x faster than the one measured (e.g. another clock): the exact
// shape is carried over by 0.5·(time per FLOP) ratio and marked scaled.
TEST(ProfiledGemmBackendTest, ExactShapeOnOtherHardwareIsScaled) {
  const Profile p = GemmProfile();
  FakeGemmBackend target(Seconds(0.5e-15));
  FakeGemmBackend measured(Seconds(1e-15));
  ProfiledGemmBackend backend(p, target, measured);
  auto r = backend.Resolve(GemmShape{.m = 4096, .n = 4096, .k = 4096});
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->source, TimeSource::kScaledFromMeasured);
  EXPECT_NEAR(ToMicroseconds(r->estimate.time), 100.0, 1e-9);
}

TEST(ProfiledGemmBackendTest, FarShapeOrOtherDtypeIsSimulated) {
  const Profile p = GemmProfile();
  FakeGemmBackend sim(Seconds(1e-15));
  ProfiledGemmBackend backend(p, sim, sim);
  const GemmShape far{.m = 16, .n = 64, .k = 128};  // ln(256·64·32) > ln 64
  auto r = backend.Resolve(far);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->source, TimeSource::kSimulated);
  EXPECT_DOUBLE_EQ(r->estimate.time.value(), 1e-15 * GemmFlops(far).value());
  auto fp8 = backend.Resolve(GemmShape{.m = 4096, .n = 4096, .k = 4096, .dtype = DType::kFp8});
  ASSERT_THAT(fp8, IsOk());
  EXPECT_EQ(fp8->source, TimeSource::kSimulated);
}

TEST(ProfiledGemmBackendTest, PicksTheNearestMeasuredShape) {
  Profile p;
  p.ops = {MeasuredGemm(4096, 4096, 4096, 200.0), MeasuredGemm(4096, 1024, 4096, 60.0)};
  FakeGemmBackend sim(Seconds(1e-15));
  ProfiledGemmBackend backend(p, sim, sim);
  auto r = backend.Resolve(GemmShape{.m = 4096, .n = 512, .k = 4096});
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->source_op, &p.ops[1]);
  EXPECT_NEAR(ToMicroseconds(r->estimate.time), 30.0, 1e-9);  // 60 us · 512/1024
}

TEST(ProfiledAttentionBackendTest, MatchesPassAndScalesBySequence) {
  Profile p;
  ProfiledOp a; a.kind = ProfiledOpKind::kAttention;
  a.attention = AttentionShape{.batch = 1, .num_q_heads = 32, .num_kv_heads = 8, .seq_q = 4096,
                               .seq_kv = 4096, .qk_head_dim = 128, .v_head_dim = 128};
  a.pass = AttentionPass::kForward;
  a.time = {.median = Microseconds(700), .min = Microseconds(700), .max = Microseconds(700),
            .repetitions = 5};
  p.ops = {a};
  FakeAttentionBackend sim(Seconds(1e-15));
  ProfiledAttentionBackend backend(p, sim, sim);
  auto exact = backend.Resolve(a.attention, AttentionPass::kForward);
  ASSERT_THAT(exact, IsOk());
  EXPECT_EQ(exact->source, TimeSource::kMeasured);
  // TP 4: a quarter of the heads -> a quarter of the FLOPs.
  AttentionShape tp4 = a.attention;
  tp4.num_q_heads = 8;
  tp4.num_kv_heads = 2;
  auto scaled = backend.Resolve(tp4, AttentionPass::kForward);
  ASSERT_THAT(scaled, IsOk());
  EXPECT_EQ(scaled->source, TimeSource::kScaledFromMeasured);
  EXPECT_NEAR(ToMicroseconds(scaled->estimate.time), 175.0, 1e-9);
  auto bwd = backend.Resolve(a.attention, AttentionPass::kBackward);
  ASSERT_THAT(bwd, IsOk());
  EXPECT_EQ(bwd->source, TimeSource::kSimulated);
}

TEST(ProfiledCollectiveBackendTest, CarriesOverOnlyTheSameKind) {
  Profile p;
  ProfiledOp c; c.kind = ProfiledOpKind::kCollective;
  c.collective = CollectiveOp{.kind = CollectiveKind::kAllReduce, .bytes = Bytes(1e9),
                              .group = {.size = 8, .stride = 1}};
  c.time = {.median = Microseconds(5000), .min = Microseconds(5000), .max = Microseconds(5000),
            .repetitions = 5};
  p.ops = {c};
  FakeCollectiveBackend sim(Seconds(1e-10));
  ProfiledCollectiveBackend backend(p, sim, sim);
  CollectiveOp half = c.collective;
  half.bytes = Bytes(0.5e9);
  auto r = backend.Resolve(half);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->source, TimeSource::kScaledFromMeasured);
  EXPECT_GT(r->estimate.time.value(), 0);
  CollectiveOp a2a = c.collective;
  a2a.kind = CollectiveKind::kAllToAll;
  auto other = backend.Resolve(a2a);
  ASSERT_THAT(other, IsOk());
  EXPECT_EQ(other->source, TimeSource::kSimulated);
}

TEST(ProfiledMemoryBackendTest, ExactMatchIsMeasured) {
  Profile p;
  ProfiledOp m; m.kind = ProfiledOpKind::kMemory;
  m.memory = MemoryOp{.bytes = Bytes(1 << 26), .flops = Flops(0), .launches = 1};
  m.time = {.median = Microseconds(30), .min = Microseconds(30), .max = Microseconds(30),
            .repetitions = 5};
  p.ops = {m};
  FakeMemoryBackend sim;
  ProfiledMemoryBackend backend(p, sim, sim);
  auto r = backend.Estimate(m.memory);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->bound, Bound::kMeasured);
  EXPECT_DOUBLE_EQ(ToMicroseconds(r->time), 30.0);
}

}  // namespace
}  // namespace projector
