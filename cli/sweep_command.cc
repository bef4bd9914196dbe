// `project sweep`: a design-space sweep over layouts × networks at the medium or the high level
// of detail, every point a JSON line of its output file, resumable (studies/sweep.h).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/progress.h"
#include "core/status_macros.h"
#include "network/network_file.h"
#include "scenario/scenario_flags.h"
#include "studies/search.h"
#include "studies/search_flags.h"
#include "studies/sweep.h"

namespace projector {
namespace {

constexpr char kDescription[] =
    "Projects every layout of a search space on each network of a list and each GPU type of "
    "--gpu-arch (one, or several comma-separated), at the medium or the high level of detail, "
    "and writes every point as a JSON line as soon as it is evaluated; an interrupted sweep "
    "continues with --resume.\n"
    "\n"
    "Example:\n"
    "  project sweep --model llama3.1-8b --gpu-arch h100-sxm --num-gpus 16 --seq-len 4096 \\\n"
    "                --global-batch 64 --tp-values 1,2,4,8 --pp-values 1,2 \\\n"
    "                --networks builtin,my_fabric.json --lod high --out sweep.jsonl\n";
constexpr char kJob[] = "Job";
constexpr char kSpace[] = "Layouts (comma-separated lists; DP is derived)";
constexpr char kHardwareWhatIfs[] = "Hardware what-ifs";

constexpr FlagSpec kSweepFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Summary format: text or json", "FORMAT"},
    {"networks",
     "Networks to sweep, comma-separated: network files (JSON, YAML or ASTRA-sim's network.yml, "
     "one NPU per GPU), or builtin for the hardware profile's own",
     "LIST", FlagArity::kValue, "builtin"},
    {"lod", "Level of detail of every point: medium (analytical) or high (event replay)", "LOD",
     FlagArity::kValue, "medium"},
    {"out", "Write the sweep to this new JSON lines file (a header line, then a line per point)",
     "FILE"},
    {"resume",
     "Continue the sweep in this file (written by the same flags): evaluate only the points it "
     "lacks and append them",
     "FILE"},
    {"top", "Best points shown in the summary", "K", FlagArity::kValue, "5"},
};

void AddSweepFlags(cxxopts::Options& options) {
  AddFlags(options, "", kSweepFlags);
  AddFlags(options, "", SearchMemoryAndThreadFlags());
  AddFlags(options, "", kProgressFlags);
  for (std::span<const FlagSpec> job :
       {SearchJobFlags(), PrecisionAndRoutingFlags(), KernelAndCommFlags(), StackFlags()}) {
    AddFlags(options, kJob, job);
  }
  AddFlags(options, kHardwareWhatIfs, HardwareWhatIfFlags());
  AddFlags(options, kSpace, SearchSpaceFlags());
}

// --networks: each file loaded (one NPU per GPU of the run), or the profile's own.
absl::StatusOr<std::vector<SweepNetwork>> NetworksFromFlag(const FlagValues& flags,
                                                           const Scenario& base) {
  std::vector<SweepNetwork> networks;
  for (const absl::string_view item : absl::StrSplit(StringFlag(flags, "networks"), ',')) {
    const std::string label(item);
    if (label.empty()) {
      return FlagError("networks",
                       "an empty entry; give network files or builtin, "
                       "comma-separated");
    }
    if (label == "builtin") {
      networks.push_back({.label = label, .spec = nullptr});
      continue;
    }
    absl::StatusOr<NetworkSpec> spec = LoadNetworkFile(label);
    if (!spec.ok()) return FlagError("networks", std::string(spec.status().message()));
    if (spec->NpuCount() != base.num_gpus) {
      return FlagError("networks", absl::StrCat("the network '", spec->name, "' (", label, ") has ",
                                                spec->NpuCount(), " NPUs but the run has ",
                                                base.num_gpus, " GPUs; give one NPU per GPU"));
    }
    networks.push_back({.label = label, .spec = std::make_shared<const NetworkSpec>(*spec)});
  }
  return networks;
}

// --gpu-arch, one GPU type or a comma-separated list of them: the job on each, its layouts (the
// space of the --*-values flags on that GPU) and its memory limit (the one given, or its HBM less
// the reserve).
absl::StatusOr<std::vector<SweepGpu>> GpusFromFlags(const FlagValues& flags) {
  const std::vector<std::string> archs =
      absl::StrSplit(StringFlag(flags, "gpu-arch"), ',', absl::SkipEmpty());
  if (archs.empty()) return FlagError("gpu-arch", "give a GPU type, or several comma-separated");
  std::vector<SweepGpu> gpus;
  for (const std::string& arch : archs) {
    FlagValues one = flags;
    one.Add("gpu-arch", arch);
    PROJECTOR_ASSIGN_OR_RETURN(Scenario base, ScenarioFromFlags(one, ScenarioUse::kSearchBase));
    for (const SweepGpu& seen : gpus) {
      if (seen.base.hw.gpu.name == base.hw.gpu.name) {
        return FlagError("gpu-arch", absl::StrCat("'", arch, "' is listed twice"));
      }
    }
    PROJECTOR_ASSIGN_OR_RETURN(const SearchOptions search, SearchOptionsFromFlags(one, base));
    std::vector<SearchCandidate> candidates = EnumerateCandidates(base, search.space);
    if (candidates.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sweep: no layout of the space is valid for this job on ", base.hw.gpu.name,
          " (see project search for why each is removed)"));
    }
    const Bytes limit = search.memory_limit.value_or(DefaultMemoryLimit(base.hw));
    gpus.push_back(SweepGpu{.base = std::move(base), .candidates = std::move(candidates),
                            .memory_limit = limit});
  }
  return gpus;
}

std::string SummaryText(const SweepSummary& summary, const std::string& path) {
  std::string out = absl::StrFormat(
      "Sweep: %d points (%d evaluated now, %d resumed), %d over the memory limit, %d failed\n",
      summary.points, summary.evaluated, summary.resumed, summary.over_memory, summary.failed);
  if (summary.best.empty()) {
    out += "  no point fits in memory\n";
  } else {
    out += "  best points that fit (index, GPU, network, layout, tokens/s/GPU, peak memory)\n";
    size_t gpu_width = 0, width = 0;
    for (const nlohmann::json& p : summary.best) {
      gpu_width = std::max(gpu_width, p["gpu_arch"].get<std::string>().size());
      width = std::max(width, p["network"].get<std::string>().size());
    }
    for (const nlohmann::json& p : summary.best) {
      absl::StrAppendFormat(&out, "  %6d  %-*s  %-*s  %-44s %10.1f  %7.1f GiB\n",
                            p["index"].get<int64_t>(), static_cast<int>(gpu_width),
                            p["gpu_arch"].get<std::string>(), static_cast<int>(width),
                            p["network"].get<std::string>(), p["layout"].get<std::string>(),
                            p["tokens_per_s_per_gpu"].get<double>(),
                            p["peak_memory_gib"].get<double>());
    }
  }
  absl::StrAppend(&out, "points: ", path, " (JSON lines; docs/studies.md)\n");
  return out;
}

}  // namespace

absl::Status RunSweepCommand(int argc, char** argv, const Output& io) {
  cxxopts::Options options("project sweep", kDescription);
  AddSweepFlags(options);
  PROJECTOR_ASSIGN_OR_RETURN(
      const std::optional<FlagValues> parsed,
      ParseFlags(options, argc, argv, 1, "sweep: ", " (see project sweep --help)", io.out,
                 {"", kJob, kHardwareWhatIfs, kSpace}));
  if (!parsed) return absl::OkStatus();
  const FlagValues& flags = *parsed;
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(flags));
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t top, IntFlag(flags, "top"));
  PROJECTOR_ASSIGN_OR_RETURN(const bool show_progress, ProgressFlag(flags));
  const std::string lod = StringFlag(flags, "lod");
  if (lod != "medium" && lod != "high") {
    return FlagError("lod",
                     absl::StrCat("unknown level of detail '", lod, "'; accepted: medium, high"));
  }
  const bool resume = Given(flags, "resume");
  if (resume == Given(flags, "out")) {
    return FlagError(resume ? "resume" : "out",
                     "give either --out FILE (a new sweep) or --resume FILE (continue one)");
  }
  const std::string path = StringFlag(flags, resume ? "resume" : "out");
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<SweepGpu> gpus, GpusFromFlags(flags));
  PROJECTOR_ASSIGN_OR_RETURN(const SearchOptions search,
                             SearchOptionsFromFlags(flags, gpus.front().base));
  SweepOptions sweep{.networks = {},
                     .high_lod = lod == "high",
                     .stop_above_limit = search.memory_limit.has_value(),
                     .threads = search.threads};
  PROJECTOR_ASSIGN_OR_RETURN(sweep.networks, NetworksFromFlag(flags, gpus.front().base));
  PROJECTOR_ASSIGN_OR_RETURN(sweep.team, TeamFor(io, [&] { return SweepPointCount(gpus, sweep); }, "points"));
  // The other ranks evaluate points: the file is the coordinator's alone.
  if (!sweep.team->coordinator()) return ServeSweep(gpus, sweep);
  StudyScope study(*sweep.team);
  if (!resume && std::filesystem::exists(path)) {
    return FlagError("out",
                     absl::StrCat("'", path, "' exists; continue it with --resume, or remove it"));
  }
  const nlohmann::json header = SweepHeader(gpus, sweep);
  SweepPoints done;
  if (resume) {
    PROJECTOR_ASSIGN_OR_RETURN(SweepFile existing, ReadSweepFile(path, header));
    done = std::move(existing.points);
    std::error_code error;
    std::filesystem::resize_file(path, existing.whole_bytes, error);  // a line cut short
    if (error) {
      return FlagError("resume", absl::StrCat("cannot write '", path, "': ", error.message()));
    }
  }
  std::ofstream file(path, resume ? std::ios::app : std::ios::trunc);
  if (!file) {
    return FlagError(resume ? "resume" : "out", absl::StrCat("cannot write '", path, "'"));
  }
  if (!resume) file << header.dump() << "\n" << std::flush;
  ProgressBar bar(io.err, "sweep", show_progress);
  const int64_t to_evaluate = SweepPointCount(gpus, sweep) - static_cast<int64_t>(done.size());
  int64_t evaluated = 0;
  auto write = [&](std::string_view line) -> absl::Status {
    bar.Update(++evaluated, to_evaluate);
    file << line << "\n" << std::flush;
    if (!file) return absl::InternalError(absl::StrCat("sweep: writing '", path, "' failed"));
    return absl::OkStatus();
  };
  absl::StatusOr<SweepSummary> run = RunSweep(gpus, sweep, done, write, top);
  bar.Finish();
  PROJECTOR_ASSIGN_OR_RETURN(const SweepSummary summary, std::move(run));
  if (as_json) {
    io.out << nlohmann::json{{"points", summary.points},
                             {"evaluated", summary.evaluated},
                             {"resumed", summary.resumed},
                             {"over_memory", summary.over_memory},
                             {"failed", summary.failed},
                             {"best", summary.best},
                             {"file", path}}
                  .dump(2)
           << "\n";
  } else {
    io.out << SummaryText(summary, path);
  }
  return absl::OkStatus();
}

}  // namespace projector
