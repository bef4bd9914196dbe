#include "backends/profile/profiled_backends.h"

#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "core/status_macros.h"

namespace projector {
namespace {

double LogRatio(double a, double b) { return std::abs(std::log(a / b)); }

std::vector<const ProfiledOp*> OpsOfKind(const Profile& profile, ProfiledOpKind kind) {
  std::vector<const ProfiledOp*> out;
  for (const ProfiledOp& op : profile.ops) {
    if (op.kind == kind) out.push_back(&op);
  }
  return out;
}

// The closest candidate by `distance` (nullopt = incompatible), exact matches first.
template <typename Exact, typename Distance>
std::pair<const ProfiledOp*, bool> FindSource(const std::vector<const ProfiledOp*>& ops,
                                              Exact exact, Distance distance) {
  for (const ProfiledOp* op : ops) {
    if (exact(*op)) return {op, true};
  }
  const ProfiledOp* best = nullptr;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const ProfiledOp* op : ops) {
    std::optional<double> d = distance(*op);
    if (d && *d < best_distance) {
      best = op;
      best_distance = *d;
    }
  }
  if (best_distance > kMaxScalingLogDistance) return {nullptr, false};
  return {best, false};
}

// Carries the source's measured median over to the target: measured · target_sim / source_sim.
// The estimate keeps the simulated split between clock-scaled and fixed time.
template <typename Est>
ResolvedEstimate<Est> CarryOver(const ProfiledOp& source, bool exact, const Est& target_sim,
                                const Est& source_sim) {
  ResolvedEstimate<Est> r;
  r.estimate = target_sim;
  r.source_op = &source;
  if (!(source_sim.time.value() > 0) || !(target_sim.time.value() > 0)) {
    r.scale = 1.0;
  } else {
    r.scale = target_sim.time / source_sim.time;
  }
  const Seconds time = source.time.median * r.scale;
  const bool same = exact && std::abs(r.scale - 1.0) < 1e-9;
  r.source = same ? TimeSource::kMeasured : TimeSource::kScaledFromMeasured;
  r.estimate.time = time;
  if constexpr (requires { r.estimate.clock_scaled_time; }) {
    if (target_sim.time.value() > 0) r.estimate.clock_scaled_time = target_sim.clock_scaled_time * (time / target_sim.time);
  }
  if (same) r.estimate.bound = Bound::kMeasured;
  return r;
}

template <typename Est>
ResolvedEstimate<Est> Simulated(const Est& e) {
  ResolvedEstimate<Est> r;
  r.estimate = e;
  return r;
}

}  // namespace

std::string_view TimeSourceName(TimeSource s) {
  switch (s) {
    case TimeSource::kSimulated:
      return "simulated";
    case TimeSource::kMeasured:
      return "measured";
    case TimeSource::kScaledFromMeasured:
      return "scaled_from_measured";
  }
  return "?";
}

ProfiledGemmBackend::ProfiledGemmBackend(const Profile& profile, const GemmBackend& target_sim,
                                         const GemmBackend& measured_sim)
    : ops_(OpsOfKind(profile, ProfiledOpKind::kGemm)),
      target_sim_(target_sim),
      measured_sim_(measured_sim) {}

absl::StatusOr<ResolvedEstimate<GemmEstimate>> ProfiledGemmBackend::Resolve(
    const GemmShape& shape) const {
  PROJECTOR_ASSIGN_OR_RETURN(GemmEstimate target, target_sim_.Estimate(shape));
  auto [source, exact] = FindSource(
      ops_, [&](const ProfiledOp& op) { return op.gemm == shape; },
      [&](const ProfiledOp& op) -> std::optional<double> {
        if (op.gemm.dtype != shape.dtype) return std::nullopt;
        return LogRatio(static_cast<double>(op.gemm.m), static_cast<double>(shape.m)) +
               LogRatio(static_cast<double>(op.gemm.n), static_cast<double>(shape.n)) +
               LogRatio(static_cast<double>(op.gemm.k), static_cast<double>(shape.k)) +
               LogRatio(static_cast<double>(op.gemm.batch), static_cast<double>(shape.batch));
      });
  if (source == nullptr) return Simulated(target);
  PROJECTOR_ASSIGN_OR_RETURN(GemmEstimate measured, measured_sim_.Estimate(source->gemm));
  return CarryOver(*source, exact, target, measured);
}

absl::StatusOr<GemmEstimate> ProfiledGemmBackend::Estimate(const GemmShape& shape) const {
  PROJECTOR_ASSIGN_OR_RETURN(auto r, Resolve(shape));
  return r.estimate;
}

ProfiledAttentionBackend::ProfiledAttentionBackend(const Profile& profile,
                                                   const AttentionBackend& target_sim,
                                                   const AttentionBackend& measured_sim)
    : ops_(OpsOfKind(profile, ProfiledOpKind::kAttention)),
      target_sim_(target_sim),
      measured_sim_(measured_sim) {}

absl::StatusOr<ResolvedEstimate<AttentionEstimate>> ProfiledAttentionBackend::Resolve(
    const AttentionShape& shape, AttentionPass pass) const {
  PROJECTOR_ASSIGN_OR_RETURN(AttentionEstimate target, target_sim_.Estimate(shape, pass));
  auto [source, exact] = FindSource(
      ops_, [&](const ProfiledOp& op) { return op.pass == pass && op.attention == shape; },
      [&](const ProfiledOp& op) -> std::optional<double> {
        const AttentionShape& a = op.attention;
        if (op.pass != pass || a.dtype != shape.dtype || a.causal != shape.causal ||
            a.qk_head_dim != shape.qk_head_dim || a.v_head_dim != shape.v_head_dim) {
          return std::nullopt;
        }
        const double group = static_cast<double>(a.num_q_heads) / static_cast<double>(a.num_kv_heads);
        const double target_group =
            static_cast<double>(shape.num_q_heads) / static_cast<double>(shape.num_kv_heads);
        return LogRatio(static_cast<double>(a.batch), static_cast<double>(shape.batch)) +
               LogRatio(static_cast<double>(a.num_q_heads), static_cast<double>(shape.num_q_heads)) +
               LogRatio(group, target_group) +
               LogRatio(static_cast<double>(a.seq_q), static_cast<double>(shape.seq_q)) +
               LogRatio(static_cast<double>(a.seq_kv), static_cast<double>(shape.seq_kv));
      });
  if (source == nullptr) return Simulated(target);
  PROJECTOR_ASSIGN_OR_RETURN(AttentionEstimate measured,
                             measured_sim_.Estimate(source->attention, pass));
  return CarryOver(*source, exact, target, measured);
}

absl::StatusOr<AttentionEstimate> ProfiledAttentionBackend::Estimate(const AttentionShape& shape,
                                                                     AttentionPass pass) const {
  PROJECTOR_ASSIGN_OR_RETURN(auto r, Resolve(shape, pass));
  return r.estimate;
}

ProfiledMemoryBackend::ProfiledMemoryBackend(const Profile& profile,
                                             const MemoryBackend& target_sim,
                                             const MemoryBackend& measured_sim)
    : ops_(OpsOfKind(profile, ProfiledOpKind::kMemory)),
      target_sim_(target_sim),
      measured_sim_(measured_sim) {}

absl::StatusOr<ResolvedEstimate<MemoryEstimate>> ProfiledMemoryBackend::Resolve(
    const MemoryOp& op) const {
  PROJECTOR_ASSIGN_OR_RETURN(MemoryEstimate target, target_sim_.Estimate(op));
  if (!(op.bytes.value() > 0)) return Simulated(target);
  auto [source, exact] = FindSource(
      ops_, [&](const ProfiledOp& p) { return p.memory == op; },
      [&](const ProfiledOp& p) -> std::optional<double> {
        return LogRatio(p.memory.bytes.value(), op.bytes.value()) +
               LogRatio(static_cast<double>(p.memory.launches), static_cast<double>(op.launches));
      });
  if (source == nullptr) return Simulated(target);
  PROJECTOR_ASSIGN_OR_RETURN(MemoryEstimate measured, measured_sim_.Estimate(source->memory));
  return CarryOver(*source, exact, target, measured);
}

absl::StatusOr<MemoryEstimate> ProfiledMemoryBackend::Estimate(const MemoryOp& op) const {
  PROJECTOR_ASSIGN_OR_RETURN(auto r, Resolve(op));
  return r.estimate;
}

ProfiledCollectiveBackend::ProfiledCollectiveBackend(const Profile& profile,
                                                     const CollectiveBackend& target_sim,
                                                     const CollectiveBackend& measured_sim)
    : ops_(OpsOfKind(profile, ProfiledOpKind::kCollective)),
      target_sim_(target_sim),
      measured_sim_(measured_sim) {}

absl::StatusOr<ResolvedEstimate<CollectiveEstimate>> ProfiledCollectiveBackend::Resolve(
    const CollectiveOp& op, CollectiveAlgorithm algorithm) const {
  PROJECTOR_ASSIGN_OR_RETURN(CollectiveEstimate target, target_sim_.Estimate(op, algorithm));
  // A group of one rank or an empty message costs what the simulate backend says (nothing).
  if (op.group.size < 2 || !(op.bytes.value() > 0)) return Simulated(target);
  auto [source, exact] = FindSource(
      ops_, [&](const ProfiledOp& p) { return p.collective == op; },
      [&](const ProfiledOp& p) -> std::optional<double> {
        if (p.collective.kind != op.kind || p.collective.group.size < 2) return std::nullopt;
        return LogRatio(p.collective.bytes.value(), op.bytes.value()) +
               LogRatio(static_cast<double>(p.collective.group.size),
                        static_cast<double>(op.group.size));
      });
  if (source == nullptr) return Simulated(target);
  PROJECTOR_ASSIGN_OR_RETURN(CollectiveEstimate measured,
                             measured_sim_.Estimate(source->collective, algorithm));
  ResolvedEstimate<CollectiveEstimate> r = CarryOver(*source, exact, target, measured);
  if (r.estimate.time.value() > 0) {
    // Bus bandwidth follows the time (same bytes, same factor).
    r.estimate.bus_bandwidth = target.bus_bandwidth * (target.time / r.estimate.time);
  }
  return r;
}

absl::StatusOr<CollectiveEstimate> ProfiledCollectiveBackend::Estimate(
    const CollectiveOp& op, CollectiveAlgorithm algorithm) const {
  PROJECTOR_ASSIGN_OR_RETURN(auto r, Resolve(op, algorithm));
  return r.estimate;
}

absl::StatusOr<ProfiledBackendSet> MakeProfiledBackendSet(const Profile& profile,
                                                          const BackendSelection& selection,
                                                          const HardwareProfile& target_hw,
                                                          const HardwareProfile& measured_hw) {
  ProfiledBackendSet set;
  PROJECTOR_ASSIGN_OR_RETURN(set.target_simulate, MakeBackendSet(selection, target_hw));
  PROJECTOR_ASSIGN_OR_RETURN(set.measured_simulate, MakeBackendSet(selection, measured_hw));
  set.gemm = std::make_unique<ProfiledGemmBackend>(profile, *set.target_simulate.gemm,
                                                   *set.measured_simulate.gemm);
  set.attention = std::make_unique<ProfiledAttentionBackend>(
      profile, *set.target_simulate.attention, *set.measured_simulate.attention);
  set.memory = std::make_unique<ProfiledMemoryBackend>(profile, *set.target_simulate.memory,
                                                       *set.measured_simulate.memory);
  set.collective = std::make_unique<ProfiledCollectiveBackend>(
      profile, *set.target_simulate.collective, *set.measured_simulate.collective);
  return set;
}

}  // namespace projector
