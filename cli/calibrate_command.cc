// `project calibrate`: fits the simulate backends' efficiency constants to a measured profile
// (--profile), or one compute scale to measured end-to-end runs on one GPU (--cases --gpu-arch),
// and writes the hardware overlay that carries them.
#include <string>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/progress.h"
#include "core/status_macros.h"
#include "report/calibrate_report.h"
#include "scenario/scenario_flags.h"
#include "studies/calibrate.h"
#include "studies/profile_mode.h"

namespace projector {
namespace {

constexpr char kStackGroup[] = "With --cases: the stack the runs used (default auto)";

constexpr FlagSpec kCalibrateFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Output format: text or json", "FORMAT"},
    {"profile", "Measured profile file", "FILE"},
    {"cases", "Measured runs in the calibration JSONL schema (stack calibration)", "FILE"},
    {"gpu-arch", "With --cases: the GPU whose runs are fitted", "NAME"},
    {"only", "With --cases: only the cases whose id or source contains TEXT", "TEXT"},
    {"overlay-out", "Overlay file to write", "FILE", FlagArity::kValue, "hw-overlay.json"},
};

void AddCalibrateFlags(cxxopts::Options& options) {
  static const BackendSelection kDefaults;
  const FlagSpec backends[] = {
      {"gemm-backend", "GEMM backend", "NAME", FlagArity::kValue, kDefaults.gemm},
      {"attention-backend", "Attention backend", "NAME", FlagArity::kValue, kDefaults.attention},
      {"memory-backend", "Memory backend", "NAME", FlagArity::kValue, kDefaults.memory},
      {"collective-backend", "Collective backend", "NAME", FlagArity::kValue,
       kDefaults.collective}};
  AddFlags(options, "", kCalibrateFlags);
  AddFlags(options, "", backends);
  AddFlags(options, "", kProgressFlags);
  AddFlags(options, kStackGroup, StackFlags());
}

// Writes the overlay and says where, or prints it with the fit under --format json.
absl::Status WriteOverlayAndReport(const FlagValues& flags, const nlohmann::json& overlay,
                                   nlohmann::json fit_json, const std::string& fit_text,
                                   absl::string_view apply_hint, bool as_json, const Output& io) {
  const std::string path = StringFlag(flags, "overlay-out");
  PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("overlay-out", path, overlay.dump(2) + "\n"));
  if (as_json) {
    fit_json["overlay_file"] = path;
    fit_json["overlay"] = overlay;
    io.out << fit_json.dump(2) << "\n";
    return absl::OkStatus();
  }
  io.out << fit_text << "wrote " << path << " (apply with --hw-overlay " << path << apply_hint
         << ")\n";
  return absl::OkStatus();
}

// `--cases FILE --gpu-arch NAME`: one compute scale for one GPU's runs.
absl::Status RunStackCalibration(const FlagValues& flags, bool as_json, const Output& io) {
  if (!Given(flags, "gpu-arch")) {
    return FlagError("gpu-arch", "required with --cases (the GPU whose measured runs are fitted)");
  }
  const std::string gpu = StringFlag(flags, "gpu-arch");
  if (absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(gpu); !hw.ok()) {
    return FlagError("gpu-arch", hw.status().message());
  }
  ValidationOptions options;
  if (Given(flags, "only")) options.only = StringFlag(flags, "only");
  // The stack the runs were taken on: the case schema does not say, and the fitted scale is
  // only meaningful for the kernels that stack runs.
  PROJECTOR_ASSIGN_OR_RETURN(options.training, ReadStackFlags(flags));
  PROJECTOR_ASSIGN_OR_RETURN(const bool show_progress, ProgressFlag(flags));
  ProgressBar bar(io.err, "calibrate", show_progress);
  absl::StatusOr<StackCalibrationResult> fitted =
      CalibrateFromCases(StringFlag(flags, "cases"), gpu, std::move(options),
                         [&bar](int64_t done, int64_t total) { bar.Update(done, total); });
  bar.Finish();
  PROJECTOR_ASSIGN_OR_RETURN(const StackCalibrationResult result, std::move(fitted));
  const std::string path = StringFlag(flags, "overlay-out");
  return WriteOverlayAndReport(flags, StackOverlayJson(result), StackCalibrationJson(result),
                               StackCalibrationText(result) + "\n",
                               absl::StrCat("; validate --hw-overlay ", path), as_json, io);
}

// `--profile FILE`: the efficiency constants the profile's ops constrain.
absl::Status RunProfileCalibration(const FlagValues& flags, bool as_json, const Output& io) {
  PROJECTOR_ASSIGN_OR_RETURN(const Profile profile, LoadProfileFile(StringFlag(flags, "profile")));
  PROJECTOR_ASSIGN_OR_RETURN(const Scenario measured, ScenarioFromProfile(profile));
  const BackendSelection selection{.gemm = StringFlag(flags, "gemm-backend"),
                                   .attention = StringFlag(flags, "attention-backend"),
                                   .memory = StringFlag(flags, "memory-backend"),
                                   .collective = StringFlag(flags, "collective-backend"),
                                   .network = nullptr};
  PROJECTOR_ASSIGN_OR_RETURN(const CalibrationResult result,
                             Calibrate(profile, measured.hw, selection));
  return WriteOverlayAndReport(flags, HwOverlayJson(result), CalibrationJson(result),
                               CalibrationText(result), "", as_json, io);
}

}  // namespace

absl::Status RunCalibrateCommand(int argc, char** argv, const Output& io) {
  cxxopts::Options options(
      "project calibrate",
      "Fits the simulate backends' efficiency constants to a measured profile (--profile), or "
      "one compute scale to measured end-to-end runs on one GPU (--cases --gpu-arch), and writes "
      "a hardware overlay (--hw-overlay).");
  AddCalibrateFlags(options);
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<FlagValues> parsed,
                             ParseFlags(options, argc, argv, 1, "calibrate: ", "", io.out));
  if (!parsed) return absl::OkStatus();
  const FlagValues& flags = *parsed;
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(flags));
  // A profile fits in well under a second and draws no bar; the flags are checked either way.
  PROJECTOR_RETURN_IF_ERROR(ProgressFlag(flags).status());
  if (Given(flags, "profile") && Given(flags, "cases")) {
    return absl::InvalidArgumentError("--profile and --cases are exclusive; give one of them");
  }
  if (Given(flags, "cases")) return RunStackCalibration(flags, as_json, io);
  if (!Given(flags, "profile")) {
    return FlagError("profile",
                     "required (the measured profile to fit), or --cases with --gpu-arch");
  }
  return RunProfileCalibration(flags, as_json, io);
}

}  // namespace projector
