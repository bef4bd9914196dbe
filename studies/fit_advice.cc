#include "studies/fit_advice.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/backend_registry.h"
#include "core/status_macros.h"

namespace projector {
namespace {

// A change: its flags and what it does to a copy of the scenario; false when it does not apply
// (already so, or no DP left to take from).
struct Change {
  std::string flags;
  std::function<bool(Scenario&)> apply;
};

// Takes `factor` from DP for the dimension `degree` (TP, PP, CP): the GPU count stays.
bool Widen(Scenario& s, int64_t& degree, int64_t factor) {
  if (s.parallel.dp % factor != 0) return false;
  degree *= factor;
  s.parallel.dp /= factor;
  return true;
}

std::vector<Change> Changes(const Scenario& s) {
  std::vector<Change> out;
  out.push_back({"--recompute selective", [](Scenario& c) {
                   if (c.training.recompute != Recompute::kNone) return false;
                   c.training.recompute = Recompute::kSelective;
                   return true;
                 }});
  out.push_back({"--recompute full", [](Scenario& c) {
                   if (c.training.recompute == Recompute::kFull) return false;
                   c.training.recompute = Recompute::kFull;
                   c.training.recompute_layers = 0;
                   return true;
                 }});
  out.push_back({"--distributed-optimizer", [](Scenario& c) {
                   if (c.parallel.distributed_optimizer || c.parallel.fsdp) return false;
                   c.parallel.distributed_optimizer = true;
                   return true;
                 }});
  out.push_back({"--grad-reduce-dtype bf16", [](Scenario& c) {
                   if (c.training.grad_reduce_dtype == DType::kBf16) return false;
                   c.training.grad_reduce_dtype = DType::kBf16;
                   return true;
                 }});
  if (s.training.micro_batch > 1) {
    out.push_back({absl::StrCat("--micro-batch ", s.training.micro_batch / 2), [](Scenario& c) {
                     c.training.micro_batch /= 2;
                     return true;
                   }});
  }
  for (int64_t f : {2, 4, 8}) {
    out.push_back({absl::StrCat("--tp ", s.parallel.tp * f, " --sequence-parallel"),
                   [f](Scenario& c) {
                     c.parallel.sequence_parallel = true;
                     return Widen(c, c.parallel.tp, f);
                   }});
    out.push_back({absl::StrCat("--pp ", s.parallel.pp * f),
                   [f](Scenario& c) { return Widen(c, c.parallel.pp, f); }});
  }
  out.push_back({absl::StrCat("--cp ", s.parallel.cp * 2),
                 [](Scenario& c) { return Widen(c, c.parallel.cp, 2); }});
  out.push_back({"--fsdp", [](Scenario& c) {
                   if (c.parallel.fsdp || c.parallel.pp > 1) return false;
                   c.parallel.fsdp = true;
                   c.parallel.distributed_optimizer = false;  // FSDP shards the optimizer itself
                   return true;
                 }});
  return out;
}

}  // namespace

absl::StatusOr<FitAdvice> AdviseFit(const Scenario& scenario, const Projection& projection,
                                    size_t max_changes) {
  FitAdvice advice{.peak_memory = projection.peak_memory_per_gpu,
                   .capacity = projection.memory.capacity,
                   .changes = {}};
  const std::vector<Change> changes = Changes(scenario);
  const auto full_recompute = std::find_if(changes.begin(), changes.end(), [](const Change& c) {
    return c.flags == "--recompute full";
  });
  auto try_change = [&](const std::vector<const Change*>& parts) -> absl::Status {
    Scenario c = scenario;
    std::string flags;
    for (const Change* part : parts) {
      if (!part->apply(c)) return absl::OkStatus();
      absl::StrAppend(&flags, flags.empty() ? "" : " ", part->flags);
    }
    // The "auto" choices follow the new layout (an FSDP-only layout runs a PyTorch stack's
    // kernels), as they would from the command line.
    if (!ResolveKernels(c, "fit advice").ok() || !ValidateScenario(c, "fit advice").ok()) {
      return absl::OkStatus();
    }
    // Backends of the changed scenario: its resolved kernels may differ (FSDP-only runs SDPA).
    PROJECTOR_ASSIGN_OR_RETURN(const BackendSet backends, MakeBackendSet(c.backends, c.hw));
    absl::StatusOr<Projection> p = Project(c, RefsOf(backends));
    if (!p.ok()) {
      // A layout the profilers refuse (indivisible heads, experts) is not advice.
      if (p.status().code() == absl::StatusCode::kFailedPrecondition ||
          p.status().code() == absl::StatusCode::kInvalidArgument) {
        return absl::OkStatus();
      }
      return p.status();
    }
    if (!p->fits_in_memory) return absl::OkStatus();
    advice.changes.push_back({.flags = std::move(flags),
                              .peak_memory = p->peak_memory_per_gpu,
                              .tokens_per_s_per_gpu = p->tokens_per_s_per_gpu});
    return absl::OkStatus();
  };
  for (const Change& change : changes) {
    PROJECTOR_RETURN_IF_ERROR(try_change({&change}));
    // Every change that is not itself a recompute setting, also with full recompute.
    if (!change.flags.starts_with("--recompute")) {
      PROJECTOR_RETURN_IF_ERROR(try_change({&change, &*full_recompute}));
    }
  }
  std::stable_sort(advice.changes.begin(), advice.changes.end(),
                   [](const FitChange& a, const FitChange& b) {
                     if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) {
                       return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
                     }
                     return a.flags.size() < b.flags.size();
                   });
  if (advice.changes.size() > max_changes) advice.changes.resize(max_changes);
  return advice;
}

}  // namespace projector
