#include "profilers/op_list.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace projector {
namespace {

// Prefixes a backend error with the op it came from, keeping the status code.
absl::Status Annotate(const absl::Status& s, const Op& op) {
  return absl::Status(s.code(), absl::StrCat(std::string(op.module), "/", std::string(op.name),
                                             " (", std::string(OpPhaseName(op.phase)), "): ",
                                             s.message()));
}

Provenance ProvenanceOf(Bound bound) {
  return bound == Bound::kMeasured ? Provenance::kMeasured : Provenance::kSimulated;
}

}  // namespace

std::string_view OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kMemory:
      return "memory";
    case OpKind::kCollective:
      return "collective";
  }
  return "?";
}

std::string_view OpPhaseName(OpPhase p) {
  switch (p) {
    case OpPhase::kForward:
      return "forward";
    case OpPhase::kBackwardDgrad:
      return "backward_dgrad";
    case OpPhase::kBackwardWgrad:
      return "backward_wgrad";
    case OpPhase::kRecompute:
      return "recompute";
    case OpPhase::kOncePerStep:
      return "once_per_step";
  }
  return "?";
}

std::string_view CommDimName(CommDim d) {
  switch (d) {
    case CommDim::kNone:
      return "none";
    case CommDim::kTp:
      return "tp";
    case CommDim::kCp:
      return "cp";
    case CommDim::kEp:
      return "ep";
    case CommDim::kDp:
      return "dp";
    case CommDim::kPp:
      return "pp";
  }
  return "?";
}

std::string_view ProvenanceName(Provenance p) {
  switch (p) {
    case Provenance::kSimulated:
      return "simulated";
    case Provenance::kMeasured:
      return "measured";
    case Provenance::kScaledFromMeasured:
      return "scaled_from_measured";
  }
  return "?";
}

// An op that runs `repeat` times back to back costs repeat × one estimate (no overlap between
// the repeats: legacy grouped GEMM launches one expert after the other).
absl::Status TimeOps(const BackendRefs& backends, OpList& ops) {
  for (Op& op : ops) {
    const double repeat = static_cast<double>(op.repeat);
    switch (op.kind) {
      case OpKind::kGemm: {
        absl::StatusOr<GemmEstimate> e = backends.gemm.Estimate(op.gemm);
        if (!e.ok()) return Annotate(e.status(), op);
        op.time = e->time * repeat;
        op.clock_scaled_time = e->clock_scaled_time * repeat;
        op.provenance = ProvenanceOf(e->bound);
        break;
      }
      case OpKind::kAttention: {
        absl::StatusOr<AttentionEstimate> e =
            backends.attention.Estimate(op.attention, op.attention_pass);
        if (!e.ok()) return Annotate(e.status(), op);
        op.time = e->time * repeat;
        op.clock_scaled_time = e->clock_scaled_time * repeat;
        op.provenance = ProvenanceOf(e->bound);
        break;
      }
      case OpKind::kMemory: {
        absl::StatusOr<MemoryEstimate> e = backends.memory.Estimate(op.memory);
        if (!e.ok()) return Annotate(e.status(), op);
        op.time = e->time * repeat;
        op.clock_scaled_time = e->clock_scaled_time * repeat;
        op.provenance = ProvenanceOf(e->bound);
        break;
      }
      case OpKind::kCollective: {
        absl::StatusOr<CollectiveEstimate> e =
            backends.collective.Estimate(op.collective, op.algorithm);
        if (!e.ok()) return Annotate(e.status(), op);
        op.time = e->time * repeat;
        // Network time does not scale with the GPU clock.
        op.clock_scaled_time = Seconds(0);
        op.provenance = ProvenanceOf(e->bound);
        break;
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// The calls HostDispatches counts, without the module Python of host_extra.
double HostCalls(const Op& op) {
  const int64_t kernels = op.kind == OpKind::kMemory ? op.memory.launches : 1;
  return static_cast<double>(kernels * op.host_fanout);
}

// Relative host cost of one call (HostCallWeight), forward and backward.
struct CallWeight {
  double forward;
  double backward;
};

// Each the mean of three runs' ratios (tools/gpu_host_probe.py, session 31; the nn.Linear
// forward measured 28.02, 29.79 and 28.32 us on that host):
//   GEMM backward per GEMM: 87.66/2/28.02, 95.86/2/29.79, 87.11/2/28.32 = 1.56, 1.61, 1.54;
//   element-wise forward: add 8.66, 12.71, 11.72 and SiLU 8.86, 12.89, 12.06 us = 0.31-0.43;
//   element-wise backward: 28.84, 22.52, 27.50 us = 1.03, 0.76, 0.97;
//   SDPA forward: 47.38, 45.11, 41.49 us = 1.69, 1.51, 1.47;
//   SDPA backward: 154.51, 159.54, 137.34 us = 5.51, 5.36, 4.85.
CallWeight WeightOf(OpKind kind) {
  switch (kind) {
    case OpKind::kGemm:
      return {.forward = 1.0, .backward = 1.57};
    case OpKind::kMemory:
      return {.forward = 0.39, .backward = 0.92};
    case OpKind::kAttention:
      return {.forward = 1.56, .backward = 5.24};
    case OpKind::kCollective:
      break;
  }
  return {.forward = 1.0, .backward = 1.0};
}

}  // namespace

double HostDispatches(const Op& op) {
  return static_cast<double>(op.repeat) * (HostCalls(op) + op.host_extra);
}

double HostCallWeight(OpKind kind, OpPhase phase) {
  const CallWeight w = WeightOf(kind);
  const bool backward = phase == OpPhase::kBackwardDgrad || phase == OpPhase::kBackwardWgrad;
  return backward ? w.backward : w.forward;
}

double HostDispatchEquivalents(const Op& op) {
  return static_cast<double>(op.repeat) *
         (HostCallWeight(op.kind, op.phase) * HostCalls(op) + op.host_extra);
}

Seconds SumTime(const OpList& ops, OpPhase phase, std::string_view module) {
  Seconds total(0);
  for (const Op& op : ops) {
    if (op.phase != phase) continue;
    if (!module.empty() && op.module != module) continue;
    total += op.time;
  }
  return total;
}

}  // namespace projector
