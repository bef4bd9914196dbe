#include "projection/host_overhead.h"

#include <algorithm>

namespace projector {
namespace {

bool InBackward(OpPhase phase) {
  return phase == OpPhase::kBackwardDgrad || phase == OpPhase::kBackwardWgrad;
}

// Host time of every op of `ops` in the phases `in_pass` accepts.
template <typename PhaseTest>
Seconds HostTime(const OpList& ops, Seconds per_dispatch, PhaseTest in_pass) {
  double dispatches = 0;
  for (const Op& op : ops) {
    if (in_pass(op.phase)) dispatches += HostDispatchEquivalents(op);
  }
  return per_dispatch * dispatches;
}

template <typename PhaseTest>
Seconds LayerHostTime(const LayerHostInput& in, Seconds per_dispatch, PhaseTest in_pass) {
  Seconds total = HostTime(in.comm_ops, per_dispatch, in_pass);
  for (const ModuleProfile& m : in.layer.modules) total += HostTime(m.ops, per_dispatch, in_pass);
  return total;
}

IssuedWork Issued(const Op& op, const HostCostModel& host) {
  return {.host = host.IssueTime(op), .gpu = op.time};
}

// A queue drained by a sync, fed op by op: DrainedMakespan's recurrence without a list.
struct DrainedQueue {
  Seconds issued, finished;
  void Issue(const IssuedWork& w) {
    issued += w.host;
    finished = std::max(finished, issued) + w.gpu;
  }
};

// The forward of a MoE layer from one sync to the next, in the order the host issues it: the
// dispatch (the exposed forward communication, with the host time of the forward collectives),
// the MoE ops after the permutation, the other modules (the next layer's norms and attention),
// and the MoE ops up to the permutation, where the next sync falls. No allocation.
Seconds ForwardAfterSync(const LayerHostInput& in, const HostCostModel& host) {
  const Seconds per_dispatch = host.per_dispatch;
  DrainedQueue queue;
  queue.Issue({.host = HostTime(in.comm_ops, per_dispatch,
                                [](OpPhase p) { return p == OpPhase::kForward; }),
               .gpu = in.forward_comm});
  const ModuleProfile* moe = nullptr;
  for (const ModuleProfile& m : in.layer.modules) {
    if (m.module == "moe") moe = &m;
  }
  // The MoE forward ops after (first pass) or up to and including (second pass) the permutation.
  auto issue_moe = [&](bool after_permutation) {
    if (moe == nullptr) return;
    bool past = false;
    for (const Op& op : moe->ops) {
      if (op.phase != OpPhase::kForward) continue;
      if (past == after_permutation) queue.Issue(Issued(op, host));
      if (op.name == "permute") past = true;
    }
  };
  issue_moe(/*after_permutation=*/true);
  for (const ModuleProfile& m : in.layer.modules) {
    if (&m == moe) continue;
    for (const Op& op : m.ops) {
      if (op.phase == OpPhase::kForward) queue.Issue(Issued(op, host));
    }
  }
  issue_moe(/*after_permutation=*/false);
  return queue.finished;
}

}  // namespace

Seconds HostCostModel::IssueTime(const Op& op) const {
  if (cuda_graphs) return Seconds(0);
  return per_dispatch * HostDispatchEquivalents(op);
}

Seconds DrainedMakespan(const std::vector<IssuedWork>& seq) {
  DrainedQueue queue;
  for (const IssuedWork& w : seq) queue.Issue(w);
  return queue.finished;
}

HostExposure LayerHostExposure(const LayerHostInput& in, const HostCostModel& host,
                               const TrainingConfig& training) {
  HostExposure out;
  const Seconds d = host.per_dispatch;
  if (d.value() <= 0 || host.cuda_graphs) return out;
  const Seconds h_b = LayerHostTime(in, d, InBackward);
  const Seconds h_r = LayerHostTime(in, d, [](OpPhase p) { return p == OpPhase::kRecompute; });
  out.backward = Max0(h_b - in.gpu_backward);
  out.recompute = Max0(h_r - in.gpu_recompute);
  if (in.layer.is_moe && MoeForwardSyncsHost(training)) {
    out.forward = Max0(ForwardAfterSync(in, host) - in.gpu_forward);
  } else {
    const Seconds h_f = LayerHostTime(in, d, [](OpPhase p) { return p == OpPhase::kForward; });
    out.forward = Max0(h_f - in.gpu_forward);
  }
  return out;
}

}  // namespace projector
