#include "backends/measure/measure_common.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST(SummarizeSamplesTest, OddCountTakesTheMiddleRunAndScales) {
  // Sorted runs 1, 2, 3 µs; × factor 2 → median 4, min 2, max 6.
  auto t = SummarizeSamples({3.0, 1.0, 2.0}, 2.0);
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(ToMicroseconds(t->median), IsNearRel(4.0, 1e-12));
  EXPECT_THAT(ToMicroseconds(t->min), IsNearRel(2.0, 1e-12));
  EXPECT_THAT(ToMicroseconds(t->max), IsNearRel(6.0, 1e-12));
  EXPECT_EQ(t->repetitions, 3);
}

TEST(SummarizeSamplesTest, EvenCountAveragesTheMiddlePair) {
  // Sorted 1, 2, 3, 10: median (2 + 3) / 2 = 2.5; the outlier moves only the max.
  auto t = SummarizeSamples({10.0, 2.0, 1.0, 3.0}, 1.0);
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(ToMicroseconds(t->median), IsNearRel(2.5, 1e-12));
  EXPECT_THAT(ToMicroseconds(t->max), IsNearRel(10.0, 1e-12));
}

TEST(SummarizeSamplesTest, EmptySampleIsAnError) {
  EXPECT_THAT(SummarizeSamples({}, 1.0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no timed runs")));
}

// Replays elapsed times and counts the calls a timing loop makes.
class FakeClock final : public EventClock {
 public:
  explicit FakeClock(std::deque<double> ms) : ms_(std::move(ms)) {}
  absl::Status Synchronize() override {
    ++syncs;
    return absl::OkStatus();
  }
  absl::Status Start() override {
    ++starts;
    return absl::OkStatus();
  }
  absl::StatusOr<double> StopMs() override {
    const double v = ms_.front();
    ms_.pop_front();
    return v;
  }
  int syncs = 0;
  int starts = 0;

 private:
  std::deque<double> ms_;
};

TEST(TimeRepeatedTest, WarmsUpUntimedThenTimesEachRepetition) {
  FakeClock clock({0.010, 0.030, 0.020});  // ms
  int calls = 0;
  auto t = TimeRepeated(
      clock,
      [&] {
        ++calls;
        return absl::OkStatus();
      },
      MeasureOptions{.warmup = 2, .repetitions = 3}, 0.5);
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(calls, 5);  // 2 warm-up + 3 timed
  EXPECT_EQ(clock.syncs, 1);
  EXPECT_EQ(clock.starts, 3);
  // Runs 10, 30, 20 µs → median 20 µs × factor 0.5 = 10 µs; min 5, max 15.
  EXPECT_THAT(ToMicroseconds(t->median), IsNearRel(10.0, 1e-12));
  EXPECT_THAT(ToMicroseconds(t->min), IsNearRel(5.0, 1e-12));
  EXPECT_THAT(ToMicroseconds(t->max), IsNearRel(15.0, 1e-12));
}

TEST(TimeRepeatedTest, BodyErrorStopsTheLoop) {
  FakeClock clock({});
  auto t = TimeRepeated(
      clock, [] { return absl::InternalError("launch failed"); },
      MeasureOptions{.warmup = 1, .repetitions = 3}, 1.0);
  EXPECT_THAT(t, StatusIs(absl::StatusCode::kInternal, HasSubstr("launch failed")));
}

AttentionShape Attention() {
  return AttentionShape{.batch = 2, .num_q_heads = 4, .num_kv_heads = 4, .seq_q = 1024,
                        .seq_kv = 1024, .qk_head_dim = 128, .v_head_dim = 128, .causal = true};
}

TEST(PlanAttentionMeasurementTest, ForwardIsTwoGemmsOverAllSlicesHalvedWhenCausal) {
  // One score matrix: 1024² × 2 B = 2 MiB; S and P of 1024 slices fit in 4 GiB, so all
  // 2 · 4 = 8 slices go in one chunk; factor 8 / 8 · 0.5 (causal) = 0.5.
  const AttentionMeasurePlan plan = PlanAttentionMeasurement(Attention(), AttentionPass::kForward);
  EXPECT_EQ(plan.chunk, 8);
  EXPECT_DOUBLE_EQ(plan.factor, 0.5);
  EXPECT_EQ(plan.score_copy_bytes, size_t{8} << 21);
  EXPECT_THAT(plan.gemms,
              ElementsAre(GemmShape{.m = 1024, .n = 1024, .k = 128, .batch = 8},
                          GemmShape{.m = 1024, .n = 128, .k = 1024, .batch = 8}));
}

TEST(PlanAttentionMeasurementTest, SmallScratchSplitsIntoChunksAndScalesBack) {
  // 8 MiB scratch holds S and P (2 × 2 MiB) of 2 slices: chunk 2, factor 8 / 2 = 4, non-causal.
  AttentionShape s = Attention();
  s.causal = false;
  const AttentionMeasurePlan plan =
      PlanAttentionMeasurement(s, AttentionPass::kBackward, 8.0 * (1 << 20));
  EXPECT_EQ(plan.chunk, 2);
  EXPECT_DOUBLE_EQ(plan.factor, 4.0);
  ASSERT_THAT(plan.gemms, SizeIs(5));  // S, dV, dP, dQ, dK
  EXPECT_EQ(plan.gemms[1], (GemmShape{.m = 1024, .n = 128, .k = 1024, .batch = 2}));
}

TEST(TimeAttentionPlanTest, RunsTheScorePassAfterTheFirstGemmAndScalesByTheFactor) {
  const AttentionMeasurePlan plan = PlanAttentionMeasurement(Attention(), AttentionPass::kBackward);
  FakeClock clock({0.004});
  std::string trace;
  auto t = TimeAttentionPlan(
      clock, plan,
      [&](size_t i) {
        absl::StrAppend(&trace, "g", i, " ");
        return absl::OkStatus();
      },
      [&] {
        trace += "s ";
        return absl::OkStatus();
      },
      MeasureOptions{.warmup = 0, .repetitions = 1});
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(trace, "g0 s g1 g2 g3 g4 ");
  // 4 µs for the chunk × factor 0.5 (all 8 slices in one chunk, causal) = 2 µs.
  EXPECT_THAT(ToMicroseconds(t->median), IsNearRel(2.0, 1e-12));
}

TEST(TimeCopiesTest, LaunchesEveryCopyOfThePlanPerRun) {
  FakeClock clock({0.001, 0.001});
  int copies = 0;
  auto t = TimeCopies(
      clock, CopyMeasurePlan{.launches = 3, .bytes_per_copy = 8},
      [&] {
        ++copies;
        return absl::OkStatus();
      },
      MeasureOptions{.warmup = 1, .repetitions = 2});
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(copies, 9);  // (1 warm-up + 2 timed runs) × 3 launches
}

TEST(PlanMemoryMeasurementTest, SplitsReadPlusWriteTrafficOverLaunches) {
  // 1e9 B of read + write over 4 launches: 4 copies of 1e9 / 8 = 1.25e8 B.
  MemoryOp op;
  op.bytes = Bytes(1e9);
  op.launches = 4;
  const CopyMeasurePlan plan = PlanMemoryMeasurement(op);
  EXPECT_EQ(plan.launches, 4);
  EXPECT_EQ(plan.bytes_per_copy, size_t{125000000});
}

// Fixed answers per op family; attention unsupported; memory can poison the device.
class FakeOpTimer final : public DeviceOpTimer {
 public:
  absl::StatusOr<TimingStats> TimeGemm(const GemmShape&) override { return Stats(7.0); }
  absl::StatusOr<TimingStats> TimeAttention(const AttentionShape&, AttentionPass) override {
    return absl::UnimplementedError("dtype fp4 is not measured");
  }
  absl::StatusOr<TimingStats> TimeMemory(const MemoryOp&) override {
    if (!poison_on_memory) return Stats(3.0);
    poisoned_ = true;
    return absl::InternalError("illegal address");
  }
  bool DeviceUnusable() const override { return poisoned_; }
  bool poison_on_memory = false;

 private:
  static TimingStats Stats(double us) {
    return {.median = Microseconds(us), .min = Microseconds(us), .max = Microseconds(us),
            .repetitions = 4};
  }
  bool poisoned_ = false;
};

std::vector<ProfiledOp> Requests() {
  ProfiledOp gemm;
  gemm.gemm = GemmShape{.m = 8, .n = 8, .k = 8};
  ProfiledOp attention;
  attention.kind = ProfiledOpKind::kAttention;
  attention.attention = Attention();
  ProfiledOp memory;
  memory.kind = ProfiledOpKind::kMemory;
  memory.memory.bytes = Bytes(1e6);
  ProfiledOp collective;
  collective.kind = ProfiledOpKind::kCollective;
  collective.collective.kind = CollectiveKind::kAllReduce;
  collective.collective.bytes = Bytes(1e6);
  collective.collective.group = ProcessGroup{.size = 8, .stride = 1};
  return {gemm, attention, memory, collective};
}

TEST(MeasureEachTest, TimesWhatItCanAndSaysWhyItSkippedTheRest) {
  FakeOpTimer timer;
  MeasureResult result;
  ASSERT_THAT(MeasureEach(timer, Requests(), result), IsOk());
  ASSERT_THAT(result.ops, SizeIs(2));
  EXPECT_EQ(result.ops[0].kind, ProfiledOpKind::kGemm);
  EXPECT_THAT(ToMicroseconds(result.ops[0].time.median), IsNearRel(7.0, 1e-12));
  EXPECT_EQ(result.ops[1].kind, ProfiledOpKind::kMemory);
  EXPECT_EQ(result.ops[1].time.repetitions, 4);
  ASSERT_THAT(result.skipped, SizeIs(2));
  EXPECT_THAT(result.skipped[0], AllOf(HasSubstr("attention"), HasSubstr("fp4")));
  EXPECT_THAT(result.skipped[1], HasSubstr("more than one GPU"));
}

TEST(MeasureEachTest, AFailureThatPoisonsTheDeviceStopsMeasuring) {
  FakeOpTimer timer;
  timer.poison_on_memory = true;
  MeasureResult result;
  EXPECT_THAT(MeasureEach(timer, Requests(), result),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("illegal address")));
  // The GEMM before it was measured, the attention before it skipped; the collective after it
  // was never tried.
  EXPECT_THAT(result.ops, SizeIs(1));
  EXPECT_THAT(result.skipped, SizeIs(1));
}

TEST(CheckMeasureOptionsTest, NoDeviceSaysWhichRuntimeAndWhy) {
  EXPECT_THAT(CheckMeasureOptions({}, 0, "HIP 5.2.0 (HIP kernels)", "no ROCm-capable device"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("HIP 5.2.0"), HasSubstr("no GPU device found"),
                             HasSubstr("no ROCm-capable device"),
                             HasSubstr("--profiling-mode profile"))));
}

TEST(CheckMeasureOptionsTest, BadOptionsNameTheFlagAndTheAcceptedRange) {
  EXPECT_THAT(CheckMeasureOptions({.device = 2}, 2, "CUDA", ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--measure-device"), HasSubstr("accepted: 0..1"))));
  EXPECT_THAT(CheckMeasureOptions({.repetitions = 0}, 1, "CUDA", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--measure-repetitions")));
  EXPECT_THAT(CheckMeasureOptions({.warmup = -1}, 1, "CUDA", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--measure-warmup")));
  EXPECT_THAT(CheckMeasureOptions({}, 1, "CUDA", ""), IsOk());
}

// The operand pattern: 1 MiB, the same every call, every byte in 0x30-0x3E or 0xB0-0xBE (all 30
// of them used, so both signs and toggling low bits), and every word of it finite read as fp8
// e4m3 (exponent-mantissa 0x7F is NaN), fp16 (exponent 0x1F), bf16 and fp32 (exponent 0xFF):
// the high byte's exponent bits are at most 0x3E & 0x7F = 0b0111110.
TEST(MeasureFillPatternTest, RandomFiniteBytesOfBothSigns) {
  const std::vector<uint8_t>& p = MeasureFillPattern();
  ASSERT_EQ(p.size(), kMeasureFillPatternBytes);
  EXPECT_EQ(&p, &MeasureFillPattern());
  std::set<uint8_t> distinct(p.begin(), p.end());
  EXPECT_EQ(distinct.size(), 30u);
  for (uint8_t b : distinct) {
    EXPECT_TRUE((b >= 0x30 && b <= 0x3E) || (b >= 0xB0 && b <= 0xBE)) << static_cast<int>(b);
  }
  for (size_t i = 0; i + 4 <= p.size(); i += 4) {
    const uint16_t lo = static_cast<uint16_t>(p[i] | (p[i + 1] << 8));
    const uint32_t word = static_cast<uint32_t>(lo) | (static_cast<uint32_t>(p[i + 2]) << 16) |
                          (static_cast<uint32_t>(p[i + 3]) << 24);
    ASSERT_NE(p[i] & 0x7F, 0x7F) << i;            // fp8 e4m3
    ASSERT_NE((lo >> 10) & 0x1F, 0x1F) << i;      // fp16
    ASSERT_NE((lo >> 7) & 0xFF, 0xFF) << i;       // bf16
    ASSERT_NE((word >> 23) & 0xFF, 0xFFu) << i;   // fp32
  }
}

// FillWithPattern on a host "device" of 2.5 MiB + 3 bytes: the pattern copied once from the host,
// then doublings 1, 2 MiB (the last one cut to what is left), so every byte equals the pattern's
// at its offset modulo 1 MiB.
TEST(FillWithPatternTest, TilesThePatternByDoubling) {
  const size_t n = 5 * kMeasureFillPatternBytes / 2 + 3;
  std::vector<char> device(n, 0);
  int host_copies = 0, device_copies = 0;
  ASSERT_THAT(FillWithPattern(device.data(), n,
                              [&](void* to, const void* from, size_t k, bool from_host) {
                                (from_host ? host_copies : device_copies) += 1;
                                std::memcpy(to, from, k);
                                return absl::OkStatus();
                              }),
              IsOk());
  EXPECT_EQ(host_copies, 1);
  EXPECT_EQ(device_copies, 2);  // 1 MiB -> 2 MiB -> 2.5 MiB + 3
  const std::vector<uint8_t>& p = MeasureFillPattern();
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(static_cast<uint8_t>(device[i]), p[i % p.size()]) << i;
  }
}

}  // namespace
}  // namespace projector
