#include "studies/sensitivity.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "scenario/training_defaults.h"

namespace projector {
namespace {

// A catalogue entry: the setting, its value in the projection and the other one, and the
// changes that switch it (several when they only run together).
struct Entry {
  std::string setting;
  std::string projected;
  std::string alternative;
  std::vector<ScenarioChange> parts;
};

std::string OnOff(bool on) { return on ? "true" : "false"; }

// A boolean switch turned to its other value: `flag` on, `flag=false` off.
Entry Toggle(std::string setting, std::string_view flag, bool current,
             std::function<bool&(Scenario&)> field) {
  return {.setting = std::move(setting),
          .projected = OnOff(current),
          .alternative = OnOff(!current),
          .parts = {{.flags = current ? std::string(flag) + "=false" : std::string(flag),
                     .apply = [field = std::move(field), current](Scenario& c) {
                       field(c) = !current;
                       return true;
                     }}}};
}

bool IsMoe(const Scenario& s) { return s.model.moe.has_value() && s.model.NumMoeLayers() > 0; }

// Token routing: a dropless MoE against token drop at capacity 1 with each expert's input padded
// (static shapes, so CUDA graphs capture the step: Megatron-Bridge's token-drop presets,
// apply_moe_token_drop's defaults capacity 1.0 and padding, run them so on B200), or a capacity
// against dropless.
Entry TokenRouting(const Scenario& s) {
  const TrainingConfig& t = s.training;
  if (t.moe_capacity_factor > 0) {
    return {.setting = "moe token routing",
            .projected = absl::StrCat("capacity ", t.moe_capacity_factor,
                                      t.moe_pad_to_capacity ? ", padded" : ""),
            .alternative = "dropless",
            .parts = {{.flags = "--moe-capacity-factor 0 --moe-pad-to-capacity=false "
                                "--cuda-graphs=false",
                       .apply = [](Scenario& c) {
                         c.training.moe_capacity_factor = 0;
                         c.training.moe_pad_to_capacity = false;
                         c.training.cuda_graphs = false;
                         return true;
                       }}}};
  }
  return {.setting = "moe token routing",
          .projected = "dropless",
          .alternative = "capacity 1, padded, CUDA graphs",
          .parts = {{.flags = "--moe-capacity-factor 1 --moe-pad-to-capacity --cuda-graphs",
                     .apply = [](Scenario& c) {
                       c.training.moe_capacity_factor = 1.0;
                       c.training.moe_pad_to_capacity = true;
                       c.training.cuda_graphs = true;
                       return true;
                     }}}};
}

// The FP8 recipes a stack offers: torchtitan's torchao Float8 training scales tensorwise or
// rowwise (Float8LinearConfig recipes) and MX formats (torchao's MX training); the Transformer
// Engine stacks run its DelayedScaling, Float8CurrentScaling (tensorwise), Float8BlockScaling and
// MXFP8BlockScaling recipes.
std::vector<Fp8Recipe> StackRecipes(TrainingStack stack) {
  if (stack == TrainingStack::kTorchTitan) {
    return {Fp8Recipe::kTensorwise, Fp8Recipe::kRowwise, Fp8Recipe::kMxfp8};
  }
  return {Fp8Recipe::kDelayed, Fp8Recipe::kTensorwise, Fp8Recipe::kBlockwise, Fp8Recipe::kMxfp8};
}

// Each FP8 recipe of the stack other than the one the projection runs (ValidateScenario drops
// those the GPU cannot run: MXFP8 before Blackwell and CDNA 4).
void AddFp8Recipes(const Scenario& s, std::vector<Entry>& out) {
  if (s.training.precision != DType::kFp8) return;
  const Fp8Recipe current = ResolvedFp8Recipe(s.training, s.parallel, s.hw.gpu.arch);
  for (Fp8Recipe r : StackRecipes(ResolvedStack(s.training, s.parallel))) {
    if (r == current) continue;
    out.push_back({.setting = "fp8_recipe",
                   .projected = std::string(Fp8RecipeName(current)),
                   .alternative = std::string(Fp8RecipeName(r)),
                   .parts = {{.flags = "--fp8-recipe " + std::string(Fp8RecipeName(r)),
                              .apply = [r](Scenario& c) {
                                c.training.fp8_recipe = r;
                                return true;
                              }}}});
  }
}

// The other way of padding an fp8 MoE's expert rows (training.moe_router_padding), where the
// megatron stack pads them and their counts vary.
void AddRouterPadding(const Scenario& s, std::vector<Entry>& out) {
  const TrainingConfig& t = s.training;
  if (!MoeRouterPaddingApplies(s.model, t, s.parallel, s.hw.gpu.arch)) return;
  const bool current = ResolvedMoeRouterPadding(t, s.parallel);
  out.push_back({.setting = "moe_router_padding",
                 .projected = OnOff(current),
                 .alternative = OnOff(!current),
                 .parts = {{.flags = "--moe-router-padding " + OnOff(!current),
                            .apply = [current](Scenario& c) {
                              c.training.moe_router_padding = !current;
                              return true;
                            }}}});
}

std::vector<Entry> Catalogue(const Scenario& s) {
  const TrainingConfig& t = s.training;
  const ParallelConfig& p = s.parallel;
  std::vector<Entry> out;
  out.push_back(Toggle("cuda_graphs", "--cuda-graphs", t.cuda_graphs,
                       [](Scenario& c) -> bool& { return c.training.cuda_graphs; }));
  if (IsMoe(s)) {
    out.push_back(TokenRouting(s));
    if (p.ep > 1) {
      out.push_back(Toggle("deepep", "--deepep", p.deepep,
                           [](Scenario& c) -> bool& { return c.parallel.deepep; }));
      out.push_back(Toggle("moe_a2a_overlap", "--moe-a2a-overlap", t.moe_a2a_overlap,
                           [](Scenario& c) -> bool& { return c.training.moe_a2a_overlap; }));
    }
  }
  if (IsMoe(s)) AddRouterPadding(s, out);
  AddFp8Recipes(s, out);
  if (p.dp > 1 || p.fsdp) {
    out.push_back(Toggle("overlap_grad_reduce", "--overlap-grad-reduce", t.overlap_grad_reduce,
                         [](Scenario& c) -> bool& { return c.training.overlap_grad_reduce; }));
    const bool bf16 = t.grad_reduce_dtype == DType::kBf16;
    out.push_back({.setting = "grad_reduce_dtype",
                   .projected = bf16 ? "bf16" : "fp32",
                   .alternative = bf16 ? "fp32" : "bf16",
                   .parts = {{.flags = absl::StrCat("--grad-reduce-dtype ", bf16 ? "fp32" : "bf16"),
                              .apply = [bf16](Scenario& c) {
                                c.training.grad_reduce_dtype = bf16 ? DType::kFp32 : DType::kBf16;
                                return true;
                              }}}});
  }
  if (p.tp > 1) {
    out.push_back(Toggle("tp_comm_overlap", "--tp-comm-overlap", t.tp_comm_overlap,
                         [](Scenario& c) -> bool& { return c.training.tp_comm_overlap; }));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<SettingChange>> RunSettingSensitivity(const Scenario& scenario) {
  std::vector<SettingChange> out;
  for (Entry& e : Catalogue(scenario)) {
    std::vector<const ScenarioChange*> parts;
    for (const ScenarioChange& part : e.parts) parts.push_back(&part);
    PROJECTOR_ASSIGN_OR_RETURN(std::optional<Reprojected> r, Reproject(scenario, parts));
    if (!r) continue;
    out.push_back({.setting = std::move(e.setting),
                   .projected = std::move(e.projected),
                   .alternative = std::move(e.alternative),
                   .result = std::move(*r)});
  }
  return out;
}

SettingsRange RangeOf(const std::vector<SettingChange>& changes, double tgs) {
  SettingsRange range{.low = tgs, .high = tgs};
  for (const SettingChange& c : changes) {
    range.low = std::min(range.low, c.result.tokens_per_s_per_gpu);
    range.high = std::max(range.high, c.result.tokens_per_s_per_gpu);
  }
  return range;
}

}  // namespace projector
