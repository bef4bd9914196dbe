// Speed of the simulate compute backends: a cold estimate (cache miss, the full tile search)
// and a memoised one, for the tile GEMM, tile attention and roofline memory backends. Budgets:
// cached < 100 ns, cold < 20 µs per estimate.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/simulate/roofline_memory_backend.h"
#include "backends/simulate/tile_attention_backend.h"
#include "backends/simulate/tile_gemm_backend.h"
#include "benchmark/benchmark.h"
#include "hw_profiles/hardware_profile.h"

namespace projector {
namespace {

// Library profiles by benchmark argument: 0 = MI300X (7 AMD tiles, MALL level), 1 = H100.
const HardwareProfile* Profile(benchmark::State& state) {
  static const absl::StatusOr<HardwareProfile> kMi300x = ResolveHardwareProfile("mi300x");
  static const absl::StatusOr<HardwareProfile> kH100 = ResolveHardwareProfile("h100-sxm");
  const absl::StatusOr<HardwareProfile>& hw = state.range(0) == 0 ? kMi300x : kH100;
  if (!hw.ok()) {
    state.SkipWithError(std::string(hw.status().message()).c_str());
    return nullptr;
  }
  return &*hw;
}

// Every iteration a shape never seen before, so each Estimate runs the whole candidate search
// (the cache insert included, as in a real cold call).
void BM_TileGemm_Cold(benchmark::State& state) {
  const HardwareProfile* hw = Profile(state);
  if (hw == nullptr) return;
  TileGemmBackend backend(*hw);
  int64_t i = 0;
  for (auto _ : state) {
    const GemmShape shape{.m = 128 + i % 8192, .n = 1024 + i / 8192, .k = 4096};
    benchmark::DoNotOptimize(backend.Estimate(shape));
    ++i;
  }
}
BENCHMARK(BM_TileGemm_Cold)->Arg(0)->Arg(1);

std::vector<GemmShape> WarmGemmShapes() {
  std::vector<GemmShape> shapes;
  for (int64_t i = 0; i < 64; ++i) {
    shapes.push_back({.m = 8192, .n = 1024 + 128 * i, .k = 8192 - 64 * i});
  }
  return shapes;
}

void BM_TileGemm_Cached(benchmark::State& state) {
  const HardwareProfile* hw = Profile(state);
  if (hw == nullptr) return;
  TileGemmBackend backend(*hw);
  const std::vector<GemmShape> shapes = WarmGemmShapes();
  for (const GemmShape& s : shapes) benchmark::DoNotOptimize(backend.Estimate(s));
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(backend.Estimate(shapes[i++ & 63]));
  }
}
BENCHMARK(BM_TileGemm_Cached)->Arg(0)->Arg(1);

// Causal shapes take the longest-first wave sum, the slowest path of the attention model.
void BM_TileAttention_Cold(benchmark::State& state) {
  const HardwareProfile* hw = Profile(state);
  if (hw == nullptr) return;
  TileAttentionBackend backend(*hw);
  int64_t i = 0;
  for (auto _ : state) {
    const int64_t seq = 1024 + i;
    const AttentionShape shape{.batch = 2, .num_q_heads = 64, .num_kv_heads = 8, .seq_q = seq,
                               .seq_kv = seq, .qk_head_dim = 128, .v_head_dim = 128,
                               .causal = true};
    benchmark::DoNotOptimize(backend.Estimate(
        shape, (i & 1) != 0 ? AttentionPass::kBackward : AttentionPass::kForward));
    ++i;
  }
}
BENCHMARK(BM_TileAttention_Cold)->Arg(0)->Arg(1);

void BM_TileAttention_Cached(benchmark::State& state) {
  const HardwareProfile* hw = Profile(state);
  if (hw == nullptr) return;
  TileAttentionBackend backend(*hw);
  std::vector<AttentionShape> shapes;
  for (int64_t i = 0; i < 64; ++i) {
    shapes.push_back({.batch = 1 + i % 4, .num_q_heads = 64, .num_kv_heads = 8,
                      .seq_q = 4096 + 256 * i, .seq_kv = 4096 + 256 * i, .qk_head_dim = 128,
                      .v_head_dim = 128, .causal = true});
  }
  for (const AttentionShape& s : shapes) {
    benchmark::DoNotOptimize(backend.Estimate(s, AttentionPass::kForward));
  }
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(backend.Estimate(shapes[i++ & 63], AttentionPass::kForward));
  }
}
BENCHMARK(BM_TileAttention_Cached)->Arg(0)->Arg(1);

// Arg 0: a new op every iteration (cold); arg 1: one of 64 warm ops (cached).
void BM_RooflineMemory(benchmark::State& state) {
  static const absl::StatusOr<HardwareProfile> kHw = ResolveHardwareProfile("mi300x");
  if (!kHw.ok()) {
    state.SkipWithError(std::string(kHw.status().message()).c_str());
    return;
  }
  RooflineMemoryBackend backend(*kHw);
  const bool cached = state.range(0) == 1;
  int64_t i = 0;
  for (auto _ : state) {
    const int64_t key = cached ? (i & 63) : i;
    const MemoryOp op{.bytes = Bytes(1e6 + static_cast<double>(key)), .flops = Flops(1e6),
                      .launches = 1};
    benchmark::DoNotOptimize(backend.Estimate(op));
    ++i;
  }
}
BENCHMARK(BM_RooflineMemory)->Arg(0)->Arg(1);

}  // namespace
}  // namespace projector
