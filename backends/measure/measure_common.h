// Runtime-independent half of the GPU measure runners (CUDA, HIP): the repeated-timing loop and
// its statistics, how attention and memory-bound ops are decomposed into timed kernels, and the
// per-op dispatch that fills a MeasureResult. Each runtime supplies an EventClock and a
// DeviceOpTimer; this file needs no GPU and is unit-tested on the CPU.
#ifndef PROJECTOR_BACKENDS_MEASURE_MEASURE_COMMON_H_
#define PROJECTOR_BACKENDS_MEASURE_MEASURE_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/measure/measure_runner.h"
#include "backends/profile/profile_file.h"
#include "core/op_shapes.h"

namespace projector {

// Operand bytes: a fixed pseudo-random pattern (kMeasureFillPatternBytes long, tiled over each
// buffer) whose every byte is one of 0x30-0x3E or 0xB0-0xBE, so that a buffer read as bf16,
// fp16, fp32 or fp8 e4m3 holds finite values of both signs below 2 in magnitude (the byte that
// holds the exponent's high bits keeps them away from all-ones), with the low bits toggling as
// real data does. A constant pattern (or zeros) lets the tensor cores draw less power
// and clock higher: on an H200 a bf16 GEMM of constant operands ran about 1.3x faster than on
// random data (this project's session 19: the measure runner at 901 TFLOP/s on Llama-3.1-8B's
// fc1, torch 677 at 8192^3 on random data; the device notes: 788 random vs 894 zeros).
inline constexpr size_t kMeasureFillPatternBytes = size_t{1} << 20;
const std::vector<uint8_t>& MeasureFillPattern();
// Fills `bytes` at device address `dst` with the pattern: one host-to-device copy of it, then
// device-to-device doublings. `copy(to, from, n, from_host)` is the runtime's memcpy.
using DeviceCopy = std::function<absl::Status(void* to, const void* from, size_t n, bool from_host)>;
absl::Status FillWithPattern(char* dst, size_t bytes, const DeviceCopy& copy);
// Attention score matrices are processed in chunks of (batch·head) slices so that S and P of
// one chunk fit in this much scratch memory.
inline constexpr double kAttentionScratchBytes = 4.0 * (1ull << 30);

// Median, min and max of per-run times in microseconds, each multiplied by `factor` (a chunk of
// an op timed and scaled to the whole op). kInvalidArgument for an empty sample.
absl::StatusOr<TimingStats> SummarizeSamples(std::vector<double> run_us, double factor);

// Device events on one stream, as cudaEvent/hipEvent provide them.
class EventClock {
 public:
  virtual ~EventClock() = default;
  // Waits until the stream is idle.
  virtual absl::Status Synchronize() = 0;
  // Records the start event on the stream.
  virtual absl::Status Start() = 0;
  // Records the stop event, waits for it, returns the milliseconds since Start.
  virtual absl::StatusOr<double> StopMs() = 0;
};

// Runs `body` options.warmup times untimed, synchronises, then options.repetitions times, each
// between two events; the statistics are scaled by `factor`. Errors of `body` and the clock pass
// through.
absl::StatusOr<TimingStats> TimeRepeated(EventClock& clock,
                                         const std::function<absl::Status()>& body,
                                         const MeasureOptions& options, double factor);

// Flash attention timed as its GEMMs on `chunk` (batch·head) slices plus one read+write pass
// over the chunk's score matrix (softmax forward / its gradient backward); the chunk time
// scaled by `factor` = slices / chunk (halved for a causal square mask) is the op's time.
struct AttentionMeasurePlan {
  std::vector<GemmShape> gemms;  // forward: S = QK^T, O = PV; backward: the five GEMMs
  int64_t chunk = 1;             // slices per timed run (GemmShape::batch)
  size_t score_copy_bytes = 0;   // bytes of one copy of the chunk's score matrix (2-byte)
  double factor = 1.0;
};
AttentionMeasurePlan PlanAttentionMeasurement(const AttentionShape& shape, AttentionPass pass,
                                              double scratch_bytes = kAttentionScratchBytes);

// A memory-bound op timed as `launches` device copies of bytes / (2 · launches) each (the op's
// bytes are its read + write traffic).
struct CopyMeasurePlan {
  int64_t launches = 1;
  size_t bytes_per_copy = 0;
};
CopyMeasurePlan PlanMemoryMeasurement(const MemoryOp& op);

// Times one run of an attention plan: its GEMMs in order (run_gemm(i) for plan.gemms[i]) with
// the score pass after the first, scaled by plan.factor.
absl::StatusOr<TimingStats> TimeAttentionPlan(
    EventClock& clock, const AttentionMeasurePlan& plan,
    const std::function<absl::Status(size_t gemm_index)>& run_gemm,
    const std::function<absl::Status()>& score_pass, const MeasureOptions& options);

// Times plan.launches back-to-back runs of `copy` (one bytes_per_copy copy each).
absl::StatusOr<TimingStats> TimeCopies(EventClock& clock, const CopyMeasurePlan& plan,
                                       const std::function<absl::Status()>& copy,
                                       const MeasureOptions& options);

// One runtime's kernels for the three op families the runners time.
class DeviceOpTimer {
 public:
  virtual ~DeviceOpTimer() = default;
  virtual absl::StatusOr<TimingStats> TimeGemm(const GemmShape& shape) = 0;
  virtual absl::StatusOr<TimingStats> TimeAttention(const AttentionShape& shape,
                                                    AttentionPass pass) = 0;
  virtual absl::StatusOr<TimingStats> TimeMemory(const MemoryOp& op) = 0;
  // True when a failure left the device unusable (a sticky runtime error), so that no later op
  // can be measured either.
  virtual bool DeviceUnusable() const = 0;
};

// Times each request with `timer` and appends it (time filled in) to result.ops. An op the
// runtime cannot time (collectives on one GPU, an unsupported dtype, a recoverable failure)
// goes to result.skipped with the reason; a failure that left the device unusable is returned.
absl::Status MeasureEach(DeviceOpTimer& timer, const std::vector<ProfiledOp>& requests,
                         MeasureResult& result);

// Checks the options against the devices present. kFailedPrecondition when `device_count` is 0
// ("<runtime>: no GPU device found (<why>); ..."), kInvalidArgument for a device index outside
// 0..device_count-1, repetitions < 1 or warm-up < 0.
absl::Status CheckMeasureOptions(const MeasureOptions& options, int device_count,
                                 std::string_view runtime, std::string_view why);

// The runners a build compiles in (measure_runner.cc tries them in this order). Each returns
// kFailedPrecondition when its runtime sees no device.
#ifdef PROJECTOR_MEASURE_CUDA
std::string CudaRuntimeName();
absl::StatusOr<MeasureResult> MeasureOpsCuda(const std::vector<ProfiledOp>& requests,
                                             const MeasureOptions& options);
#endif
#ifdef PROJECTOR_MEASURE_HIP
std::string HipRuntimeName();
absl::StatusOr<MeasureResult> MeasureOpsHip(const std::vector<ProfiledOp>& requests,
                                            const MeasureOptions& options);
#endif

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_MEASURE_MEASURE_COMMON_H_
