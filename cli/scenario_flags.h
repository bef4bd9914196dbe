// The flags that describe a scenario, shared by every subcommand: their definitions, grouped so
// each subcommand adds the groups it takes, and the one path from flags to a validated Scenario
// (ScenarioFromFlags). Nothing here models performance; scenario/ resolves and validates.
#ifndef PROJECTOR_CLI_SCENARIO_FLAGS_H_
#define PROJECTOR_CLI_SCENARIO_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/flags.h"
#include "core/training_config.h"
#include "hw_profiles/hardware_profile.h"
#include "scenario/scenario.h"

namespace projector {

// `project`'s scenario flags: --scenario/--case, the job (model, GPU, cluster, clock), the
// parallel layout, the training run (AddTrainingRunFlags), the backends.
void AddScenarioFlags(cxxopts::Options& options);
// What a training stack runs (--stack, --loss-kernel, --train-metric-passes, --torch-compile,
// --fsdp-impl, --hidden-dropout, --attention-dropout): the TrainingOverrides. Every subcommand
// that projects takes them, `validate` and `calibrate` as what-ifs for every case.
void AddStackFlags(cxxopts::Options& options, const std::string& group);
// --attention-kernel, --tp-comm-overlap, --grad-reduce-dtype.
void AddKernelAndCommFlags(cxxopts::Options& options, const std::string& group);
// --precision and the MoE routing flags (--moe-capacity-factor, --moe-pad-to-capacity,
// --moe-imbalance).
void AddPrecisionAndRoutingFlags(cxxopts::Options& options, const std::string& group);

// How the scenario is used: one projection, or the base of a layout search (model, GPU, GPU count,
// sequence and batch required and bounded; the layout left to the search, DP = GPUs).
enum class ScenarioUse { kProjection, kSearchBase };

// Builds the scenario the flags describe: the built-in default, --scenario FILE or --case
// FILE:ID, then each flag over it, the "auto" choices resolved and the whole validated
// (kProjection); or a search base (kSearchBase). kInvalidArgument / kNotFound /
// kFailedPrecondition with the flag or field named.
absl::StatusOr<Scenario> ScenarioFromFlags(const Flags& flags,
                                           ScenarioUse use = ScenarioUse::kProjection);

// The stack flags given (AddStackFlags); absent ones stay unset.
absl::StatusOr<TrainingOverrides> ReadStackFlags(const Flags& flags);
// Applies --hw-overlay to the scenario's GPU (and keeps its path), when given.
absl::Status ApplyHwOverlayFlag(const Flags& flags, Scenario& scenario);
// --gpu-arch (required), --gpus-per-node and a single --gpu-clock-mhz: the hardware of
// `project estimate`.
absl::StatusOr<HardwareProfile> HardwareFromFlags(const Flags& flags);
// --gpu-clock-mhz as a list of clocks, each in [kMinClockMhz, kMaxClockMhz].
absl::StatusOr<std::vector<double>> ClockListFlag(const Flags& flags);

}  // namespace projector

#endif  // PROJECTOR_CLI_SCENARIO_FLAGS_H_
