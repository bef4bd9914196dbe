// Profile-mode backends: each answers from the measured times of a profile file and falls back
// to the simulate backend it wraps. A measured op of the same shape on the same hardware is used
// as is; a measured op of a similar shape (same family, e.g. the GEMM whose N changed with TP)
// is carried over by the ratio of simulated times,
//   t(target) = t_measured(source) · simulated_target_hw(target) / simulated_measured_hw(source),
// as in the one-node-benchmark workflow (seed 001); anything else is simulated.
#ifndef PROJECTOR_BACKENDS_PROFILE_PROFILED_BACKENDS_H_
#define PROJECTOR_BACKENDS_PROFILE_PROFILED_BACKENDS_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/attention_backend.h"
#include "backends/backend_registry.h"
#include "backends/collective_backend.h"
#include "backends/gemm_backend.h"
#include "backends/memory_backend.h"
#include "backends/profile/profile_file.h"
#include "hw_profiles/hardware_profile.h"

namespace projector {

// Where a profile backend's answer came from.
enum class TimeSource { kSimulated, kMeasured, kScaledFromMeasured };
std::string_view TimeSourceName(TimeSource s);

// A source op is carried over only when the summed |log ratio| of its sizes to the target's is
// at most log(64): a TP of 8 changes one GEMM dimension by 8x, a micro-batch change another.
inline constexpr double kMaxScalingLogDistance = 4.1588830833596715;  // ln 64

// One answer with its source. `source_op` points into the profile (null when simulated).
template <typename Estimate>
struct ResolvedEstimate {
  Estimate estimate;
  TimeSource source = TimeSource::kSimulated;
  const ProfiledOp* source_op = nullptr;
  double scale = 1.0;  // simulated(target) / simulated(source); 1 for exact matches
};

// Shared lookup: the profile's ops of one family, the two simulate backends (on the target
// hardware and on the hardware the profile was measured on).
class ProfiledGemmBackend final : public GemmBackend {
 public:
  // `profile`, `target_sim` and `measured_sim` must outlive the backend.
  ProfiledGemmBackend(const Profile& profile, const GemmBackend& target_sim,
                      const GemmBackend& measured_sim);
  // Errors of the simulate backends pass through.
  absl::StatusOr<GemmEstimate> Estimate(const GemmShape& shape) const override;
  absl::StatusOr<ResolvedEstimate<GemmEstimate>> Resolve(const GemmShape& shape) const;
  std::string_view name() const override { return "profile"; }

 private:
  std::vector<const ProfiledOp*> ops_;
  const GemmBackend& target_sim_;
  const GemmBackend& measured_sim_;
};

class ProfiledAttentionBackend final : public AttentionBackend {
 public:
  ProfiledAttentionBackend(const Profile& profile, const AttentionBackend& target_sim,
                           const AttentionBackend& measured_sim);
  absl::StatusOr<AttentionEstimate> Estimate(const AttentionShape& shape,
                                             AttentionPass pass) const override;
  absl::StatusOr<ResolvedEstimate<AttentionEstimate>> Resolve(const AttentionShape& shape,
                                                              AttentionPass pass) const;
  std::string_view name() const override { return "profile"; }

 private:
  std::vector<const ProfiledOp*> ops_;
  const AttentionBackend& target_sim_;
  const AttentionBackend& measured_sim_;
};

class ProfiledMemoryBackend final : public MemoryBackend {
 public:
  ProfiledMemoryBackend(const Profile& profile, const MemoryBackend& target_sim,
                        const MemoryBackend& measured_sim);
  absl::StatusOr<MemoryEstimate> Estimate(const MemoryOp& op) const override;
  absl::StatusOr<ResolvedEstimate<MemoryEstimate>> Resolve(const MemoryOp& op) const;
  std::string_view name() const override { return "profile"; }

 private:
  std::vector<const ProfiledOp*> ops_;
  const MemoryBackend& target_sim_;
  const MemoryBackend& measured_sim_;
};

// Collectives are carried over only from the same kind; the ratio then restores the placement
// (a measured intra-node all-reduce scaled to a multi-node group adds the NIC hop).
class ProfiledCollectiveBackend final : public CollectiveBackend {
 public:
  ProfiledCollectiveBackend(const Profile& profile, const CollectiveBackend& target_sim,
                            const CollectiveBackend& measured_sim);
  absl::StatusOr<CollectiveEstimate> Estimate(
      const CollectiveOp& op,
      CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto) const override;
  absl::StatusOr<ResolvedEstimate<CollectiveEstimate>> Resolve(
      const CollectiveOp& op, CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto) const;
  std::string_view name() const override { return "profile"; }

 private:
  std::vector<const ProfiledOp*> ops_;
  const CollectiveBackend& target_sim_;
  const CollectiveBackend& measured_sim_;
};

// The four profile backends with the simulate backends they wrap. Movable; the wrappers refer
// to heap objects owned here and to `profile`, which must outlive the set.
struct ProfiledBackendSet {
  BackendSet target_simulate;    // on the target hardware
  BackendSet measured_simulate;  // on the hardware (and clock) the profile was measured on
  std::unique_ptr<ProfiledGemmBackend> gemm;
  std::unique_ptr<ProfiledAttentionBackend> attention;
  std::unique_ptr<ProfiledMemoryBackend> memory;
  std::unique_ptr<ProfiledCollectiveBackend> collective;
};

// Builds the simulate backends of `selection` on both hardware profiles and wraps them.
// kInvalidArgument for an unknown backend name.
absl::StatusOr<ProfiledBackendSet> MakeProfiledBackendSet(const Profile& profile,
                                                          const BackendSelection& selection,
                                                          const HardwareProfile& target_hw,
                                                          const HardwareProfile& measured_hw);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_PROFILE_PROFILED_BACKENDS_H_
