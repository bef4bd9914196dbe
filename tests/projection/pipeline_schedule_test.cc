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
  s.chunks.assign(static_cast<size_t>(p * v),
                  ChunkTimes{f_stage / static_cast<double>(v), b_stage / static_cast<double>(v)});
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
  s.chunks[2] = {Milliseconds(2), Milliseconds(4)};
  auto tl = SimulatePipeline(s);
  ASSERT_THAT(tl, IsOk());
  double expected = 2e-3 + 8 * 6e-3 + 1e-3 + 4e-3;
  EXPECT_THAT(tl->makespan.value(), IsNearRel(expected, 1e-12));
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

}  // namespace
}  // namespace projector
