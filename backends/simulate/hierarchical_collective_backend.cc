#include "backends/simulate/hierarchical_collective_backend.h"

#include <memory>
#include <string_view>

#include "absl/status/status.h"

namespace projector {
namespace {

// Stub until the model lands.
class HierarchicalCollectiveBackend final : public CollectiveBackend {
 public:
  explicit HierarchicalCollectiveBackend(const HardwareProfile& hw) : hw_(hw) {}
  absl::StatusOr<CollectiveEstimate> Estimate(const CollectiveOp& /*op*/,
                                              CollectiveAlgorithm /*algorithm*/) const override {
    return absl::UnimplementedError("hierarchical collective backend: not implemented yet");
  }
  std::string_view name() const override { return "hierarchical"; }

 private:
  HardwareProfile hw_;
};

}  // namespace

std::unique_ptr<CollectiveBackend> MakeHierarchicalCollectiveBackend(const HardwareProfile& hw) {
  return std::make_unique<HierarchicalCollectiveBackend>(hw);
}

}  // namespace projector
