// CUDA build of the measure runner: cuBLASLt GEMMs, attention as a composition of
// strided-batched cuBLASLt GEMMs plus a score-matrix pass, and device-to-device copies for the
// memory-bound kernels, each timed with CUDA events after warm-up. Plain C++ against the CUDA
// runtime and cuBLASLt: no device code, so no nvcc is needed to build it.
#include <cuda_runtime.h>
#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/measure/measure_runner.h"
#include "core/status_macros.h"

namespace projector {
namespace {

constexpr size_t kWorkspaceBytes = 64ull << 20;
// Score matrices of attention are processed in chunks of heads so that S and P fit here.
constexpr double kAttentionScratchBytes = 4.0 * (1ull << 30);
// Byte pattern for operands: non-zero finite values in every dtype (bf16 0x3C3C ≈ 0.0115,
// fp16 ≈ 1.06, fp32 ≈ 0.0115, fp8 e4m3 = 1.5). Zeros would draw less power than real data.
constexpr int kFillByte = 0x3C;

absl::Status CudaStatus(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("CUDA ", std::string(what), ": ", cudaGetErrorString(e)));
}

absl::Status LtStatus(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cuBLASLt ", std::string(what), ": status ",
                                          static_cast<int>(s)));
}

// Device memory released on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  absl::Status Allocate(size_t bytes) {
    PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&ptr_, std::max<size_t>(bytes, 256)), "malloc"));
    return CudaStatus(cudaMemset(ptr_, kFillByte, std::max<size_t>(bytes, 256)), "memset");
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

class Timer {
 public:
  Timer() {
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Runs `body` warmup times, then `reps` times each between two events; median/min/max.
  absl::StatusOr<TimingStats> Time(const std::function<absl::Status()>& body,
                                   const MeasureOptions& options, cudaStream_t stream,
                                   double factor) {
    for (int64_t i = 0; i < options.warmup; ++i) PROJECTOR_RETURN_IF_ERROR(body());
    PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "warm-up"));
    std::vector<double> us;
    for (int64_t i = 0; i < options.repetitions; ++i) {
      PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(start_, stream), "event"));
      PROJECTOR_RETURN_IF_ERROR(body());
      PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(stop_, stream), "event"));
      PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(stop_), "event sync"));
      float ms = 0;
      PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaEventElapsedTime(&ms, start_, stop_), "elapsed"));
      us.push_back(static_cast<double>(ms) * 1e3 * factor);
    }
    std::sort(us.begin(), us.end());
    const size_t n = us.size();
    const double median = n % 2 == 1 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
    return TimingStats{.median = Microseconds(median),
                       .min = Microseconds(us.front()),
                       .max = Microseconds(us.back()),
                       .repetitions = options.repetitions};
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

struct Context {
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  DeviceBuffer workspace;
  Timer timer;
};

absl::StatusOr<TimingStats> MeasureGemm(Context& ctx, const GemmShape& shape,
                                        const MeasureOptions& options) {
  LtMatmul mm;
  PROJECTOR_RETURN_IF_ERROR(mm.Plan(ctx.lt, shape));
  DeviceBuffer arena;
  PROJECTOR_RETURN_IF_ERROR(arena.Allocate(mm.OperandBytes()));
  return ctx.timer.Time([&] { return mm.Run(arena.get(), ctx.workspace.get(), ctx.stream); },
                        options, ctx.stream, 1.0);
}

// Flash attention as its GEMMs on `chunk` (batch·head) slices plus a read+write pass over the
// score matrix; the chunk time is scaled to all slices, and halved for a causal mask.
absl::StatusOr<TimingStats> MeasureAttention(Context& ctx, const AttentionShape& s,
                                             AttentionPass pass, const MeasureOptions& options) {
  const int64_t slices = s.batch * s.num_q_heads;
  const double score_bytes = static_cast<double>(s.seq_q) * static_cast<double>(s.seq_kv) * 2.0;
  const int64_t chunk = std::clamp<int64_t>(
      static_cast<int64_t>(kAttentionScratchBytes / (2.0 * score_bytes)), 1, slices);
  auto gemm = [&](int64_t m, int64_t n, int64_t k) {
    return GemmShape{.m = m, .n = n, .k = k, .batch = chunk, .dtype = s.dtype};
  };
  std::vector<GemmShape> shapes;
  if (pass == AttentionPass::kForward) {
    shapes = {gemm(s.seq_q, s.seq_kv, s.qk_head_dim), gemm(s.seq_q, s.v_head_dim, s.seq_kv)};
  } else {
    shapes = {gemm(s.seq_q, s.seq_kv, s.qk_head_dim),   // S = Q K^T recomputed
              gemm(s.seq_kv, s.v_head_dim, s.seq_q),    // dV = P^T dO
              gemm(s.seq_q, s.seq_kv, s.v_head_dim),    // dP = dO V^T
              gemm(s.seq_q, s.qk_head_dim, s.seq_kv),   // dQ = dS K
              gemm(s.seq_kv, s.qk_head_dim, s.seq_q)};  // dK = dS^T Q
  }
  std::vector<std::unique_ptr<LtMatmul>> plans;
  size_t arena_bytes = 0;
  for (const GemmShape& g : shapes) {
    plans.push_back(std::make_unique<LtMatmul>());
    PROJECTOR_RETURN_IF_ERROR(plans.back()->Plan(ctx.lt, g));
    arena_bytes = std::max(arena_bytes, plans.back()->OperandBytes());
  }
  const auto copy_bytes = static_cast<size_t>(score_bytes * static_cast<double>(chunk));
  DeviceBuffer arena;
  DeviceBuffer scores;
  PROJECTOR_RETURN_IF_ERROR(arena.Allocate(arena_bytes));
  PROJECTOR_RETURN_IF_ERROR(scores.Allocate(2 * copy_bytes));
  double factor = static_cast<double>(slices) / static_cast<double>(chunk);
  if (s.causal && s.seq_q == s.seq_kv) factor *= 0.5;
  return ctx.timer.Time(
      [&]() -> absl::Status {
        for (size_t i = 0; i < plans.size(); ++i) {
          PROJECTOR_RETURN_IF_ERROR(plans[i]->Run(arena.get(), ctx.workspace.get(), ctx.stream));
          if (i == 0) {  // softmax (fwd) / its gradient (bwd): read S, write P
            PROJECTOR_RETURN_IF_ERROR(CudaStatus(
                cudaMemcpyAsync(scores.get() + copy_bytes, scores.get(), copy_bytes,
                                cudaMemcpyDeviceToDevice, ctx.stream),
                "copy"));
          }
        }
        return absl::OkStatus();
      },
      options, ctx.stream, factor);
}

// `bytes` of traffic (read + write) over `launches` copies of bytes / (2 · launches) each.
absl::StatusOr<TimingStats> MeasureMemory(Context& ctx, const MemoryOp& op,
                                          const MeasureOptions& options) {
  const auto launches = std::max<int64_t>(op.launches, 1);
  const auto per_copy = static_cast<size_t>(op.bytes.value() / (2.0 * static_cast<double>(launches)));
  DeviceBuffer src;
  DeviceBuffer dst;
  PROJECTOR_RETURN_IF_ERROR(src.Allocate(per_copy));
  PROJECTOR_RETURN_IF_ERROR(dst.Allocate(per_copy));
  return ctx.timer.Time(
      [&]() -> absl::Status {
        for (int64_t i = 0; i < launches; ++i) {
          PROJECTOR_RETURN_IF_ERROR(CudaStatus(
              cudaMemcpyAsync(dst.get(), src.get(), per_copy, cudaMemcpyDeviceToDevice, ctx.stream),
              "copy"));
        }
        return absl::OkStatus();
      },
      options, ctx.stream, 1.0);
}

}  // namespace

std::string MeasureRuntimeName() {
  return absl::StrCat("CUDA ", PROJECTOR_CUDA_VERSION, " (cuBLASLt)");
}

absl::StatusOr<MeasureResult> MeasureOps(const std::vector<ProfiledOp>& requests,
                                         const MeasureOptions& options) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--profiling-mode measure: no GPU device found (", e == cudaSuccess ? "0 devices" :
        cudaGetErrorString(e), "); run it on a machine with an NVIDIA GPU and its driver, or use "
        "--profiling-mode profile --profile FILE with a profile measured there"));
  }
  if (options.device < 0 || options.device >= count) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--measure-device: %d is not a device; accepted: 0..%d", options.device,
                        count - 1));
  }
  if (options.repetitions < 1 || options.warmup < 0) {
    return absl::InvalidArgumentError("--measure-repetitions must be >= 1, --measure-warmup >= 0");
  }
  PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(static_cast<int>(options.device)), "set device"));
  cudaDeviceProp prop{};
  PROJECTOR_RETURN_IF_ERROR(
      CudaStatus(cudaGetDeviceProperties(&prop, static_cast<int>(options.device)), "properties"));
  MeasureResult result;
  result.tool = absl::StrCat("project measure (", MeasureRuntimeName(), ")");
  result.device = prop.name;

  Context ctx;
  PROJECTOR_RETURN_IF_ERROR(LtStatus(cublasLtCreate(&ctx.lt), "create"));
  PROJECTOR_RETURN_IF_ERROR(CudaStatus(cudaStreamCreate(&ctx.stream), "stream"));
  PROJECTOR_RETURN_IF_ERROR(ctx.workspace.Allocate(kWorkspaceBytes));
  for (const ProfiledOp& request : requests) {
    absl::StatusOr<TimingStats> t = absl::UnimplementedError("collectives need more than one GPU");
    switch (request.kind) {
      case ProfiledOpKind::kGemm:
        t = MeasureGemm(ctx, request.gemm, options);
        break;
      case ProfiledOpKind::kAttention:
        t = MeasureAttention(ctx, request.attention, request.pass, options);
        break;
      case ProfiledOpKind::kMemory:
        t = MeasureMemory(ctx, request.memory, options);
        break;
      case ProfiledOpKind::kCollective:
        break;
    }
    if (!t.ok()) {
      // A failed op leaves the stream usable only if the error was not sticky.
      if (t.status().code() == absl::StatusCode::kInternal &&
          cudaPeekAtLastError() != cudaSuccess) {
        return t.status();
      }
      result.skipped.push_back(
          absl::StrCat(DescribeProfiledOp(request), ": ", t.status().message()));
      continue;
    }
    ProfiledOp measured = request;
    measured.time = *t;
    result.ops.push_back(std::move(measured));
  }
  cudaStreamDestroy(ctx.stream);
  cublasLtDestroy(ctx.lt);
  return result;
}

}  // namespace projector
