#include "cli/profile_commands.h"

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/measure/measure_runner.h"
#include "backends/profile/profile_file.h"
#include "cli/cli_options.h"
#include "core/status_macros.h"
#include "projection/projection.h"
#include "report/calibrate_report.h"
#include "report/profile_mode_report.h"
#include "studies/calibrate.h"
#include "studies/profile_mode.h"

namespace projector {
namespace {

// Flags that do not describe a scenario: without any other flag, profile/both project the
// profile's own scenario.
const std::set<std::string> kNonScenarioFlags = {
    "profiling-mode", "profile",        "profile-out",         "hw-overlay",
    "format",         "measure-warmup", "measure-repetitions", "measure-device"};

bool FlagsDescribeScenario(const cxxopts::ParseResult& flags) {
  for (const auto& kv : flags.arguments()) {
    if (!kNonScenarioFlags.contains(kv.key())) return true;
  }
  return false;
}

absl::StatusOr<int64_t> IntFlag(const cxxopts::ParseResult& flags, const char* name,
                                int64_t fallback, int64_t min) {
  if (!flags.count(name)) return fallback;
  const auto v = flags[name].as<int64_t>();
  if (v < min) return absl::InvalidArgumentError(absl::StrCat("--", name, ": must be >= ", min, ", got ", v));
  return v;
}

bool SameRequest(const ProfiledOp& a, const ProfiledOp& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case ProfiledOpKind::kGemm:
      return a.gemm == b.gemm;
    case ProfiledOpKind::kAttention:
      return a.pass == b.pass && a.attention == b.attention;
    case ProfiledOpKind::kMemory:
      return a.memory == b.memory;
    case ProfiledOpKind::kCollective:
      return a.collective == b.collective;
  }
  return false;
}

absl::Status PrintReport(const Scenario& target, const Profile& profile, bool both, bool as_json,
                         std::ostream& out) {
  PROJECTOR_ASSIGN_OR_RETURN(ProfileModeReport report, RunProfileMode(target, profile, both));
  out << (as_json ? ProfileModeJson(target, report).dump(2) + "\n"
                  : ProfileModeText(target, report));
  return absl::OkStatus();
}

absl::Status RunMeasure(const cxxopts::ParseResult& flags, const Scenario& target, bool as_json,
                        std::ostream& out, std::ostream& err) {
  MeasureOptions options;
  PROJECTOR_ASSIGN_OR_RETURN(options.warmup, IntFlag(flags, "measure-warmup", 5, 0));
  PROJECTOR_ASSIGN_OR_RETURN(options.repetitions, IntFlag(flags, "measure-repetitions", 20, 1));
  PROJECTOR_ASSIGN_OR_RETURN(options.device, IntFlag(flags, "measure-device", 0, 0));
  if (MeasureRuntimeName().empty()) {
    // The unavailable runner's message says what is missing and how to build it in.
    return MeasureOps({}, options).status();
  }
  if (!flags.count("profile-out")) {
    return absl::InvalidArgumentError(
        "--profile-out: required with --profiling-mode measure (the profile file to write)");
  }
  PROJECTOR_ASSIGN_OR_RETURN(OpList ops, ScenarioComputeOps(target));
  std::vector<ProfiledOp> requests;
  for (const Op& op : ops) {
    ProfiledOp r = ToProfiledOp(op);
    bool seen = false;
    for (const ProfiledOp& q : requests) seen = seen || SameRequest(q, r);
    if (!seen) requests.push_back(std::move(r));
  }
  err << absl::StrFormat("measuring %d distinct ops on %s ...\n", requests.size(),
                         MeasureRuntimeName());
  PROJECTOR_ASSIGN_OR_RETURN(MeasureResult measured, MeasureOps(requests, options));
  for (const std::string& s : measured.skipped) err << "not measured: " << s << "\n";
  Profile profile;
  profile.origin = flags["profile-out"].as<std::string>();
  profile.scenario = ProfileScenarioOf(target, ModelNameForProfile(target.model));
  profile.tool = measured.tool;
  profile.device = measured.device;
  profile.ops = std::move(measured.ops);
  PROJECTOR_RETURN_IF_ERROR(WriteProfileFile(profile, profile.origin));
  err << absl::StrFormat("wrote %s (%d ops)\n", profile.origin, profile.ops.size());
  return PrintReport(target, profile, /*both=*/false, as_json, out);
}

}  // namespace

void AddProfileFlags(cxxopts::Options& options) {
  // clang-format off
  options.add_options("Profiles")
    ("profile", "Measured profile file (--profiling-mode profile|both)",
     cxxopts::value<std::string>(), "FILE")
    ("profile-out", "Profile file that --profiling-mode measure writes",
     cxxopts::value<std::string>(), "FILE")
    ("hw-overlay", "Hardware overlay from `project calibrate` applied on top of the GPU profile",
     cxxopts::value<std::string>(), "FILE")
    ("measure-warmup", "Untimed runs per op before timing (measure)",
     cxxopts::value<int64_t>(), "N")
    ("measure-repetitions", "Timed runs per op; the median is kept (measure)",
     cxxopts::value<int64_t>(), "N")
    ("measure-device", "GPU index to measure on", cxxopts::value<int64_t>(), "N");
  // clang-format on
}

absl::Status ApplyHwOverlayFlag(const cxxopts::ParseResult& flags, Scenario& scenario) {
  if (!flags.count("hw-overlay")) return absl::OkStatus();
  scenario.hw_overlay_file = flags["hw-overlay"].as<std::string>();
  if (scenario.hw_overlay_file.empty()) {
    return absl::InvalidArgumentError(
        "--hw-overlay: empty file name; give an overlay written by project calibrate");
  }
  absl::Status applied = ApplyHwOverlayFile(scenario.hw_overlay_file, scenario.hw);
  if (!applied.ok()) {
    return absl::Status(applied.code(), absl::StrCat("--hw-overlay: ", applied.message()));
  }
  return absl::OkStatus();
}

absl::Status RunProfilingMode(std::string_view mode, const cxxopts::ParseResult& flags,
                              const Scenario& target, bool as_json, std::ostream& out,
                              std::ostream& err) {
  if (mode == "measure") return RunMeasure(flags, target, as_json, out, err);
  if (mode != "profile" && mode != "both") {
    return absl::InvalidArgumentError(absl::StrCat("--profiling-mode: unknown mode '",
                                                   std::string(mode),
                                                   "'; accepted: simulate, profile, both, measure"));
  }
  if (!flags.count("profile")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--profile: required with --profiling-mode ", std::string(mode),
        " (a profile file written by --profiling-mode measure or by hand)"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(Profile profile, LoadProfileFile(flags["profile"].as<std::string>()));
  if (FlagsDescribeScenario(flags)) return PrintReport(target, profile, mode == "both", as_json, out);
  PROJECTOR_ASSIGN_OR_RETURN(Scenario own, ScenarioFromProfile(profile));
  PROJECTOR_RETURN_IF_ERROR(ApplyHwOverlayFlag(flags, own));
  return PrintReport(own, profile, mode == "both", as_json, out);
}

namespace {

absl::Status WriteOverlay(const std::string& path, const nlohmann::json& overlay) {
  std::ofstream file(path);
  file << overlay.dump(2) << "\n";
  if (!file) return absl::InvalidArgumentError(absl::StrCat("--overlay-out: cannot write ", path));
  return absl::OkStatus();
}

// `project calibrate --cases FILE --gpu-arch NAME`: one compute scale for one GPU's runs.
absl::Status RunStackCalibration(const cxxopts::ParseResult& flags, bool as_json,
                                 std::ostream& out) {
  if (!flags.count("gpu-arch")) {
    return absl::InvalidArgumentError(
        "--gpu-arch: required with --cases (the GPU whose measured runs are fitted)");
  }
  const std::string gpu = flags["gpu-arch"].as<std::string>();
  if (absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(gpu); !hw.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--gpu-arch: ", hw.status().message()));
  }
  ValidationOptions options;
  if (flags.count("only")) options.only = flags["only"].as<std::string>();
  // The stack the runs were taken on: the case schema does not say, and the fitted scale is
  // only meaningful for the kernels that stack runs.
  PROJECTOR_ASSIGN_OR_RETURN(options.training, ReadStackFlags(flags));
  PROJECTOR_ASSIGN_OR_RETURN(
      StackCalibrationResult result,
      CalibrateFromCases(flags["cases"].as<std::string>(), gpu, std::move(options)));
  const std::string path = flags["overlay-out"].as<std::string>();
  const nlohmann::json overlay = StackOverlayJson(result);
  PROJECTOR_RETURN_IF_ERROR(WriteOverlay(path, overlay));
  if (as_json) {
    nlohmann::json j = StackCalibrationJson(result);
    j["overlay_file"] = path;
    j["overlay"] = overlay;
    out << j.dump(2) << "\n";
  } else {
    out << StackCalibrationText(result);
    out << "\nwrote " << path << " (apply with --hw-overlay " << path
        << "; validate --hw-overlay " << path << ")\n";
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunCalibrateCommand(int argc, char** argv, std::ostream& out, std::ostream& err) {
  cxxopts::Options options(
      "project calibrate",
      "Fits the simulate backends' efficiency constants to a measured profile (--profile), or "
      "one compute scale to measured end-to-end runs on one GPU (--cases --gpu-arch), and writes "
      "a hardware overlay (--hw-overlay).");
  BackendSelection defaults;
  // clang-format off
  options.add_options()
    ("h,help", "Show this help")
    ("format", "Output format: text or json", cxxopts::value<std::string>(), "FORMAT")
    ("profile", "Measured profile file", cxxopts::value<std::string>(), "FILE")
    ("cases", "Measured runs in the calibration JSONL schema (stack calibration)",
     cxxopts::value<std::string>(), "FILE")
    ("gpu-arch", "With --cases: the GPU whose runs are fitted", cxxopts::value<std::string>(),
     "NAME")
    ("only", "With --cases: only the cases whose id or source contains TEXT",
     cxxopts::value<std::string>(), "TEXT")
    ("stack", "With --cases: the training stack the runs used (default auto: llm-foundry for "
     "FSDP-only layouts, else megatron), megatron, llm-foundry or torchtitan",
     cxxopts::value<std::string>(), "auto|megatron|llm-foundry|torchtitan")
    ("loss-kernel", "With --cases: the loss kernel the runs used (default auto: the stack's)",
     cxxopts::value<std::string>(), "auto|megatron|pytorch|fused")
    ("train-metric-passes", "With --cases: the metric passes over the logits the runs made "
     "(default auto: the stack's)", cxxopts::value<std::string>(), "auto|N")
    ("torch-compile", "With --cases: the runs used torch.compile (PyTorch-native stacks; default "
     "false: eager)", cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("fsdp-impl", "With --cases: the FSDP implementation the FSDP runs used (default auto: the "
     "stack's)", cxxopts::value<std::string>(), "auto|megatron-fsdp|fsdp1|fsdp2")
    ("hidden-dropout", "With --cases: the runs' hidden dropout (default auto: the stack's for "
     "the model)", cxxopts::value<std::string>(), "auto|P")
    ("attention-dropout", "With --cases: the runs' attention dropout (default auto)",
     cxxopts::value<std::string>(), "auto|P")
    ("overlay-out", "Overlay file to write",
     cxxopts::value<std::string>()->default_value("hw-overlay.json"), "FILE")
    ("gemm-backend", "GEMM backend", cxxopts::value<std::string>()->default_value(defaults.gemm), "NAME")
    ("attention-backend", "Attention backend",
     cxxopts::value<std::string>()->default_value(defaults.attention), "NAME")
    ("memory-backend", "Memory backend",
     cxxopts::value<std::string>()->default_value(defaults.memory), "NAME")
    ("collective-backend", "Collective backend",
     cxxopts::value<std::string>()->default_value(defaults.collective), "NAME");
  // clang-format on
  cxxopts::ParseResult flags;
  try {
    flags = options.parse(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("calibrate: ", e.what()));
  }
  if (flags.count("help")) {
    out << options.help();
    return absl::OkStatus();
  }
  if (!flags.unmatched().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("calibrate: unexpected argument '", flags.unmatched().front(), "'"));
  }
  bool as_json = false;
  if (flags.count("format")) {
    const std::string f = flags["format"].as<std::string>();
    if (f != "text" && f != "json") {
      return absl::InvalidArgumentError(
          absl::StrCat("--format: unknown format '", f, "'; accepted: text, json"));
    }
    as_json = f == "json";
  }
  if (flags.count("profile") && flags.count("cases")) {
    return absl::InvalidArgumentError("--profile and --cases are exclusive; give one of them");
  }
  if (flags.count("cases")) return RunStackCalibration(flags, as_json, out);
  if (!flags.count("profile")) {
    return absl::InvalidArgumentError(
        "--profile: required (the measured profile to fit), or --cases with --gpu-arch");
  }
  PROJECTOR_ASSIGN_OR_RETURN(Profile profile, LoadProfileFile(flags["profile"].as<std::string>()));
  PROJECTOR_ASSIGN_OR_RETURN(Scenario measured, ScenarioFromProfile(profile));
  BackendSelection selection{.gemm = flags["gemm-backend"].as<std::string>(),
                             .attention = flags["attention-backend"].as<std::string>(),
                             .memory = flags["memory-backend"].as<std::string>(),
                             .collective = flags["collective-backend"].as<std::string>()};
  PROJECTOR_ASSIGN_OR_RETURN(CalibrationResult result, Calibrate(profile, measured.hw, selection));
  const std::string path = flags["overlay-out"].as<std::string>();
  PROJECTOR_RETURN_IF_ERROR(WriteOverlay(path, HwOverlayJson(result)));
  if (as_json) {
    nlohmann::json j = CalibrationJson(result);
    j["overlay_file"] = path;
    j["overlay"] = HwOverlayJson(result);
    out << j.dump(2) << "\n";
  } else {
    out << CalibrationText(result);
    out << "wrote " << path << " (apply with --hw-overlay " << path << ")\n";
  }
  (void)err;
  return absl::OkStatus();
}

}  // namespace projector
