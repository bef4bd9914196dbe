// `project search`: enumerates the layouts of a job (TP, PP, VPP, CP, EP/ETP, micro-batch,
// recompute, SP, sharding, schedule, MoE switches), projects each and ranks them under a memory
// limit.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/scenario_flags.h"
#include "core/status_macros.h"
#include "report/html_report.h"
#include "report/search_report.h"
#include "studies/search.h"

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

void AddSearchFlags(cxxopts::Options& options) {
  // clang-format off
  options.add_options()
    ("h,help", "Show this help")
    ("format", "Output format: text or json (json lists every ranked layout)",
     cxxopts::value<std::string>(), "FORMAT")
    ("top", "Layouts shown in the text output", cxxopts::value<int64_t>()->default_value("10"),
     "K")
    ("html", "Also write the search as a self-contained HTML page: TGS against peak memory of "
     "every layout with the Pareto front, and the best --top layouts with their commands",
     cxxopts::value<std::string>(), "FILE")
    ("objective", "Rank by tgs (highest first), step-time or memory (lowest first)",
     cxxopts::value<std::string>()->default_value("tgs"), "NAME")
    ("memory-limit-gb", "Peak memory limit per GPU in GB (1e9 B), or none to keep and mark "
     "layouts above HBM less 5% (default: HBM less 5%)", cxxopts::value<std::string>(), "GB|none")
    ("threads", "Worker threads (default: all cores)", cxxopts::value<int64_t>(), "N");
  options.add_options(kJob)
    ("model", "Model library name or JSON file", cxxopts::value<std::string>(), "NAME|FILE")
    ("gpu-arch", "GPU hardware profile name or JSON file", cxxopts::value<std::string>(),
     "NAME|FILE")
    ("num-gpus", "GPUs in the job", cxxopts::value<int64_t>(), "N")
    ("gpus-per-node", "GPUs per node (default: the profile's)", cxxopts::value<int64_t>(), "N")
    ("seq-len", "Sequence length in tokens", cxxopts::value<int64_t>(), "N")
    ("global-batch", "Sequences per optimizer step", cxxopts::value<int64_t>(), "N")
    ("hw-overlay", "Hardware overlay from `project calibrate` applied to the GPU profile",
     cxxopts::value<std::string>(), "FILE");
  AddPrecisionAndRoutingFlags(options, kJob);
  AddKernelAndCommFlags(options, kJob);
  AddStackFlags(options, kJob);
  options.add_options(kSpace)
    ("tp-values", "TP sizes (default: divisors of num-gpus)", cxxopts::value<std::string>(), "LIST")
    ("pp-values", "PP sizes (default: divisors of num-gpus)", cxxopts::value<std::string>(), "LIST")
    ("vpp-values", "Virtual stages per PP rank (default: 1,2,4)", cxxopts::value<std::string>(), "LIST")
    ("cp-values", "Context-parallel sizes (default: divisors of num-gpus)",
     cxxopts::value<std::string>(), "LIST")
    ("ep-values", "Expert-parallel sizes, MoE (default: divisors of num-gpus)",
     cxxopts::value<std::string>(), "LIST")
    ("etp-values", "Expert-TP sizes, MoE (default: 1,2,4,8)", cxxopts::value<std::string>(), "LIST")
    ("micro-batch-values", "Micro-batch sizes (default: 1,2,4,8)", cxxopts::value<std::string>(),
     "LIST")
    ("recompute-values", "none, selective, full (default: all three)",
     cxxopts::value<std::string>(), "LIST")
    ("sp-values", "Megatron sequence parallelism: off, on (default: both)",
     cxxopts::value<std::string>(), "LIST")
    ("sharding-values", "dp (replicated), distopt (ZeRO-1), fsdp (default: all three)",
     cxxopts::value<std::string>(), "LIST")
    ("pipeline-schedule-values",
     "1f1b (interleaved with VPP > 1), zb-h1 (zero bubble, VPP 1) (default: 1f1b)",
     cxxopts::value<std::string>(), "LIST")
    ("grouped-gemm-values", "MoE expert GEMMs: turbo, legacy (default: both)",
     cxxopts::value<std::string>(), "LIST")
    ("deepep-values", "MoE DeepEP-style dispatch: off, on (default: both)",
     cxxopts::value<std::string>(), "LIST")
    ("allow-cross-node-tp", "Allow TP groups that span nodes",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL");
  // clang-format on
}

absl::StatusOr<bool> ParseOnOff(absl::string_view v) {
  if (v == "on" || v == "true") return true;
  if (v == "off" || v == "false") return false;
  return absl::InvalidArgumentError(absl::StrCat("unknown value '", v, "'; accepted: off, on"));
}

absl::StatusOr<bool> ParseGroupedGemm(absl::string_view v) {
  if (v == "turbo") return true;
  if (v == "legacy") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown grouped GEMM mode '", v, "'; accepted: turbo, legacy"));
}

// A switch list of a dense model may only hold the value that means "no experts".
template <typename T>
absl::Status DenseModelAccepts(const Scenario& base, absl::string_view flag,
                               const std::vector<T>& values, const std::vector<T>& dense_value,
                               absl::string_view accepted) {
  if (base.model.moe || values == dense_value) return absl::OkStatus();
  return FlagError(flag, absl::StrCat(base.model.name, accepted));
}

absl::Status ReadDegreeLists(const Flags& flags, const Scenario& base, SearchSpace& space) {
  const std::tuple<const char*, std::vector<int64_t>*, bool> lists[] = {
      {"tp-values", &space.tp, false},
      {"pp-values", &space.pp, false},
      {"vpp-values", &space.vpp, false},
      {"cp-values", &space.cp, false},
      {"ep-values", &space.ep, true},
      {"etp-values", &space.etp, true},
      {"micro-batch-values", &space.micro_batch, false}};
  for (const auto& [name, target, moe_only] : lists) {
    if (!Given(flags, name)) continue;
    PROJECTOR_ASSIGN_OR_RETURN(*target, IntListFlag(flags, name, kMaxGpus));
    if (moe_only) {
      PROJECTOR_RETURN_IF_ERROR(DenseModelAccepts<int64_t>(
          base, name, *target, {1}, " is a dense model (no experts); accepted: 1"));
    }
  }
  return absl::OkStatus();
}

// The --*-values flags over the default space of the base scenario.
absl::StatusOr<SearchSpace> SpaceFromFlags(const Flags& flags, const Scenario& base) {
  SearchSpace space = DefaultSearchSpace(base);
  PROJECTOR_RETURN_IF_ERROR(ReadDegreeLists(flags, base, space));
  auto list = [&flags]<typename T>(absl::string_view name, std::vector<T>& target,
                                   auto parse) -> absl::Status {
    if (!Given(flags, name)) return absl::OkStatus();
    PROJECTOR_ASSIGN_OR_RETURN(target, NameListFlag<T>(flags, name, parse));
    return absl::OkStatus();
  };
  PROJECTOR_RETURN_IF_ERROR(list("recompute-values", space.recompute, &ParseRecompute));
  PROJECTOR_RETURN_IF_ERROR(list("sp-values", space.sequence_parallel, &ParseOnOff));
  PROJECTOR_RETURN_IF_ERROR(list("sharding-values", space.sharding, &ParseDpSharding));
  PROJECTOR_RETURN_IF_ERROR(
      list("pipeline-schedule-values", space.pipeline_schedule, &ParsePipelineSchedule));
  PROJECTOR_RETURN_IF_ERROR(
      list("grouped-gemm-values", space.turbo_grouped_gemm, &ParseGroupedGemm));
  PROJECTOR_RETURN_IF_ERROR(DenseModelAccepts<bool>(base, "grouped-gemm-values",
                                                    space.turbo_grouped_gemm, {true},
                                                    " is a dense model; accepted: turbo"));
  PROJECTOR_RETURN_IF_ERROR(list("deepep-values", space.deepep, &ParseOnOff));
  PROJECTOR_RETURN_IF_ERROR(DenseModelAccepts<bool>(base, "deepep-values", space.deepep, {false},
                                                    " is a dense model; accepted: off"));
  PROJECTOR_ASSIGN_OR_RETURN(space.allow_cross_node_tp, BoolFlag(flags, "allow-cross-node-tp"));
  return space;
}

// --memory-limit-gb: a size in GB, or none; the default is HBM less the reserve.
absl::StatusOr<std::optional<Bytes>> MemoryLimitFlag(const Flags& flags, const Scenario& base) {
  if (!Given(flags, "memory-limit-gb")) return DefaultMemoryLimit(base.hw);
  const std::string v = absl::AsciiStrToLower(StringFlag(flags, "memory-limit-gb"));
  if (v == "none") return std::nullopt;
  absl::StatusOr<std::vector<double>> gb = ParsePositiveList(v, "memory-limit-gb");
  if (!gb.ok() || gb->size() != 1) {
    return FlagError("memory-limit-gb",
                     absl::StrCat("'", v, "' is not a size in GB; accepted: a number > 0 or none"));
  }
  return Gigabytes(gb->front());
}

absl::StatusOr<SearchOptions> SearchOptionsFromFlags(const Flags& flags, const Scenario& base,
                                                     std::ostream& err, bool& progress_shown) {
  SearchOptions opts;
  PROJECTOR_ASSIGN_OR_RETURN(
      std::optional<SearchObjective> objective,
      ParsedFlag<SearchObjective>(flags, "objective", &ParseSearchObjective));
  opts.objective = objective.value_or(SearchObjective::kTokensPerGpu);
  if (Given(flags, "threads")) {
    PROJECTOR_ASSIGN_OR_RETURN(const int64_t threads, IntFlag(flags, "threads"));
    opts.threads = static_cast<int>(std::min<int64_t>(threads, 1024));
  }
  PROJECTOR_ASSIGN_OR_RETURN(opts.memory_limit, MemoryLimitFlag(flags, base));
  PROJECTOR_ASSIGN_OR_RETURN(opts.space, SpaceFromFlags(flags, base));
  opts.progress = [&err, &progress_shown](int64_t done, int64_t total, double elapsed_s) {
    if (elapsed_s < 1.0) return;
    err << absl::StrFormat(
               "\rsearch: %d / %d layouts evaluated (%.0f%%), %.1f s", done, total,
               total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
               elapsed_s)
        << std::flush;
    progress_shown = true;
  };
  return opts;
}

}  // namespace

absl::Status RunSearchCommand(int argc, char** argv, const Output& io) {
  cxxopts::Options options("project search", kDescription);
  AddSearchFlags(options);
  PROJECTOR_ASSIGN_OR_RETURN(
      const std::optional<Flags> parsed,
      ParseFlags(options, argc, argv, 1, "search: ", " (see project search --help)", io.out,
                 {"", kJob, kSpace}));
  if (!parsed) return absl::OkStatus();
  const Flags& flags = *parsed;
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(flags));
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t top_k, IntFlag(flags, "top", {}, 10));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string html_path, OutputFileFlag(flags, "html"));
  PROJECTOR_ASSIGN_OR_RETURN(const Scenario base,
                             ScenarioFromFlags(flags, ScenarioUse::kSearchBase));
  bool progress_shown = false;
  PROJECTOR_ASSIGN_OR_RETURN(const SearchOptions opts,
                             SearchOptionsFromFlags(flags, base, io.err, progress_shown));
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
