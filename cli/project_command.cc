// `project [flags]`: one projection (text, JSON, --trace, --html, --show-ops), a clock sweep, or
// a run driven by a measured profile (--profiling-mode profile|both) or measuring one
// (--profiling-mode measure).
#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "backends/backend_registry.h"
#include "backends/measure/measure_runner.h"
#include "backends/profile/profile_file.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/status_macros.h"
#include "core/units.h"
#include "projection/projection.h"
#include "report/html_report.h"
#include "report/library_report.h"
#include "report/lod_report.h"
#include "report/profile_mode_report.h"
#include "report/report.h"
#include "report/what_if_report.h"
#include "scenario/scenario_flags.h"
#include "studies/bottlenecks.h"
#ifdef PROJECTOR_HAVE_CHAKRA
#include "studies/chakra_writer.h"
#endif
#include "studies/fit_advice.h"
#include "studies/lod_high.h"
#include "studies/profile_mode.h"
#include "studies/sensitivity.h"
#include "studies/what_if.h"

namespace projector {
namespace {

#ifdef PROJECTOR_HAVE_CHAKRA
constexpr bool kChakraBuilt = true;
absl::StatusOr<ChakraExportSummary> ExportChakra(const Scenario& scenario,
                                                 const Projection& projection,
                                                 const std::string& prefix) {
  return WriteChakraTraces(scenario, projection, prefix);
}
#else
constexpr bool kChakraBuilt = false;
// What --chakra-out reports in a build without protobuf.
struct ChakraExportSummary {
  int64_t ranks = 0, nodes = 0, groups = 0;
  std::string groups_file;
};
absl::StatusOr<ChakraExportSummary> ExportChakra(const Scenario&, const Projection&,
                                                 const std::string&) {
  return FlagError("chakra-out",
                   "this build has no Chakra export: install Debian's protobuf-compiler and "
                   "libprotobuf-dev (tools/bootstrap.sh does) and build again");
}
#endif

constexpr char kUsage[] =
    "Projects LLM training throughput (tokens/GPU/s) for a model, GPU, cluster and layout, and "
    "inference serving.\n"
    "\n"
    "  project [flags]                          project one training step\n"
    "  project estimate gemm|attention|collective [flags]   time one op\n"
    "  project validate --cases FILE.jsonl      projected vs measured over benchmark cases\n"
    "  project search --model M --gpu-arch G --num-gpus N --seq-len S --global-batch B\n"
    "                                           rank every valid layout under a memory limit\n"
    "  project scale ... --num-gpus 64,128,...  one job over GPU counts, each at its best layout\n"
    "  project compare A.json B.json            projections side by side, term by term\n"
    "  project sweep ... --networks A,B --out F  every layout on each network, JSON lines, "
    "resumable\n"
    "  project serve --model M --gpu-arch G --qps R   an inference deployment under requests\n"
    "  project network show|route|export|validate     network files and collectives\n"
    "  project calibrate --profile FILE         fit efficiency constants to a measured profile\n"
    "\n"
    "Example:\n"
    "  project --profiling-mode simulate --gpu-arch mi300x --model llama3.1-70b --num-gpus 64 \\\n"
    "          --fsdp --recompute full --seq-len 8192 --micro-batch 1 --global-batch 64\n";

constexpr FlagSpec kOutputFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"version", "Print the version and the optional parts this build has", "", FlagArity::kSwitch},
    {"require-fit",
     "Exit 3 when the projection does not fit in GPU memory (after printing it and the changes "
     "that would make it fit)",
     "", FlagArity::kSwitch},
    {"format", "Output format: text or json", "FORMAT"},
    {"list-models", "List the model library", "", FlagArity::kSwitch},
    {"list-gpus", "List the hardware profile library", "", FlagArity::kSwitch},
    {"list-backends", "List the backends", "", FlagArity::kSwitch},
    {"show-ops", "Also list every timed op of each layer kind: shape, time, TFLOP/s, GB/s", "",
     FlagArity::kSwitch},
    {"sensitivity",
     "Also re-project the step with each run setting switched alone (CUDA graphs, MoE token "
     "drop, DeepEP, the All-to-All overlap, MoE router padding, each other FP8 recipe, "
     "gradient-reduction overlap and precision, TP overlap) and list how far each moves it: the "
     "spread of settings not pinned down",
     "", FlagArity::kSwitch},
    {"trace",
     "Also write the replayed step (every forward/backward/weight-gradient pass per pipeline rank, "
     "then the gradient sync and optimizer) as a Chrome trace for ui.perfetto.dev",
     "FILE"},
    {"chakra-out",
     "Also write the step as Chakra execution traces that ASTRA-sim replays: PREFIX.<rank>.et per "
     "GPU (every op, collective and pipeline send/receive of its program) and "
     "PREFIX.comm_groups.json (docs/event_engine.md)",
     "PREFIX"},
    {"html",
     "Also write the projection as a self-contained HTML page with charts: step breakdown, "
     "per-module times, memory per stage, pipeline timeline, slowest ops",
     "FILE"},
    {"lod",
     "Level of detail: medium (default: the analytical projection) or high (also replay the step "
     "as events on the discrete-event engine and compare; docs/event_engine.md)",
     "medium|high"},
    kPlotsFlag,
    {"out",
     "Also write scenario.json (the resolved configuration), projection.json (the results) and "
     "bottlenecks.json into this directory (created if missing; docs/input_files.md)",
     "DIR"},
    {"slow-rank",
     "With --lod high: global rank R computes FACTOR times as long as its peers (a straggler); "
     "the report gives the step with and without it",
     "R:FACTOR"},
    {"slow-link",
     "With --lod high: the link between global ranks A and B carries data FACTOR times slower "
     "(a pipeline link between adjacent stages, or a DP ring link; with --network, the cable "
     "between network nodes A and B, as `project network route` numbers them); the report says "
     "what crosses it and gives the step with and without it",
     "A:B:FACTOR"},
    {"congestion",
     "With --lod high: aware (default: a rank's DP reduces and the activations it sends share "
     "its NIC where both cross nodes) or unaware (each on its own link)",
     "aware|unaware"},
    {"no-fold",
     "With --lod high: simulate every GPU instead of one per pipeline stage (the GPUs of a TP "
     "group leave each pass together, a DP ring starts each bucket together)",
     "", FlagArity::kSwitch},
};
constexpr FlagSpec kProfileFlags[] = {
    {"profile", "Measured profile file (--profiling-mode profile|both)", "FILE"},
    {"profile-out", "Profile file that --profiling-mode measure writes", "FILE"},
    {"hw-overlay", "Hardware overlay from `project calibrate` applied on top of the GPU profile",
     "FILE"},
    {"measure-warmup", "Untimed runs per op before timing (measure)", "N"},
    {"measure-repetitions", "Timed runs per op; the median is kept (measure)", "N"},
    {"measure-device", "GPU index to measure on", "N"},
};

void AddProjectFlags(cxxopts::Options& options) {
  AddFlags(options, "", kOutputFlags);
  for (const FlagGroup& group : ScenarioFlagGroups()) AddFlags(options, group.title, group.flags);
  AddFlags(options, "Profiles", kProfileFlags);
}

// Flags that do not describe a scenario: without any other flag, profile/both project the
// profile's own scenario.
bool FlagsDescribeScenario(const FlagValues& flags) {
  static const std::set<std::string> kNonScenarioFlags = {
      "profiling-mode", "profile",        "profile-out",         "hw-overlay",
      "format",         "measure-warmup", "measure-repetitions", "measure-device"};
  for (const std::string& name : flags.GivenNames()) {
    if (!kNonScenarioFlags.contains(name)) return true;
  }
  return false;
}

absl::Status PrintProfileReport(const Scenario& target, const Profile& profile, bool both,
                                bool as_json, const Output& io) {
  PROJECTOR_ASSIGN_OR_RETURN(ProfileModeReport report, RunProfileMode(target, profile, both));
  io.out << (as_json ? ProfileModeJson(target, report).dump(2) + "\n"
                     : ProfileModeText(target, report));
  return absl::OkStatus();
}

// --profiling-mode measure: times the scenario's distinct ops on the local GPU, writes them as
// a profile (--profile-out) and projects from it.
absl::Status RunMeasureMode(const FlagValues& flags, const Scenario& target, bool as_json,
                            const Output& io) {
  MeasureOptions options;
  PROJECTOR_ASSIGN_OR_RETURN(options.warmup,
                             IntFlag(flags, "measure-warmup", {.min = 0}, options.warmup));
  PROJECTOR_ASSIGN_OR_RETURN(options.repetitions,
                             IntFlag(flags, "measure-repetitions", {}, options.repetitions));
  PROJECTOR_ASSIGN_OR_RETURN(options.device,
                             IntFlag(flags, "measure-device", {.min = 0}, options.device));
  if (MeasureRuntimeName().empty()) {
    // The unavailable runner's message says what is missing and how to build it in.
    return MeasureOps({}, options).status();
  }
  if (!Given(flags, "profile-out")) {
    return FlagError("profile-out",
                     "required with --profiling-mode measure (the profile file to write)");
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<ProfiledOp> requests, DistinctMeasureRequests(target));
  io.err << absl::StrFormat("measuring %d distinct ops on %s ...\n", requests.size(),
                            MeasureRuntimeName());
  PROJECTOR_ASSIGN_OR_RETURN(MeasureResult measured, MeasureOps(requests, options));
  for (const std::string& s : measured.skipped) io.err << "not measured: " << s << "\n";
  Profile profile;
  profile.origin = StringFlag(flags, "profile-out");
  profile.scenario = ProfileScenarioOf(target, ModelNameForProfile(target.model));
  profile.tool = measured.tool;
  profile.device = measured.device;
  profile.ops = std::move(measured.ops);
  PROJECTOR_RETURN_IF_ERROR(WriteProfileFile(profile, profile.origin));
  io.err << absl::StrFormat("wrote %s (%d ops)\n", profile.origin, profile.ops.size());
  return PrintProfileReport(target, profile, /*both=*/false, as_json, io);
}

// --profiling-mode profile|both: the profile's times where they fit, simulated elsewhere; the
// profile's own scenario when no flag describes another.
absl::Status RunProfileMode(absl::string_view mode, const FlagValues& flags, const Scenario& target,
                            bool as_json, const Output& io) {
  if (!Given(flags, "profile")) {
    return FlagError("profile", absl::StrCat("required with --profiling-mode ", mode,
                                             " (a profile file written by --profiling-mode "
                                             "measure or by hand)"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(Profile profile, LoadProfileFile(StringFlag(flags, "profile")));
  const bool both = mode == "both";
  if (FlagsDescribeScenario(flags)) return PrintProfileReport(target, profile, both, as_json, io);
  PROJECTOR_ASSIGN_OR_RETURN(Scenario own, ScenarioFromProfile(profile));
  PROJECTOR_RETURN_IF_ERROR(ApplyHwOverlayFlag(flags, own));
  return PrintProfileReport(own, profile, both, as_json, io);
}

// The flags of a projection's extra outputs.
struct ProjectionOutputs {
  std::string trace_path;     // --trace, empty when not asked
  std::string chakra_prefix;  // --chakra-out
  std::string html_path;      // --html
  std::string out_dir;        // --out
  std::string plots_dir;      // --plots
  bool show_ops = false;
  bool sensitivity = false;  // --sensitivity: RunSettingSensitivity after the bottlenecks
  bool require_fit = false;  // --require-fit: exit 3 when it does not fit
  bool lod_high = false;     // --lod high
  HighLodOptions high;       // --slow-rank, --slow-link, --congestion
};

// --slow-rank R:FACTOR (with --lod high).
absl::StatusOr<std::optional<SlowRank>> SlowRankFlag(const FlagValues& flags, bool lod_high) {
  if (!Given(flags, "slow-rank")) return std::nullopt;
  if (!lod_high) {
    return FlagError("slow-rank", "needs --lod high (a straggler shows only in the event replay)");
  }
  const std::string text = StringFlag(flags, "slow-rank");
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  int64_t rank = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &rank)) {
    return FlagError("slow-rank", absl::StrCat("'", text, "' is not RANK:FACTOR (e.g. 12:1.5)"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(const double factor, ParseNumber(parts[1], "slow-rank"));
  return SlowRank{.rank = rank, .factor = factor};
}

// --slow-link A:B:FACTOR (with --lod high).
absl::StatusOr<std::optional<SlowLink>> SlowLinkFlag(const FlagValues& flags, bool lod_high) {
  if (!Given(flags, "slow-link")) return std::nullopt;
  if (!lod_high) {
    return FlagError("slow-link",
                     "needs --lod high (a degraded link shows only in the event replay)");
  }
  const std::string text = StringFlag(flags, "slow-link");
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  int64_t a = 0, b = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &a) || !absl::SimpleAtoi(parts[1], &b)) {
    return FlagError("slow-link",
                     absl::StrCat("'", text, "' is not RANK:RANK:FACTOR (e.g. 0:8:2)"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(const double factor, ParseNumber(parts[2], "slow-link"));
  return SlowLink{.a = a, .b = b, .factor = factor};
}

// --lod: medium (the default) or high.
absl::StatusOr<bool> LodHighFlag(const FlagValues& flags) {
  if (!Given(flags, "lod")) return false;
  const std::string lod = StringFlag(flags, "lod");
  if (lod == "medium" || lod == "high") return lod == "high";
  return FlagError("lod",
                   absl::StrCat("unknown level of detail '", lod, "'; accepted: medium, high"));
}

absl::Status RunClockSweep(const Scenario& scenario, const std::vector<double>& clocks,
                           const ProjectionOutputs& outputs, bool as_json, const Output& io) {
  if (!outputs.trace_path.empty()) {
    return FlagError("trace", "one projection per trace; give a single --gpu-clock-mhz");
  }
  if (!outputs.chakra_prefix.empty()) {
    return FlagError("chakra-out", "one projection per export; give a single --gpu-clock-mhz");
  }
  if (outputs.lod_high) {
    return FlagError("lod", "high replays one projection; give a single --gpu-clock-mhz");
  }
  // The profile's own clock joins the sweep as the baseline the rows compare with; the rows run
  // from the lowest clock up, so the charts draw one line.
  std::vector<double> with_base = clocks;
  const double base_mhz = ToMegahertz(scenario.hw.gpu.sustained_clock);
  if (std::find(clocks.begin(), clocks.end(), base_mhz) == clocks.end()) {
    with_base.push_back(base_mhz);
  }
  std::sort(with_base.begin(), with_base.end());
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<ClockRow> rows, ClockWhatIf(scenario, with_base));
  if (!outputs.html_path.empty()) {
    PROJECTOR_RETURN_IF_ERROR(
        WriteOutputFile("html", outputs.html_path, ClockWhatIfHtml(scenario, rows)));
  }
  io.out << (as_json ? ClockWhatIfJson(scenario, rows).dump(2) + "\n"
                     : ClockWhatIfText(scenario, rows));
  if (!outputs.html_path.empty()) {
    NoteStream(as_json, io.out, io.err)
        << "html: report written to " << outputs.html_path << " (open in a browser)\n";
  }
  return absl::OkStatus();
}

// A trace or page keeps every pass of the replayed step; refuse one beyond kMaxTimelinePasses.
absl::Status CheckTimelineSize(const Scenario& scenario, const ProjectionOutputs& outputs) {
  if (outputs.trace_path.empty() && outputs.html_path.empty() && outputs.chakra_prefix.empty()) {
    return absl::OkStatus();
  }
  const double passes = ReplayedPasses(scenario);
  if (passes <= kMaxTimelinePasses) return absl::OkStatus();
  return FlagError(!outputs.trace_path.empty()  ? "trace"
                   : !outputs.html_path.empty() ? "html"
                                                : "chakra-out",
                   absl::StrFormat("the step replays %.0f passes (pp·vpp·micro-batches·passes per "
                                   "micro-batch), more than the %d a trace or page keeps; project "
                                   "fewer micro-batches (a smaller global batch) to see the "
                                   "schedule",
                                   passes, kMaxTimelinePasses));
}

// --out DIR: the resolved scenario, the projection and its bottlenecks as three JSON files.
absl::Status WriteExports(const std::string& dir, const Scenario& scenario,
                          const Projection& projection,
                          const std::vector<Bottleneck>& bottlenecks) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir)) {
    return FlagError("out", absl::StrCat("cannot create the directory '", dir, "'"));
  }
  const std::filesystem::path root(dir);
  PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("out", (root / "scenario.json").string(),
                                            ScenarioToJson(scenario).dump(2) + "\n"));
  PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("out", (root / "projection.json").string(),
                                            ProjectionJson(scenario, projection).dump(2) + "\n"));
  return WriteOutputFile(
      "out", (root / "bottlenecks.json").string(),
      BottlenecksJson(bottlenecks, projection.tokens_per_s_per_gpu).dump(2) + "\n");
}

absl::Status RunOneProjection(const Scenario& scenario, const ProjectionOutputs& outputs,
                              bool as_json, const Output& io) {
  absl::StatusOr<BackendSet> backends = MakeBackendSet(scenario.backends, scenario.hw);
  if (!backends.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("backends: ", backends.status().message()));
  }
  PROJECTOR_RETURN_IF_ERROR(CheckTimelineSize(scenario, outputs));
  const bool page = !outputs.html_path.empty() || !outputs.plots_dir.empty();
  const bool chakra = !outputs.chakra_prefix.empty();
  const ProjectionOptions options{.keep_ops = outputs.show_ops || page || chakra,
                                  .keep_timeline = !outputs.trace_path.empty() || page || chakra};
  std::optional<HighLodResult> high;
  if (outputs.lod_high) {
    PROJECTOR_ASSIGN_OR_RETURN(
        high, ProjectAtHighLod(scenario, RefsOf(*backends), options, outputs.high));
  }
  PROJECTOR_ASSIGN_OR_RETURN(Projection projection,
                             high ? absl::StatusOr<Projection>(high->medium)
                                  : Project(scenario, RefsOf(*backends), options));
  if (!outputs.trace_path.empty()) {
    const nlohmann::json trace =
        high ? HighLodTraceJson(scenario, *high) : TimelineTraceJson(scenario, projection);
    PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("trace", outputs.trace_path, trace.dump() + "\n"));
  }
  std::optional<ChakraExportSummary> chakra_export;
  if (chakra) {
    PROJECTOR_ASSIGN_OR_RETURN(chakra_export,
                               ExportChakra(scenario, projection, outputs.chakra_prefix));
  }
  PROJECTOR_ASSIGN_OR_RETURN(const std::vector<Bottleneck> bottlenecks,
                             AnalyzeBottlenecks(scenario, projection));
  std::optional<std::vector<SettingChange>> sensitivity;
  if (outputs.sensitivity) {
    PROJECTOR_ASSIGN_OR_RETURN(sensitivity, RunSettingSensitivity(scenario));
  }
  size_t plots = 0;
  if (page) {
    const std::string html =
        ProjectionHtml(scenario, projection, &bottlenecks, high ? &*high : nullptr,
                       sensitivity ? &*sensitivity : nullptr);
    if (!outputs.html_path.empty()) {
      PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("html", outputs.html_path, html));
    }
    if (!outputs.plots_dir.empty()) {
      PROJECTOR_ASSIGN_OR_RETURN(plots, WritePlots(outputs.plots_dir, html));
    }
  }
  std::optional<FitAdvice> advice;
  if (!projection.fits_in_memory) {
    PROJECTOR_ASSIGN_OR_RETURN(advice, AdviseFit(scenario, projection));
  }
  if (!outputs.out_dir.empty()) {
    PROJECTOR_RETURN_IF_ERROR(WriteExports(outputs.out_dir, scenario, projection, bottlenecks));
  }
  if (as_json) {
    nlohmann::json j = ProjectionJson(scenario, projection);
    j["bottlenecks"] = BottlenecksJson(bottlenecks, projection.tokens_per_s_per_gpu);
    if (advice) j["fit_advice"] = FitAdviceJson(*advice);
    if (sensitivity) {
      j["sensitivity"] = SensitivityJson(*sensitivity, projection.tokens_per_s_per_gpu);
    }
    if (high) j["lod_high"] = HighLodJson(*high);
    io.out << j.dump(2) << "\n";
  } else {
    // --html keeps the ops for the page; the text lists them only when asked.
    if (!outputs.show_ops) projection.op_tables.clear();
    if (advice) io.out << FitAdviceText(*advice);
    io.out << ProjectionText(scenario, projection)
           << BottlenecksText(bottlenecks, projection.tokens_per_s_per_gpu);
    if (sensitivity) io.out << SensitivityText(*sensitivity, projection.tokens_per_s_per_gpu);
    io.out << OpsText(scenario, projection);
    if (high) io.out << HighLodText(*high);
  }
  std::ostream& note = NoteStream(as_json, io.out, io.err);
  if (!outputs.trace_path.empty()) {
    note << "trace: " << (high ? high->timeline.size() : projection.timeline.size())
         << " events written to " << outputs.trace_path << (high ? " (the event replay; " : " (")
         << "open in ui.perfetto.dev or chrome://tracing)\n";
  }
  if (!outputs.html_path.empty()) {
    note << "html: report written to " << outputs.html_path << " (open in a browser)\n";
  }
  if (chakra_export) {
    note << "chakra: " << chakra_export->ranks << " execution traces (" << chakra_export->nodes
         << " nodes) written to " << outputs.chakra_prefix << ".<rank>.et, "
         << chakra_export->groups << " communicator groups to " << chakra_export->groups_file
         << "\n";
  }
  if (!outputs.plots_dir.empty()) {
    note << "plots: " << plots << " SVG charts written to " << outputs.plots_dir << "\n";
  }
  if (!outputs.out_dir.empty()) {
    note << "out: scenario.json, projection.json and bottlenecks.json written to "
         << outputs.out_dir << "\n";
  }
  if (advice && outputs.require_fit) {
    return absl::OutOfRangeError(absl::StrFormat(
        "--require-fit: the projection does not fit: peak %.1f GiB per GPU against %.1f GiB",
        advice->peak_memory / Gibibytes(1), advice->capacity / Gibibytes(1)));
  }
  return absl::OkStatus();
}

// --version, --list-models, --list-gpus, --list-backends; true when one was asked and printed.
bool PrintedLibraryListing(const FlagValues& flags, const Output& io) {
  if (Given(flags, "version")) {
    const std::string runtimes = MeasureRuntimeName();
    io.out << "project " << PROJECTOR_VERSION << "\n"
           << "GPU measurement: "
           << (runtimes.empty() ? "none (simulate and profile modes only)" : runtimes)
           << "\nChakra trace export: "
           << (kChakraBuilt ? "yes (protobuf)" : "not built (no protobuf)")
           << "\nMPI: not built (issue 29)\n";
  } else if (Given(flags, "list-models")) {
    io.out << ModelLibraryText();
  } else if (Given(flags, "list-gpus")) {
    io.out << GpuLibraryText();
  } else if (Given(flags, "list-backends")) {
    io.out << DescribeBackends();
  } else {
    return false;
  }
  return true;
}

absl::StatusOr<std::string> ProfilingModeFlag(const FlagValues& flags) {
  const std::string mode =
      Given(flags, "profiling-mode") ? StringFlag(flags, "profiling-mode") : "simulate";
  if (mode == "simulate" || mode == "profile" || mode == "both" || mode == "measure") return mode;
  return FlagError("profiling-mode", absl::StrCat("unknown mode '", mode,
                                                  "'; accepted: simulate, profile, both, measure"));
}

bool NamesScenario(const FlagValues& flags) {
  return Given(flags, "model") || Given(flags, "scenario") || Given(flags, "case");
}

}  // namespace

absl::Status RunProjectCommand(int argc, char** argv, const Output& io) {
  cxxopts::Options options("project", kUsage);
  AddProjectFlags(options);
  PROJECTOR_ASSIGN_OR_RETURN(
      std::optional<FlagValues> parsed,
      ParseFlags(options, argc, argv, 0, "", " (see project --help)", io.out,
                 {"", "Scenario", "Parallel layout", "Training run", "Backends", "Profiles"}));
  if (!parsed || PrintedLibraryListing(*parsed, io)) return absl::OkStatus();
  const FlagValues& flags = *parsed;
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(flags));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string mode, ProfilingModeFlag(flags));
  if (mode == "measure") {
    // Checks the GPU runtime first, so a GPU-free build exits 2 before any scenario work.
    Scenario target;
    if (!Given(flags, "profile") || NamesScenario(flags)) {
      PROJECTOR_ASSIGN_OR_RETURN(target, ScenarioFromFlags(flags));
    }
    return RunMeasureMode(flags, target, as_json, io);
  }
  if (mode != "simulate" && Given(flags, "profile") && !NamesScenario(flags)) {
    return RunProfileMode(mode, flags, Scenario{}, as_json, io);
  }
  PROJECTOR_ASSIGN_OR_RETURN(const Scenario scenario, ScenarioFromFlags(flags));
  ProjectionOutputs outputs;
  outputs.show_ops = Given(flags, "show-ops");
  outputs.sensitivity = Given(flags, "sensitivity");
  outputs.require_fit = Given(flags, "require-fit");
  PROJECTOR_ASSIGN_OR_RETURN(outputs.trace_path, OutputFileFlag(flags, "trace", mode));
  PROJECTOR_ASSIGN_OR_RETURN(outputs.chakra_prefix, OutputFileFlag(flags, "chakra-out", mode));
  PROJECTOR_ASSIGN_OR_RETURN(outputs.html_path, OutputFileFlag(flags, "html", mode));
  PROJECTOR_ASSIGN_OR_RETURN(outputs.out_dir, OutputFileFlag(flags, "out", mode));
  PROJECTOR_ASSIGN_OR_RETURN(outputs.plots_dir, OutputFileFlag(flags, "plots", mode));
  PROJECTOR_ASSIGN_OR_RETURN(outputs.lod_high, LodHighFlag(flags));
  PROJECTOR_ASSIGN_OR_RETURN(outputs.high.slow_rank, SlowRankFlag(flags, outputs.lod_high));
  PROJECTOR_ASSIGN_OR_RETURN(outputs.high.slow_link, SlowLinkFlag(flags, outputs.lod_high));
  PROJECTOR_ASSIGN_OR_RETURN(outputs.high.no_fold, BoolFlag(flags, "no-fold"));
  if (outputs.high.no_fold && !outputs.lod_high) {
    return FlagError("no-fold", "needs --lod high (only the event replay folds GPUs)");
  }
  if (Given(flags, "congestion")) {
    if (!outputs.lod_high) {
      return FlagError("congestion", "needs --lod high (links are shared in the event replay)");
    }
    absl::StatusOr<Congestion> congestion = ParseCongestion(StringFlag(flags, "congestion"));
    if (!congestion.ok()) return FlagError("congestion", congestion.status().message());
    outputs.high.congestion = *congestion;
  }
  if (outputs.lod_high && mode != "simulate") {
    return FlagError("lod", "high replays a simulated projection; use --profiling-mode simulate");
  }
  if (mode != "simulate") return RunProfileMode(mode, flags, scenario, as_json, io);
  if (Given(flags, "gpu-clock-mhz")) {
    PROJECTOR_ASSIGN_OR_RETURN(const std::vector<double> clocks, ClockListFlag(flags));
    if (clocks.size() > 1) return RunClockSweep(scenario, clocks, outputs, as_json, io);
  }
  return RunOneProjection(scenario, outputs, as_json, io);
}

}  // namespace projector
