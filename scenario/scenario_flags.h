// The flags that describe a scenario (their names and help, grouped so each subcommand takes
// the groups it needs) and the one path from given flags to a validated Scenario
// (ScenarioFromFlags). The command line and any other front end fill the FlagValues.
#ifndef PROJECTOR_SCENARIO_SCENARIO_FLAGS_H_
#define PROJECTOR_SCENARIO_SCENARIO_FLAGS_H_

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/flag_values.h"
#include "core/training_config.h"
#include "hw_profiles/hardware_profile.h"
#include "scenario/scenario.h"

namespace projector {

// Flags under one title in --help.
struct FlagGroup {
  std::string title;
  std::vector<FlagSpec> flags;
};

// `project`'s scenario flags: "Scenario" (--scenario/--case, model, GPU, cluster, clock),
// "Parallel layout", "Training run" (with the precision, kernel and stack flags) and "Backends".
std::vector<FlagGroup> ScenarioFlagGroups();
// The job of a layout search: model, GPU, GPU count, sequence and batch, --hw-overlay.
std::span<const FlagSpec> SearchJobFlags();
// What a training stack runs (--stack, --loss-kernel, --train-metric-passes, --torch-compile,
// --fsdp-impl, --hidden-dropout, --attention-dropout): the TrainingOverrides. Every subcommand
// that projects takes them, `validate` and `calibrate` as what-ifs for every case.
std::span<const FlagSpec> StackFlags();
// --attention-kernel, --tp-comm-overlap, --grad-reduce-dtype.
std::span<const FlagSpec> KernelAndCommFlags();
// --precision and the MoE routing flags (--moe-capacity-factor, --moe-pad-to-capacity,
// --moe-imbalance).
std::span<const FlagSpec> PrecisionAndRoutingFlags();

// How the scenario is used: one projection, or the base of a layout search (model, GPU, GPU count,
// sequence and batch required and bounded; the layout left to the search, DP = GPUs).
enum class ScenarioUse { kProjection, kSearchBase };

// Builds the scenario the flags describe: the built-in default, --scenario FILE or --case
// FILE:ID, then each flag over it, the "auto" choices resolved and the whole validated
// (kProjection); or a search base (kSearchBase). kInvalidArgument / kNotFound /
// kFailedPrecondition with the flag or field named.
absl::StatusOr<Scenario> ScenarioFromFlags(const FlagValues& flags,
                                           ScenarioUse use = ScenarioUse::kProjection);

// The stack flags given (StackFlags); absent ones stay unset.
absl::StatusOr<TrainingOverrides> ReadStackFlags(const FlagValues& flags);
// --hw-set and its named shorthands (--scale-up-bandwidth-gbs, --nic-bandwidth-gbps,
// --nics-per-node, --hbm-bandwidth-tbs, --hbm-gib): the "Hardware what-ifs" group.
std::vector<FlagSpec> HardwareWhatIfFlags();
// Applies the hardware what-ifs given to the scenario's GPU profile (ApplyHwSettings) and keeps
// them in scenario.hw_settings; before --hw-overlay, which applies on top.
absl::Status ApplyHwWhatIfFlags(const FlagValues& flags, Scenario& scenario);
// Applies --hw-overlay to the scenario's GPU (and keeps its path), when given.
absl::Status ApplyHwOverlayFlag(const FlagValues& flags, Scenario& scenario);
// --gpu-arch (required), --gpus-per-node and a single --gpu-clock-mhz: the hardware of
// `project estimate`.
absl::StatusOr<HardwareProfile> HardwareFromFlags(const FlagValues& flags);
// --gpu-clock-mhz as a list of clocks, each in [kMinClockMhz, kMaxClockMhz].
absl::StatusOr<std::vector<double>> ClockListFlag(const FlagValues& flags);

}  // namespace projector

#endif  // PROJECTOR_SCENARIO_SCENARIO_FLAGS_H_
