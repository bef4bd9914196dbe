// HardwareProfile: one GPU, its node and its network (scale-up fabric and scale-out NICs), with
// measured efficiencies where known; its JSON loader and validation. The library lives beside it
// (hw_profiles/*.json), every figure with its source.
#ifndef PROJECTOR_HW_PROFILES_HARDWARE_PROFILE_H_
#define PROJECTOR_HW_PROFILES_HARDWARE_PROFILE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/units.h"

namespace projector {

enum class Vendor { kAmd, kNvidia };
enum class FabricTopology { kSwitch, kFullMesh };

struct GpuSpec {
  std::string name;  // "mi300x"
  Vendor vendor = Vendor::kAmd;
  std::string arch;  // "gfx942", "sm_90"
  int64_t compute_units = 0;  // CUs or SMs
  int64_t num_xcds = 1;       // L2 domains (AMD XCDs; 1 on NVIDIA, 2 dies on B200 still 1 L2)
  Hertz peak_clock;           // the clock the datasheet peak is quoted at
  // Clock the GPU sustains under dense matrix load (AMD MAF blog: 1207 MHz MI300X); the simulate
  // backends run at this clock unless --gpu-clock-mhz overrides it.
  Hertz sustained_clock;
  // Dense matrix FLOPs per clock per CU/SM, indexed by DTypeIndex; 0 = no native support.
  std::array<double, kNumDTypes> matrix_flops_per_clock_per_cu{};
  double vector_fp32_flops_per_clock_per_cu = 0;
  Bytes hbm_capacity;
  BytesPerSecond hbm_bandwidth;
  Bytes l2_cache;          // total
  Bytes last_level_cache;  // AMD Infinity Cache (MALL); 0 where none
  Bytes lds_per_cu;        // LDS / shared memory per CU/SM
  Bytes register_file_per_cu;

  // Measured efficiencies (fractions in (0, 1]).
  // Special-function (exp) throughput per clock per CU/SM, for the softmax of flash attention.
  double exp_per_clock_per_cu = 16;
  // Measured efficiencies (fractions in (0, 1]), each derived in the profile from a cited
  // measurement:
  double gemm_efficiency = 0.9;  // main-loop fraction of the peak at the sustained clock
  double attention_fwd_efficiency = 0.7;  // flash-attention forward main loop
  double attention_bwd_efficiency = 0.6;  // flash-attention backward main loop
  double hbm_efficiency = 0.8;  // achievable fraction of HBM bandwidth for streaming kernels
  Seconds kernel_launch_overhead;

  // Peak matrix rate at `clock` for `dtype`; 0 when the dtype is unsupported.
  FlopsPerSecond MatrixPeak(DType dtype, Hertz clock) const;
};

struct ScaleUpFabric {
  std::string name;  // "NVLink 4 + NVSwitch", "Infinity Fabric"
  FabricTopology topology = FabricTopology::kSwitch;
  BytesPerSecond per_gpu_bandwidth;   // unidirectional, all links of one GPU
  BytesPerSecond per_link_bandwidth;  // unidirectional, one link (full mesh: to one peer)
  int64_t links_per_gpu = 0;
  Seconds latency;
  double allreduce_efficiency = 0.8;  // measured busbw / link peak (nccl/rccl-tests)
  double alltoall_efficiency = 0.8;
  Seconds alltoall_per_peer_overhead;  // per intra-node A2A peer (seed: 28 us on MI300X)
  bool supports_in_network_reduction = false;  // NVLS/SHARP
};

struct ScaleOutNetwork {
  std::string name;  // "8x ConnectX-7 400G InfiniBand"
  int64_t nics_per_node = 0;
  BytesPerSecond per_nic_bandwidth;  // unidirectional
  Seconds latency;
  double efficiency = 0.8;  // achieved / line rate
};

struct HardwareProfile {
  std::string name;         // profile name ("mi300x")
  std::string source_file;  // where it was loaded from
  GpuSpec gpu;
  int64_t gpus_per_node = 8;
  ScaleUpFabric scale_up;
  ScaleOutNetwork scale_out;
};

absl::StatusOr<HardwareProfile> LoadHardwareProfileFile(const std::string& path);
// Cross-field checks.
absl::Status ValidateHardwareProfile(const HardwareProfile& hw, const std::string& origin);

// Directory of the shipped library (compile-time default, overridable by
// $PROJECTOR_HW_PROFILES_DIR).
std::string HardwareLibraryDir();
std::vector<std::string> ListLibraryGpus();
// A library name ("mi300x") or a path to a JSON file; unknown names list the valid ones.
absl::StatusOr<HardwareProfile> ResolveHardwareProfile(const std::string& name_or_path);

}  // namespace projector

#endif  // PROJECTOR_HW_PROFILES_HARDWARE_PROFILE_H_
