#include "backends/simulate/tile_attention_backend.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "backends/simulate/shape_checks.h"

namespace projector {

namespace {

using gpu_model::kTileFixedOverheadCycles;

// Flash-attention backward runs three kernels: preprocess (dPsum = rowsum(dO∘O), zeroing the
// FP32 dQ accumulator), the main kernel, and the dQ conversion (Dao-AILab flash-attention
// flash_bwd_launch_template.h, FA2 and FA3).
constexpr double kBackwardLaunches = 3;
// Bytes of the FP32 dQ accumulator element (atomic adds in FP32).
constexpr double kAccumulatorBytes = 4;
// Per-row softmax statistics (LSE forward; LSE and dPsum backward) in FP32.
constexpr double kRowStatBytes = 4;
// Beyond this many waves the causal wave sum samples every s-th wave (lengths are monotone, so
// the sampled sum is a Riemann sum of a monotone sequence); keeps a cold estimate in microseconds.
constexpr int64_t kMaxWavesSummed = 1024;

AttentionKernelFamily FamilyOf(const GpuSpec& gpu) {
  if (gpu.vendor == Vendor::kAmd) return AttentionKernelFamily::kAmdPingPong;
  if (gpu_model::ArchStartsWith(gpu, "sm_8")) return AttentionKernelFamily::kFa2;
  if (gpu_model::ArchStartsWith(gpu, "sm_9")) return AttentionKernelFamily::kFa3;
  return AttentionKernelFamily::kFa4;
}

double CeilDiv(double a, double b) { return std::ceil(a / b); }

// Items of one tile index exist `copies` times (batch × heads); tile ranks are ordered longest
// first (the FA3/FA4 causal scheduler and AMD's longest-first dispatch). Wave w starts item
// w·units; every wave lasts as long as its first (longest) item; non-causal items are equal.
struct WaveSum {
  Seconds time;
  Seconds scaled;
  int64_t waves = 0;
};
template <typename IterationsOfRank>
WaveSum SumWaves(double num_tiles, double copies, double units, IterationsOfRank iterations,
                 Seconds base, Seconds base_scaled, Seconds per_iter, Seconds per_iter_scaled,
                 bool uniform) {
  const double items = num_tiles * copies;
  const double waves = CeilDiv(items, units);
  WaveSum sum;
  sum.waves = static_cast<int64_t>(waves);
  if (uniform) {
    const double iters = iterations(0.0);
    sum.time = (base + per_iter * iters) * waves;
    sum.scaled = (base_scaled + per_iter_scaled * iters) * waves;
    return sum;
  }
  const double stride = std::max(1.0, std::ceil(waves / static_cast<double>(kMaxWavesSummed)));
  for (double w = 0; w < waves; w += stride) {
    const double count = std::min(stride, waves - w);
    const double rank = std::floor(w * units / copies);
    const double iters = iterations(rank);
    sum.time += (base + per_iter * iters) * count;
    sum.scaled += (base_scaled + per_iter_scaled * iters) * count;
  }
  return sum;
}

}  // namespace

TileAttentionBackend::TileAttentionBackend(const HardwareProfile& hw)
    : gpu_name_(hw.gpu.name),
      family_(FamilyOf(hw.gpu)),
      units_(static_cast<double>(std::max<int64_t>(hw.gpu.compute_units, 1))),
      clock_hz_(gpu_model::RunningClock(hw.gpu).value()),
      flops_per_clock_per_cu_(hw.gpu.matrix_flops_per_clock_per_cu),
      exp_per_clock_per_cu_(hw.gpu.exp_per_clock_per_cu),
      fwd_efficiency_(hw.gpu.attention_fwd_efficiency),
      bwd_efficiency_(hw.gpu.attention_bwd_efficiency),
      hbm_bytes_per_s_(hw.gpu.hbm_bandwidth.value() * hw.gpu.hbm_efficiency),
      l2_bytes_per_s_(gpu_model::L2BytesPerClock(hw.gpu) * clock_hz_),
      bandwidth_reach_(gpu_model::BandwidthReachable(hw.gpu)),
      hbm_latency_(gpu_model::HbmLatency(hw.gpu)),
      launch_overhead_(hw.gpu.kernel_launch_overhead) {}

// Tile tables (hardware_models.md section 2.2). D = max(qk, v) head dim.
AttentionTile TileAttentionBackend::TileFor(const AttentionShape& shape,
                                            AttentionPass pass) const {
  const int64_t d = std::max(shape.qk_head_dim, shape.v_head_dim);
  const bool fwd = pass == AttentionPass::kForward;
  switch (family_) {
    case AttentionKernelFamily::kFa2:
      // FA2 sm80: fwd tile_size_fwd_sm8x (hdim64 128×112, hdim128 128×64, hdim256 128×96);
      // bwd Flash_bwd_kernel_traits (hdim128 64×128; 128×128 at hdim64; 64×64 at hdim256).
      if (fwd) return d <= 64 ? AttentionTile{128, 112} : d <= 128 ? AttentionTile{128, 64}
                                                                    : AttentionTile{128, 96};
      return d <= 64 ? AttentionTile{128, 128} : d <= 128 ? AttentionTile{64, 128}
                                                          : AttentionTile{64, 64};
    case AttentionKernelFamily::kFa3:
      // FA3 sm90 tile_size_fwd_sm90: hdim64 192×192 (causal 192×128), hdim128 128×176 (causal
      // 128×128, FP8 128×224), hdim256 128×80; hdim 192 (MLA) taken between, 128×112.
      // bwd run_mha_bwd_hdim128: 80×128 (causal 64×128); hdim64 128×128; larger 64×64.
      if (fwd) {
        if (d <= 64) return shape.causal ? AttentionTile{192, 128} : AttentionTile{192, 192};
        if (d <= 128) {
          if (shape.dtype == DType::kFp8) return AttentionTile{128, 224};
          return shape.causal ? AttentionTile{128, 128} : AttentionTile{128, 176};
        }
        return d <= 192 ? AttentionTile{128, 112} : AttentionTile{128, 80};
      }
      if (d <= 64) return AttentionTile{128, 128};
      if (d <= 128) return shape.causal ? AttentionTile{64, 128} : AttentionTile{80, 128};
      return AttentionTile{64, 64};
    case AttentionKernelFamily::kFa4:
      // FA4 sm100 (flash_fwd_sm100): two 128-row Q tiles per CTA (q_stage 2) over 128-row KV
      // tiles; bwd 128×128 (flash_bwd_sm100).
      return fwd ? AttentionTile{256, 128} : AttentionTile{128, 128};
    case AttentionKernelFamily::kAmdPingPong:
      // AMD gfx942/gfx950: 8-wave ping-pong, 2 groups × 64 Q rows over 64-row KV tiles
      // (HipKittens kernels/attn/gqa README; AITER/CK fwd); bwd CK tile fmha_bwd hdim128 64×128.
      return fwd ? AttentionTile{128, 64} : AttentionTile{64, 128};
  }
  return AttentionTile{128, 64};
}

AttentionEstimate TileAttentionBackend::Compute(const AttentionShape& shape,
                                                AttentionPass pass) const {
  const bool fwd = pass == AttentionPass::kForward;
  const AttentionTile tile = TileFor(shape, pass);
  const double bm = static_cast<double>(tile.block_m);
  const double bn = static_cast<double>(tile.block_n);
  const double dqk = static_cast<double>(shape.qk_head_dim);
  const double dv = static_cast<double>(shape.v_head_dim);
  const double sq = static_cast<double>(shape.seq_q);
  const double skv = static_cast<double>(shape.seq_kv);
  const double eb = BytesPerElement(shape.dtype);
  const double group = static_cast<double>(shape.num_q_heads / shape.num_kv_heads);
  const double copies = static_cast<double>(shape.batch * shape.num_q_heads);
  const double n_q = CeilDiv(sq, bm);
  const double n_kv = CeilDiv(skv, bn);
  // Causal masks are aligned bottom-right (FA2 >= 2.1): query row r sees keys <= r + skv - sq.
  const double offset = skv - sq;

  // Forward items are Q tiles, looping over KV tiles; backward items are KV tiles (per query
  // head), looping over Q tiles (FA2/FA3 bwd parallelise over KV blocks).
  const double num_tiles = fwd ? n_q : n_kv;
  const double full_iters = fwd ? n_kv : n_q;
  const double items = num_tiles * copies;
  const double active = std::min(items, units_);
  const double bw_frac = bandwidth_reach_.Fraction(active);
  const double hbm = hbm_bytes_per_s_ * bw_frac;

  // MMA per iteration at the sustained clock and the measured main-loop efficiency:
  // forward QKᵀ + PV = 2·bm·bn·(dqk + dv); backward S = QKᵀ, dP = dO·Vᵀ, dV += Pᵀ·dO,
  // dK += dSᵀ·Q, dQ += dS·K = 2·bm·bn·(3·dqk + 2·dv) (flash-attention FLOP convention).
  const double mma_flops = 2.0 * bm * bn * (fwd ? dqk + dv : 3.0 * dqk + 2.0 * dv);
  const double rate = flops_per_clock_per_cu_[static_cast<size_t>(DTypeIndex(shape.dtype))] *
                      clock_hz_ * (fwd ? fwd_efficiency_ : bwd_efficiency_);
  const Seconds t_mma(mma_flops / rate);
  // One exp per score element (P = exp(S - m) forward, recomputed backward); FA3 paper: the
  // special-function units, not the FMAs, limit softmax.
  const Seconds t_exp(bm * bn / (exp_per_clock_per_cu_ * clock_hz_));

  // Streamed operand per iteration: K, V forward; Q, dO plus LSE/dPsum backward. Items are
  // dispatched head-major (tile index fastest; causal kernels reverse it within a head for
  // longest-first, FA3 additionally swizzles heads into L2-sized sections), so concurrent items
  // of one head, and of one GQA group forward, share their stream in L2.
  const double stream_bytes =
      fwd ? bn * (dqk + dv) * eb : bm * (dqk + dv) * eb + 2 * kRowStatBytes * bm;
  const double sharing = fwd ? num_tiles * group : num_tiles;
  const double streams_total = static_cast<double>(shape.batch) *
                               static_cast<double>(fwd ? shape.num_kv_heads : shape.num_q_heads);
  const double streams = std::min(streams_total, std::max(1.0, CeilDiv(active, sharing)));
  Seconds t_load(streams * stream_bytes / hbm);
  // dQ accumulation (backward): FP32 atomic adds of bm × dqk per iteration, executed in L2
  // (read-modify-write) where L2 is modelled; on Hopper/Blackwell a dedicated warpgroup issues
  // TMA reduce-adds that overlap the MMAs (FA3), inside the measured efficiency.
  Seconds t_dq(0);
  if (l2_bytes_per_s_ > 0) {
    const double per_cu_l2 = l2_bytes_per_s_ / units_;
    t_load = std::max(t_load, Seconds(stream_bytes / per_cu_l2));
    if (!fwd) t_dq = Seconds(2.0 * bm * dqk * kAccumulatorBytes / per_cu_l2);
  }

  Seconds t_iter;
  bool compute_bound = true;
  if (family_ == AttentionKernelFamily::kFa2) {
    // FA2: softmax and the dQ atomics run on the MMA warps; cp.async prefetch hides loads.
    const Seconds serial = t_mma + t_exp + t_dq;
    compute_bound = serial >= t_load;
    t_iter = std::max(serial, t_load);
  } else {
    // FA3/FA4/AMD ping-pong: one warpgroup's softmax overlaps the other's GEMMs.
    const Seconds compute = std::max(t_mma, t_exp);
    compute_bound = compute >= std::max(t_load, t_dq);
    t_iter = std::max({compute, t_load, t_dq});
  }
  const Seconds t_iter_scaled = compute_bound ? t_iter : Seconds(0);

  // Per item: load the resident tile (Q forward; K, V backward) with the HBM latency, write the
  // result (O and LSE forward; dK, dV backward), and Origami's fixed per-tile overhead.
  const double resident_bytes = fwd ? bm * dqk * eb : bn * (dqk + dv) * eb;
  const double result_bytes = fwd ? bm * dv * eb + kRowStatBytes * bm : bn * (dqk + dv) * eb;
  const Seconds fixed(kTileFixedOverheadCycles / clock_hz_);
  const Seconds base = Seconds(active * (resident_bytes + result_bytes) / hbm) + hbm_latency_ + fixed;
  const Seconds base_scaled = fixed;

  // Iterations of the tile of longest-first rank r.
  const bool causal = shape.causal;
  auto iterations = [&](double rank) {
    if (!causal) return full_iters;
    if (fwd) {
      const double q_tile = n_q - 1.0 - rank;  // longest Q tile is the last one
      return std::clamp(CeilDiv((q_tile + 1.0) * bm + offset, bn), 0.0, n_kv);
    }
    const double kv_tile = rank;  // longest KV tile is the first one
    const double first_q_tile = std::max(0.0, std::floor((kv_tile * bn - offset) / bm));
    return std::max(0.0, n_q - first_q_tile);
  };
  const WaveSum waves = SumWaves(num_tiles, copies, units_, iterations, base, base_scaled,
                                 t_iter, t_iter_scaled, !causal);

  AttentionEstimate estimate;
  estimate.time = waves.time + launch_overhead_;
  estimate.clock_scaled_time = waves.scaled;
  estimate.waves = waves.waves;
  estimate.tile_q = tile.block_m;
  estimate.tile_kv = tile.block_n;
  estimate.bound = compute_bound ? Bound::kCompute : Bound::kMemory;
  if (!fwd) {
    // Pre/post kernels: read O and dO, write dPsum and zero the FP32 dQ accumulator; then read
    // the accumulator and write dQ in the input dtype.
    const double rows = copies * sq;
    const double pre_post_bytes = rows * (2.0 * dv * eb + kRowStatBytes + kAccumulatorBytes * dqk) +
                                  rows * dqk * (kAccumulatorBytes + eb);
    estimate.time += Seconds(pre_post_bytes / hbm_bytes_per_s_) +
                     launch_overhead_ * (kBackwardLaunches - 1.0);
  }
  if (launch_overhead_ * 2.0 >= estimate.time) estimate.bound = Bound::kLatency;
  return estimate;
}

absl::StatusOr<AttentionEstimate> TileAttentionBackend::Estimate(const AttentionShape& shape,
                                                                 AttentionPass pass) const {
  const std::pair<AttentionShape, AttentionPass> key(shape, pass);
  if (std::optional<AttentionEstimate> hit = cache_.Find(key)) return *hit;
  if (absl::Status s = shape_checks::ValidateAttentionShape(shape); !s.ok()) return s;
  if (absl::Status s = shape_checks::CheckMatrixRate(
          gpu_name_, shape.dtype,
          flops_per_clock_per_cu_[static_cast<size_t>(DTypeIndex(shape.dtype))]);
      !s.ok()) {
    return s;
  }
  const AttentionEstimate estimate = Compute(shape, pass);
  cache_.Insert(key, estimate);
  return estimate;
}

std::unique_ptr<AttentionBackend> MakeTileAttentionBackend(const HardwareProfile& hw) {
  return std::make_unique<TileAttentionBackend>(hw);
}

}  // namespace projector
