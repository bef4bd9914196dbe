// CUDA build of the measure runner: cuBLASLt GEMMs, attention as a composition of
// strided-batched cuBLASLt GEMMs plus a score-matrix pass, and device-to-device copies for the
// memory-bound kernels, each timed with CUDA events after warm-up (loop, statistics and dispatch
// in measure_common.h). Plain C++ against the CUDA runtime and cuBLASLt: no device code, so no
// nvcc is needed to build it.
#include <cuda_runtime.h>
#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/measure/measure_common.h"
#include "core/status_macros.h"

namespace projector {
namespace {

constexpr size_t kWorkspaceBytes = 64ull << 20;

absl::Status CudaStatus(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("CUDA ", std::string(what), ": ", cudaGetErrorString(e)));
}

absl::Status LtStatus(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cuBLASLt ", std::string(what), ": status ",
                                          static_cast<int>(s)));
}

// Device memory released on scope exit, filled with MeasureFillPattern (copied once, then
// doubled device to device).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  absl::Status Allocate(size_t bytes) {
    const size_t n = std::max<size_t>(bytes, 256);
    PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&ptr_, n), "malloc"));
    return FillWithPattern(get(), n, [](void* to, const void* from, size_t k, bool from_host) {
      return CudaStatus(
          cudaMemcpy(to, from, k, from_host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice),
          "fill");
    });
  }
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

struct LtTypes {
  cudaDataType_t ab;
  cudaDataType_t cd;
  cublasComputeType_t compute;
  size_t ab_bytes;
  size_t cd_bytes;
};

absl::StatusOr<LtTypes> TypesFor(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return LtTypes{CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
    case DType::kFp16:
      return LtTypes{CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2};
    case DType::kFp32:
      return LtTypes{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4};
    case DType::kTf32:
      return LtTypes{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
    case DType::kFp8:
      return LtTypes{CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2};
    case DType::kFp4:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat("dtype ", std::string(DTypeName(dtype)), " is not measured (cuBLASLt path "
                   "covers fp32, tf32, bf16, fp16, fp8)"));
}

// One planned cuBLASLt matmul, "TN" as in Megatron/Transformer Engine (and as FP8 requires):
// D[m,n] (column-major, ld m) = A^T · B with A stored k×m and B stored k×n.
class LtMatmul {
 public:
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  LtMatmul() = default;
  ~LtMatmul() {
    if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
    for (cublasLtMatrixLayout_t l : {a_, b_, c_}) {
      if (l) cublasLtMatrixLayoutDestroy(l);
    }
    if (desc_) cublasLtMatmulDescDestroy(desc_);
  }

  absl::Status Plan(cublasLtHandle_t handle, const GemmShape& s) {
    handle_ = handle;
    PROJECTOR_ASSIGN_OR_RETURN(types_, TypesFor(s.dtype));
    m_ = s.m;
    n_ = s.n;
    k_ = s.k;
    batch_ = s.batch;
    PROJECTOR_RETURN_IF_ERROR(
        LtStatus(cublasLtMatmulDescCreate(&desc_, types_.compute, CUDA_R_32F), "desc"));
    cublasOperation_t trans = CUBLAS_OP_T;
    PROJECTOR_RETURN_IF_ERROR(LtStatus(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)),
        "transa"));
    PROJECTOR_RETURN_IF_ERROR(Layout(&a_, types_.ab, k_, m_, static_cast<int64_t>(k_ * m_)));
    PROJECTOR_RETURN_IF_ERROR(Layout(&b_, types_.ab, k_, n_, static_cast<int64_t>(k_ * n_)));
    PROJECTOR_RETURN_IF_ERROR(Layout(&c_, types_.cd, m_, n_, static_cast<int64_t>(m_ * n_)));
    PROJECTOR_RETURN_IF_ERROR(LtStatus(cublasLtMatmulPreferenceCreate(&pref_), "preference"));
    size_t ws = kWorkspaceBytes;
    PROJECTOR_RETURN_IF_ERROR(LtStatus(
        cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                             sizeof(ws)),
        "workspace preference"));
    int returned = 0;
    PROJECTOR_RETURN_IF_ERROR(LtStatus(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_,
                                                                      c_, pref_, 1, &heuristic_,
                                                                      &returned),
                                       "heuristic"));
    if (returned == 0) {
      return absl::UnimplementedError(
          absl::StrFormat("cuBLASLt has no algorithm for %dx%dx%d %s", m_, n_, k_,
                          DTypeName(s.dtype)));
    }
    return absl::OkStatus();
  }

  size_t OperandBytes() const {
    const auto b = static_cast<size_t>(batch_);
    return b * (static_cast<size_t>(m_ * k_ + k_ * n_) * types_.ab_bytes +
                static_cast<size_t>(m_ * n_) * types_.cd_bytes);
  }

  // Operands are carved out of `arena` (OperandBytes() long); their content is irrelevant.
  absl::Status Run(char* arena, char* workspace, cudaStream_t stream) const {
    const float alpha = 1.0f;
    const float beta = 0.0f;
    char* a = arena;
    char* b = a + static_cast<size_t>(batch_ * m_ * k_) * types_.ab_bytes;
    char* c = b + static_cast<size_t>(batch_ * k_ * n_) * types_.ab_bytes;
    return LtStatus(cublasLtMatmul(handle_, desc_, &alpha, a, a_, b, b_, &beta, c, c_, c, c_,
                                   &heuristic_.algo, workspace, kWorkspaceBytes, stream),
                    "matmul");
  }

 private:
  absl::Status Layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, int64_t rows,
                      int64_t cols, int64_t batch_stride) {
    PROJECTOR_RETURN_IF_ERROR(LtStatus(
        cublasLtMatrixLayoutCreate(layout, type, static_cast<uint64_t>(rows),
                                   static_cast<uint64_t>(cols), rows),
        "layout"));
    if (batch_ > 1) {
      const auto count = static_cast<int32_t>(batch_);
      PROJECTOR_RETURN_IF_ERROR(LtStatus(
          cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                           sizeof(count)),
          "batch count"));
      PROJECTOR_RETURN_IF_ERROR(LtStatus(
          cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                           &batch_stride, sizeof(batch_stride)),
          "batch stride"));
    }
    return absl::OkStatus();
  }

  cublasLtHandle_t handle_ = nullptr;
  LtTypes types_{};
  int64_t m_ = 0, n_ = 0, k_ = 0, batch_ = 1;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

// CUDA events on one stream.
class CudaClock final : public EventClock {
 public:
  explicit CudaClock(cudaStream_t stream) : stream_(stream) {
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
  }
  ~CudaClock() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  CudaClock(const CudaClock&) = delete;
  CudaClock& operator=(const CudaClock&) = delete;

  absl::Status Synchronize() override {
    return CudaStatus(cudaStreamSynchronize(stream_), "stream sync");
  }
  absl::Status Start() override { return CudaStatus(cudaEventRecord(start_, stream_), "event"); }
  absl::StatusOr<double> StopMs() override {
    PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(stop_, stream_), "event"));
    PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(stop_), "event sync"));
    float ms = 0;
    PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaEventElapsedTime(&ms, start_, stop_), "elapsed"));
    return static_cast<double>(ms);
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// cuBLASLt GEMMs, attention as its GEMMs plus a score pass, memory ops as device copies.
class CudaOpTimer final : public DeviceOpTimer {
 public:
  CudaOpTimer(cublasLtHandle_t lt, cudaStream_t stream, const MeasureOptions& options)
      : lt_(lt), stream_(stream), clock_(stream), options_(options) {}

  absl::Status Init() { return workspace_.Allocate(kWorkspaceBytes); }

  absl::StatusOr<TimingStats> TimeGemm(const GemmShape& shape) override {
    LtMatmul mm;
    PROJECTOR_RETURN_IF_ERROR(mm.Plan(lt_, shape));
    DeviceBuffer arena;
    PROJECTOR_RETURN_IF_ERROR(arena.Allocate(mm.OperandBytes()));
    return TimeRepeated(
        clock_, [&] { return mm.Run(arena.get(), workspace_.get(), stream_); }, options_, 1.0);
  }

  absl::StatusOr<TimingStats> TimeAttention(const AttentionShape& shape,
                                            AttentionPass pass) override {
    const AttentionMeasurePlan plan = PlanAttentionMeasurement(shape, pass);
    std::vector<std::unique_ptr<LtMatmul>> plans;
    size_t arena_bytes = 0;
    for (const GemmShape& g : plan.gemms) {
      plans.push_back(std::make_unique<LtMatmul>());
      PROJECTOR_RETURN_IF_ERROR(plans.back()->Plan(lt_, g));
      arena_bytes = std::max(arena_bytes, plans.back()->OperandBytes());
    }
    DeviceBuffer arena;
    DeviceBuffer scores;
    PROJECTOR_RETURN_IF_ERROR(arena.Allocate(arena_bytes));
    PROJECTOR_RETURN_IF_ERROR(scores.Allocate(2 * plan.score_copy_bytes));
    return TimeAttentionPlan(
        clock_, plan,
        [&](size_t i) { return plans[i]->Run(arena.get(), workspace_.get(), stream_); },
        [&] {
          return CudaStatus(cudaMemcpyAsync(scores.get() + plan.score_copy_bytes, scores.get(),
                                            plan.score_copy_bytes, cudaMemcpyDeviceToDevice,
                                            stream_),
                            "copy");
        },
        options_);
  }

  absl::StatusOr<TimingStats> TimeMemory(const MemoryOp& op) override {
    const CopyMeasurePlan plan = PlanMemoryMeasurement(op);
    DeviceBuffer src;
    DeviceBuffer dst;
    PROJECTOR_RETURN_IF_ERROR(src.Allocate(plan.bytes_per_copy));
    PROJECTOR_RETURN_IF_ERROR(dst.Allocate(plan.bytes_per_copy));
    return TimeCopies(
        clock_, plan,
        [&] {
          return CudaStatus(cudaMemcpyAsync(dst.get(), src.get(), plan.bytes_per_copy,
                                            cudaMemcpyDeviceToDevice, stream_),
                            "copy");
        },
        options_);
  }

  // A sticky error (illegal address, launch failure) poisons the context for every later call.
  bool DeviceUnusable() const override { return cudaPeekAtLastError() != cudaSuccess; }

 private:
  cublasLtHandle_t lt_;
  cudaStream_t stream_;
  CudaClock clock_;
  const MeasureOptions& options_;
  DeviceBuffer workspace_;
};

}  // namespace

std::string CudaRuntimeName() {
  return absl::StrCat("CUDA ", PROJECTOR_CUDA_VERSION, " (cuBLASLt)");
}

absl::StatusOr<MeasureResult> MeasureOpsCuda(const std::vector<ProfiledOp>& requests,
                                             const MeasureOptions& options) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  PROJECTOR_RETURN_IF_ERROR(CheckMeasureOptions(
      options, e == cudaSuccess ? count : 0, CudaRuntimeName(),
      e == cudaSuccess ? "0 devices" : cudaGetErrorString(e)));
  const int device = static_cast<int>(options.device);
  PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "set device"));
  cudaDeviceProp prop{};
  PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, device), "properties"));
  MeasureResult result;
  result.tool = absl::StrCat("project measure (", CudaRuntimeName(), ")");
  result.device = prop.name;

  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  PROJECTOR_RETURN_IF_ERROR(LtStatus(cublasLtCreate(&lt), "create"));
  PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaStreamCreate(&stream), "stream"));
  absl::Status status;
  {
    CudaOpTimer timer(lt, stream, options);
    status = timer.Init();
    if (status.ok()) status = MeasureEach(timer, requests, result);
  }
  cudaStreamDestroy(stream);
  cublasLtDestroy(lt);
  PROJECTOR_RETURN_IF_ERROR(status);
  return result;
}

}  // namespace projector
