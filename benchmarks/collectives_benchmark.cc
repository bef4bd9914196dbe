// Speed of one collective estimate of the hierarchical backend, cold (memo miss: placement and
// every candidate algorithm of the tuner) and cached (memo hit). Budget: < 1 us per estimate.
#include <cstdint>
#include <memory>

#include "backends/collective_backend.h"
#include "backends/simulate/hierarchical_collective_backend.h"
#include "benchmark/benchmark.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"

namespace projector {
namespace {

// MI300X-like 8-GPU full-mesh node with 8x 400G NICs (figures as in
// tests/testing/network_hardware.h).
HardwareProfile BenchProfile() {
  HardwareProfile hw;
  hw.name = "mi300x-like";
  hw.gpus_per_node = 8;
  hw.gpu.kernel_launch_overhead = Microseconds(2.8);
  hw.scale_up.topology = FabricTopology::kFullMesh;
  hw.scale_up.per_link_bandwidth = GigabytesPerSecond(64);
  hw.scale_up.links_per_gpu = 7;
  hw.scale_up.per_gpu_bandwidth = GigabytesPerSecond(448);
  hw.scale_up.latency = Microseconds(0.45);
  hw.scale_up.allreduce_efficiency = 0.7;
  hw.scale_up.alltoall_efficiency = 0.7;
  hw.scale_up.alltoall_per_peer_overhead = Microseconds(28);
  hw.scale_out.nics_per_node = 8;
  hw.scale_out.per_nic_bandwidth = GigabitsPerSecond(400);
  hw.scale_out.latency = Microseconds(2);
  hw.scale_out.efficiency = 0.73;
  hw.scale_out.alltoall_per_peer_overhead = Microseconds(0.45);
  return hw;
}

// Cold: a new message size every iteration, so every call misses the memo table.
void BM_Cold(benchmark::State& state, CollectiveKind kind) {
  auto backend = MakeHierarchicalCollectiveBackend(BenchProfile());
  const int64_t size = state.range(0);
  double bytes = 1e6;
  for (auto _ : state) {
    bytes += 1.0;
    auto e = backend->Estimate({.kind = kind, .bytes = Bytes(bytes), .group = {size, 1}});
    benchmark::DoNotOptimize(e);
  }
}

void BM_Cached(benchmark::State& state, CollectiveKind kind) {
  auto backend = MakeHierarchicalCollectiveBackend(BenchProfile());
  const CollectiveOp op{.kind = kind, .bytes = Mebibytes(64), .group = {state.range(0), 1}};
  benchmark::DoNotOptimize(backend->Estimate(op));
  for (auto _ : state) {
    auto e = backend->Estimate(op);
    benchmark::DoNotOptimize(e);
  }
}

void BM_Collective_AllReduce_Cold(benchmark::State& s) { BM_Cold(s, CollectiveKind::kAllReduce); }
void BM_Collective_AllReduce_Cached(benchmark::State& s) {
  BM_Cached(s, CollectiveKind::kAllReduce);
}
void BM_Collective_AllGather_Cold(benchmark::State& s) { BM_Cold(s, CollectiveKind::kAllGather); }
void BM_Collective_AllToAll_Cold(benchmark::State& s) { BM_Cold(s, CollectiveKind::kAllToAll); }
void BM_Collective_AllToAll_Cached(benchmark::State& s) { BM_Cached(s, CollectiveKind::kAllToAll); }

BENCHMARK(BM_Collective_AllReduce_Cold)->Arg(8)->Arg(64);
BENCHMARK(BM_Collective_AllReduce_Cached)->Arg(8)->Arg(64);
BENCHMARK(BM_Collective_AllGather_Cold)->Arg(64);
BENCHMARK(BM_Collective_AllToAll_Cold)->Arg(8)->Arg(64);
BENCHMARK(BM_Collective_AllToAll_Cached)->Arg(8)->Arg(64);
BENCHMARK(BM_Collective_AllReduce_Cached)->Arg(64)->Threads(2);

}  // namespace
}  // namespace projector
