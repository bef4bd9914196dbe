// Registry of backends: one explicit table per family (name, description, maker), and the
// factory that builds the set of backends for a profiling mode and a GPU.
#ifndef PROJECTOR_BACKENDS_BACKEND_REGISTRY_H_
#define PROJECTOR_BACKENDS_BACKEND_REGISTRY_H_

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "backends/attention_backend.h"
#include "backends/collective_backend.h"
#include "network/network_spec.h"
#include "backends/gemm_backend.h"
#include "backends/memory_backend.h"
#include "hw_profiles/hardware_profile.h"

namespace projector {

struct GemmBackendInfo {
  std::string_view name;
  std::string_view description;
  std::unique_ptr<GemmBackend> (*make)(const HardwareProfile&);
};
struct AttentionBackendInfo {
  std::string_view name;
  std::string_view description;
  std::unique_ptr<AttentionBackend> (*make)(const HardwareProfile&);
};
struct MemoryBackendInfo {
  std::string_view name;
  std::string_view description;
  std::unique_ptr<MemoryBackend> (*make)(const HardwareProfile&);
};
struct CollectiveBackendInfo {
  std::string_view name;
  std::string_view description;
  std::unique_ptr<CollectiveBackend> (*make)(const HardwareProfile&);
};

std::span<const GemmBackendInfo> GemmBackends();
std::span<const AttentionBackendInfo> AttentionBackends();
std::span<const MemoryBackendInfo> MemoryBackends();
std::span<const CollectiveBackendInfo> CollectiveBackends();

// kInvalidArgument "unknown GEMM backend 'x'; valid: roofline, tile" for bad names.
absl::StatusOr<std::unique_ptr<GemmBackend>> MakeGemmBackend(std::string_view name,
                                                             const HardwareProfile& hw);
absl::StatusOr<std::unique_ptr<AttentionBackend>> MakeAttentionBackend(std::string_view name,
                                                                       const HardwareProfile& hw);
absl::StatusOr<std::unique_ptr<MemoryBackend>> MakeMemoryBackend(std::string_view name,
                                                                 const HardwareProfile& hw);
absl::StatusOr<std::unique_ptr<CollectiveBackend>> MakeCollectiveBackend(
    std::string_view name, const HardwareProfile& hw);

// Which backend of each family to use. Defaults are the most detailed simulate backends.
struct BackendSelection {
  std::string gemm = "tile";
  std::string attention = "tile";
  std::string memory = "roofline";
  std::string collective = "hierarchical";
  // A network file (--network): when set, collectives are priced on it by the network
  // backend (backends/simulate/network_collective_backend.h) instead of `collective`.
  std::shared_ptr<const NetworkSpec> network;
};

struct BackendSet {
  std::unique_ptr<GemmBackend> gemm;
  std::unique_ptr<AttentionBackend> attention;
  std::unique_ptr<MemoryBackend> memory;
  std::unique_ptr<CollectiveBackend> collective;
};

// Builds all four (simulate mode). The hardware profile already carries any clock override.
absl::StatusOr<BackendSet> MakeBackendSet(const BackendSelection& selection,
                                          const HardwareProfile& hw);

// "--list-backends" text: every family, name and description.
std::string DescribeBackends();

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_BACKEND_REGISTRY_H_
