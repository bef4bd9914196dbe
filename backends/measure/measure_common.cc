#include "backends/measure/measure_common.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/statistics.h"
#include "core/status_macros.h"

namespace projector {

const std::vector<uint8_t>& MeasureFillPattern() {
  static const std::vector<uint8_t> pattern = [] {
    std::vector<uint8_t> bytes(kMeasureFillPatternBytes);
    std::mt19937 rng(20261127);  // fixed: every run times the same operands
    std::uniform_int_distribution<int> pick(0, 29);
    for (uint8_t& b : bytes) {
      const int i = pick(rng);  // 15 positive, 15 negative
      b = static_cast<uint8_t>(i < 15 ? 0x30 + i : 0xB0 + (i - 15));
    }
    return bytes;
  }();
  return pattern;
}

absl::Status FillWithPattern(char* dst, size_t bytes, const DeviceCopy& copy) {
  const std::vector<uint8_t>& pattern = MeasureFillPattern();
  size_t filled = std::min(bytes, pattern.size());
  PROJECTOR_RETURN_IF_ERROR(copy(dst, pattern.data(), filled, /*from_host=*/true));
  while (filled < bytes) {
    const size_t chunk = std::min(filled, bytes - filled);
    PROJECTOR_RETURN_IF_ERROR(copy(dst + filled, dst, chunk, /*from_host=*/false));
    filled += chunk;
  }
  return absl::OkStatus();
}

absl::StatusOr<TimingStats> SummarizeSamples(std::vector<double> run_us, double factor) {
  if (run_us.empty()) return absl::InvalidArgumentError("no timed runs to summarise");
  std::sort(run_us.begin(), run_us.end());
  const double median = PercentileOfSorted(run_us, 0.5);
  return TimingStats{.median = Microseconds(median * factor),
                     .min = Microseconds(run_us.front() * factor),
                     .max = Microseconds(run_us.back() * factor),
                     .repetitions = static_cast<int64_t>(run_us.size())};
}

absl::StatusOr<TimingStats> TimeRepeated(EventClock& clock,
                                         const std::function<absl::Status()>& body,
                                         const MeasureOptions& options, double factor) {
  // Warm-up: first-call costs (kernel loading, allocator growth, clock ramp) stay untimed.
  for (int64_t i = 0; i < options.warmup; ++i) PROJECTOR_RETURN_IF_ERROR(body());
  PROJECTOR_RETURN_IF_ERROR(clock.Synchronize());
  std::vector<double> run_us;
  run_us.reserve(static_cast<size_t>(std::max<int64_t>(options.repetitions, 0)));
  for (int64_t i = 0; i < options.repetitions; ++i) {
    PROJECTOR_RETURN_IF_ERROR(clock.Start());
    PROJECTOR_RETURN_IF_ERROR(body());
    PROJECTOR_ASSIGN_OR_RETURN(double ms, clock.StopMs());
    run_us.push_back(ms * 1e3);
  }
  return SummarizeSamples(std::move(run_us), factor);
}

AttentionMeasurePlan PlanAttentionMeasurement(const AttentionShape& s, AttentionPass pass,
                                              double scratch_bytes) {
  AttentionMeasurePlan plan;
  const int64_t slices = s.batch * s.num_q_heads;
  // One 2-byte score matrix per slice; S and P of the chunk must fit in the scratch.
  const double score_bytes = static_cast<double>(s.seq_q) * static_cast<double>(s.seq_kv) * 2.0;
  plan.chunk = std::clamp<int64_t>(static_cast<int64_t>(scratch_bytes / (2.0 * score_bytes)), 1,
                                   std::max<int64_t>(slices, 1));
  auto gemm = [&](int64_t m, int64_t n, int64_t k) {
    return GemmShape{.m = m, .n = n, .k = k, .batch = plan.chunk, .dtype = s.dtype};
  };
  if (pass == AttentionPass::kForward) {
    plan.gemms = {gemm(s.seq_q, s.seq_kv, s.qk_head_dim),   // S = Q K^T
                  gemm(s.seq_q, s.v_head_dim, s.seq_kv)};   // O = P V
  } else {
    plan.gemms = {gemm(s.seq_q, s.seq_kv, s.qk_head_dim),   // S = Q K^T recomputed
                  gemm(s.seq_kv, s.v_head_dim, s.seq_q),    // dV = P^T dO
                  gemm(s.seq_q, s.seq_kv, s.v_head_dim),    // dP = dO V^T
                  gemm(s.seq_q, s.qk_head_dim, s.seq_kv),   // dQ = dS K
                  gemm(s.seq_kv, s.qk_head_dim, s.seq_q)};  // dK = dS^T Q
  }
  plan.score_copy_bytes = static_cast<size_t>(score_bytes * static_cast<double>(plan.chunk));
  plan.factor = static_cast<double>(slices) / static_cast<double>(plan.chunk);
  // A causal square mask skips half of the score tiles (flash attention's tile skipping).
  if (s.causal && s.seq_q == s.seq_kv) plan.factor *= 0.5;
  return plan;
}

CopyMeasurePlan PlanMemoryMeasurement(const MemoryOp& op) {
  CopyMeasurePlan plan;
  plan.launches = std::max<int64_t>(op.launches, 1);
  plan.bytes_per_copy =
      static_cast<size_t>(op.bytes.value() / (2.0 * static_cast<double>(plan.launches)));
  return plan;
}

absl::StatusOr<TimingStats> TimeAttentionPlan(
    EventClock& clock, const AttentionMeasurePlan& plan,
    const std::function<absl::Status(size_t gemm_index)>& run_gemm,
    const std::function<absl::Status()>& score_pass, const MeasureOptions& options) {
  return TimeRepeated(
      clock,
      [&]() -> absl::Status {
        for (size_t i = 0; i < plan.gemms.size(); ++i) {
          PROJECTOR_RETURN_IF_ERROR(run_gemm(i));
          // Softmax (forward) / its gradient (backward): read S, write P.
          if (i == 0) PROJECTOR_RETURN_IF_ERROR(score_pass());
        }
        return absl::OkStatus();
      },
      options, plan.factor);
}

absl::StatusOr<TimingStats> TimeCopies(EventClock& clock, const CopyMeasurePlan& plan,
                                       const std::function<absl::Status()>& copy,
                                       const MeasureOptions& options) {
  return TimeRepeated(
      clock,
      [&]() -> absl::Status {
        for (int64_t i = 0; i < plan.launches; ++i) PROJECTOR_RETURN_IF_ERROR(copy());
        return absl::OkStatus();
      },
      options, 1.0);
}

absl::Status MeasureEach(DeviceOpTimer& timer, const std::vector<ProfiledOp>& requests,
                         MeasureResult& result) {
  for (const ProfiledOp& request : requests) {
    absl::StatusOr<TimingStats> t =
        absl::UnimplementedError("collectives need more than one GPU; not measured");
    switch (request.kind) {
      case ProfiledOpKind::kGemm:
        t = timer.TimeGemm(request.gemm);
        break;
      case ProfiledOpKind::kAttention:
        t = timer.TimeAttention(request.attention, request.pass);
        break;
      case ProfiledOpKind::kMemory:
        t = timer.TimeMemory(request.memory);
        break;
      case ProfiledOpKind::kCollective:
        break;
    }
    if (!t.ok()) {
      if (timer.DeviceUnusable()) return t.status();
      result.skipped.push_back(
          absl::StrCat(DescribeProfiledOp(request), ": ", t.status().message()));
      continue;
    }
    ProfiledOp measured = request;
    measured.time = *t;
    result.ops.push_back(std::move(measured));
  }
  return absl::OkStatus();
}

absl::Status CheckMeasureOptions(const MeasureOptions& options, int device_count,
                                 std::string_view runtime, std::string_view why) {
  if (device_count <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--profiling-mode measure: ", std::string(runtime), ": no GPU device found (", std::string(why),
        "); run it on a machine with the GPU and its driver, or use --profiling-mode profile "
        "--profile FILE with a profile measured there"));
  }
  if (options.device < 0 || options.device >= device_count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--measure-device: %d is not a device; accepted: 0..%d", options.device,
        device_count - 1));
  }
  if (options.repetitions < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--measure-repetitions: must be >= 1, got ", options.repetitions));
  }
  if (options.warmup < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--measure-warmup: must be >= 0, got ", options.warmup));
  }
  return absl::OkStatus();
}

}  // namespace projector
