// `project search`: enumerates the layouts of a job (TP, PP, VPP, CP, EP/ETP, micro-batch,
// recompute, SP, sharding, schedule, MoE switches), projects each and ranks them under a memory
// limit.
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/status_macros.h"
#include "report/html_report.h"
#include "report/search_report.h"
#include "scenario/scenario_flags.h"
#include "studies/search.h"
#include "studies/search_flags.h"

namespace projector {
namespace {

constexpr char kDescription[] =
    "Enumerates every parallel layout of a job, drops the invalid ones (counting why), projects "
    "each one and ranks them under a memory limit.\n"
    "\n"
    "Example:\n"
    "  project search --model llama3.1-70b --gpu-arch mi300x --num-gpus 64 --seq-len 8192 \\\n"
    "                 --global-batch 128 --top 10\n";
constexpr char kJob[] = "Job";
constexpr char kSpace[] = "Search space (comma-separated lists; DP is derived)";
constexpr char kHardwareWhatIfs[] = "Hardware what-ifs";

constexpr FlagSpec kOutputFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Output format: text or json (json lists every ranked layout)", "FORMAT"},
    {"top", "Layouts shown in the text output", "K", FlagArity::kValue, "10"},
    {"html",
     "Also write the search as a self-contained HTML page: TGS against peak memory of every layout "
     "with the Pareto front, and the best --top layouts with their commands",
     "FILE"},
};

void AddSearchFlags(cxxopts::Options& options) {
  AddFlags(options, "", kOutputFlags);
  AddFlags(options, "", SearchRunFlags());
  AddFlags(options, "", kProgressFlags);
  for (std::span<const FlagSpec> job :
       {SearchJobFlags(), PrecisionAndRoutingFlags(), KernelAndCommFlags(), StackFlags()}) {
    AddFlags(options, kJob, job);
  }
  AddFlags(options, kHardwareWhatIfs, HardwareWhatIfFlags());
  AddFlags(options, kSpace, SearchSpaceFlags());
}

// Progress on stderr once a search runs past a second; `shown` records that a line was drawn.
std::function<void(const SearchProgress&)> ProgressLine(std::ostream& err, bool& shown) {
  return [&err, &shown](const SearchProgress& p) {
    if (p.elapsed_s < 1.0) return;
    err << SearchProgressLine(p) << std::flush;
    shown = true;
  };
}

}  // namespace

absl::Status RunSearchCommand(int argc, char** argv, const Output& io) {
  cxxopts::Options options("project search", kDescription);
  AddSearchFlags(options);
  PROJECTOR_ASSIGN_OR_RETURN(
      const std::optional<FlagValues> parsed,
      ParseFlags(options, argc, argv, 1, "search: ", " (see project search --help)", io.out,
                 {"", kJob, kHardwareWhatIfs, kSpace}));
  if (!parsed) return absl::OkStatus();
  const FlagValues& flags = *parsed;
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(flags));
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t top_k, IntFlag(flags, "top"));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string html_path, OutputFileFlag(flags, "html"));
  PROJECTOR_ASSIGN_OR_RETURN(const Scenario base,
                             ScenarioFromFlags(flags, ScenarioUse::kSearchBase));
  bool progress_shown = false;
  PROJECTOR_ASSIGN_OR_RETURN(SearchOptions opts, SearchOptionsFromFlags(flags, base));
  PROJECTOR_ASSIGN_OR_RETURN(const bool show_progress, ProgressFlag(flags));
  if (show_progress) opts.progress = ProgressLine(io.err, progress_shown);
  opts.exact_top = top_k;
  PROJECTOR_ASSIGN_OR_RETURN(
      opts.team,
      TeamFor(
          io, [&] { return static_cast<int64_t>(EnumerateCandidates(base, opts.space).size()); },
          "layouts"));
  absl::StatusOr<SearchResult> result = SearchLayouts(base, opts);
  if (progress_shown) io.err << "\n";
  if (!result.ok()) return result.status();
  if (!html_path.empty()) {
    PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("html", html_path, SearchHtml(base, *result, top_k)));
  }
  io.out << (as_json ? SearchResultToJson(base, *result).dump(2) + "\n"
                     : FormatSearchText(base, *result, top_k));
  if (!html_path.empty()) {
    NoteStream(as_json, io.out, io.err)
        << "html: report written to " << html_path << " (open in a browser)\n";
  }
  return absl::OkStatus();
}

}  // namespace projector
