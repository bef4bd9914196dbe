#include "core/op_shapes.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace projector {

std::string_view CollectiveKindName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return "allreduce";
    case CollectiveKind::kAllGather:
      return "allgather";
    case CollectiveKind::kReduceScatter:
      return "reducescatter";
    case CollectiveKind::kAllToAll:
      return "alltoall";
    case CollectiveKind::kSendRecv:
      return "sendrecv";
    case CollectiveKind::kBroadcast:
      return "broadcast";
  }
  return "?";
}

namespace {
constexpr CollectiveAlgorithm kAllAlgorithms[] = {
    CollectiveAlgorithm::kAuto,         CollectiveAlgorithm::kRing,
    CollectiveAlgorithm::kTree,         CollectiveAlgorithm::kDirect,
    CollectiveAlgorithm::kHalvingDoubling, CollectiveAlgorithm::kHierarchical,
    CollectiveAlgorithm::kPxn, CollectiveAlgorithm::kNvls,
    CollectiveAlgorithm::kLowLatency};
}  // namespace

std::string_view CollectiveAlgorithmName(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kAuto:
      return "auto";
    case CollectiveAlgorithm::kRing:
      return "ring";
    case CollectiveAlgorithm::kTree:
      return "tree";
    case CollectiveAlgorithm::kDirect:
      return "direct";
    case CollectiveAlgorithm::kHalvingDoubling:
      return "halving-doubling";
    case CollectiveAlgorithm::kHierarchical:
      return "hierarchical";
    case CollectiveAlgorithm::kPxn:
      return "pxn";
    case CollectiveAlgorithm::kNvls:
      return "nvls";
    case CollectiveAlgorithm::kLowLatency:
      return "low-latency";
  }
  return "?";
}

absl::StatusOr<CollectiveAlgorithm> ParseCollectiveAlgorithm(std::string_view name) {
  std::string valid;
  for (CollectiveAlgorithm a : kAllAlgorithms) {
    if (CollectiveAlgorithmName(a) == name) return a;
    if (!valid.empty()) valid += ", ";
    valid += CollectiveAlgorithmName(a);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown collective algorithm '", std::string(name), "'; valid: ", valid));
}

}  // namespace projector
