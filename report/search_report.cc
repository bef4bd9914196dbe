#include "report/search_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/number_format.h"

namespace projector {

namespace {

using nlohmann::json;


}  // namespace

json SearchResultToJson(const Scenario& base, const SearchResult& r) {
  json j;
  j["model"] = base.model.name;
  j["gpu"] = base.hw.name;
  j["num_gpus"] = base.num_gpus;
  j["gpus_per_node"] = base.hw.gpus_per_node;
  j["seq_len"] = base.training.seq_len;
  j["global_batch"] = base.training.global_batch;
  j["precision"] = std::string(DTypeName(base.training.precision));
  j["objective"] = std::string(SearchObjectiveName(r.objective));
  j["candidates_enumerated"] = r.candidates_enumerated;
  j["candidates_evaluated"] = r.candidates_evaluated;
  j["candidates_ranked"] = r.ranked.size();
  j["elapsed_s"] = r.elapsed_s;
  j["threads"] = r.threads;
  j["candidates_per_minute"] =
      r.elapsed_s > 0 ? static_cast<double>(r.candidates_evaluated) / r.elapsed_s * 60.0 : 0.0;
  j["memory_limit_bytes"] = r.memory_limit ? json(r.memory_limit->value()) : json(nullptr);
  j["memory_check_bytes"] = r.memory_check.value();
  json removed = json::object();
  for (int k = 0; k < kNumSearchConstraints; ++k) {
    removed[std::string(SearchConstraintName(static_cast<SearchConstraint>(k)))] =
        r.removed[static_cast<size_t>(k)];
  }
  j["removed"] = removed;
  if (!r.first_projection_error.empty()) j["first_projection_error"] = r.first_projection_error;
  j["best_command"] =
      r.ranked.empty() ? json(nullptr) : json(ReproduceCommand(base, r.ranked.front().candidate));
  json layouts = json::array();
  int64_t rank = 0;
  for (const RankedLayout& l : r.ranked) {
    const ParallelConfig& p = l.candidate.parallel;
    json b = json::object();
    for (size_t t = 0; t < kNumBreakdownTerms; ++t) {
      b[std::string(kBreakdownTerms[t].short_name)] = l.metrics.breakdown[t].value();
    }
    layouts.push_back(
        {{"rank", ++rank},
         {"layout", CandidateLabel(l.candidate)},
         {"tp", p.tp},
         {"pp", p.pp},
         {"vpp", p.vpp},
         {"first_stage_layers", p.first_stage_layers},
         {"last_stage_layers", p.last_stage_layers},
         {"cp", p.cp},
         {"ep", p.ep},
         {"etp", p.etp},
         {"dp", p.dp},
         {"micro_batch", l.candidate.micro_batch},
         {"recompute", std::string(RecomputeName(l.candidate.recompute))},
         {"recompute_modules", l.candidate.recompute == Recompute::kSelective
                                   ? RecomputeModuleNames(l.candidate.recompute_modules)
                                   : std::vector<std::string>{}},
         {"sequence_parallel", p.sequence_parallel},
         {"sharding", p.fsdp                    ? "fsdp"
                      : p.distributed_optimizer ? "distopt"
                                                : "dp"},
         {"turbo_grouped_gemm", p.turbo_grouped_gemm},
         {"deepep", p.deepep},
         {"pipeline_schedule", std::string(PipelineScheduleName(p.pipeline_schedule))},
         {"tokens_per_s_per_gpu", l.metrics.tokens_per_s_per_gpu},
         {"step_time_s", l.metrics.step_time.value()},
         {"mfu", l.metrics.mfu},
         {"tflops_per_gpu", l.metrics.tflops_per_gpu},
         {"peak_memory_bytes", l.metrics.peak_memory_per_gpu.value()},
         {"fits_memory", l.fits_memory},
         {"dominant_cost", std::string(DominantCost(l.metrics))},
         {"largest_overhead", LargestOverhead(l.metrics)},
         {"differs_from_best", DifferenceFrom(r.ranked.front().candidate, l.candidate)},
         {"breakdown_s", b}});
  }
  j["layouts"] = std::move(layouts);
  return j;
}

std::string SearchProgressLine(const SearchProgress& p) {
  const double share = p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total) : 1;
  // The pass's rate so far, applied to what it has left.
  const std::string left =
      share > 0 && share < 1
          ? absl::StrFormat(", about %.0f s left in this pass", p.pass_elapsed_s * (1 - share) / share)
          : "";
  // Padded so a shorter line overwrites a longer one.
  return absl::StrFormat("\rsearch: %s %s / %s (%.0f%%), %.1f s%s   ", p.pass, FormatCount(p.done),
                         FormatCount(p.total), 100.0 * share, p.elapsed_s, left);
}

std::string FormatSearchText(const Scenario& base, const SearchResult& r, int64_t top_k) {
  std::string out = absl::StrFormat(
      "Search: %s on %d x %s (%d per node), seq %d, global batch %d, %s\n", base.model.name,
      base.num_gpus, base.hw.name, base.hw.gpus_per_node, base.training.seq_len,
      base.training.global_batch, DTypeName(base.training.precision));
  if (!base.hw_settings.empty()) {
    absl::StrAppend(&out, "  what-if     ", absl::StrJoin(base.hw_settings, ", "), "\n");
  }
  const double per_min =
      r.elapsed_s > 0 ? static_cast<double>(r.candidates_evaluated) / r.elapsed_s * 60.0 : 0.0;
  absl::StrAppendFormat(&out,
                        "  candidates  %s enumerated, %s evaluated in %.2f s on %d threads "
                        "(%s per minute)\n",
                        FormatCount(r.candidates_enumerated), FormatCount(r.candidates_evaluated),
                        r.elapsed_s, r.threads, FormatCount(static_cast<int64_t>(per_min)));
  if (r.memory_limit) {
    absl::StrAppendFormat(&out, "  memory      limit %.1f GiB per GPU (HBM %.1f GiB)\n",
                          *r.memory_limit / Gibibytes(1), base.hw.gpu.hbm_capacity / Gibibytes(1));
  } else {
    absl::StrAppendFormat(&out,
                          "  memory      no limit; layouts above %.1f GiB (HBM %.1f GiB less 5%% "
                          "reserve) are marked *\n",
                          r.memory_check / Gibibytes(1), base.hw.gpu.hbm_capacity / Gibibytes(1));
  }
  out += "  removed    ";
  bool any = false;
  for (int k = 0; k < kNumSearchConstraints; ++k) {
    if (r.removed[static_cast<size_t>(k)] == 0) continue;
    absl::StrAppendFormat(&out, " %s %s", SearchConstraintName(static_cast<SearchConstraint>(k)),
                          FormatCount(r.removed[static_cast<size_t>(k)]));
    any = true;
  }
  out += any ? "\n" : " none\n";
  absl::StrAppendFormat(&out, "  ranked      %s layouts by %s\n\n",
                        FormatCount(static_cast<int64_t>(r.ranked.size())),
                        SearchObjectiveName(r.objective));
  const int64_t shown = std::min<int64_t>(top_k, static_cast<int64_t>(r.ranked.size()));
  int width = 6;
  for (int64_t i = 0; i < shown; ++i) {
    width = std::max(
        width, static_cast<int>(CandidateLabel(r.ranked[static_cast<size_t>(i)].candidate).size()));
  }
  int overhead_width = 16;  // "largest overhead"
  for (int64_t i = 0; i < shown; ++i) {
    overhead_width = std::max(
        overhead_width,
        static_cast<int>(LargestOverhead(r.ranked[static_cast<size_t>(i)].metrics).size()));
  }
  absl::StrAppendFormat(&out, "%4s  %-*s %9s %10s %6s %11s  %-*s  %s\n", "#", width, "layout",
                        "TGS", "step ms", "MFU", "peak mem", overhead_width, "largest overhead",
                        "vs #1");
  for (int64_t i = 0; i < shown; ++i) {
    const RankedLayout& l = r.ranked[static_cast<size_t>(i)];
    absl::StrAppendFormat(
        &out, "%4d  %-*s %9.1f %10.1f %5.1f%% %7.1f GiB%s %-*s  %s\n", i + 1, width,
        CandidateLabel(l.candidate), l.metrics.tokens_per_s_per_gpu,
        ToMilliseconds(l.metrics.step_time), l.metrics.mfu * 100.0,
        l.metrics.peak_memory_per_gpu / Gibibytes(1), l.fits_memory ? " " : "*", overhead_width,
        LargestOverhead(l.metrics),
        i == 0 ? "best" : DifferenceFrom(r.ranked.front().candidate, l.candidate));
  }
  if (!r.ranked.empty()) {
    absl::StrAppend(&out, "\nBest layout:\n  ", ReproduceCommand(base, r.ranked.front().candidate),
                    "\n");
  }
  return out;
}

}  // namespace projector
