#include "backends/backend_registry.h"

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "backends/simulate/hierarchical_collective_backend.h"
#include "backends/simulate/network_collective_backend.h"
#include "backends/simulate/roofline_attention_backend.h"
#include "backends/simulate/roofline_gemm_backend.h"
#include "backends/simulate/roofline_memory_backend.h"
#include "backends/simulate/tile_attention_backend.h"
#include "backends/simulate/tile_gemm_backend.h"
#include "core/status_macros.h"

namespace projector {

namespace {

// One explicit table per family; the first row is the default of its family. Adding a backend
// is a new .h/.cc pair plus one row here.
constexpr GemmBackendInfo kGemmBackends[] = {
    {"tile",
     "Origami-style tile model: macro-tile choice, wave quantisation, per-tile compute vs "
     "L2/MALL/HBM time, split-K, sustained clock",
     &MakeTileGemmBackend},
    {"roofline", "max(FLOPs at the achievable matrix rate, HBM bytes) + launch",
     &MakeRooflineGemmBackend},
};

constexpr AttentionBackendInfo kAttentionBackends[] = {
    {"tile",
     "flash-attention tile model: per-vendor FA2/FA3/AITER tiles, QK^T/PV (bwd: 5 GEMMs + dQ "
     "accumulation), softmax exp, K/V loads, GQA, causal tile skipping, waves",
     &MakeTileAttentionBackend},
    {"roofline", "max(attention FLOPs at the achievable rate, Q/K/V/O HBM bytes) + launch",
     &MakeRooflineAttentionBackend},
};

constexpr MemoryBackendInfo kMemoryBackends[] = {
    {"roofline",
     "launches x launch overhead + max(bytes at achievable HBM bandwidth, FLOPs at the vector "
     "rate)",
     &MakeRooflineMemoryBackend},
};

constexpr CollectiveBackendInfo kCollectiveBackends[] = {
    {"hierarchical",
     "alpha-beta model over the node hierarchy (scale-up fabric, NICs): ring, tree, direct, "
     "halving-doubling, hierarchical, PXN; auto picks the fastest",
     &MakeHierarchicalCollectiveBackend},
};

// Looks `name` up in `table`; kInvalidArgument "unknown <family> backend 'x'; valid: a, b".
template <typename Info>
absl::StatusOr<const Info*> Find(std::span<const Info> table, std::string_view family,
                                 std::string_view name) {
  std::string valid;
  for (const Info& info : table) {
    if (info.name == name) return &info;
    if (!valid.empty()) valid += ", ";
    valid += info.name;
  }
  return absl::InvalidArgumentError(absl::StrFormat("unknown %s backend '%s'; valid: %s", family,
                                                    name, valid));
}

template <typename Info>
void Describe(std::string& out, std::string_view family, std::span<const Info> table) {
  absl::StrAppendFormat(&out, "%s backends:\n", family);
  for (size_t i = 0; i < table.size(); ++i) {
    absl::StrAppendFormat(&out, "  %-13s %s%s\n", table[i].name, table[i].description,
                          i == 0 ? " (default)" : "");
  }
}

}  // namespace

std::span<const GemmBackendInfo> GemmBackends() { return kGemmBackends; }
std::span<const AttentionBackendInfo> AttentionBackends() { return kAttentionBackends; }
std::span<const MemoryBackendInfo> MemoryBackends() { return kMemoryBackends; }
std::span<const CollectiveBackendInfo> CollectiveBackends() { return kCollectiveBackends; }

absl::StatusOr<std::unique_ptr<GemmBackend>> MakeGemmBackend(std::string_view name,
                                                             const HardwareProfile& hw) {
  PROJECTOR_ASSIGN_OR_RETURN(const GemmBackendInfo* info, Find(GemmBackends(), "GEMM", name));
  return info->make(hw);
}

absl::StatusOr<std::unique_ptr<AttentionBackend>> MakeAttentionBackend(std::string_view name,
                                                                       const HardwareProfile& hw) {
  PROJECTOR_ASSIGN_OR_RETURN(const AttentionBackendInfo* info,
                             Find(AttentionBackends(), "attention", name));
  return info->make(hw);
}

absl::StatusOr<std::unique_ptr<MemoryBackend>> MakeMemoryBackend(std::string_view name,
                                                                 const HardwareProfile& hw) {
  PROJECTOR_ASSIGN_OR_RETURN(const MemoryBackendInfo* info,
                             Find(MemoryBackends(), "memory", name));
  return info->make(hw);
}

absl::StatusOr<std::unique_ptr<CollectiveBackend>> MakeCollectiveBackend(
    std::string_view name, const HardwareProfile& hw) {
  PROJECTOR_ASSIGN_OR_RETURN(const CollectiveBackendInfo* info,
                             Find(CollectiveBackends(), "collective", name));
  return info->make(hw);
}

absl::StatusOr<BackendSet> MakeBackendSet(const BackendSelection& selection,
                                          const HardwareProfile& hw) {
  BackendSet set;
  PROJECTOR_ASSIGN_OR_RETURN(set.gemm, MakeGemmBackend(selection.gemm, hw));
  PROJECTOR_ASSIGN_OR_RETURN(set.attention, MakeAttentionBackend(selection.attention, hw));
  PROJECTOR_ASSIGN_OR_RETURN(set.memory, MakeMemoryBackend(selection.memory, hw));
  if (selection.network) {
    set.collective = MakeNetworkCollectiveBackend(hw, *selection.network);
    return set;
  }
  PROJECTOR_ASSIGN_OR_RETURN(set.collective, MakeCollectiveBackend(selection.collective, hw));
  return set;
}

std::string DescribeBackends() {
  std::string out;
  Describe(out, "GEMM", GemmBackends());
  Describe(out, "attention", AttentionBackends());
  Describe(out, "memory", MemoryBackends());
  Describe(out, "collective", CollectiveBackends());
  return out;
}

}  // namespace projector
