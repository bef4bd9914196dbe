// Kernels of the HIP measure runner (see hip_measure_kernels.h). Straightforward rather than
// peak: a 64×64 output tile per 256-thread block, 16-deep K slices staged in LDS, 4×4 outputs
// per thread with fp32 accumulation (the classic register-blocked shared-memory SGEMM), no
// matrix cores. It times far below a vendor library; the profile's `tool` field says these
// kernels timed it, so a user calibrates or compares knowing that.
#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#include <algorithm>

#include "backends/measure/hip_measure_kernels.h"

namespace projector {
namespace {

constexpr int kTile = 64;     // output rows and columns per block
constexpr int kDepth = 16;    // K slice staged per iteration
constexpr int kThreads = 256; // 16×16 threads, 4×4 outputs each
constexpr int64_t kMaxGridY = 65535;
constexpr int64_t kMaxGridZ = 65535;

template <typename T>
__device__ float ToFloat(T v) {
  return static_cast<float>(v);
}
template <typename T>
__device__ T FromFloat(float v) {
  return static_cast<T>(v);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    TiledGemmKernel(const T* a, const T* b, T* d, int64_t m, int64_t n, int64_t k,
                    int64_t batch) {
  // +1 column of padding: the 16 threads of a row read distinct LDS banks.
  __shared__ float as[kDepth][kTile + 1];
  __shared__ float bs[kDepth][kTile + 1];
  const int tx = static_cast<int>(threadIdx.x) % 16;
  const int ty = static_cast<int>(threadIdx.x) / 16;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int64_t col_block = blockIdx.y; col_block * kTile < n; col_block += gridDim.y) {
    const int64_t col0 = col_block * kTile;
    for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
      const T* az = a + z * m * k;
      const T* bz = b + z * n * k;
      T* dz = d + z * m * n;
      float acc[4][4] = {};
      for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
        // Consecutive threads read consecutive k of one row: coalesced along the contiguous K.
        for (int e = static_cast<int>(threadIdx.x); e < kTile * kDepth; e += kThreads) {
          const int i = e / kDepth;
          const int kk = e % kDepth;
          const int64_t gk = k0 + kk;
          const int64_t gi = row0 + i;
          const int64_t gj = col0 + i;
          as[kk][i] = gi < m && gk < k ? ToFloat(az[gi * k + gk]) : 0.0f;
          bs[kk][i] = gj < n && gk < k ? ToFloat(bz[gj * k + gk]) : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < kDepth; ++kk) {
          float av[4];
          float bv[4];
          for (int r = 0; r < 4; ++r) av[r] = as[kk][ty + 16 * r];
          for (int c = 0; c < 4; ++c) bv[c] = bs[kk][tx + 16 * c];
          for (int r = 0; r < 4; ++r) {
            for (int c = 0; c < 4; ++c) acc[r][c] += av[r] * bv[c];
          }
        }
        __syncthreads();
      }
      for (int r = 0; r < 4; ++r) {
        const int64_t gi = row0 + ty + 16 * r;
        if (gi >= m) continue;
        for (int c = 0; c < 4; ++c) {
          const int64_t gj = col0 + tx + 16 * c;
          if (gj < n) dz[gi + gj * m] = FromFloat<T>(acc[r][c]);
        }
      }
    }
  }
}

__global__ void CopyKernel(const uint4* src, uint4* dst, size_t vectors, const char* src_tail,
                           char* dst_tail, size_t tail_bytes) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (size_t i = first; i < vectors; i += stride) dst[i] = src[i];
  if (first < tail_bytes) dst_tail[first] = src_tail[first];
}

template <typename T>
hipError_t Launch(const void* a, const void* b, void* d, int64_t m, int64_t n, int64_t k,
                  int64_t batch, hipStream_t stream) {
  const dim3 grid(static_cast<unsigned>((m + kTile - 1) / kTile),
                  static_cast<unsigned>(std::min<int64_t>((n + kTile - 1) / kTile, kMaxGridY)),
                  static_cast<unsigned>(std::min<int64_t>(batch, kMaxGridZ)));
  hipLaunchKernelGGL(TiledGemmKernel<T>, grid, dim3(kThreads), 0, stream,
                     static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(d), m,
                     n, k, batch);
  return hipGetLastError();
}

}  // namespace

size_t HipGemmElementBytes(HipGemmType type) { return type == HipGemmType::kFp32 ? 4 : 2; }

hipError_t LaunchTiledGemm(HipGemmType type, const void* a, const void* b, void* d, int64_t m,
                           int64_t n, int64_t k, int64_t batch, hipStream_t stream) {
  switch (type) {
    case HipGemmType::kFp32:
      return Launch<float>(a, b, d, m, n, k, batch, stream);
    case HipGemmType::kFp16:
      return Launch<__half>(a, b, d, m, n, k, batch, stream);
    case HipGemmType::kBf16:
      return Launch<hip_bfloat16>(a, b, d, m, n, k, batch, stream);
  }
  return hipErrorInvalidValue;
}

hipError_t LaunchCopy(const void* src, void* dst, size_t bytes, hipStream_t stream) {
  const size_t vectors = bytes / sizeof(uint4);
  const size_t tail = bytes % sizeof(uint4);
  constexpr unsigned kBlock = 256;
  // Enough blocks to fill any current GPU several times over; the kernel strides the rest.
  const auto blocks = static_cast<unsigned>(
      std::clamp<size_t>((vectors + kBlock - 1) / kBlock, 1, 65536));
  const auto* s = static_cast<const char*>(src);
  auto* t = static_cast<char*>(dst);
  hipLaunchKernelGGL(CopyKernel, dim3(blocks), dim3(kBlock), 0, stream,
                     reinterpret_cast<const uint4*>(s), reinterpret_cast<uint4*>(t), vectors,
                     s + vectors * sizeof(uint4), t + vectors * sizeof(uint4), tail);
  return hipGetLastError();
}

}  // namespace projector
