// `project validate --cases FILE`: every case of a calibration JSONL file projected in simulate
// mode against its measured throughput, with what-ifs applied to all of them.
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/scenario_flags.h"
#include "core/status_macros.h"
#include "report/calibrate_report.h"
#include "report/html_report.h"
#include "report/validate_report.h"
#include "studies/calibrate.h"
#include "studies/validate.h"

namespace projector {
namespace {

constexpr char kWhatIfs[] = "What-ifs for every case";

void AddValidateFlags(cxxopts::Options& options) {
  // clang-format off
  options.add_options()
    ("h,help", "Show this help")
    ("format", "Output format: text or json", cxxopts::value<std::string>(), "FORMAT")
    ("cases", "Calibration JSONL file (the ../shared/calibration schema)",
     cxxopts::value<std::string>(), "FILE")
    ("threads", "Worker threads (default: all cores)", cxxopts::value<int64_t>(), "N")
    ("only", "Only the cases whose id or source contains TEXT", cxxopts::value<std::string>(),
     "TEXT")
    ("gpu", "Only the cases on this GPU", cxxopts::value<std::string>(), "NAME")
    ("hw-overlay", "Hardware overlays from `project calibrate` (comma-separated), each applied to "
     "the cases on the GPU it was fitted for", cxxopts::value<std::vector<std::string>>(),
     "FILE[,FILE]")
    ("fit-scales", "Also fit, per source and GPU with 3 or more cases, the compute scale that "
     "best matches them (project calibrate --cases), to show which stack is off by how much")
    ("min-within-20-pct", "Fail (exit 3) when fewer cases are within 20%",
     cxxopts::value<std::string>(), "PCT")
    ("max-median-error-pct", "Fail (exit 3) when the median |error| is larger",
     cxxopts::value<std::string>(), "PCT")
    ("html", "Also write the comparison as a self-contained HTML page: projected-vs-measured "
     "scatter, errors by source, summary tables, every case", cxxopts::value<std::string>(),
     "FILE");
  AddKernelAndCommFlags(options, kWhatIfs);
  AddStackFlags(options, kWhatIfs);
  options.add_options(kWhatIfs)
    ("overlap-grad-reduce", "DP gradient reduction overlapped with backward (default true; "
     "false = after the backward, as Megatron-LM before 2023)",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("distributed-optimizer", "Every non-FSDP case with DP > 1: optimizer state sharded over "
     "DP (default true, the case format does not say; false = replicated, as Megatron-LM before "
     "2022)", cxxopts::value<bool>()->implicit_value("true"), "BOOL");
  // clang-format on
}

// A --attention-kernel value for validate: auto, flash, unfused or a kernel some library
// profile names; any other name is a typo (no case's GPU could run it).
absl::StatusOr<std::string> ValidationKernel(const std::string& value) {
  std::vector<std::string> valid(std::begin(kAttentionKernelRequests),
                                 std::end(kAttentionKernelRequests));
  for (std::string& name : ListLibraryAttentionKernels()) valid.push_back(std::move(name));
  if (std::find(valid.begin(), valid.end(), value) != valid.end()) return value;
  return FlagError("attention-kernel", absl::StrCat("unknown kernel '", value,
                                                    "'; valid: ", absl::StrJoin(valid, ", ")));
}

// The filters and what-ifs of a validation.
absl::StatusOr<ValidationOptions> ValidationOptionsFromFlags(const Flags& flags) {
  ValidationOptions v;
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t threads,
                             IntFlag(flags, "threads", {.min = 0, .max = 1024}, 0));
  v.threads = static_cast<int>(threads);
  if (Given(flags, "only")) v.only = StringFlag(flags, "only");
  if (Given(flags, "attention-kernel")) {
    PROJECTOR_ASSIGN_OR_RETURN(v.attention_kernel,
                               ValidationKernel(StringFlag(flags, "attention-kernel")));
  }
  PROJECTOR_ASSIGN_OR_RETURN(v.training, ReadStackFlags(flags));
  if (Given(flags, "gpu")) {
    v.gpu = StringFlag(flags, "gpu");
    if (absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(v.gpu); !hw.ok()) {
      return FlagError("gpu", hw.status().message());
    }
  }
  if (Given(flags, "hw-overlay")) {
    for (const std::string& path : flags["hw-overlay"].as<std::vector<std::string>>()) {
      PROJECTOR_ASSIGN_OR_RETURN(ValidationOptions::Overlay o, LoadValidationOverlay(path));
      v.hw_overlays.push_back(std::move(o));
    }
  }
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "tp-comm-overlap", v.tp_comm_overlap));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "overlap-grad-reduce", v.overlap_grad_reduce));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "distributed-optimizer", v.distributed_optimizer));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<DType> grad_dtype,
                             ParsedFlag<DType>(flags, "grad-reduce-dtype", &ParseGradReduceDtype));
  if (grad_dtype) v.grad_reduce_dtype = *grad_dtype;
  return v;
}

absl::StatusOr<AccuracyFloor> AccuracyFloorFromFlags(const Flags& flags) {
  AccuracyFloor floor;
  for (auto [name, target] : {std::pair{"max-median-error-pct", &floor.max_median_abs_error_pct},
                              {"min-within-20-pct", &floor.min_within_20_pct}}) {
    if (!Given(flags, name)) continue;
    PROJECTOR_ASSIGN_OR_RETURN(*target, NumberFlag(flags, name));
  }
  return floor;
}

}  // namespace

absl::Status RunValidateCommand(int argc, char** argv, const Output& io) {
  cxxopts::Options options("project validate",
                           "Projects every case of a calibration JSONL file in simulate mode and "
                           "compares with the measured throughput.");
  AddValidateFlags(options);
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<Flags> parsed,
                             ParseFlags(options, argc, argv, 1, "validate: ", "", io.out));
  if (!parsed) return absl::OkStatus();
  const Flags& flags = *parsed;
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(flags));
  if (!Given(flags, "cases")) return FlagError("cases", "required (a calibration JSONL file)");
  const std::string cases = StringFlag(flags, "cases");
  PROJECTOR_ASSIGN_OR_RETURN(const ValidationOptions validation, ValidationOptionsFromFlags(flags));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string html_path, OutputFileFlag(flags, "html"));
  // The accuracy floor is read before the run so that a bad value fails fast.
  PROJECTOR_ASSIGN_OR_RETURN(const AccuracyFloor floor, AccuracyFloorFromFlags(flags));
  PROJECTOR_ASSIGN_OR_RETURN(const ValidationReport report, ValidateCasesFile(cases, validation));
  if (!html_path.empty()) {
    PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("html", html_path, ValidationHtml(report)));
  }
  const bool fit_scales = Given(flags, "fit-scales");
  std::vector<GroupScale> scales;
  if (fit_scales) {
    PROJECTOR_ASSIGN_OR_RETURN(scales, FitScalesBySourceAndGpu(cases, report, validation));
  }
  if (as_json) {
    nlohmann::json j = ValidationToJson(report);
    if (fit_scales) j["fitted_scales"] = GroupScalesJson(scales);
    io.out << j.dump(2) << "\n";
  } else {
    io.out << FormatValidationText(report) << (fit_scales ? GroupScalesText(scales) : "");
  }
  if (!html_path.empty()) {
    NoteStream(as_json, io.out, io.err)
        << "html: report written to " << html_path << " (open in a browser)\n";
  }
  return CheckAccuracyFloor(report, floor);
}

}  // namespace projector
