// Hardware profiles built in code for the collective backend tests: MI300X-, A100-, H100- and
// B200-like nodes with the interconnect figures the shipped profiles carry, each with its source.
// Only the fields the collective model reads are filled.
#ifndef PROJECTOR_TESTS_TESTING_NETWORK_HARDWARE_H_
#define PROJECTOR_TESTS_TESTING_NETWORK_HARDWARE_H_

#include "core/units.h"
#include "hw_profiles/hardware_profile.h"

namespace projector::testing {

// 8 GPUs, 8x 400 Gb/s rail NICs (one per GPU), the usual MI300X / DGX H100 / P6-B200 layout
// (reference/hardware_models.md 3.2, ml-engineering network/README.md inter-node table).
// Latencies: Primus PR #560 pod_lat 2.0 us (reference/primus.md 6.1); launch 2.8 us (Primus
// kernel_launch_latency); per inter-node A2A peer 0.45 us (Primus a2a_peer_lat).
// Scale-out efficiency 0.73: 4 nodes x 8 B200 reach 377 GB/s all-reduce busbw, i.e. a per-GPU
// NIC rate of busbw·(k-1)/(n-1) = 377·3/31 = 36.5 GB/s = 73 % of 50 GB/s (hardware_models.md 4.3).
inline HardwareProfile EightGpuNodeWithRailNics() {
  HardwareProfile hw;
  hw.gpus_per_node = 8;
  hw.gpu.kernel_launch_overhead = Microseconds(2.8);
  hw.scale_out.name = "8x 400G";
  hw.scale_out.nics_per_node = 8;
  hw.scale_out.per_nic_bandwidth = GigabitsPerSecond(400);
  hw.scale_out.latency = Microseconds(2.0);
  hw.scale_out.efficiency = 0.73;
  hw.scale_out.alltoall_per_peer_overhead = Microseconds(0.45);
  return hw;
}

// MI300X: Infinity Fabric full mesh, 7 links x 64 GB/s uni per GPU = 448 GB/s (ROCm MI300 doc:
// "seven ... Infinity Fabric links ... fully connected 8-GPU system"; 128 GB/s bidir per link).
// rccl-tests 8 GPUs: 312.9 GB/s busbw at 4 GiB = 0.698 of 448 (ml-engineering network/README.md,
// hardware_models.md 4.3); node latency 0.45 us (Primus mi300x.yaml node_lat); 28 us per
// intra-node A2A peer (Primus preflight fit, seed 001 / primus.md 6.1). No public A2A busbw:
// the A2A efficiency takes the all-reduce fraction.
inline HardwareProfile Mi300xLike() {
  HardwareProfile hw = EightGpuNodeWithRailNics();
  hw.name = "mi300x-like";
  hw.scale_up.name = "Infinity Fabric";
  hw.scale_up.topology = FabricTopology::kFullMesh;
  hw.scale_up.per_link_bandwidth = GigabytesPerSecond(64);
  hw.scale_up.links_per_gpu = 7;
  hw.scale_up.per_gpu_bandwidth = GigabytesPerSecond(448);
  hw.scale_up.latency = Microseconds(0.45);
  hw.scale_up.allreduce_efficiency = 312.9 / 448.0;
  hw.scale_up.alltoall_efficiency = 312.9 / 448.0;
  hw.scale_up.alltoall_per_peer_overhead = Microseconds(28);
  return hw;
}

// NVSwitch node: every GPU reaches any peer set at its per-GPU bandwidth. Latency 0.45 us per
// step (Primus node_lat); A2A: 2.5 us per intra-node peer (Primus PR #644, primus.md 6.8) and
// efficiency 0.8 (no public NVSwitch A2A busbw; Primus p2p_bw_eff), as the shipped profiles.
inline HardwareProfile NvSwitchNode(double per_gpu_gbs, double per_link_gbs, int links,
                                    double ring_busbw_gbs) {
  HardwareProfile hw = EightGpuNodeWithRailNics();
  hw.scale_up.topology = FabricTopology::kSwitch;
  hw.scale_up.per_gpu_bandwidth = GigabytesPerSecond(per_gpu_gbs);
  hw.scale_up.per_link_bandwidth = GigabytesPerSecond(per_link_gbs);
  hw.scale_up.links_per_gpu = links;
  hw.scale_up.latency = Microseconds(0.45);
  hw.scale_up.allreduce_efficiency = ring_busbw_gbs / per_gpu_gbs;
  hw.scale_up.alltoall_efficiency = 0.8;
  hw.scale_up.alltoall_per_peer_overhead = Microseconds(2.5);
  return hw;
}

// H100 SXM: NVLink 4 + NVSwitch, 18 links x 25 GB/s uni = 450 GB/s; nccl-tests 8 GPUs ~370 GB/s
// ring busbw, ~480 GB/s with NVLS (ml-engineering; hardware_models.md 3.2, 4.3).
inline HardwareProfile H100Like() {
  HardwareProfile hw = NvSwitchNode(450, 25, 18, 370);
  hw.name = "h100-like";
  hw.scale_up.name = "NVLink 4 + NVSwitch";
  hw.scale_up.supports_in_network_reduction = true;
  hw.scale_up.in_network_allreduce_busbw = GigabytesPerSecond(480);
  return hw;
}

// A100 SXM: NVLink 3 + NVSwitch, 12 links x 25 GB/s uni = 300 GB/s; nccl-tests ~235 GB/s busbw
// (ml-engineering case study); no NVLS; DGX A100: 8x 200 Gb/s HDR.
inline HardwareProfile A100Like() {
  HardwareProfile hw = NvSwitchNode(300, 25, 12, 235);
  hw.name = "a100-like";
  hw.scale_up.name = "NVLink 3 + NVSwitch";
  hw.scale_out.per_nic_bandwidth = GigabitsPerSecond(200);
  return hw;
}

// B200: NVLink 5 + NVSwitch, 18 links x 50 GB/s uni = 900 GB/s; nccl-tests 8 GPUs 682 GB/s ring,
// 838 GB/s NVLS at 8 GiB (ml-engineering p6-b200, NCCL 2.27.7); P6-B200: 8x 400G EFA.
inline HardwareProfile B200Like() {
  HardwareProfile hw = NvSwitchNode(900, 50, 18, 682);
  hw.name = "b200-like";
  hw.scale_up.name = "NVLink 5 + NVSwitch";
  hw.scale_up.supports_in_network_reduction = true;
  hw.scale_up.in_network_allreduce_busbw = GigabytesPerSecond(838);
  return hw;
}

}  // namespace projector::testing

#endif  // PROJECTOR_TESTS_TESTING_NETWORK_HARDWARE_H_
