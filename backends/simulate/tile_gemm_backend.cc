#include "backends/simulate/tile_gemm_backend.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "backends/simulate/shape_checks.h"

namespace projector {

namespace {

using gpu_model::kSplitKFixupCycles;
using gpu_model::kTileFixedOverheadCycles;

// Macro tiles, largest first (ties keep the earlier, higher-intensity tile, as Origami's
// tie-break by arithmetic intensity would).
// AMD gfx942/gfx950: hipBLASLt/TensileLite solution tiles as enumerated by Primus' Origami call
// (primus.md section 8.1: 64..256 × 64..256) and hardware_models.md section 1.10.
constexpr GemmTile kAmdTiles[] = {{256, 256}, {256, 128}, {128, 256}, {128, 128},
                                  {128, 64},  {64, 128},  {64, 64}};
// NVIDIA Hopper/Blackwell/Ampere: CUTLASS/cuBLASLt CTA tiles (hardware_models.md section 1.10).
constexpr GemmTile kNvidiaTiles[] = {{128, 256}, {256, 128}, {128, 128}, {128, 64},
                                     {64, 128},  {64, 64}};

// One K step reads 128 bytes per tile row (bf16 MT_K 64, fp8 128, fp32 32), the K depth of the
// hipBLASLt MT_K=64 bf16 kernels and of CUTLASS' 128-byte-swizzled TMA/LDS layouts.
constexpr double kKStepBytesPerRow = 128;
// LDS/shared-memory stages the operand tiles must fit in: Origami rejects a config whose A+B tile
// exceeds LDS (one stage, hardware_models.md section 1.8); CUTLASS mainloops need at least a
// double-buffered pipeline (2 stages).
constexpr double kAmdLdsStages = 1;
constexpr double kNvidiaSmemStages = 2;
// A split-K workgroup needs at least this many K steps to fill its prefetch pipeline
// (hipBLASLt prefetch depth PGR 2 plus two steady-state iterations).
constexpr int64_t kMinKStepsPerSplit = 4;
constexpr int64_t kMaxSplitK = 16;
// K-step slices kept live in a cache per resident tile (prefetch depth 2, Origami PGR).
constexpr double kLiveKSteps = 2;

double CeilDiv(double a, double b) { return std::ceil(a / b); }

int64_t DefaultTileK(DType dtype) {
  return static_cast<int64_t>(kKStepBytesPerRow / BytesPerElement(dtype));
}

// A and B bytes of one K step that `resident` concurrently running tiles read, once each, when
// the tiles are rasterised in near-square blocks (Origami's workgroup mapping WGM ≈ sqrt of the
// CUs per XCD, hardware_models.md section 1.6): r·|A| + c·|B| for an r × c block. Resident tiles
// beyond one problem's grid belong to other batch entries and share nothing.
double UniqueBytes(double resident, double grid_m, double grid_n, double a, double b) {
  const double grid = grid_m * grid_n;
  if (resident >= grid) return resident / grid * (grid_m * a + grid_n * b);
  double rows = std::min(grid_m, std::ceil(std::sqrt(resident)));
  const double cols = std::min(grid_n, std::ceil(resident / rows));
  rows = std::min(grid_m, std::ceil(resident / cols));
  return std::min(rows * a + cols * b, resident * (a + b));
}

// Bytes that miss a cache of `capacity` bytes: the unique bytes when the live working set
// (kLiveKSteps K slices) fits, degrading towards all requested bytes as it overflows (Origami's
// residency factor min(capacity / working set, 1)).
double MissBytes(double requested, double unique, double capacity) {
  const double residency = std::min(1.0, capacity / (kLiveKSteps * unique));
  return unique + (requested - unique) * (1.0 - residency);
}

}  // namespace

TileGemmBackend::TileGemmBackend(const HardwareProfile& hw)
    : gpu_name_(hw.gpu.name),
      units_(static_cast<double>(std::max<int64_t>(hw.gpu.compute_units, 1))),
      clock_hz_(gpu_model::RunningClock(hw.gpu).value()),
      hbm_bytes_per_s_(hw.gpu.hbm_bandwidth.value() * hw.gpu.hbm_efficiency),
      bandwidth_reach_(gpu_model::BandwidthReachable(hw.gpu)),
      hbm_latency_(gpu_model::HbmLatency(hw.gpu)),
      launch_overhead_(hw.gpu.kernel_launch_overhead) {
  const GpuSpec& gpu = hw.gpu;
  const bool amd = gpu.vendor == Vendor::kAmd;
  flops_per_clock_per_cu_ = gpu.matrix_flops_per_clock_per_cu;
  for (DType dtype : kAllDTypes) {
    gemm_efficiency_[static_cast<size_t>(DTypeIndex(dtype))] = gpu.GemmEfficiency(dtype);
  }
  fp8_block_scaled_ratio_ = gpu.GemmEfficiency(DType::kFp8, true) / gpu.GemmEfficiency(DType::kFp8);
  // FP32 GEMMs without an FP32 matrix path run on the vector units (SIMT SGEMM on NVIDIA).
  double& fp32 = flops_per_clock_per_cu_[static_cast<size_t>(DTypeIndex(DType::kFp32))];
  if (fp32 <= 0) fp32 = gpu.vector_fp32_flops_per_clock_per_cu;

  l2_domains_ = amd ? static_cast<double>(std::max<int64_t>(gpu.num_xcds, 1)) : 1.0;
  l2_bytes_per_domain_ = gpu.l2_cache.value() / l2_domains_;
  l2_bytes_per_s_ = gpu_model::L2BytesPerClock(gpu) * clock_hz_;
  if (gpu.last_level_cache.value() > 0) {
    mall_bytes_ = gpu.last_level_cache.value();
    mall_bytes_per_s_ = gpu.hbm_bandwidth.value() * gpu_model::kMallToHbmBandwidthRatio;
  }

  const std::span<const GemmTile> tiles =
      amd ? std::span<const GemmTile>(kAmdTiles) : std::span<const GemmTile>(kNvidiaTiles);
  const double stages = amd ? kAmdLdsStages : kNvidiaSmemStages;
  for (const GemmTile& t : tiles) {
    const double bytes = stages * static_cast<double>(t.m + t.n) * kKStepBytesPerRow;
    if (bytes > gpu.lds_per_cu.value() && gpu.lds_per_cu.value() > 0) continue;
    if (num_candidates_ < candidates_.size()) candidates_[num_candidates_++] = t;
  }
  // The smallest tile always remains, whatever the LDS figure.
  if (num_candidates_ == 0) candidates_[num_candidates_++] = tiles.back();
}

absl::Status TileGemmBackend::Validate(const GemmShape& shape) const {
  if (absl::Status status = shape_checks::ValidateGemmShape(shape); !status.ok()) return status;
  return shape_checks::CheckMatrixRate(gpu_name_, shape.dtype, MatrixFlopsPerClock(shape.dtype));
}

// One configuration, in the structure of Origami's gemm.cpp (hardware_models.md 1.4-1.8):
//   tiles = ceil(M/MT_M)·ceil(N/MT_N)·batch, workgroups = tiles·split, waves = ceil(wgs/units);
//   t_tile = t_mem (prologue) + k_iters·max(t_mem, t_comp) + t_epilogue + 1500 cycles;
//   time = waves·t_tile + launch, the last partial wave costing a full tile time.
// Padding of edge tiles is counted once: every tile runs full MT_M × MT_N × MT_K MFMAs, so
// t_comp over the padded grid equals Origami's useful compute × 1/utilization; memory terms
// count only in-bounds rows (bounded buffer loads fetch no out-of-bounds data).
TileGemmBackend::Evaluation TileGemmBackend::Evaluate(const GemmShape& shape, int64_t tile_m,
                                                      int64_t tile_n, int64_t tile_k,
                                                      int64_t split_k) const {
  const double m = static_cast<double>(shape.m);
  const double n = static_cast<double>(shape.n);
  const double k = static_cast<double>(shape.k);
  const double tm = static_cast<double>(tile_m);
  const double tn = static_cast<double>(tile_n);
  const double tk = static_cast<double>(tile_k);
  const double split = static_cast<double>(split_k);
  const double in_bytes = BytesPerElement(shape.dtype);
  const double out_bytes = gpu_model::OutputBytesPerElement(shape.dtype);

  const double grid_m = CeilDiv(m, tm);
  const double grid_n = CeilDiv(n, tn);
  const double tiles = grid_m * grid_n * static_cast<double>(shape.batch);
  const double workgroups = tiles * split;
  const double active = std::min(workgroups, units_);
  const double waves = CeilDiv(workgroups, units_);
  const double k_iters = CeilDiv(CeilDiv(k, split), tk);

  // Compute per K step at the sustained clock; the main-loop efficiency is the one measured in
  // this dtype's precision class (FP8/FP4 have their own where the profile gives one).
  const double rate =
      MatrixFlopsPerClock(shape.dtype) * clock_hz_ * GemmEfficiency(shape);
  const Seconds t_comp(2.0 * tm * tn * tk / rate);

  // Memory per K step through L2 -> (MALL) -> HBM, all active workgroups together.
  const double a_step = std::min(m, tm) * tk * in_bytes;
  const double b_step = std::min(n, tn) * tk * in_bytes;
  const double requested = active * (a_step + b_step);
  const double bw_frac = bandwidth_reach_.Fraction(active);
  const double domains_used = std::min(l2_domains_, active);
  const double per_domain = std::ceil(active / domains_used);
  // Workgroups of different split-K slices read disjoint K ranges: reuse is among the tiles of
  // one slice only.
  const double per_domain_reuse = std::max(1.0, per_domain / split);
  const double domain_unique =
      split * UniqueBytes(per_domain_reuse, grid_m, grid_n, a_step, b_step);
  const double below_l2 =
      domains_used * MissBytes(per_domain * (a_step + b_step), domain_unique, l2_bytes_per_domain_);
  double hbm_bytes = below_l2;
  Seconds t_mall(0);
  if (mall_bytes_per_s_ > 0) {
    const double gpu_unique =
        split * UniqueBytes(std::max(1.0, active / split), grid_m, grid_n, a_step, b_step);
    hbm_bytes = std::min(below_l2, MissBytes(requested, gpu_unique, mall_bytes_));
    t_mall = Seconds(below_l2 / (mall_bytes_per_s_ * bw_frac));
  }
  const Seconds t_hbm = Seconds(hbm_bytes / (hbm_bytes_per_s_ * bw_frac)) + hbm_latency_;
  // Origami divides the L2 bandwidth by the active fraction of CUs: a fixed per-CU share.
  const Seconds t_l2 = l2_bytes_per_s_ > 0
                           ? Seconds(requested / (l2_bytes_per_s_ * active / units_))
                           : Seconds(0);
  const Seconds t_mem = std::max({t_l2, t_mall, t_hbm});

  const bool compute_bound = t_comp >= t_mem;
  const Seconds t_main = std::max(t_comp, t_mem) * k_iters;
  const Seconds t_main_scaled = compute_bound ? t_comp * k_iters : Seconds(0);

  // Epilogue: D stores (FP32 partials under split-K) through the write-back L2 where modelled
  // (Origami: store_BW = mem1 · bw_frac for cached D), else to HBM; split-K adds the tree fix-up
  // (partials read and reduced by one workgroup per tile) and its flag polls and barriers.
  const double store_bw = l2_bytes_per_s_ > 0 ? l2_bytes_per_s_ * active / units_
                                              : hbm_bytes_per_s_ * bw_frac;
  const double tile_elems = std::min(m, tm) * std::min(n, tn);
  Seconds t_epilogue(active * tile_elems * (split_k > 1 ? 4.0 : out_bytes) / store_bw);
  Seconds t_epilogue_scaled(0);
  if (split_k > 1) {
    const double fixup_bytes =
        std::min(tiles, units_) * tile_elems * (4.0 * (split - 1.0) + out_bytes);
    const Seconds fixup_sync(kSplitKFixupCycles / clock_hz_);
    t_epilogue += Seconds(fixup_bytes / (hbm_bytes_per_s_ * bw_frac)) + fixup_sync;
    t_epilogue_scaled = fixup_sync;
  }
  const Seconds t_fixed(kTileFixedOverheadCycles / clock_hz_);

  const Seconds t_tile = t_mem + t_main + t_epilogue + t_fixed;
  const Seconds t_tile_scaled = t_main_scaled + t_epilogue_scaled + t_fixed;
  return Evaluation{.time = t_tile * waves + launch_overhead_,
                    .clock_scaled_time = t_tile_scaled * waves,
                    .compute_bound = compute_bound,
                    .waves = static_cast<int64_t>(waves)};
}

// Final clamp by the roofline (hardware_models.md 1.10 step 6): never faster than the measured
// matrix rate or the achievable HBM bandwidth allow.
GemmEstimate TileGemmBackend::Finish(const GemmShape& shape, const Evaluation& best,
                                     const GemmTile& tile) const {
  GemmEstimate estimate{.time = best.time,
                        .clock_scaled_time = best.clock_scaled_time,
                        .bound = best.compute_bound ? Bound::kCompute : Bound::kMemory,
                        .tile_m = tile.m,
                        .tile_n = tile.n,
                        .tile_k = tile.k,
                        .waves = best.waves};
  const double batch = static_cast<double>(shape.batch);
  const double m = static_cast<double>(shape.m);
  const double n = static_cast<double>(shape.n);
  const double k = static_cast<double>(shape.k);
  const Seconds compute_floor(GemmFlops(shape).value() /
                              (MatrixFlopsPerClock(shape.dtype) * units_ * clock_hz_ *
                               GemmEfficiency(shape)));
  const Seconds memory_floor(batch *
                             ((m * k + k * n) * BytesPerElement(shape.dtype) +
                              m * n * gpu_model::OutputBytesPerElement(shape.dtype)) /
                             hbm_bytes_per_s_);
  const Seconds floor = std::max(compute_floor, memory_floor) + launch_overhead_;
  if (floor > estimate.time) {
    estimate.time = floor;
    const bool compute = compute_floor >= memory_floor;
    estimate.bound = compute ? Bound::kCompute : Bound::kMemory;
    estimate.clock_scaled_time = compute ? compute_floor : Seconds(0);
  }
  // Each kernel of the batch beyond the first launches on its own (GemmShape::kernels).
  const Seconds launches = launch_overhead_ * static_cast<double>(shape.kernels);
  estimate.time += launches - launch_overhead_;
  if (launches * 2.0 >= estimate.time) estimate.bound = Bound::kLatency;
  return estimate;
}

absl::StatusOr<GemmEstimate> TileGemmBackend::Estimate(const GemmShape& shape) const {
  if (std::optional<GemmEstimate> hit = cache_.Find(shape)) return *hit;
  if (absl::Status status = Validate(shape); !status.ok()) return status;

  const int64_t tile_k = DefaultTileK(shape.dtype);
  const double k_steps = std::ceil(static_cast<double>(shape.k) / static_cast<double>(tile_k));
  Evaluation best;
  best.time = Seconds(INFINITY);
  GemmTile best_tile;
  for (const GemmTile& candidate : candidate_tiles()) {
    const double tiles = std::ceil(static_cast<double>(shape.m) / static_cast<double>(candidate.m)) *
                         std::ceil(static_cast<double>(shape.n) / static_cast<double>(candidate.n)) *
                         static_cast<double>(shape.batch);
    // Split-K (Origami streamk.cpp / hipBLASLt GSU) only to fill CUs a small grid leaves idle.
    for (int64_t split = 1; split <= kMaxSplitK; split *= 2) {
      if (split > 1 && (tiles * static_cast<double>(split) > units_ ||
                        k_steps < static_cast<double>(kMinKStepsPerSplit * split))) {
        break;
      }
      const Evaluation e = Evaluate(shape, candidate.m, candidate.n, tile_k, split);
      if (e.time < best.time * (1.0 - 1e-9)) {
        best = e;
        best_tile = GemmTile{.m = candidate.m, .n = candidate.n, .k = tile_k, .split_k = split};
      }
    }
  }
  const GemmEstimate estimate = Finish(shape, best, best_tile);
  cache_.Insert(shape, estimate);
  return estimate;
}

absl::StatusOr<GemmEstimate> TileGemmBackend::EstimateWithTile(const GemmShape& shape,
                                                               const GemmTile& tile) const {
  if (absl::Status status = Validate(shape); !status.ok()) return status;
  if (tile.m <= 0 || tile.n <= 0 || tile.k < 0 || tile.split_k < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GEMM tile must have positive m and n, k >= 0 and split_k >= 1; got %dx%dx%d split %d",
        tile.m, tile.n, tile.k, tile.split_k));
  }
  GemmTile resolved = tile;
  if (resolved.k == 0) resolved.k = DefaultTileK(shape.dtype);
  return Finish(shape, Evaluate(shape, resolved.m, resolved.n, resolved.k, resolved.split_k),
                resolved);
}

std::unique_ptr<GemmBackend> MakeTileGemmBackend(const HardwareProfile& hw) {
  return std::make_unique<TileGemmBackend>(hw);
}

}  // namespace projector
