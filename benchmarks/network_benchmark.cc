// Speed of the network model (issue 24 point 8): a collective estimate on a 1,024-NPU
// three-dimensional network once its group is planned (warm: a new size each call), planning it
// (cold), and building a 16,384-NPU fat tree and routing every pair of one all-to-all group.
// Budgets: warm estimate < 10 us; fat tree build + all-pairs routes < 1 s.
#include <cstdint>
#include <numeric>
#include <vector>

#include "benchmark/benchmark.h"
#include "network/collectives.h"
#include "network/network_spec.h"
#include "network/topology.h"

namespace projector {
namespace {

NetworkDimension Dim(TopologyKind kind, int64_t npus, double gbps, double latency_ns) {
  NetworkDimension dim;
  dim.topology = kind;
  dim.npus = npus;
  dim.link_bandwidth = GigabytesPerSecond(gbps);
  dim.link_latency = Seconds(latency_ns * 1e-9);
  return dim;
}

// 1,024 NPUs: NVSwitch-like nodes of 8, a ring of 8 nodes, 16 such rings on a switch
// (ASTRA-sim's three-dimensional example shape, scaled).
NetworkSpec ThreeDimensional() {
  NetworkSpec spec;
  spec.name = "3d-1024";
  spec.dimensions = {Dim(TopologyKind::kSwitch, 8, 450, 250), Dim(TopologyKind::kRing, 8, 100, 500),
                     Dim(TopologyKind::kSwitch, 16, 50, 1000)};
  return spec;
}

std::vector<int64_t> AllRanks(int64_t n) {
  std::vector<int64_t> ranks(static_cast<size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

void BM_WarmAllReduce1024(benchmark::State& state) {
  const Topology topology(ThreeDimensional());
  NetworkCollectives collectives(topology);
  NetworkCollectiveRequest request{
      .kind = CollectiveKind::kAllReduce, .bytes = Bytes(1 << 20), .ranks = AllRanks(1024)};
  benchmark::DoNotOptimize(collectives.Estimate(request));  // plans the group once
  double bytes = 1 << 20;
  for (auto _ : state) {
    request.bytes = Bytes(bytes);
    benchmark::DoNotOptimize(collectives.Estimate(request));
    bytes = bytes < 8e9 ? bytes * 1.01 : 1 << 20;
  }
}
BENCHMARK(BM_WarmAllReduce1024);

void BM_PlanAllReduce1024(benchmark::State& state) {
  const Topology topology(ThreeDimensional());
  for (auto _ : state) {
    NetworkCollectives collectives(topology);
    benchmark::DoNotOptimize(collectives.Estimate(
        {.kind = CollectiveKind::kAllReduce, .bytes = Bytes(1 << 30), .ranks = AllRanks(1024)}));
  }
  state.SetLabel("ring, halving-doubling, tree and hierarchical planned on the flow model");
}
BENCHMARK(BM_PlanAllReduce1024)->Unit(benchmark::kMillisecond);

// 16,384 NPUs on one three-tier fat tree of radix 64, then every ordered pair of a 64-rank
// all-to-all group spread over the tree (stride 256) routed up and down.
void BM_FatTree16kBuildAndRouteA2aGroup(benchmark::State& state) {
  NetworkDimension tree = Dim(TopologyKind::kFatTree, 16384, 50, 1000);
  tree.radix = 64;
  NetworkSpec spec;
  spec.name = "fat-tree-16k";
  spec.dimensions = {tree};
  std::vector<int32_t> path;
  for (auto _ : state) {
    const Topology topology(spec);
    int64_t hops = 0;
    for (int64_t a = 0; a < 64; ++a) {
      for (int64_t b = 0; b < 64; ++b) {
        topology.Route(a * 256, b * 256, path);
        hops += static_cast<int64_t>(path.size());
      }
    }
    benchmark::DoNotOptimize(hops);
  }
}
BENCHMARK(BM_FatTree16kBuildAndRouteA2aGroup)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace projector
