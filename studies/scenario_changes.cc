#include "studies/scenario_changes.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/backend_registry.h"
#include "core/status_macros.h"
#include "projection/projection.h"

namespace projector {

bool TakeFromDp(Scenario& s, int64_t& degree, int64_t factor) {
  if (s.parallel.dp % factor != 0) return false;
  degree *= factor;
  s.parallel.dp /= factor;
  return true;
}

std::vector<ScenarioChange> MemoryChanges(const Scenario& s) {
  std::vector<ScenarioChange> out;
  out.push_back({"--recompute selective", [](Scenario& c) {
                   if (c.training.recompute != Recompute::kNone) return false;
                   c.training.SetRecompute(Recompute::kSelective);
                   return true;
                 }});
  // Megatron-Core's output-discarding recompute modules the model has: they re-run RoPE, norms,
  // activations and MLA's up-projections, little compute for the Q, K, V and activations they
  // drop (refused off the megatron stack by ValidateScenario).
  RecomputeModules cheap = 0;
  if (s.model.mla.has_value()) cheap |= RecomputeBit(RecomputeModule::kMlaUpProj);
  if (s.model.moe.has_value() && s.model.NumMoeLayers() > 0) {
    cheap |= RecomputeBit(RecomputeModule::kLayernorm) | RecomputeBit(RecomputeModule::kMoeAct);
  }
  if (cheap != 0) {
    // From no recompute, these modules alone (as Megatron-Bridge's DeepSeek-V3 presets run
    // mla_up_proj); from selective, beside the modules it has.
    const RecomputeModules from_selective =
        s.training.recompute == Recompute::kSelective ? s.training.recompute_modules | cheap
                                                      : cheap;
    out.push_back({absl::StrCat("--recompute selective --recompute-modules ",
                                RecomputeModulesName(from_selective)),
                   [cheap](Scenario& c) {
                     if (c.training.recompute == Recompute::kFull ||
                         (c.training.recompute == Recompute::kSelective &&
                          (c.training.recompute_modules & cheap) == cheap)) {
                       return false;
                     }
                     c.training.recompute_modules =
                         c.training.recompute == Recompute::kSelective
                             ? c.training.recompute_modules | cheap
                             : cheap;
                     c.training.recompute = Recompute::kSelective;
                     return true;
                   }});
  }
  out.push_back({"--recompute full", [](Scenario& c) {
                   if (c.training.recompute == Recompute::kFull) return false;
                   c.training.SetRecompute(Recompute::kFull);
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
    out.push_back(
        {absl::StrCat("--tp ", s.parallel.tp * f, " --sequence-parallel"), [f](Scenario& c) {
           c.parallel.sequence_parallel = true;
           return TakeFromDp(c, c.parallel.tp, f);
         }});
    out.push_back({absl::StrCat("--pp ", s.parallel.pp * f),
                   [f](Scenario& c) { return TakeFromDp(c, c.parallel.pp, f); }});
  }
  out.push_back({absl::StrCat("--cp ", s.parallel.cp * 2),
                 [](Scenario& c) { return TakeFromDp(c, c.parallel.cp, 2); }});
  out.push_back({"--fsdp", [](Scenario& c) {
                   if (c.parallel.fsdp || c.parallel.pp > 1) return false;
                   c.parallel.fsdp = true;
                   c.parallel.distributed_optimizer = false;  // FSDP shards the optimizer itself
                   return true;
                 }});
  return out;
}

absl::StatusOr<std::optional<Reprojected>> Reproject(const Scenario& scenario,
                                                     std::span<const ScenarioChange* const> parts) {
  Scenario c = scenario;
  std::string flags;
  for (const ScenarioChange* part : parts) {
    if (!part->apply(c)) return std::nullopt;
    absl::StrAppend(&flags, flags.empty() ? "" : " ", part->flags);
  }
  // The "auto" choices follow the new layout (an FSDP-only layout runs a PyTorch stack's
  // kernels), as they would from the command line.
  if (!ResolveKernels(c, "change").ok() || !ValidateScenario(c, "change").ok()) {
    return std::nullopt;
  }
  // Backends of the changed scenario: its resolved kernels or hardware may differ.
  PROJECTOR_ASSIGN_OR_RETURN(const BackendSet backends, MakeBackendSet(c.backends, c.hw));
  absl::StatusOr<Projection> p = Project(c, RefsOf(backends));
  if (!p.ok()) {
    // A layout the profilers refuse (indivisible heads, experts) is not a change to propose.
    if (p.status().code() == absl::StatusCode::kFailedPrecondition ||
        p.status().code() == absl::StatusCode::kInvalidArgument) {
      return std::nullopt;
    }
    return p.status();
  }
  return Reprojected{.flags = std::move(flags),
                     .peak_memory = p->peak_memory_per_gpu,
                     .tokens_per_s_per_gpu = p->tokens_per_s_per_gpu,
                     .fits = p->fits_in_memory};
}

}  // namespace projector
