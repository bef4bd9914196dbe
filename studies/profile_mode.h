// Profile-driven projection (--profiling-mode profile | both): projects a target scenario with
// the profile backends (measured times where the profile has them, carried over by the ratio of
// simulated times where the shape or hardware differs, simulated otherwise) and reports the
// source of every op and step term. `both` adds the model-vs-measurement comparison on the
// profile's own scenario: every measured op and module against its simulated time, % error.
#ifndef PROJECTOR_STUDIES_PROFILE_MODE_H_
#define PROJECTOR_STUDIES_PROFILE_MODE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/profile/profile_file.h"
#include "nlohmann/json.hpp"
#include "profilers/op_list.h"
#include "projection/projection.h"
#include "scenario/scenario.h"

namespace projector {

// The scenario a profile was measured on: its model and GPU resolved (library name or path),
// the GPU running at the profile's clock, validated. kInvalidArgument naming the profile file
// and /scenario field for an unknown model or GPU or an inconsistent layout.
absl::StatusOr<Scenario> ScenarioFromProfile(const Profile& profile);

// The profile record of one op of an op list (kind, shape, name, module; no timing).
ProfiledOp ToProfiledOp(const Op& op);
// The time `set` gives one profiled op (its simulated counterpart); errors of the backends
// pass through.
absl::StatusOr<Seconds> SimulateProfiledOp(const BackendSet& set, const ProfiledOp& op);

// The profile scenario record of a Scenario (measure mode writes it). `model_name` is the name
// ResolveModel takes (library stem or path).
ProfileScenario ProfileScenarioOf(const Scenario& scenario, const std::string& model_name);

// The name ResolveModel finds `model` under: its library stem when the library has it.
std::string ModelNameForProfile(const ModelSpec& model);

// Every op one micro-batch runs on one GPU, untimed, with module and phase: one layer of each
// kind the model has (dense, MoE), the embedding and the output layer. What measure mode times.
absl::StatusOr<OpList> ScenarioComputeOps(const Scenario& scenario);

// One op row of the report (times in microseconds, for all repeats of the op).
struct ProfileOpRow {
  std::string layer;   // dense, moe, embedding, output; "" for a profile op
  std::string module;  // attention, mlp, ...; the profile's label for a profile op
  std::string name;
  std::string phase;   // forward, backward_dgrad, backward_wgrad, recompute; "" for a profile op
  std::string shape;   // DescribeProfiledOp-style text
  double simulated_us = 0;
  double projected_us = 0;  // what the projection used
  std::optional<double> measured_us;
  Provenance provenance = Provenance::kSimulated;
  std::string source_shape;  // the measured op a scaled time came from
  double scale = 1.0;        // simulated(target) / simulated(source)
};

// One measured module against the simulate model on the profile's scenario.
struct ProfileModuleRow {
  std::string layer_kind;  // dense, moe, "" (embedding/output)
  std::string module;
  std::optional<double> measured_forward_us;
  std::optional<double> measured_backward_us;
  double simulated_forward_us = 0;
  double simulated_backward_us = 0;
};

// One measured module time (profile `modules`) carried to the target by the ratio of the
// simulate model's module times: projected = measured × simulated(target) / simulated(measured).
// The projection then uses it in place of the module's op times (scaled uniformly; recompute
// with the forward factor); "moe_a2a" scales the EP All-to-All, "layer" the whole composed
// layer (all its compute and exposed communication) on top of the finer modules.
struct ProfileModuleTermRow {
  std::string layer_kind;  // dense, moe, embedding, output
  std::string module;      // attention, mlp, moe, moe_a2a, norms, embedding, output, layer
  std::string phase;       // forward, backward
  double measured_us = 0;
  double simulated_measured_us = 0;  // simulate model on the profile's scenario
  double simulated_target_us = 0;    // simulate model on the target
  double projected_us = 0;
  Provenance provenance = Provenance::kMeasured;  // kScaledFromMeasured when the ratio is not 1
};

// A step-breakdown term and where its inputs came from: measured, scaled_from_measured,
// simulated, "mixed (a measured, b scaled, c simulated)" or "none" (no ops behind it).
struct ProfileTermRow {
  std::string term;
  double time_s = 0;
  std::string provenance;
};

struct ProfileModeReport {
  bool both = false;
  std::string profile_file;
  std::string profile_tool;
  std::string profile_device;
  std::string measured_layout;  // LayoutSummary of the profile's scenario
  std::string measured_model;
  // `both` only: every profile op and module against the simulate model on the measured
  // hardware, and mean/max |error| over the ops.
  std::vector<ProfileOpRow> comparison_ops;
  std::vector<ProfileModuleRow> comparison_modules;
  double mean_abs_op_error_pct = 0;
  double max_abs_op_error_pct = 0;
  // Measured module times the projection used, and the target's ops with their sources (an op
  // inside a measured module carries the module's provenance), and the step terms.
  std::vector<ProfileModuleTermRow> module_terms;
  std::vector<ProfileOpRow> ops;
  std::vector<ProfileTermRow> terms;
  int64_t measured_ops = 0;
  int64_t scaled_ops = 0;
  int64_t simulated_ops = 0;
  Projection projection;                          // from the measured side
  std::optional<Projection> simulated_projection;  // `both` only: pure simulate, same target
  std::vector<std::string> warnings;
};

// Runs profile mode (both = false) or both mode on `target`. kInvalidArgument when the profile
// was measured on another GPU than the target's; errors of the backends and the projection pass
// through.
absl::StatusOr<ProfileModeReport> RunProfileMode(const Scenario& target, const Profile& profile,
                                                 bool both);

// (simulated − measured) / measured in %, 0 without a measurement.
double ErrorPct(double simulated, double measured);

// The ops to measure for a scenario: its compute ops (ScenarioComputeOps) as profile requests,
// each distinct shape once, in first-seen order.
absl::StatusOr<std::vector<ProfiledOp>> DistinctMeasureRequests(const Scenario& scenario);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_PROFILE_MODE_H_
