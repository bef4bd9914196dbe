// Command-line flags of the `project` executable: their definitions, and how they build a
// validated Scenario (defaults <- --scenario FILE or --case FILE:ID <- individual flags).
// Nothing here models performance.
#ifndef PROJECTOR_CLI_CLI_OPTIONS_H_
#define PROJECTOR_CLI_CLI_OPTIONS_H_

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cxxopts.hpp"
#include "scenario/scenario.h"

namespace projector {

// Adds the scenario flags (model, GPU, cluster, layout, run settings, backends) to `options`.
void AddScenarioFlags(cxxopts::Options& options);

// Builds and validates the scenario the flags describe. kInvalidArgument / kNotFound /
// kFailedPrecondition with the flag or field named.
absl::StatusOr<Scenario> ScenarioFromFlags(const cxxopts::ParseResult& flags);

// Parses one finite decimal number for `flag`: the whole text must be the number ("1.5", "2e3";
// not "1.5abc", "2,3", "0x10", "inf").
absl::StatusOr<double> ParseNumber(const std::string& text, const std::string& flag);
// The value of a number flag declared as cxxopts::value<std::string>(), through ParseNumber.
absl::StatusOr<double> NumberFlag(const cxxopts::ParseResult& flags, const std::string& flag);

// Parses a comma-separated list of positive numbers ("1300,1700,2100") for `flag`.
absl::StatusOr<std::vector<double>> ParsePositiveList(const std::string& text,
                                                      const std::string& flag);

// The path of an output-file flag (--trace, --html): empty when absent; kInvalidArgument for an
// empty name or a mode other than simulate (the files show a simulated replay).
absl::StatusOr<std::string> OutputFileFlag(const cxxopts::ParseResult& flags,
                                           const std::string& flag,
                                           const std::string& mode = "simulate");
// Writes `content` to `path`; kInvalidArgument naming --flag and the reason when it cannot.
absl::Status WriteOutputFile(const std::string& flag, const std::string& path,
                             const std::string& content);

// --gpu-clock-mhz as a list of clocks, each in [kMinClockMhz, kMaxClockMhz].
absl::StatusOr<std::vector<double>> ClockListFlag(const cxxopts::ParseResult& flags);

// Parses a byte size: "1GiB", "512MiB", "4MB", "1e9", "65536".
absl::StatusOr<double> ParseByteSize(const std::string& text, const std::string& flag);

// Maps a status to the process exit code: 2 for bad input, 1 for internal errors.
int ExitCodeFor(const absl::Status& status);

// Reads --moe-capacity-factor, --moe-imbalance and --moe-pad-to-capacity into `training` when
// given (ranges are checked with the model and layout by ValidateMoeRouting).
absl::Status ReadMoeRoutingFlags(const cxxopts::ParseResult& flags, TrainingConfig& training);

// --loss-kernel when given: its LossKernel, nullopt when absent; kInvalidArgument
// "--loss-kernel: unknown loss kernel ..." otherwise. Shared by project, validate and search.
absl::StatusOr<std::optional<LossKernel>> LossKernelFlag(const cxxopts::ParseResult& flags);

// --stack when given: its TrainingStack, nullopt when absent; kInvalidArgument "--stack: unknown
// training stack ..." otherwise. Shared by project, validate and search.
absl::StatusOr<std::optional<TrainingStack>> StackFlag(const cxxopts::ParseResult& flags);

// --train-metric-passes when given: kAutoTrainMetricPasses for "auto" or the count, nullopt when
// absent; kInvalidArgument "--train-metric-passes: ..." for anything but auto or 0..16. Shared by
// project, validate and search.
absl::StatusOr<std::optional<int64_t>> TrainMetricPassesFlag(const cxxopts::ParseResult& flags);

// --stack, --loss-kernel, --train-metric-passes, --torch-compile, --fsdp-impl, --hidden-dropout
// and --attention-dropout, each when given (the readers above; --torch-compile true or false; a
// dropout auto or a probability in [0, 1); kInvalidArgument otherwise).
absl::StatusOr<TrainingOverrides> ReadStackFlags(const cxxopts::ParseResult& flags);

// cxxopts reports "Argument ‘two’ failed to parse" without the flag; this names the flag that
// preceded the bad value in argv ("--tp: 'two' is not a valid value for this flag"), or returns
// the message unchanged.
std::string ExplainParseError(const std::exception& e, int argc, char** argv);

}  // namespace projector

#endif  // PROJECTOR_CLI_CLI_OPTIONS_H_
