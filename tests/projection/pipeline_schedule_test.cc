#include "projection/pipeline_schedule.h"

#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

PipelineSpec Uniform(int64_t p, int64_t v, int64_t m, Seconds f_stage, Seconds b_stage) {
  PipelineSpec s;
  s.pp = p;
  s.vpp = v;
  s.micro_batches = m;
  s.p2p_overlapped = v > 1;
  // A stage's work is split evenly over its v chunks.
  s.chunks.assign(
      static_cast<size_t>(p * v),
      ChunkTimes{f_stage / static_cast<double>(v), b_stage / static_cast<double>(v), Seconds(0)});
  return s;
}

// ZB-H1 over p uniform stages: forward f, input-gradient pass b, weight-gradient pass w.
PipelineSpec UniformZeroBubble(int64_t p, int64_t m, Seconds f, Seconds b, Seconds w) {
  PipelineSpec s = Uniform(p, 1, m, f, b + w);
  s.schedule = PipelineSchedule::kZeroBubbleH1;
  s.p2p_overlapped = true;
  for (ChunkTimes& c : s.chunks) c.weight_grad = w;
  return s;
}

class OneFOneBTest : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(OneFOneBTest, UniformStagesMatchClosedForm) {
  auto [p, m] = GetParam();
  const Seconds f = Milliseconds(1.0), b = Milliseconds(2.0);
  auto tl = SimulatePipeline(Uniform(p, 1, m, f, b));
  ASSERT_THAT(tl, IsOk());
  // (m + p − 1)(f + b): p − 1 fill/drain slots plus m steady slots.
  EXPECT_THAT(tl->makespan.value(), IsNearRel(OneFOneBClosedForm(m, p, f, b).value(), 1e-12));
  EXPECT_THAT(OneFOneBClosedForm(m, p, f, b).value(),
              IsNearRel(static_cast<double>(m + p - 1) * 3e-3, 1e-12));
}

INSTANTIATE_TEST_SUITE_P(Shapes, OneFOneBTest,
                         ::testing::Values(std::make_tuple(1, 1), std::make_tuple(1, 8),
                                           std::make_tuple(2, 4), std::make_tuple(4, 8),
                                           std::make_tuple(4, 3), std::make_tuple(8, 32)));

class InterleavedTest
    : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(InterleavedTest, UniformStagesMatchClosedForm) {
  auto [p, v, m] = GetParam();
  const Seconds f = Milliseconds(1.0), b = Milliseconds(2.0);
  auto tl = SimulatePipeline(Uniform(p, v, m, f, b));
  ASSERT_THAT(tl, IsOk());
  // m(f + b) + (p − 1)(f + b)/v: the bubble shrinks by v.
  Seconds expected = InterleavedClosedForm(m, p, v, f, b);
  EXPECT_THAT(tl->makespan.value(), IsNearRel(expected.value(), 1e-9));
  Seconds bubble = tl->makespan - (f + b) * static_cast<double>(m);
  EXPECT_THAT(bubble.value(),
              IsNearRel(((f + b) * (static_cast<double>(p - 1) / static_cast<double>(v))).value(),
                        1e-9));
}

INSTANTIATE_TEST_SUITE_P(Shapes, InterleavedTest,
                         ::testing::Values(std::make_tuple(2, 2, 4), std::make_tuple(4, 2, 8),
                                           std::make_tuple(4, 4, 16), std::make_tuple(8, 2, 16),
                                           std::make_tuple(16, 4, 32), std::make_tuple(4, 3, 4)));

TEST(PipelineScheduleTest, OneHeavyStageDominatesTheSteadyState) {
  // 1F1B, p = 4, m = 8, stage 2 twice as slow (f 2, b 4 ms; others f 1, b 2 ms). Stage 2 is
  // busy m·6 ms once F0 has crossed stages 0-1 (2 ms); it waits once for B0 from stage 3
  // (F0 on 3 + B0 on 3 − its own F1 = 1 ms); its last B then crosses stages 1-0 (4 ms).
  PipelineSpec s = Uniform(4, 1, 8, Milliseconds(1), Milliseconds(2));
  s.chunks[2] = {Milliseconds(2), Milliseconds(4), Seconds(0)};
  auto tl = SimulatePipeline(s);
  ASSERT_THAT(tl, IsOk());
  double expected = 2e-3 + 8 * 6e-3 + 1e-3 + 4e-3;
  EXPECT_THAT(tl->makespan.value(), IsNearRel(expected, 1e-12));
}

// Work done once per step on each stage's first forward (fp8 weight casts), e = 0.5 ms, 1F1B over
// p = 4 uniform stages (f 1, b 2 ms), m = 8. F0 takes f + e on every stage, so the last stage
// starts at 3(f + e) = 4.5 ms and then runs its m(f + b) + e = 24.5 ms without a stall (the
// earlier stages' extra lies before its warm-up forwards are needed), and B7 drains back over
// 3b = 6 ms: 35 ms = (m + p − 1)(f + b) + p·e. The lower bound counts the same fill and extra.
TEST(PipelineScheduleTest, OncePerStepWorkDelaysTheFirstForwardOfEveryStage) {
  const Seconds f = Milliseconds(1), b = Milliseconds(2), e = Milliseconds(0.5);
  PipelineSpec s = Uniform(4, 1, 8, f, b);
  for (ChunkTimes& c : s.chunks) c.first_forward_extra = e;
  auto tl = SimulatePipeline(s);
  ASSERT_THAT(tl, IsOk());
  EXPECT_THAT(tl->makespan.value(), IsNearRel(35e-3, 1e-12));
  EXPECT_THAT(tl->makespan.value(),
              IsNearRel((OneFOneBClosedForm(8, 4, f, b) + e * 4.0).value(), 1e-12));
  EXPECT_THAT(PipelineLowerBound(s).value(), IsNearRel(35e-3, 1e-12));
  // Each rank's busy time holds the extra once.
  EXPECT_THAT(tl->rank_busy[0].value(), IsNearRel(8 * 3e-3 + 0.5e-3, 1e-12));
  // One stage: m(f + b) + e, exactly.
  PipelineSpec one = Uniform(1, 1, 8, f, b);
  one.chunks[0].first_forward_extra = e;
  auto t1 = SimulatePipeline(one);
  ASSERT_THAT(t1, IsOk());
  EXPECT_THAT(t1->makespan.value(), IsNearRel(24.5e-3, 1e-12));
  EXPECT_THAT(PipelineLowerBound(one).value(), IsNearRel(24.5e-3, 1e-12));
}

TEST(PipelineScheduleTest, BlockingP2pAddsTwoTransfersPerStageBoundaryOnTheFill) {
  PipelineSpec s = Uniform(2, 1, 1, Milliseconds(1), Milliseconds(2));
  s.p2p = Milliseconds(0.5);
  auto tl = SimulatePipeline(s);
  ASSERT_THAT(tl, IsOk());
  // F0 on rank 0, send, F0 + B0 on rank 1, send back, B0 on rank 0.
  EXPECT_THAT(tl->makespan.value(), IsNearRel(1e-3 + 0.5e-3 + 3e-3 + 0.5e-3 + 2e-3, 1e-12));
}

TEST(PipelineScheduleTest, RecordsLastBackwardOfEveryChunk) {
  auto tl = SimulatePipeline(Uniform(2, 1, 4, Milliseconds(1), Milliseconds(2)));
  ASSERT_THAT(tl, IsOk());
  // Rank 0 ends with its last backward.
  EXPECT_THAT(tl->last_backward_end[0].value(), IsNearRel(tl->makespan.value(), 1e-12));
  EXPECT_THAT((tl->last_backward_end[0] - tl->last_backward_start[0]).value(),
              IsNearRel(2e-3, 1e-12));
  EXPECT_THAT(tl->rank_busy[1].value(), IsNearRel(4 * 3e-3, 1e-12));
}

TEST(PipelineScheduleTest, InterleavedRunsWhenMicroBatchesAreNotAMultipleOfPp) {
  // Megatron-core's schedule table takes the remainder as a last, smaller group.
  for (int64_t m : {1, 2, 5, 6, 7, 9}) {
    auto tl = SimulatePipeline(Uniform(4, 2, m, Milliseconds(1), Milliseconds(2)));
    ASSERT_THAT(tl, IsOk()) << "m=" << m;
    // Never faster than the ideal m(f + b) + the interleaved bubble.
    EXPECT_GE(tl->makespan.value() + 1e-12,
              InterleavedClosedForm(m, 4, 2, Milliseconds(1), Milliseconds(2)).value())
        << "m=" << m;
  }
}

TEST(PipelineScheduleTest, RejectsBadSpecs) {
  PipelineSpec s = Uniform(2, 1, 4, Milliseconds(1), Milliseconds(2));
  s.micro_batches = 0;
  EXPECT_THAT(SimulatePipeline(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("micro-batches")));
  s = Uniform(2, 1, 4, Milliseconds(1), Milliseconds(2));
  s.chunks.pop_back();
  EXPECT_THAT(SimulatePipeline(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chunk times")));
}

TEST(PipelineScheduleTest, InFlightMicroBatchesFollowMegatronWarmup) {
  // 1F1B: stage i holds p − i micro-batches (capped by m).
  EXPECT_EQ(InFlightChunkMicroBatches(0, 4, 1, 8), 4);
  EXPECT_EQ(InFlightChunkMicroBatches(3, 4, 1, 8), 1);
  EXPECT_EQ(InFlightChunkMicroBatches(0, 4, 1, 2), 2);
  // Interleaved: (p − i − 1)·2 + (v − 1)·p + 1 chunk-micro-batches.
  EXPECT_EQ(InFlightChunkMicroBatches(0, 4, 2, 8), 3 * 2 + 4 + 1);
  EXPECT_EQ(InFlightChunkMicroBatches(3, 4, 2, 8), 0 + 4 + 1);
}

class ZeroBubbleH1Test
    : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, double, double, double>> {};

TEST_P(ZeroBubbleH1Test, UniformStagesMatchClosedForm) {
  auto [p, m, f_ms, b_ms, w_ms] = GetParam();
  const Seconds f = Milliseconds(f_ms), b = Milliseconds(b_ms), w = Milliseconds(w_ms);
  auto tl = SimulatePipeline(UniformZeroBubble(p, m, f, b, w));
  ASSERT_THAT(tl, IsOk());
  // m(f + b + w) + (p − 1)(f + b − w) (derivation at ZeroBubbleH1ClosedForm): the bubble of
  // 1F1B, (p − 1)(f + b + w), shrinks by 2(p − 1)w.
  Seconds expected = ZeroBubbleH1ClosedForm(m, p, f, b, w);
  EXPECT_THAT(tl->makespan.value(), IsNearRel(expected.value(), 1e-12));
  EXPECT_THAT(expected.value(), IsNearRel(OneFOneBClosedForm(m, p, f, b + w).value() -
                                              2.0 * static_cast<double>(p - 1) * w.value(),
                                          1e-12));
  // Every rank does all of its work: m(f + b + w).
  for (Seconds busy : tl->rank_busy) {
    EXPECT_THAT(busy.value(), IsNearRel(((f + b + w) * static_cast<double>(m)).value(), 1e-12));
  }
}

// w <= min(f, b), m >= p. f = b = w: the bubble is a third of 1F1B's (Qi et al., Figure 3).
INSTANTIATE_TEST_SUITE_P(
    Shapes, ZeroBubbleH1Test,
    ::testing::Values(std::make_tuple(2, 2, 1.0, 1.0, 1.0), std::make_tuple(4, 4, 1.0, 1.0, 1.0),
                      std::make_tuple(4, 8, 1.0, 1.0, 1.0), std::make_tuple(4, 8, 1.0, 1.5, 0.5),
                      std::make_tuple(8, 32, 1.0, 1.2, 1.0), std::make_tuple(4, 9, 2.0, 1.0, 1.0),
                      std::make_tuple(16, 40, 1.0, 2.0, 0.25)));

TEST(PipelineScheduleTest, ZeroBubbleH1WithFourStagesIsThreeSlotsShorterThan1F1B) {
  // p = 4, m = 8, f = b = w = 1 ms. 1F1B (backward = b + w = 2 ms): (8 + 3)·3 = 33 ms.
  // ZB-H1: 8·3 + 3·(1 + 1 − 1) = 27 ms; the bubble drops from 9 ms to 3 ms.
  auto zb =
      SimulatePipeline(UniformZeroBubble(4, 8, Milliseconds(1), Milliseconds(1), Milliseconds(1)));
  auto one = SimulatePipeline(Uniform(4, 1, 8, Milliseconds(1), Milliseconds(2)));
  ASSERT_THAT(zb, IsOk());
  ASSERT_THAT(one, IsOk());
  EXPECT_THAT(zb->makespan.value(), IsNearRel(27e-3, 1e-12));
  EXPECT_THAT(one->makespan.value(), IsNearRel(33e-3, 1e-12));
}

TEST(PipelineScheduleTest, ZeroBubbleWithoutWeightGradIs1F1B) {
  // w = 0: B is the whole backward and nothing is deferred.
  for (auto [p, m] : {std::pair<int64_t, int64_t>{2, 4}, {4, 8}, {4, 3}, {8, 32}}) {
    auto tl =
        SimulatePipeline(UniformZeroBubble(p, m, Milliseconds(1), Milliseconds(2), Seconds(0)));
    ASSERT_THAT(tl, IsOk());
    EXPECT_THAT(
        tl->makespan.value(),
        IsNearRel(OneFOneBClosedForm(m, p, Milliseconds(1), Milliseconds(2)).value(), 1e-12))
        << "p=" << p << " m=" << m;
  }
}

TEST(PipelineScheduleTest, ZeroBubbleGradsAreFinalAfterTheLastWeightGrad) {
  // p = 2, m = 2, f = b = w = 1 ms. Rank 0: F0 0-1, F1 1-2, B0 3-4 (B0 on rank 1 ends at 3),
  // W0 4-5, B1 5-6 (rank 1: F0 1-2, B0 2-3, F1 3-4, B1 4-5, W0 5-6, W1 6-7), W1 6-7.
  auto tl =
      SimulatePipeline(UniformZeroBubble(2, 2, Milliseconds(1), Milliseconds(1), Milliseconds(1)));
  ASSERT_THAT(tl, IsOk());
  EXPECT_THAT(tl->last_backward_start[0].value(), IsNearRel(6e-3, 1e-12));
  EXPECT_THAT(tl->last_backward_end[0].value(), IsNearRel(7e-3, 1e-12));
  EXPECT_THAT(tl->last_backward_end[1].value(), IsNearRel(7e-3, 1e-12));
  EXPECT_THAT(tl->makespan.value(), IsNearRel(7e-3, 1e-12));
  // Closed form: 2·3 + 1·(1 + 1 − 1) = 7 ms.
  EXPECT_THAT(
      ZeroBubbleH1ClosedForm(2, 2, Milliseconds(1), Milliseconds(1), Milliseconds(1)).value(),
      IsNearRel(7e-3, 1e-12));
}

TEST(PipelineScheduleTest, ZeroBubbleRejectsInterleaving) {
  PipelineSpec s = Uniform(2, 2, 4, Milliseconds(1), Milliseconds(2));
  s.schedule = PipelineSchedule::kZeroBubbleH1;
  EXPECT_THAT(SimulatePipeline(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("vpp 2")));
}

TEST(PipelineScheduleTest, ZeroBubbleHoldsThePeakOf1F1BOnEveryRank) {
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(InFlightChunkMicroBatches(r, 4, 1, 8, PipelineSchedule::kZeroBubbleH1), 4);
    EXPECT_EQ(InFlightChunkMicroBatches(r, 4, 1, 3, PipelineSchedule::kZeroBubbleH1), 3);
    // Right after a B, rank r holds r + 1 micro-batches waiting for their W (m >= p).
    EXPECT_EQ(DeferredWeightGradMicroBatches(r, 4, 8, PipelineSchedule::kZeroBubbleH1), r + 1);
    EXPECT_EQ(DeferredWeightGradMicroBatches(r, 4, 8, PipelineSchedule::kOneFOneB), 0);
  }
  // m = 3 < p: rank 3 runs F0 B0 F1 B1 F2 B2 W0 W1 W2, all 3 wait for W after B2; rank 0
  // runs F0 F1 F2 B0 W0 B1 W1 B2 W2, at most 1.
  EXPECT_EQ(DeferredWeightGradMicroBatches(3, 4, 3, PipelineSchedule::kZeroBubbleH1), 3);
  EXPECT_EQ(DeferredWeightGradMicroBatches(0, 4, 3, PipelineSchedule::kZeroBubbleH1), 1);
}

// The lower bound of a uniform 1F1B pipeline is its replay: rank p − 1 waits (p − 1) f for its
// first forward, runs m(f + b) back to back and its last backward still crosses (p − 1) b,
// (m + p − 1)(f + b) with f = 1 ms and b = 2 ms.
TEST_P(OneFOneBTest, LowerBoundOfUniformStagesIsTheClosedForm) {
  auto [p, m] = GetParam();
  const Seconds f = Milliseconds(1.0), b = Milliseconds(2.0);
  EXPECT_THAT(PipelineLowerBound(Uniform(p, 1, m, f, b)).value(),
              IsNearRel(static_cast<double>(m + p - 1) * 3e-3, 1e-12));
}

// Uneven stages, interleaving, P2P and zero bubble: the bound never exceeds the replay, and a
// single rank's is exact (m(f + b)).
TEST(PipelineLowerBoundTest, NeverAboveTheReplay) {
  for (const int64_t p : {1, 2, 4, 8}) {
    for (const int64_t v : {1, 2, 4}) {
      if (v > 1 && p == 1) continue;
      for (const int64_t m : {1, 3, 8, 16}) {
        PipelineSpec s = Uniform(p, v, m, Milliseconds(1.0), Milliseconds(2.0));
        // Rank r's chunks r + 1 times as heavy, the first chunk of rank 0 lighter still.
        for (size_t i = 0; i < s.chunks.size(); ++i) {
          const double scale = 1.0 + static_cast<double>(i / static_cast<size_t>(v));
          s.chunks[i].forward = s.chunks[i].forward * scale;
          s.chunks[i].backward = s.chunks[i].backward * scale;
        }
        s.chunks.front().forward = Microseconds(50.0);
        s.p2p = Microseconds(30.0);
        auto tl = SimulatePipeline(s);
        ASSERT_THAT(tl, IsOk());
        EXPECT_LE(PipelineLowerBound(s).value(), tl->makespan.value() * (1 + 1e-12))
            << "p " << p << " v " << v << " m " << m;
      }
    }
  }
  for (const int64_t m : {4, 8, 16}) {
    PipelineSpec zb = UniformZeroBubble(4, m, Milliseconds(1.0), Milliseconds(1.0),
                                        Milliseconds(0.5));
    auto tl = SimulatePipeline(zb);
    ASSERT_THAT(tl, IsOk());
    EXPECT_LE(PipelineLowerBound(zb).value(), tl->makespan.value() * (1 + 1e-12));
  }
  EXPECT_DOUBLE_EQ(
      PipelineLowerBound(Uniform(1, 1, 5, Milliseconds(1.0), Milliseconds(2.0))).value(), 15e-3);
}

}  // namespace
}  // namespace projector
