#include "backends/simulate/tile_attention_backend.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/compute_hardware.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

double Tflops(const AttentionShape& s, AttentionPass pass, const AttentionEstimate& e) {
  return AttentionFlops(s, pass).value() / e.time.value() * 1e-12;
}

// FA3-paper shape: B·S = 16k tokens, H·D = 2048, hdim 128, BF16.
AttentionShape Fa3PaperShape(int64_t seq, bool causal) {
  return {.batch = 16384 / seq, .num_q_heads = 16, .num_kv_heads = 16, .seq_q = seq,
          .seq_kv = seq, .qk_head_dim = 128, .v_head_dim = 128, .causal = causal};
}

struct PublishedAttention {
  std::string what;
  HardwareProfile hw;
  AttentionShape shape;
  AttentionPass pass;
  double tflops;
};

// Published flash-attention throughput (hardware_models.md 4.2), within ±15%:
//  H100 FA3 hdim128 16k: fwd 648, causal fwd 616, bwd 561 (FA3 paper, arXiv 2407.08608);
//  MI355X AITER B16 H16 hdim128 8k: fwd 1259, bwd 1167, causal fwd 1173 (HipKittens JSON);
//  A100 FA2 fwd ≈ 212 (FA2: 50-73% of 312 TFLOPS; 225 TFLOPS/GPU end-to-end);
//  B200 FA4 hdim128 8k fwd 1837 (flash-attention PR 2605).
TEST(TileAttentionBackendTest, LandsNearPublishedFlashAttentionThroughput) {
  const AttentionShape mi355x_8k{.batch = 16, .num_q_heads = 16, .num_kv_heads = 16,
                                 .seq_q = 8192, .seq_kv = 8192, .qk_head_dim = 128,
                                 .v_head_dim = 128, .causal = false};
  AttentionShape mi355x_8k_causal = mi355x_8k;
  mi355x_8k_causal.causal = true;
  const std::vector<PublishedAttention> cases = {
      {"h100 fa3 fwd", testing::compute::H100Like(), Fa3PaperShape(16384, false), AttentionPass::kForward, 648},
      {"h100 fa3 causal fwd", testing::compute::H100Like(), Fa3PaperShape(16384, true), AttentionPass::kForward, 616},
      {"h100 fa3 bwd", testing::compute::H100Like(), Fa3PaperShape(16384, false), AttentionPass::kBackward, 561},
      {"mi355x fwd", testing::compute::Mi355xLike(), mi355x_8k, AttentionPass::kForward, 1259},
      {"mi355x causal fwd", testing::compute::Mi355xLike(), mi355x_8k_causal, AttentionPass::kForward, 1173},
      {"mi355x bwd", testing::compute::Mi355xLike(), mi355x_8k, AttentionPass::kBackward, 1167},
      {"a100 fa2 fwd", testing::compute::A100Like(), Fa3PaperShape(8192, false), AttentionPass::kForward, 212},
      {"b200 fa4 fwd", testing::compute::B200Like(), Fa3PaperShape(8192, false), AttentionPass::kForward, 1837},
  };
  for (const PublishedAttention& c : cases) {
    TileAttentionBackend backend(c.hw);
    absl::StatusOr<AttentionEstimate> e = backend.Estimate(c.shape, c.pass);
    ASSERT_THAT(e, IsOk()) << c.what;
    EXPECT_THAT(Tflops(c.shape, c.pass, *e), IsNearRel(c.tflops, 0.15)) << c.what;
    EXPECT_EQ(e->bound, Bound::kCompute) << c.what;
  }
}

// Causal skips the masked KV tiles: ≈ half the work at long sequence (ratio → 1/2 + O(tile/S)),
// clearly more than half at short sequence where the diagonal tiles and fixed costs dominate.
TEST(TileAttentionBackendTest, CausalIsAboutHalfAtLongSequenceAndMoreAtShort) {
  for (const HardwareProfile& hw : {testing::compute::H100Like(), testing::compute::Mi300xLike()}) {
    TileAttentionBackend backend(hw);
    for (AttentionPass pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
      absl::StatusOr<AttentionEstimate> full = backend.Estimate(Fa3PaperShape(16384, false), pass);
      absl::StatusOr<AttentionEstimate> causal = backend.Estimate(Fa3PaperShape(16384, true), pass);
      ASSERT_THAT(full, IsOk());
      ASSERT_THAT(causal, IsOk());
      EXPECT_GT(causal->time / full->time, 0.45) << hw.name;
      EXPECT_LT(causal->time / full->time, 0.60) << hw.name;

      AttentionShape short_full = Fa3PaperShape(256, false);
      AttentionShape short_causal = Fa3PaperShape(256, true);
      absl::StatusOr<AttentionEstimate> sf = backend.Estimate(short_full, pass);
      absl::StatusOr<AttentionEstimate> sc = backend.Estimate(short_causal, pass);
      ASSERT_THAT(sf, IsOk());
      ASSERT_THAT(sc, IsOk());
      EXPECT_GT(sc->time / sf->time, 0.6) << hw.name;
      EXPECT_LE(sc->time, sf->time) << hw.name;
    }
  }
}

// GQA loads each KV head once per group of query heads: never slower than MHA with the same
// number of query heads (same MMA work).
TEST(TileAttentionBackendTest, GqaIsNotSlowerThanMha) {
  for (const HardwareProfile& hw : {testing::compute::H100Like(), testing::compute::Mi300xLike(), testing::compute::A100Like()}) {
    TileAttentionBackend backend(hw);
    for (int64_t seq : {128, 1024, 8192}) {
      for (bool causal : {false, true}) {
        AttentionShape mha{.batch = 4, .num_q_heads = 32, .num_kv_heads = 32, .seq_q = seq,
                           .seq_kv = seq, .qk_head_dim = 128, .v_head_dim = 128, .causal = causal};
        AttentionShape gqa = mha;
        gqa.num_kv_heads = 8;
        AttentionShape mqa = mha;
        mqa.num_kv_heads = 1;
        for (AttentionPass pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
          absl::StatusOr<AttentionEstimate> a = backend.Estimate(mha, pass);
          absl::StatusOr<AttentionEstimate> g = backend.Estimate(gqa, pass);
          absl::StatusOr<AttentionEstimate> q = backend.Estimate(mqa, pass);
          ASSERT_THAT(a, IsOk());
          ASSERT_THAT(g, IsOk());
          ASSERT_THAT(q, IsOk());
          EXPECT_LE(g->time, a->time) << hw.name << " seq " << seq;
          EXPECT_LE(q->time, g->time) << hw.name << " seq " << seq;
        }
      }
    }
  }
}

// Decode-like attention (one query row over a long KV cache) streams K and V: memory-bound,
// and the GQA saving shows up as a real speed-up.
TEST(TileAttentionBackendTest, DecodeIsMemoryBoundAndGqaHelps) {
  TileAttentionBackend backend(testing::compute::H100Like());
  AttentionShape mha{.batch = 64, .num_q_heads = 32, .num_kv_heads = 32, .seq_q = 1,
                     .seq_kv = 8192, .qk_head_dim = 128, .v_head_dim = 128, .causal = false};
  AttentionShape gqa = mha;
  gqa.num_kv_heads = 8;
  absl::StatusOr<AttentionEstimate> a = backend.Estimate(mha, AttentionPass::kForward);
  absl::StatusOr<AttentionEstimate> g = backend.Estimate(gqa, AttentionPass::kForward);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(g, IsOk());
  EXPECT_EQ(a->bound, Bound::kMemory);
  EXPECT_LT(g->time.value(), 0.7 * a->time.value());
}

TEST(TileAttentionBackendTest, BackwardCostsMoreThanTwiceForward) {
  TileAttentionBackend backend(testing::compute::H100Like());
  const AttentionShape s = Fa3PaperShape(8192, true);
  absl::StatusOr<AttentionEstimate> f = backend.Estimate(s, AttentionPass::kForward);
  absl::StatusOr<AttentionEstimate> b = backend.Estimate(s, AttentionPass::kBackward);
  ASSERT_THAT(f, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_GT(b->time / f->time, 2.0);  // 2.5× the FLOPs at a lower main-loop efficiency
  EXPECT_LT(b->time / f->time, 4.0);
}

// MLA head dims (qk 192, v 128) cost more than hdim 128 and less than hdim 256.
TEST(TileAttentionBackendTest, MlaHeadDimsSitBetweenHdim128And256) {
  TileAttentionBackend backend(testing::compute::H100Like());
  AttentionShape d128 = Fa3PaperShape(4096, true);
  AttentionShape mla = d128;
  mla.qk_head_dim = 192;
  AttentionShape d256 = d128;
  d256.qk_head_dim = d256.v_head_dim = 256;
  for (AttentionPass pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
    absl::StatusOr<AttentionEstimate> a = backend.Estimate(d128, pass);
    absl::StatusOr<AttentionEstimate> m = backend.Estimate(mla, pass);
    absl::StatusOr<AttentionEstimate> c = backend.Estimate(d256, pass);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(m, IsOk());
    ASSERT_THAT(c, IsOk());
    EXPECT_LT(a->time, m->time);
    EXPECT_LT(m->time, c->time);
  }
}

// Halving the clock doubles a compute-bound attention kernel (MMA and exp both scale).
TEST(TileAttentionBackendTest, HalvingTheClockDoublesComputeBoundTime) {
  HardwareProfile hw = testing::compute::H100Like();
  HardwareProfile slow = hw;
  slow.gpu.sustained_clock = hw.gpu.sustained_clock * 0.5;
  const AttentionShape s = Fa3PaperShape(16384, false);
  for (AttentionPass pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
    absl::StatusOr<AttentionEstimate> f = TileAttentionBackend(hw).Estimate(s, pass);
    absl::StatusOr<AttentionEstimate> h = TileAttentionBackend(slow).Estimate(s, pass);
    ASSERT_THAT(f, IsOk());
    ASSERT_THAT(h, IsOk());
    EXPECT_THAT(h->time / f->time, IsNearRel(2.0, 0.05));
    EXPECT_THAT((f->time + f->clock_scaled_time).value(), IsNearRel(h->time.value(), 0.05));
  }
}

TEST(TileAttentionBackendTest, PicksTheVendorTiles) {
  TileAttentionBackend h100(testing::compute::H100Like());
  EXPECT_EQ(h100.family(), AttentionKernelFamily::kFa3);
  AttentionTile t = h100.TileFor(Fa3PaperShape(8192, false), AttentionPass::kForward);
  EXPECT_EQ(t.block_m, 128);
  EXPECT_EQ(t.block_n, 176);
  t = h100.TileFor(Fa3PaperShape(8192, true), AttentionPass::kBackward);
  EXPECT_EQ(t.block_m, 64);
  EXPECT_EQ(t.block_n, 128);
  TileAttentionBackend a100(testing::compute::A100Like());
  EXPECT_EQ(a100.family(), AttentionKernelFamily::kFa2);
  t = a100.TileFor(Fa3PaperShape(8192, false), AttentionPass::kForward);
  EXPECT_EQ(t.block_m, 128);
  EXPECT_EQ(t.block_n, 64);
  EXPECT_EQ(TileAttentionBackend(testing::compute::Mi300xLike()).family(),
            AttentionKernelFamily::kAmdPingPong);
}

TEST(TileAttentionBackendTest, RejectsBadShapesAndUnsupportedDtypes) {
  TileAttentionBackend backend(testing::compute::A100Like());
  AttentionShape s = Fa3PaperShape(1024, true);
  s.num_kv_heads = 5;
  EXPECT_THAT(backend.Estimate(s, AttentionPass::kForward),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a multiple")));
  s = Fa3PaperShape(1024, true);
  s.seq_kv = 0;
  EXPECT_THAT(backend.Estimate(s, AttentionPass::kBackward),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("positive")));
  s = Fa3PaperShape(1024, true);
  s.dtype = DType::kFp8;
  EXPECT_THAT(backend.Estimate(s, AttentionPass::kForward),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("a100 has no fp8 matrix rate")));
}

TEST(TileAttentionBackendTest, MemoisedResultEqualsColdResult) {
  const HardwareProfile hw = testing::compute::Mi355xLike();
  TileAttentionBackend warm(hw);
  const AttentionShape s{.batch = 2, .num_q_heads = 64, .num_kv_heads = 8, .seq_q = 4096,
                         .seq_kv = 4096, .qk_head_dim = 128, .v_head_dim = 128, .causal = true};
  for (AttentionPass pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
    absl::StatusOr<AttentionEstimate> a = warm.Estimate(s, pass);
    absl::StatusOr<AttentionEstimate> b = warm.Estimate(s, pass);
    absl::StatusOr<AttentionEstimate> cold = TileAttentionBackend(hw).Estimate(s, pass);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    ASSERT_THAT(cold, IsOk());
    EXPECT_EQ(a->time, b->time);
    EXPECT_EQ(a->time, cold->time);
    EXPECT_EQ(a->waves, cold->waves);
  }
}

}  // namespace
}  // namespace projector
