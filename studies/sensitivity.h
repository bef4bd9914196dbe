// How far a projection moves with the run settings a user may not have pinned down: each
// switch a training stack sets per run (CUDA graphs, MoE token drop, the expert dispatcher and
// its overlap, the FP8 recipe, gradient-reduction overlap and precision, TP communication
// overlap) switched alone to its other value and the step re-projected. A projection whose
// settings were taken by default (the "defaults used" of its report) carries this spread as
// its uncertainty: a large move names a setting worth finding out before trusting the number.
#ifndef PROJECTOR_STUDIES_SENSITIVITY_H_
#define PROJECTOR_STUDIES_SENSITIVITY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scenario/scenario.h"
#include "studies/scenario_changes.h"

namespace projector {

// One setting switched and re-projected.
struct SettingChange {
  std::string setting;      // "cuda_graphs", "moe token routing", "fp8_recipe", ...
  std::string projected;    // the value the projection ran with ("false", "dropless", "mxfp8")
  std::string alternative;  // the value switched to
  Reprojected result;       // its flags, TGS, peak memory and fit
};

// Every setting of the catalogue that applies to `scenario` (MoE settings on a MoE model, the
// dispatcher with EP > 1, recipes under fp8, gradient settings with DP > 1, TP overlap with
// TP > 1) and whose alternative is a valid run, in catalogue order: CUDA graphs; token drop at
// capacity 1 with padding (with CUDA graphs, which the static shapes allow, as NVIDIA's
// Megatron-Bridge presets pair them) or dropless; DeepEP; the MoE All-to-All overlap; each other
// FP8 recipe; overlap_grad_reduce; grad_reduce_dtype; tp_comm_overlap. Errors only when a
// re-projection fails for a reason other than an invalid layout.
absl::StatusOr<std::vector<SettingChange>> RunSettingSensitivity(const Scenario& scenario);

// The lowest and highest throughput over a projection (`tgs`) and its setting changes.
struct SettingsRange {
  double low = 0;
  double high = 0;
};
SettingsRange RangeOf(const std::vector<SettingChange>& changes, double tgs);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_SENSITIVITY_H_
