// Device kernels of the HIP measure runner behind a plain C++ interface, so that the runner
// itself (hip_measure_runner.cc) compiles with the host compiler: a tiled batched GEMM and a
// bandwidth-bound copy. Compiled by hipcc from hip_measure_kernels.hip.
#ifndef PROJECTOR_BACKENDS_MEASURE_HIP_MEASURE_KERNELS_H_
#define PROJECTOR_BACKENDS_MEASURE_HIP_MEASURE_KERNELS_H_

#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace projector {

enum class HipGemmType { kFp32, kFp16, kBf16 };

// Bytes per element of `type`.
size_t HipGemmElementBytes(HipGemmType type);

// D = A^T · B for `batch` strided matrices, "TN" as the CUDA runner times it: A stored k×m and
// B stored k×n column-major (both contiguous along k), D m×n column-major; fp32 accumulation,
// output in `type`. Operands are packed back to back per batch. Returns the launch status.
hipError_t LaunchTiledGemm(HipGemmType type, const void* a, const void* b, void* d, int64_t m,
                           int64_t n, int64_t k, int64_t batch, hipStream_t stream);

// Copies `bytes` from src to dst with a grid-stride kernel (16-byte vectors, byte tail).
hipError_t LaunchCopy(const void* src, void* dst, size_t bytes, hipStream_t stream);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_MEASURE_HIP_MEASURE_KERNELS_H_
