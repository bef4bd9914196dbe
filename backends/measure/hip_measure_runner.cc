// HIP build of the measure runner: the tiled GEMM and copy kernels of hip_measure_kernels.hip,
// attention as a composition of batched GEMMs plus a score-matrix pass (as the CUDA runner), and
// copies for the memory-bound kernels, each timed with HIP events after warm-up (loop,
// statistics and dispatch in measure_common.h). Host code only; the kernels are built by hipcc.
#include <hip/hip_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/measure/hip_measure_kernels.h"
#include "backends/measure/measure_common.h"
#include "core/status_macros.h"

namespace projector {
namespace {

absl::Status HipStatus(hipError_t e, std::string_view what) {
  if (e == hipSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("HIP ", std::string(what), ": ", hipGetErrorString(e)));
}

// Device memory released on scope exit, filled with MeasureFillPattern (copied once, then
// doubled device to device).
class HipBuffer {
 public:
  HipBuffer() = default;
  HipBuffer(const HipBuffer&) = delete;
  HipBuffer& operator=(const HipBuffer&) = delete;
  ~HipBuffer() {
    if (ptr_ != nullptr) (void)hipFree(ptr_);
  }
  absl::Status Allocate(size_t bytes) {
    const size_t n = std::max<size_t>(bytes, 256);
    PROJECTOR_RETURN_IF_ERROR(HipStatus(hipMalloc(&ptr_, n), "malloc"));
    return FillWithPattern(get(), n, [](void* to, const void* from, size_t k, bool from_host) {
      return HipStatus(
          hipMemcpy(to, from, k, from_host ? hipMemcpyHostToDevice : hipMemcpyDeviceToDevice),
          "fill");
    });
  }
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

absl::StatusOr<HipGemmType> GemmTypeFor(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return HipGemmType::kBf16;
    case DType::kFp16:
      return HipGemmType::kFp16;
    case DType::kFp32:
      return HipGemmType::kFp32;
    case DType::kTf32:
    case DType::kFp8:
    case DType::kFp4:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat("dtype ", std::string(DTypeName(dtype)),
                   " is not measured (the HIP GEMM kernel covers fp32, bf16, fp16)"));
}

// One batched GEMM: its element type and operand offsets in an arena.
struct HipGemm {
  GemmShape shape;
  HipGemmType type = HipGemmType::kBf16;

  size_t Elements(int64_t rows, int64_t cols) const {
    return static_cast<size_t>(shape.batch * rows * cols);
  }
  size_t OperandBytes() const {
    return (Elements(shape.m, shape.k) + Elements(shape.k, shape.n) +
            Elements(shape.m, shape.n)) *
           HipGemmElementBytes(type);
  }
  absl::Status Run(char* arena, hipStream_t stream) const {
    const size_t elem = HipGemmElementBytes(type);
    char* a = arena;
    char* b = a + Elements(shape.m, shape.k) * elem;
    char* d = b + Elements(shape.k, shape.n) * elem;
    return HipStatus(
        LaunchTiledGemm(type, a, b, d, shape.m, shape.n, shape.k, shape.batch, stream), "gemm");
  }
};

absl::StatusOr<HipGemm> PlanGemm(const GemmShape& shape) {
  PROJECTOR_ASSIGN_OR_RETURN(HipGemmType type, GemmTypeFor(shape.dtype));
  return HipGemm{.shape = shape, .type = type};
}

class HipClock final : public EventClock {
 public:
  explicit HipClock(hipStream_t stream) : stream_(stream) {
    (void)hipEventCreate(&start_);
    (void)hipEventCreate(&stop_);
  }
  ~HipClock() override {
    (void)hipEventDestroy(start_);
    (void)hipEventDestroy(stop_);
  }
  HipClock(const HipClock&) = delete;
  HipClock& operator=(const HipClock&) = delete;

  absl::Status Synchronize() override {
    return HipStatus(hipStreamSynchronize(stream_), "stream sync");
  }
  absl::Status Start() override { return HipStatus(hipEventRecord(start_, stream_), "event"); }
  absl::StatusOr<double> StopMs() override {
    PROJECTOR_RETURN_IF_ERROR(HipStatus(hipEventRecord(stop_, stream_), "event"));
    PROJECTOR_RETURN_IF_ERROR(HipStatus(hipEventSynchronize(stop_), "event sync"));
    float ms = 0;
    PROJECTOR_RETURN_IF_ERROR(HipStatus(hipEventElapsedTime(&ms, start_, stop_), "elapsed"));
    return static_cast<double>(ms);
  }

 private:
  hipStream_t stream_;
  hipEvent_t start_ = nullptr;
  hipEvent_t stop_ = nullptr;
};

class HipOpTimer final : public DeviceOpTimer {
 public:
  HipOpTimer(hipStream_t stream, const MeasureOptions& options)
      : stream_(stream), clock_(stream), options_(options) {}

  absl::StatusOr<TimingStats> TimeGemm(const GemmShape& shape) override {
    PROJECTOR_ASSIGN_OR_RETURN(HipGemm gemm, PlanGemm(shape));
    HipBuffer arena;
    PROJECTOR_RETURN_IF_ERROR(arena.Allocate(gemm.OperandBytes()));
    return TimeRepeated(
        clock_, [&] { return gemm.Run(arena.get(), stream_); }, options_, 1.0);
  }

  absl::StatusOr<TimingStats> TimeAttention(const AttentionShape& shape,
                                            AttentionPass pass) override {
    const AttentionMeasurePlan plan = PlanAttentionMeasurement(shape, pass);
    std::vector<HipGemm> gemms;
    size_t arena_bytes = 0;
    for (const GemmShape& g : plan.gemms) {
      PROJECTOR_ASSIGN_OR_RETURN(HipGemm gemm, PlanGemm(g));
      arena_bytes = std::max(arena_bytes, gemm.OperandBytes());
      gemms.push_back(gemm);
    }
    HipBuffer arena;
    HipBuffer scores;
    PROJECTOR_RETURN_IF_ERROR(arena.Allocate(arena_bytes));
    PROJECTOR_RETURN_IF_ERROR(scores.Allocate(2 * plan.score_copy_bytes));
    return TimeAttentionPlan(
        clock_, plan, [&](size_t i) { return gemms[i].Run(arena.get(), stream_); },
        [&] {
          return HipStatus(LaunchCopy(scores.get(), scores.get() + plan.score_copy_bytes,
                                      plan.score_copy_bytes, stream_),
                           "copy");
        },
        options_);
  }

  absl::StatusOr<TimingStats> TimeMemory(const MemoryOp& op) override {
    const CopyMeasurePlan plan = PlanMemoryMeasurement(op);
    HipBuffer src;
    HipBuffer dst;
    PROJECTOR_RETURN_IF_ERROR(src.Allocate(plan.bytes_per_copy));
    PROJECTOR_RETURN_IF_ERROR(dst.Allocate(plan.bytes_per_copy));
    return TimeCopies(
        clock_, plan,
        [&] {
          return HipStatus(LaunchCopy(src.get(), dst.get(), plan.bytes_per_copy, stream_), "copy");
        },
        options_);
  }

  bool DeviceUnusable() const override { return hipPeekAtLastError() != hipSuccess; }

 private:
  hipStream_t stream_;
  HipClock clock_;
  const MeasureOptions& options_;
};

}  // namespace

std::string HipRuntimeName() {
  return absl::StrCat("HIP ", PROJECTOR_HIP_VERSION, " (HIP kernels)");
}

absl::StatusOr<MeasureResult> MeasureOpsHip(const std::vector<ProfiledOp>& requests,
                                            const MeasureOptions& options) {
  int count = 0;
  const hipError_t e = hipGetDeviceCount(&count);
  PROJECTOR_RETURN_IF_ERROR(CheckMeasureOptions(
      options, e == hipSuccess ? count : 0, HipRuntimeName(),
      e == hipSuccess ? "0 devices" : hipGetErrorString(e)));
  const int device = static_cast<int>(options.device);
  PROJECTOR_RETURN_IF_ERROR(HipStatus(hipSetDevice(device), "set device"));
  hipDeviceProp_t prop{};
  PROJECTOR_RETURN_IF_ERROR(HipStatus(hipGetDeviceProperties(&prop, device), "properties"));
  MeasureResult result;
  result.tool = absl::StrCat("project measure (", HipRuntimeName(), ")");
  result.device = absl::StrCat(prop.name, " (", prop.gcnArchName, ")");

  hipStream_t stream = nullptr;
  PROJECTOR_RETURN_IF_ERROR(HipStatus(hipStreamCreate(&stream), "stream"));
  absl::Status status;
  {
    HipOpTimer timer(stream, options);
    status = MeasureEach(timer, requests, result);
  }
  (void)hipStreamDestroy(stream);
  PROJECTOR_RETURN_IF_ERROR(status);
  return result;
}

}  // namespace projector
