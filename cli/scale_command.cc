// `project scale`: the same job over a list of GPU counts, each at its best layout (studies/
// scale.h), with efficiency, breakdown point, Amdahl's fit and the growing term.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/progress.h"
#include "core/status_macros.h"
#include "report/html_report.h"
#include "report/scale_report.h"
#include "scenario/scenario.h"
#include "scenario/scenario_flags.h"
#include "studies/scale.h"
#include "studies/search_flags.h"

namespace projector {
namespace {

constexpr char kDescription[] =
    "Projects one training job over a list of GPU counts, each at its best layout under the "
    "memory limit (the layout search; fixed dimensions such as --tp 8 narrow it), and reports "
    "the scaling efficiency against the smallest count, the breakdown point (efficiency under "
    "70%), Amdahl's serial fraction and maximum speedup, and the step term that grows.\n"
    "\n"
    "Example:\n"
    "  project scale --model llama3.1-70b --gpu-arch h100-sxm --seq-len 8192 --global-batch 1024 "
    "\\\n"
    "                --num-gpus 64,128,256,512,1024 --strong\n";
constexpr char kJob[] = "Job (--num-gpus takes a comma-separated list)";
constexpr char kSpace[] = "Search space (comma-separated lists; DP is derived)";

constexpr FlagSpec kOutputFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Output format: text or json", "FORMAT"},
    {"strong", "Strong scaling: the global batch stays (the default)", "", FlagArity::kSwitch},
    {"weak", "Weak scaling: the global batch grows with the GPU count", "", FlagArity::kSwitch},
    kPlotsFlag,
    {"html", "Also write the study as an HTML page with the scaling curve", "FILE"},
};

}  // namespace

absl::Status RunScaleCommand(int argc, char** argv, const Output& io) {
  cxxopts::Options options("project scale", kDescription);
  AddFlags(options, "", kOutputFlags);
  AddFlags(options, "", SearchRunFlags());
  AddFlags(options, "", kProgressFlags);
  for (std::span<const FlagSpec> job :
       {SearchJobFlags(), PrecisionAndRoutingFlags(), KernelAndCommFlags(), StackFlags()}) {
    AddFlags(options, kJob, job);
  }
  AddFlags(options, kSpace, SearchSpaceFlags());
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<FlagValues> parsed,
                             ParseFlags(options, argc, argv, 1, "scale: ",
                                        " (see project scale --help)", io.out, {"", kJob, kSpace}));
  if (!parsed) return absl::OkStatus();
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(*parsed));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string html_path, OutputFileFlag(*parsed, "html"));
  PROJECTOR_ASSIGN_OR_RETURN(const bool weak, BoolFlag(*parsed, "weak"));
  PROJECTOR_ASSIGN_OR_RETURN(const bool strong, BoolFlag(*parsed, "strong"));
  if (weak && strong) return FlagError("weak", "give --weak or --strong, not both");
  if (!Given(*parsed, "num-gpus")) {
    return FlagError("num-gpus", "required: the GPU counts to project, e.g. 8,16,32,64");
  }
  PROJECTOR_ASSIGN_OR_RETURN(const std::vector<int64_t> counts,
                             IntListFlag(*parsed, "num-gpus", kMaxGpus));
  // The base scenario at the smallest count (the search base validates the job there).
  FlagValues flags = *parsed;
  flags.Add("num-gpus", absl::StrCat(counts.front()));
  PROJECTOR_ASSIGN_OR_RETURN(const Scenario base,
                             ScenarioFromFlags(flags, ScenarioUse::kSearchBase));
  // Only each count's best layout is kept, so the search's pruning keeps just that one exact.
  const ScaleSearchOptions search = [&flags](const Scenario& at) -> absl::StatusOr<SearchOptions> {
    PROJECTOR_ASSIGN_OR_RETURN(SearchOptions opts, SearchOptionsFromFlags(flags, at));
    opts.exact_top = 1;
    return opts;
  };
  PROJECTOR_ASSIGN_OR_RETURN(const bool show_progress, ProgressFlag(*parsed));
  PROJECTOR_ASSIGN_OR_RETURN(WorkTeam* const team,
                             TeamFor(io, [&] { return static_cast<int64_t>(counts.size()); }, "GPU counts"));
  ProgressBar bar(io.err, "scale", show_progress);
  absl::StatusOr<ScaleResult> result =
      RunScaling(base, counts, weak ? ScalingMode::kWeak : ScalingMode::kStrong, search,
                 [&bar](int64_t done, int64_t total) { bar.Update(done, total); }, team);
  bar.Finish();
  if (!result.ok()) {
    const std::string message(result.status().message());
    return message.starts_with("num-gpus: ") ? FlagError("num-gpus", message.substr(10))
                                             : result.status();
  }
  io.out << (as_json ? ScaleJson(base, *result).dump(2) + "\n" : ScaleText(base, *result));
  if (Given(*parsed, "plots")) {
    PROJECTOR_ASSIGN_OR_RETURN(const std::string plots_dir, OutputFileFlag(*parsed, "plots"));
    PROJECTOR_ASSIGN_OR_RETURN(const size_t plots, WritePlots(plots_dir, ScaleHtml(base, *result)));
    NoteStream(as_json, io.out, io.err)
        << "plots: " << plots << " SVG charts written to " << plots_dir << "\n";
  }
  if (!html_path.empty()) {
    PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("html", html_path, ScaleHtml(base, *result)));
    NoteStream(as_json, io.out, io.err)
        << "html: report written to " << html_path << " (open in a browser)\n";
  }
  return absl::OkStatus();
}

}  // namespace projector
