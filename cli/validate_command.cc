// `project validate --cases FILE`: every case of a calibration JSONL file projected in simulate
// mode against its measured throughput, with what-ifs applied to all of them.
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/progress.h"
#include "core/status_macros.h"
#include "report/calibrate_report.h"
#include "report/html_report.h"
#include "report/validate_report.h"
#include "scenario/scenario_flags.h"
#include "studies/calibrate.h"
#include "studies/validate.h"
#include "studies/validate_flags.h"

namespace projector {
namespace {

constexpr char kWhatIfs[] = "What-ifs for every case";

constexpr FlagSpec kValidateFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Output format: text or json", "FORMAT"},
};
constexpr FlagSpec kHtmlFlag[] = {
    {"html",
     "Also write the comparison as a self-contained HTML page: projected-vs-measured scatter, "
     "errors by source, summary tables, every case",
     "FILE"},
};

void AddValidateFlags(cxxopts::Options& options) {
  AddFlags(options, "", kValidateFlags);
  AddFlags(options, "", ValidationRunFlags());
  AddFlags(options, "", kHtmlFlag);
  AddFlags(options, "", kProgressFlags);
  AddFlags(options, kWhatIfs, ValidationWhatIfFlags());
}

}  // namespace

absl::Status RunValidateCommand(int argc, char** argv, const Output& io) {
  cxxopts::Options options("project validate",
                           "Projects every case of a calibration JSONL file in simulate mode and "
                           "compares with the measured throughput.");
  AddValidateFlags(options);
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<FlagValues> parsed,
                             ParseFlags(options, argc, argv, 1, "validate: ", "", io.out));
  if (!parsed) return absl::OkStatus();
  const FlagValues& flags = *parsed;
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(flags));
  if (!Given(flags, "cases")) return FlagError("cases", "required (a calibration JSONL file)");
  const std::string cases = StringFlag(flags, "cases");
  PROJECTOR_ASSIGN_OR_RETURN(ValidationOptions validation, ValidationOptionsFromFlags(flags));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string html_path, OutputFileFlag(flags, "html"));
  // The accuracy floor is read before the run so that a bad value fails fast.
  PROJECTOR_ASSIGN_OR_RETURN(const AccuracyFloor floor, AccuracyFloorFromFlags(flags));
  PROJECTOR_ASSIGN_OR_RETURN(const bool show_progress, ProgressFlag(flags));
  ProgressBar bar(io.err, "validate", show_progress);
  validation.on_progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
  absl::StatusOr<ValidationReport> validated = ValidateCasesFile(cases, validation);
  bar.Finish();
  validation.on_progress = nullptr;
  PROJECTOR_ASSIGN_OR_RETURN(const ValidationReport report, std::move(validated));
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
