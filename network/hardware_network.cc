#include "network/hardware_network.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace projector {

absl::StatusOr<NetworkSpec> NetworkFromHardware(const HardwareProfile& hw, int64_t num_gpus) {
  const int64_t per_node = hw.gpus_per_node;
  if (num_gpus < 1 || (num_gpus >= per_node && num_gpus % per_node != 0) ||
      (num_gpus < per_node && per_node % num_gpus != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(num_gpus, " GPUs do not fill whole nodes of ",
                                                   per_node, " ", hw.name,
                                                   " GPUs; give a multiple of ", per_node));
  }
  NetworkSpec spec;
  spec.name = absl::StrCat(hw.name, "-", num_gpus);
  NetworkDimension fabric;
  fabric.label = hw.scale_up.name;
  fabric.npus = std::min(num_gpus, per_node);
  // The profile's latencies are end to end; a route through a switch crosses two links.
  fabric.link_latency = hw.scale_up.latency;
  fabric.efficiency = hw.scale_up.allreduce_efficiency;
  fabric.link_bandwidth = hw.scale_up.per_link_bandwidth;
  if (hw.scale_up.topology == FabricTopology::kSwitch) {
    fabric.topology = TopologyKind::kSwitch;
    fabric.links = std::max<int64_t>(1, hw.scale_up.links_per_gpu);
    fabric.link_latency = hw.scale_up.latency / 2;
  } else {
    fabric.topology = TopologyKind::kFullyConnected;
  }
  fabric.link_type = LinkType::kNvlink;
  // NVLS: the profile's measured 8-GPU all-reduce bus bandwidth with in-switch reduction is
  // 2·7/8 of the rate each GPU's data is reduced at (busbw = 2(n-1)/n · algbw).
  if (hw.scale_up.supports_in_network_reduction &&
      hw.scale_up.in_network_allreduce_busbw.value() > 0) {
    fabric.in_network_reduction = hw.scale_up.in_network_allreduce_busbw / (2.0 * 7.0 / 8.0);
  }
  spec.dimensions.push_back(fabric);
  if (num_gpus > per_node) {
    NetworkDimension nics;
    nics.topology = TopologyKind::kSwitch;
    nics.label = hw.scale_out.name;
    nics.npus = num_gpus / per_node;
    nics.link_bandwidth =
        hw.scale_out.per_nic_bandwidth *
        (static_cast<double>(hw.scale_out.nics_per_node) / static_cast<double>(per_node));
    nics.link_latency = hw.scale_out.latency / 2;
    nics.efficiency = hw.scale_out.efficiency;
    nics.link_type = LinkType::kNetwork;
    spec.dimensions.push_back(nics);
  }
  return spec;
}

}  // namespace projector
