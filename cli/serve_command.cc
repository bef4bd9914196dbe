// `project serve`: an inference deployment under a request workload (serving/serve.h): TTFT,
// TPOT, end-to-end latency and throughput, as text or JSON.
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/progress.h"
#include "core/status_macros.h"
#include "report/html_report.h"
#include "report/serve_report.h"
#include "serving/serve.h"
#include "serving/serve_flags.h"
#include "serving/serve_validate.h"

namespace projector {
namespace {

constexpr char kUsage[] =
    "Projects an inference deployment serving a stream of requests: each pass of the engine "
    "(prefill chunks and decode steps batched together) priced from the model's ops on the "
    "GPU, the paged KV cache sized from what HBM leaves, requests scheduled as vLLM does "
    "(continuous batching) or in fixed batches (static).\n\n"
    "  project serve --model llama3.1-8b --gpu-arch h100-sxm --qps 4 --input-len 1024 "
    "--output-len 256\n"
    "  project serve --model llama3.1-70b --gpu-arch h100-sxm --tp 4 --concurrency 64 "
    "--num-requests 2000 --format json\n"
    "  project serve --model llama2-70b --gpu-arch h200-sxm --precision fp8 --batching static "
    "--max-num-seqs 64 --input-len 2048 --output-len 2048 --num-requests 64\n\n"
    "  project serve --model llama3.1-70b --gpu-arch h100-sxm --tp 4 --slo-ttft 500 "
    "--slo-tpot 50 --max-qps\n"
    "  project serve --model llama3.1-70b --gpu-arch h100-sxm --num-gpus 8 --slo-ttft 500 "
    "--slo-tpot 50 --search-layouts\n"
    "  project serve --validate calibration/serving_public.jsonl\n\n"
    "Fields and the model behind them: docs/serving.md.\n";

constexpr FlagSpec kOutputFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Output format: text or json", "FORMAT"},
    kPlotsFlag,
    {"html", "Also write a one-file HTML report (charts over time, latency distributions)", "FILE"},
    {"validate",
     "Instead of one projection: published serving results against the projection, one case "
     "per line (calibration/serving_public.jsonl)",
     "FILE"},
    {"max-median-error-pct", "With --validate: fail (exit 3) when the median |error| is larger",
     "PCT"},
};

// The lanes of an SLO search: --threads, or every core of this process (every rank's share under
// MPI).
ProbeLanes ProbeLanesOf(const Output& io, const SloRequest& slo) {
  WorkTeam& team = io.team != nullptr ? *io.team : Solo();
  return {.team = &team, .lanes = team.Lanes(slo.threads)};
}

// --disaggregate: the pools beside the aggregated deployment, the highest rate of the pools
// under a target (--max-qps), or every split of --num-gpus between them (--search-layouts).
absl::Status RunDisaggregated(const FlagValues& flags, const ServeJob& job, const SloRequest& slo,
                              const DisaggregatedOptions& pools, bool as_json, const Output& io) {
  if (Given(flags, "html")) return FlagError("html", "not with --disaggregate yet");
  if (slo.mode == SloMode::kMaxQps) {
    PROJECTOR_ASSIGN_OR_RETURN(const SloSearchResult r,
                               MaxQpsUnderSlo(pools, job.spec, slo.target, ProbeLanesOf(io, slo)));
    io.out << (as_json ? SloSearchJson(job, slo.target, r, &pools).dump(2) + "\n"
                       : SloSearchText(job, slo.target, r, &pools));
    return absl::OkStatus();
  }
  if (slo.mode == SloMode::kSearchLayouts) {
    for (const char* name : {"prefill-replicas", "decode-replicas"}) {
      if (Given(flags, name)) return FlagError(name, "--search-layouts chooses it; drop it");
    }
    PROJECTOR_ASSIGN_OR_RETURN(const bool show_progress, ProgressFlag(flags));
    ProgressBar bar(io.err, "serve: splits", show_progress);
    absl::StatusOr<std::vector<PoolSplit>> found =
        SearchPoolSplits(pools, job.spec, slo.target, slo.num_gpus,
                         [&bar](int64_t done, int64_t total) { bar.Update(done, total); },
                         ProbeLanesOf(io, slo));
    bar.Finish();
    PROJECTOR_ASSIGN_OR_RETURN(const std::vector<PoolSplit> splits, std::move(found));
    io.out << (as_json ? PoolSplitJson(job, slo, pools, splits).dump(2) + "\n"
                       : PoolSplitText(job, slo, pools, splits));
    return absl::OkStatus();
  }
  PROJECTOR_ASSIGN_OR_RETURN(const ServeResult aggregated, Serve(job.options, job.requests));
  PROJECTOR_ASSIGN_OR_RETURN(const DisaggregatedResult split,
                             ServeDisaggregated(pools, job.requests));
  io.out << (as_json ? DisaggregatedJson(job, pools, aggregated, split).dump(2) + "\n"
                     : DisaggregatedText(job, pools, aggregated, split));
  return absl::OkStatus();
}

}  // namespace

absl::Status RunServeCommand(int argc, char** argv, const Output& io) {
  cxxopts::Options options("project serve", kUsage);
  AddFlags(options, "", kOutputFlags);
  AddFlags(options, "", kProgressFlags);
  AddFlags(options, "Deployment", ServeDeploymentFlags());
  AddFlags(options, "Engine", ServeEngineFlags());
  AddFlags(options, "Workload", ServeWorkloadFlags());
  AddFlags(options, "Latency target", ServeSloFlags());
  AddFlags(options, "Disaggregated serving", ServeDisaggregationFlags());
  PROJECTOR_ASSIGN_OR_RETURN(
      const std::optional<FlagValues> flags,
      ParseFlags(options, argc, argv, 1, "serve: ", " (see project serve --help)", io.out));
  if (!flags) return absl::OkStatus();
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(*flags));
  if (Given(*flags, "validate")) {
    if (io.team != nullptr && io.team->size() > 1) {
      return FlagError("validate", "runs in one process; start it without mpirun/srun");
    }
    for (const std::string& name : flags->GivenNames()) {
      if (name != "validate" && name != "format" && name != "max-median-error-pct") {
        return FlagError(name,
                         "--validate takes each case's deployment and workload from the "
                         "file; drop this flag");
      }
    }
    absl::StatusOr<ServeValidation> v = ValidateServingCases(StringFlag(*flags, "validate"));
    if (!v.ok()) return WithFlag("validate", v.status());
    io.out << (as_json ? ServeValidationJson(*v).dump(2) + "\n" : ServeValidationText(*v));
    if (Given(*flags, "max-median-error-pct")) {
      PROJECTOR_ASSIGN_OR_RETURN(const double floor, NumberFlag(*flags, "max-median-error-pct"));
      if (v->median_abs_error_pct > floor) {
        return absl::OutOfRangeError(
            absl::StrFormat("accuracy floor not met: median |error| %.1f%% > %.1f%%",
                            v->median_abs_error_pct, floor));
      }
    }
    return absl::OkStatus();
  }
  if (Given(*flags, "max-median-error-pct")) {
    return FlagError("max-median-error-pct", "only with --validate FILE");
  }
  PROJECTOR_ASSIGN_OR_RETURN(const SloRequest slo, SloFromFlags(*flags));
  if (io.team != nullptr && io.team->size() > 1 && slo.mode == SloMode::kNone) {
    return FlagError("search-layouts",
                     "MPI ranks share the SLO searches (--max-qps, --search-layouts); one "
                     "serving run is one process: add a target and one of them, or start it "
                     "without mpirun/srun");
  }
  if (slo.mode == SloMode::kSearchLayouts && Given(*flags, "dp-attention")) {
    return FlagError("dp-attention", "--search-layouts chooses it; drop it");
  }
  PROJECTOR_ASSIGN_OR_RETURN(const ServeJob job,
                             ServeJobFromFlags(*flags, slo.mode != SloMode::kNone));
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<DisaggregatedOptions> pools,
                             DisaggregationFromFlags(*flags, job));
  if (pools) return RunDisaggregated(*flags, job, slo, *pools, as_json, io);
  if (slo.mode == SloMode::kMaxQps) {
    PROJECTOR_ASSIGN_OR_RETURN(const SloSearchResult r,
                               MaxQpsUnderSlo(job.options, job.spec, slo.target, ProbeLanesOf(io, slo)));
    io.out << (as_json ? SloSearchJson(job, slo.target, r).dump(2) + "\n"
                       : SloSearchText(job, slo.target, r));
    return absl::OkStatus();
  }
  if (slo.mode == SloMode::kSearchLayouts) {
    PROJECTOR_ASSIGN_OR_RETURN(const bool show_progress, ProgressFlag(*flags));
    ProgressBar bar(io.err, "serve: layouts", show_progress);
    absl::StatusOr<std::vector<ServingLayout>> found =
        SearchServingLayouts(job.options, job.spec, slo.target, slo.num_gpus,
                             [&bar](int64_t done, int64_t total) { bar.Update(done, total); },
                             ProbeLanesOf(io, slo));
    bar.Finish();
    PROJECTOR_ASSIGN_OR_RETURN(const std::vector<ServingLayout> layouts, std::move(found));
    io.out << (as_json ? LayoutSearchJson(job, slo, layouts).dump(2) + "\n"
                       : LayoutSearchText(job, slo, layouts));
    return absl::OkStatus();
  }
  PROJECTOR_ASSIGN_OR_RETURN(const std::string html_path, OutputFileFlag(*flags, "html"));
  PROJECTOR_ASSIGN_OR_RETURN(const ServeResult result, Serve(job.options, job.requests));
  io.out << (as_json ? ServeJson(job, result).dump(2) + "\n" : ServeText(job, result));
  if (Given(*flags, "plots")) {
    PROJECTOR_ASSIGN_OR_RETURN(const std::string plots_dir, OutputFileFlag(*flags, "plots"));
    PROJECTOR_ASSIGN_OR_RETURN(const size_t plots, WritePlots(plots_dir, ServeHtml(job, result)));
    NoteStream(as_json, io.out, io.err)
        << "plots: " << plots << " SVG charts written to " << plots_dir << "\n";
  }
  if (!html_path.empty()) {
    PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("html", html_path, ServeHtml(job, result)));
    NoteStream(as_json, io.out, io.err)
        << "html: report written to " << html_path << " (open in a browser)\n";
  }
  return absl::OkStatus();
}

}  // namespace projector
