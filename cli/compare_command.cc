// `project compare`: projections side by side (studies/compare.h): two scenario files, one file
// and the flags that change it, or one job on several GPUs (--gpu-arch a,b,c).
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/status_macros.h"
#include "report/compare_report.h"
#include "report/html_report.h"
#include "scenario/scenario_flags.h"
#include "studies/compare.h"

namespace projector {
namespace {

constexpr char kDescription[] =
    "Projects two or more runs side by side, term by term, and ranks what sets the first two "
    "apart.\n\n"
    "  project compare A.json B.json                  two scenario files\n"
    "  project compare A.json --tp 4 --pp 2           a file, and the flags that change it\n"
    "  project compare --model llama3.1-70b --num-gpus 64 --gpu-arch mi300x,h100-sxm,b200\n"
    "                                                 one job on each GPU\n";

constexpr FlagSpec kOutputFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Output format: text or json", "FORMAT"},
    kPlotsFlag,
    {"html", "Also write the comparison as an HTML page", "FILE"},
};

// The scenario a file describes, validated like `project --scenario FILE`.
absl::StatusOr<Scenario> FromFile(const std::string& path) {
  FlagValues flags;
  flags.Add("scenario", path);
  return ScenarioFromFlags(flags);
}

// The scenario flags given, besides the output ones.
std::vector<std::string> ScenarioFlagsGiven(const FlagValues& flags) {
  std::vector<std::string> out;
  for (const std::string& name : flags.GivenNames()) {
    if (name != "format" && name != "html") out.push_back(name);
  }
  return out;
}

absl::StatusOr<std::vector<CompareSide>> Sides(const std::vector<std::string>& files,
                                               const FlagValues& flags) {
  const std::vector<std::string> given = ScenarioFlagsGiven(flags);
  std::vector<CompareSide> sides;
  if (files.size() == 2) {
    if (!given.empty()) {
      return FlagError(given.front(),
                       "give two scenario files, or one file and the flags that "
                       "change it, not both");
    }
    for (const std::string& f : files) {
      PROJECTOR_ASSIGN_OR_RETURN(Scenario s, FromFile(f));
      sides.push_back(CompareSide{.name = f, .scenario = std::move(s), .projection = {}});
    }
    return sides;
  }
  if (files.size() == 1) {
    if (given.empty()) {
      return absl::InvalidArgumentError(
          "compare: one scenario file needs the flags that change the other side (e.g. --tp 4), "
          "or give a second file");
    }
    PROJECTOR_ASSIGN_OR_RETURN(Scenario a, FromFile(files[0]));
    FlagValues changed = flags;
    changed.Add("scenario", files[0]);
    PROJECTOR_ASSIGN_OR_RETURN(Scenario b, ScenarioFromFlags(changed));
    std::string label = "with";
    for (const std::string& name : given)
      absl::StrAppend(&label, " --", name, " ", flags.Text(name));
    sides.push_back(CompareSide{.name = files[0], .scenario = std::move(a), .projection = {}});
    sides.push_back(CompareSide{.name = label, .scenario = std::move(b), .projection = {}});
    return sides;
  }
  const std::vector<std::string> gpus =
      absl::StrSplit(StringFlag(flags, "gpu-arch"), ',', absl::SkipEmpty());
  if (gpus.size() < 2) {
    return FlagError("gpu-arch",
                     "compare needs two scenario files, one file and flags, or at least two GPUs "
                     "(--gpu-arch mi300x,h100-sxm)");
  }
  for (const std::string& gpu : gpus) {
    FlagValues one = flags;
    one.Add("gpu-arch", gpu);
    PROJECTOR_ASSIGN_OR_RETURN(Scenario s, ScenarioFromFlags(one));
    sides.push_back(CompareSide{.name = gpu, .scenario = std::move(s), .projection = {}});
  }
  return sides;
}

}  // namespace

absl::Status RunCompareCommand(int argc, char** argv, const Output& io) {
  // Scenario files come first, right after the subcommand; the flags follow.
  std::vector<std::string> files;
  int first = 1;
  while (first + 1 < argc && files.size() < 2 && argv[first + 1][0] != '-') {
    files.emplace_back(argv[first + 1]);
    ++first;
  }
  cxxopts::Options options("project compare", kDescription);
  AddFlags(options, "", kOutputFlags);
  for (const FlagGroup& group : ScenarioFlagGroups()) AddFlags(options, group.title, group.flags);
  PROJECTOR_ASSIGN_OR_RETURN(
      const std::optional<FlagValues> flags,
      ParseFlags(options, argc, argv, first, "compare: ", " (see project compare --help)", io.out));
  if (!flags) return absl::OkStatus();
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(*flags));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string html_path, OutputFileFlag(*flags, "html"));
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<CompareSide> sides, Sides(files, *flags));
  PROJECTOR_ASSIGN_OR_RETURN(const Comparison c, CompareScenarios(std::move(sides)));
  io.out << (as_json ? CompareJson(c).dump(2) + "\n" : CompareText(c));
  if (Given(*flags, "plots")) {
    PROJECTOR_ASSIGN_OR_RETURN(const std::string plots_dir, OutputFileFlag(*flags, "plots"));
    PROJECTOR_ASSIGN_OR_RETURN(const size_t plots, WritePlots(plots_dir, CompareHtml(c)));
    NoteStream(as_json, io.out, io.err)
        << "plots: " << plots << " SVG charts written to " << plots_dir << "\n";
  }
  if (!html_path.empty()) {
    PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("html", html_path, CompareHtml(c)));
    NoteStream(as_json, io.out, io.err)
        << "html: report written to " << html_path << " (open in a browser)\n";
  }
  return absl::OkStatus();
}

}  // namespace projector
