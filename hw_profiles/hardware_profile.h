// HardwareProfile: one GPU, its node and its network (scale-up fabric and scale-out NICs), with
// measured efficiencies where known; its JSON loader and validation. The library lives beside it
// (hw_profiles/*.json), every figure with its source.
//
// JSON units are in the key names and are converted once, by the loader: clocks in MHz, HBM
// capacity in GB (1e9 B), HBM bandwidth in TB/s, caches as vendors quote them (l2_cache_mb and
// last_level_cache_mb in MiB, lds_per_cu_kb and register_file_per_cu_kb in KiB), fabric
// bandwidths in GB/s unidirectional, NIC rates in Gb/s line rate, latencies and overheads in us,
// communication-kernel footprints in CTAs (SMs/CUs held).
// A figure is a bare number or {"value": n, "source": "...", "derived": "..."}.
#ifndef PROJECTOR_HW_PROFILES_HARDWARE_PROFILE_H_
#define PROJECTOR_HW_PROFILES_HARDWARE_PROFILE_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "core/dtype.h"
#include "core/op_shapes.h"
#include "core/units.h"

namespace projector {

enum class Vendor { kAmd, kNvidia };
enum class FabricTopology { kSwitch, kFullMesh };

// A named flash-attention kernel ("fa2", "fa3", "ck") and its measured main-loop efficiencies:
// fractions in (0, 1] of the matrix peak at the sustained clock, as attention_fwd_efficiency.
struct AttentionKernelSpec {
  std::string name;
  double fwd_efficiency = 0;
  double bwd_efficiency = 0;
};

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

  // Special-function (exp) throughput per clock per CU/SM, for the softmax of flash attention.
  double exp_per_clock_per_cu = 16;
  // Measured efficiencies (fractions in (0, 1]), each derived in the profile from a cited
  // measurement:
  double gemm_efficiency = 0.9;  // main-loop fraction of the peak at the sustained clock
  // The same fraction for FP8 (and FP4) GEMMs, measured in FP8 and expressed against the FP8 peak
  // at the sustained clock; absent (nullopt) = gemm_efficiency, the bf16 figure.
  std::optional<double> gemm_efficiency_fp8;
  // What a block-scaled FP8 GEMM (GemmShape::block_scaled: blockwise or MXFP8 recipes) reaches
  // of the per-tensor-scaled one of the same shape, measured on this architecture; absent
  // (nullopt) = 1, no measured difference.
  std::optional<double> fp8_block_scaled_gemm_ratio;
  // Flash-attention main loop of the kernel in use: the profile's default kernel as loaded; a
  // scenario puts the figures of the kernel it runs here (ResolveKernels).
  double attention_fwd_efficiency = 0.7;
  double attention_bwd_efficiency = 0.6;
  // The named flash kernels with their figures, the default first (JSON: its name in
  // attention_kernel_default, its figures at the top level, the others in attention_kernels);
  // empty when the profile names none.
  std::vector<AttentionKernelSpec> attention_kernels;
  // The kernel PyTorch's SDPA runs on this GPU; empty = the default.
  std::string attention_kernel_pytorch;
  // The kernel PyTorch's SDPA runs when the scores take an additive bias (ALiBi): its flash
  // backend accepts no attention mask, so it falls back to the memory-efficient kernel; empty =
  // attention_kernel_pytorch.
  std::string attention_kernel_pytorch_bias;
  double hbm_efficiency = 0.8;  // achievable fraction of HBM bandwidth for streaming kernels
  // Element adds per second of a scatter-add by atomics (AtomicAddKernel), measured on this
  // architecture: PyTorch's scatter_add_ and index_add kernels; absent (nullopt) = not
  // measured, such an op is timed by its bytes alone.
  std::optional<double> scatter_add_rate;
  std::optional<double> index_add_rate;
  // The rate of `kernel`; nullopt for kNone or an unmeasured kernel.
  std::optional<double> AtomicAddRate(AtomicAddKernel kernel) const;
  Seconds kernel_launch_overhead;
  // CPU time the training framework spends to issue one op from Python (PyTorch dispatch and the
  // module code around it, launching its kernel) on the host CPU the GPU ships with; 0 = host
  // not modelled. The projection's host-bound model (projection/host_overhead.h) uses it.
  Seconds host_op_dispatch;

  // Peak matrix rate at `clock` for `dtype`; 0 when the dtype is unsupported.
  FlopsPerSecond MatrixPeak(DType dtype, Hertz clock) const;
  // GEMM main-loop efficiency for `dtype`: gemm_efficiency_fp8 for FP8 and FP4 when the profile
  // has one, else gemm_efficiency; an FP8 GEMM with block-scaled operands also takes
  // fp8_block_scaled_gemm_ratio.
  double GemmEfficiency(DType dtype, bool block_scaled = false) const;
  // The named flash kernel; nullptr when the profile has none of that name.
  const AttentionKernelSpec* FindAttentionKernel(std::string_view kernel) const;
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
  // Measured all-reduce bus bandwidth with in-network reduction (NVLS) on one scale-up domain of
  // 8 GPUs; zero when there is none or no measurement. Can exceed per_gpu_bandwidth because the
  // switch does the reduction.
  BytesPerSecond in_network_allreduce_busbw;
};

struct ScaleOutNetwork {
  std::string name;  // "8x ConnectX-7 400G InfiniBand"
  int64_t nics_per_node = 0;
  BytesPerSecond per_nic_bandwidth;  // unidirectional
  Seconds latency;
  double efficiency = 0.8;  // achieved / line rate
  Seconds alltoall_per_peer_overhead;  // per inter-node A2A peer (Primus a2a_peer_lat 0.45 us)
  // Achieved / line rate of NCCL's/RCCL's point-to-point traffic across nodes: the pipeline's
  // send/recv and the All-to-All made of them (one send/recv per peer, each GPU on its own NIC),
  // measured on its own; nullopt: `efficiency`, which the ring and tree collectives use.
  std::optional<double> p2p_efficiency;
  double PointToPointEfficiency() const { return p2p_efficiency.value_or(efficiency); }
  // Achieved / line rate of DeepEP's kernels, measured on their own: the normal dispatch and
  // combine (RDMA writes issued by the GPU, NVLink forwarding beside them) and the low-latency
  // ones (a small batch straight to every peer); nullopt: `efficiency`, and for the low-latency
  // kernels the normal ones' figure first.
  std::optional<double> deepep_efficiency;
  std::optional<double> deepep_low_latency_efficiency;
  double DeepEpEfficiency() const { return deepep_efficiency.value_or(efficiency); }
  double DeepEpLowLatencyEfficiency() const {
    return deepep_low_latency_efficiency.value_or(DeepEpEfficiency());
  }
};

// How a collective kernel running beside compute slows that compute: NCCL/RCCL launch one CTA
// (workgroup) per channel, and each CTA holds an SM/CU for the whole collective, so the compute
// kernels launched beside it get fewer SMs. 0 CTAs = the collective takes no SMs (the model
// before interference; a user-written profile without the section gets this).
struct CommInterference {
  // CTAs of one collective whose ranks all sit in one node (NCCL ring/tree channels over the
  // scale-up fabric).
  int64_t scale_up_ctas = 0;
  // CTAs of one collective that spans nodes (channels of the inter-node rings, one or more per
  // NIC).
  int64_t scale_out_ctas = 0;
  // SMs/CUs a DeepEP-style expert dispatch/combine kernel holds (DeepEP Buffer.num_sms).
  int64_t ep_dispatch_ctas = 0;
};

struct HardwareProfile {
  std::string name;         // profile name ("mi300x")
  std::string source_file;  // where it was loaded from
  GpuSpec gpu;
  int64_t gpus_per_node = 8;
  ScaleUpFabric scale_up;
  ScaleOutNetwork scale_out;
  CommInterference comm_interference;
  std::string description;  // one line for people ("AMD Instinct MI300X OAM, 750 W")
  // JSON pointer of each figure that cites a source ("/gpu/peak_clock_mhz") -> its source, with
  // " [derived: ...]" appended where the profile says how the figure was derived.
  std::map<std::string, std::string> figure_sources;
};

// Parses one profile and checks types and per-field ranges (no cross-field checks).
// kNotFound if the file cannot be opened; kInvalidArgument naming file and JSON pointer for a
// syntax error, an unknown key, a wrong type, a non-positive size, a fraction outside (0, 1] or
// a malformed or reserved attention kernel name.
absl::StatusOr<HardwareProfile> LoadHardwareProfileFile(const std::string& path);
// The same from a profile's JSON document read from `path` (its source_file and default name);
// errors name `origin`.
absl::StatusOr<HardwareProfile> ParseHardwareProfile(const nlohmann::json& doc,
                                                     const std::string& path,
                                                     const std::string& origin);
// Ranges and cross-field checks (sustained <= peak clock, bf16 rate > 0, per-link <= per-GPU
// bandwidth <= links x per-link, full mesh has a link to every peer, a collective holds fewer
// CTAs than the GPU has SMs/CUs, attention kernels named once with the PyTorch one among them,
// ...); also usable on profiles built in code. kInvalidArgument
// "<origin>: <json-pointer>: <problem>".
absl::Status ValidateHardwareProfile(const HardwareProfile& hw, const std::string& origin);

// Short names people type for the library's profiles (case-insensitive, as every GPU name):
// "h100" for the H100 SXM profile, "a100" for the 80 GB A100, "mi300" for the MI300X, ...
struct GpuAlias {
  std::string_view alias;
  std::string_view profile;
};
inline constexpr GpuAlias kGpuAliases[] = {
    {"a100", "a100-sxm-80gb"}, {"a100-80gb", "a100-sxm-80gb"}, {"a100-40gb", "a100-sxm-40gb"},
    {"h100", "h100-sxm"},      {"h100-sxm5", "h100-sxm"},      {"h200", "h200-sxm"},
    {"h800", "h800-sxm"},      {"mi300", "mi300x"},            {"mi325", "mi325x"},
    {"mi355", "mi355x"},       {"v100", "v100-sxm2-32gb"},     {"v100-32gb", "v100-sxm2-32gb"},
    {"v100-16gb", "v100-sxm2-16gb"}, {"rtx-a6000", "a6000"}};
// The profile an alias names; empty when `name` (lower case) is not an alias.
std::string_view GpuAliasTarget(std::string_view name);

// Directory of the shipped library (compile-time default, overridable by
// $PROJECTOR_HW_PROFILES_DIR).
std::string HardwareLibraryDir();
// Sorted file stems of the *.json files in HardwareLibraryDir(); empty if it cannot be read.
std::vector<std::string> ListLibraryGpus();
// Sorted distinct names of the attention kernels the library's profiles name ("ck", "fa2", ...);
// profiles that do not load are skipped.
std::vector<std::string> ListLibraryAttentionKernels();
// A library name ("mi300x", case-insensitive) or a path to a JSON file (a value containing '/'
// or ending in ".json"), loaded and validated. Unknown names: kInvalidArgument
// "unknown GPU 'x'; valid: a100-sxm-40gb, ...".
absl::StatusOr<HardwareProfile> ResolveHardwareProfile(const std::string& name_or_path);

}  // namespace projector

#endif  // PROJECTOR_HW_PROFILES_HARDWARE_PROFILE_H_
