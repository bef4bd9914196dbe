#include "network/collective_library.h"

#include "core/name_table.h"

namespace projector {
namespace {

constexpr std::string_view kProtocolNames[] = {"LL", "LL128", "Simple"};
constexpr Protocol kNcclProtocols[] = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};
constexpr Protocol kSimpleOnly[] = {Protocol::kSimple};

// NCCL src/graph/tuning.cc (2.2x), microseconds, { LL, LL128, Simple }:
//   baseLat  Tree {6.8, 14.0, 8.4}  Ring {6.6, 14.0, 8.4}  NVLS {0, 0, 23.0} (the NVLS launch
//            cost of the Hopper tuning tables, NCCL 2.19-2.20; 2.2x lists 0 and moves the cost
//            into hwLat)
//   hwLat NVLink  Tree {.6, 1.25, 4.0}  Ring {.6, 1.9, 3.4}   NVLS {0, 0, 25}
//         PCI     Tree {1.0, 1.9, 4.0}  Ring {1.0, 2.5, 5.7}  NVLS {0, 0, 0}
//         NET     Tree {5.0, 8.5, 14}   Ring {2.7, 4.0, 14.0} NVLS {0, 0, 18}
// Bandwidth: ring LL x 0.5, ring LL128 x 0.92; tree all-reduce x 0.92, tree LL x 1/3.8,
// tree LL128 x 7/9 in one node and 120/128 across nodes.
struct Row {
  double base[3];
  double nvlink[3];
  double pcie[3];
  double network[3];
};
constexpr Row kRing = {{6.6, 14.0, 8.4}, {0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}};
constexpr Row kTree = {{6.8, 14.0, 8.4}, {0.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}};
constexpr Row kNvls = {{0, 0, 23.0}, {0, 0, 25.0}, {0, 0, 0}, {0, 0, 18.0}};

double Share(CollectiveAlgorithm algorithm, Protocol protocol, bool single_node) {
  if (algorithm == CollectiveAlgorithm::kTree) {
    switch (protocol) {
      case Protocol::kLL:
        return 0.92 / 3.8;
      case Protocol::kLL128:
        return 0.92 * (single_node ? 7.0 / 9.0 : 120.0 / 128.0);
      case Protocol::kSimple:
        return 0.92;
    }
  }
  switch (protocol) {
    case Protocol::kLL:
      return 0.5;
    case Protocol::kLL128:
      return 0.92;
    case Protocol::kSimple:
      break;
  }
  return 1.0;
}

}  // namespace

std::string_view CollectiveLibraryName(CollectiveLibrary library) {
  return kCollectiveLibraryNames[static_cast<size_t>(library)];
}

absl::StatusOr<CollectiveLibrary> ParseCollectiveLibrary(std::string_view name) {
  return ParseByName<CollectiveLibrary>(name, kCollectiveLibraryNames, "collective library");
}

std::string_view ProtocolName(Protocol protocol) {
  return kProtocolNames[static_cast<size_t>(protocol)];
}

Seconds ProtocolCost::StepLatency(const StepCounts& steps) const {
  return per_nvlink_step * steps.nvlink + per_pcie_step * steps.pcie +
         per_network_step * steps.network;
}

std::span<const Protocol> ProtocolsFor(CollectiveLibrary library, CollectiveAlgorithm algorithm) {
  if (library == CollectiveLibrary::kNone || algorithm == CollectiveAlgorithm::kNvls) {
    return kSimpleOnly;
  }
  return kNcclProtocols;
}

ProtocolCost CostOf(CollectiveLibrary library, CollectiveAlgorithm algorithm, Protocol protocol,
                    bool single_node) {
  if (library == CollectiveLibrary::kNone) return {};
  const Row& row = algorithm == CollectiveAlgorithm::kTree   ? kTree
                   : algorithm == CollectiveAlgorithm::kNvls ? kNvls
                                                             : kRing;
  const auto p = static_cast<size_t>(protocol);
  return {.base = Microseconds(row.base[p]),
          .per_nvlink_step = Microseconds(row.nvlink[p]),
          .per_pcie_step = Microseconds(row.pcie[p]),
          .per_network_step = Microseconds(row.network[p]),
          .bandwidth_share = algorithm == CollectiveAlgorithm::kNvls
                                 ? 1.0
                                 : Share(algorithm, protocol, single_node)};
}

}  // namespace projector
