#include "report/validate_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace projector {

namespace {

using nlohmann::json;

std::string SummaryRow(const ErrorSummary& s) {
  return absl::StrFormat("%-28s %5d %9d %10.1f%% %10.1f%% %7.0f%% %7.0f%% %7.0f%%\n", s.group,
                         s.count, s.projected, s.median_abs_error_pct, s.mean_error_pct,
                         s.within_10_pct, s.within_20_pct, s.within_30_pct);
}

std::string SpeedupRow(const Speedup& g, const std::string& prefix) {
  return absl::StrFormat("%-28s %-30s %5d %8.2fx %8.2fx %10.1f%% %+8.1f%%\n",
                         g.source.substr(0, 28), absl::StrCat(prefix, g.a, " -> ", g.b), g.pairs,
                         g.measured_ratio, g.projected_ratio, g.median_abs_error_pct,
                         g.mean_error_pct);
}

// "  [inconsistent: ...]" naming what the measurement contradicts; empty when nothing does.
std::string InconsistencyMark(const ValidationCase& c) {
  if (!c.inconsistent) return "";
  return absl::StrCat("  [inconsistent: ", InconsistencyNote(c), "]");
}

// "dense 20 of 300, moe 4 of 11": the cases within their run-settings range per model family.
std::string WithinSettingsRangeByFamily(const ValidationReport& r) {
  std::map<std::string, std::pair<int, int>> counts;  // family -> (within, with a range)
  for (const ValidationCase& c : r.cases) {
    if (!c.settings_low_tokens_per_s_per_gpu) continue;
    auto& [within, with] = counts[c.model_family];
    within += MeasuredWithinSettingsRange(c);
    ++with;
  }
  std::vector<std::string> parts;
  for (const auto& [family, n] : counts) {
    parts.push_back(absl::StrFormat("%s %d of %d", family, n.first, n.second));
  }
  return absl::StrJoin(parts, ", ");
}

// "fa1 144, fa2 72": each value with its count, the most frequent first (ties by name).
std::string Tally(const std::map<std::string, int>& counts) {
  std::vector<std::pair<std::string, int>> v(counts.begin(), counts.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [name, n] : v) parts.push_back(absl::StrCat(name, " ", n));
  return absl::StrJoin(parts, ", ");
}

json SummaryJson(const ErrorSummary& s) {
  return {{"group", s.group},
          {"count", s.count},
          {"projected", s.projected},
          {"median_abs_error_pct", s.median_abs_error_pct},
          {"mean_error_pct", s.mean_error_pct},
          {"within_10_pct", s.within_10_pct},
          {"within_20_pct", s.within_20_pct},
          {"within_30_pct", s.within_30_pct}};
}

}  // namespace

std::string InconsistencyNote(const ValidationCase& c) {
  std::vector<std::string> why;
  if (c.sibling_deviation_pct && std::fabs(*c.sibling_deviation_pct) > kSiblingDeviationFlagPct) {
    why.push_back(
        absl::StrFormat("%+.0f%% vs %d-case series", *c.sibling_deviation_pct, c.siblings));
  }
  if (c.longer_sequence_deficit_pct) {
    why.push_back(absl::StrFormat("%.0f%% slower than seq %d at equal tokens",
                                  -*c.longer_sequence_deficit_pct,
                                  c.faster_longer_sequence_seq_len));
  }
  if (c.twin_ratio) {
    why.push_back(absl::StrFormat("measured %.2fx its twin %s, same inputs (floor %.0f%%)",
                                  *c.twin_ratio, c.twin_id, *c.twin_error_floor_pct));
  }
  return absl::StrJoin(why, "; ");
}

std::vector<SourceStack> StacksBySource(const ValidationReport& r) {
  struct Counts {
    std::map<std::string, int> stack, attention, loss, metrics;
  };
  std::map<std::string, Counts> by_source;
  for (const ValidationCase& c : r.cases) {
    if (c.status != "ok") continue;
    Counts& n = by_source[c.source];
    ++n.stack[c.stack];
    ++n.attention[c.attention_kernel];
    ++n.loss[c.loss_kernel];
    ++n.metrics[absl::StrCat(c.train_metric_passes)];
  }
  std::vector<SourceStack> rows;
  for (const ErrorSummary& g : r.by_source) {
    auto it = by_source.find(g.group);
    if (it == by_source.end()) continue;
    rows.push_back({.source = g.group,
                    .stacks = Tally(it->second.stack),
                    .attention_kernels = Tally(it->second.attention),
                    .loss_kernels = Tally(it->second.loss),
                    .train_metric_passes = Tally(it->second.metrics)});
  }
  return rows;
}

std::string FormatValidationText(const ValidationReport& r) {
  std::string out = absl::StrFormat(
      "%-34s %-16s %-14s %5s %-22s %10s %10s %8s  %s\n", "id", "model", "gpu", "gpus", "layout",
      "measured", "projected", "error", "dominant terms");
  for (const ValidationCase& c : r.cases) {
    if (c.status != "ok") continue;
    absl::StrAppendFormat(&out, "%-34s %-16s %-14s %5d %-22s %10.1f %10.1f %+7.1f%%  %s%s%s\n",
                          c.id.substr(0, 34), c.model.substr(0, 16), c.gpu, c.num_gpus,
                          c.layout.substr(0, 22), c.measured_tokens_per_s_per_gpu,
                          *c.projected_tokens_per_s_per_gpu, *c.error_pct, c.dominant_terms,
                          c.fits_in_memory ? "" : "  [does not fit]", InconsistencyMark(c));
  }
  bool header = false;
  for (const ValidationCase& c : r.cases) {
    if (c.status == "ok") continue;
    if (!header) {
      out += "\nCases not projected:\n";
      header = true;
    }
    absl::StrAppendFormat(&out, "  %s (line %d): %s\n", c.id, c.line, c.reason);
  }
  std::string head = absl::StrFormat("%-28s %5s %9s %11s %11s %8s %8s %8s\n", "group", "cases",
                                     "projected", "median|err|", "mean err", "<=10%", "<=20%",
                                     "<=30%");
  absl::StrAppend(&out, "\nSummary\n", head, SummaryRow(r.summary));
  absl::StrAppend(&out, "\nBy GPU\n", head);
  for (const ErrorSummary& s : r.by_gpu) out += SummaryRow(s);
  absl::StrAppend(&out, "\nBy source\n", head);
  for (const ErrorSummary& s : r.by_source) out += SummaryRow(s);
  // Columns as wide as their longest entry.
  const std::vector<SourceStack> stacks = StacksBySource(r);
  int stack_w = 5, kernel_w = 16, loss_w = 11;
  for (const SourceStack& st : stacks) {
    stack_w = std::max(stack_w, static_cast<int>(st.stacks.size()));
    kernel_w = std::max(kernel_w, static_cast<int>(st.attention_kernels.size()));
    loss_w = std::max(loss_w, static_cast<int>(st.loss_kernels.size()));
  }
  absl::StrAppendFormat(&out,
                        "\nStack by source (what the cases ran: as a case states it, else the "
                        "defaults, or the what-if flags)\n%-28s %-*s %-*s %-*s %s\n",
                        "source", stack_w, "stack", kernel_w, "attention kernel", loss_w,
                        "loss kernel", "train-metric passes");
  for (const SourceStack& st : stacks) {
    absl::StrAppendFormat(&out, "%-28s %-*s %-*s %-*s %s\n", st.source.substr(0, 28), stack_w,
                          st.stacks, kernel_w, st.attention_kernels, loss_w, st.loss_kernels,
                          st.train_metric_passes);
  }
  absl::StrAppend(&out, "\nBy model family\n", head);
  for (const ErrorSummary& s : r.by_model_family) out += SummaryRow(s);
  absl::StrAppend(&out, "\nBy precision\n", head);
  for (const ErrorSummary& s : r.by_precision) out += SummaryRow(s);
  absl::StrAppend(&out, "\nBy sequence length\n", head);
  for (const ErrorSummary& s : r.by_seq_len) out += SummaryRow(s);
  absl::StrAppend(&out, "\nBy scale\n", head);
  for (const ErrorSummary& s : r.by_scale) out += SummaryRow(s);
  if (!r.gpu_speedups.empty()) {
    absl::StrAppendFormat(&out,
                          "\nGPU speedups (cases of one source on two GPUs with the same model, "
                          "sequence, GPU count and precision)\n%-28s %-30s %5s %9s %9s %11s %9s\n",
                          "source", "slower -> faster GPU", "pairs", "measured", "projected",
                          "median|err|", "mean err");
    for (const Speedup& g : r.gpu_speedups) out += SpeedupRow(g, "");
  }
  if (!r.precision_speedups.empty()) {
    absl::StrAppendFormat(&out,
                          "\nPrecision speedups (cases of one source in two precisions with the "
                          "same model, sequence, GPU and GPU count)\n%-28s %-30s %5s %9s %9s "
                          "%11s %9s\n",
                          "source", "GPU: slower -> faster", "pairs", "measured", "projected",
                          "median|err|", "mean err");
    for (const Speedup& g : r.precision_speedups) out += SpeedupRow(g, g.context + ": ");
  }
  if (r.inconsistent_cases > 0) {
    absl::StrAppendFormat(
        &out,
        "\n%d cases are inconsistent with their siblings (marked [inconsistent]): measured/"
        "projected more than %.0f%% from the median of their scaling series, measured more "
        "than %.0f%% slower than a longer-sequence run of the same tokens per micro-batch and "
        "step, which does more attention work and the same of everything else, or measured "
        "apart from a twin (below). They are counted above.\n",
        r.inconsistent_cases, kSiblingDeviationFlagPct, kSequenceMonotonicityFlagPct);
  }
  if (r.with_settings_range > 0) {
    absl::StrAppendFormat(
        &out,
        "\n%d of %d cases were measured within the range their run settings span (--sensitivity: "
        "the projection with CUDA graphs, MoE token drop, DeepEP, the All-to-All overlap, MoE "
        "router padding, each FP8 recipe, gradient reduction and TP overlap each switched alone; "
        "%s): a setting the case does not state could account for their error; the others lie "
        "beyond any one of them.\n",
        r.within_settings_range, r.with_settings_range, WithinSettingsRangeByFamily(r));
  }
  if (r.twin_groups > 0) {
    absl::StrAppendFormat(
        &out,
        "\n%d groups of twins (cases with the same inputs, projected alike) were measured more "
        "than %.0f%% apart (marked [inconsistent: measured Nx its twin]): the runs differed in "
        "something the cases do not state, and one projection serves each group, so at least "
        "one case of a group stays off by its floor, (max - min) / (max + min) of its "
        "measurements, up to %.1f%%.\n",
        r.twin_groups, kTwinSpreadFlagPct, r.max_twin_error_floor_pct);
  }
  if (r.measured_but_not_fitting > 0) {
    absl::StrAppendFormat(
        &out,
        "\n%d measured cases are projected not to fit in HBM (marked [does not fit]): they ran, "
        "so the memory model overestimates them.\n",
        r.measured_but_not_fitting);
  }
  absl::StrAppendFormat(&out, "\n%d cases in %.2f s\n", r.summary.count, r.elapsed_s);
  return out;
}

json ValidationToJson(const ValidationReport& r) {
  json cases = json::array();
  for (const ValidationCase& c : r.cases) {
    json j = {{"id", c.id},
              {"line", c.line},
              {"model", c.model},
              {"model_family", c.model_family},
              {"unit", c.unit},
              {"gpu", c.gpu},
              {"source", c.source},
              {"num_gpus", c.num_gpus},
              {"layout", c.layout},
              {"measured_tokens_per_s_per_gpu", c.measured_tokens_per_s_per_gpu},
              {"status", c.status}};
    j["projected_tokens_per_s_per_gpu"] =
        c.projected_tokens_per_s_per_gpu ? json(*c.projected_tokens_per_s_per_gpu) : json();
    j["error_pct"] = c.error_pct ? json(*c.error_pct) : json();
    if (!c.reason.empty()) j["reason"] = c.reason;
    if (!c.dominant_terms.empty()) j["dominant_terms"] = c.dominant_terms;
    if (!c.attention_kernel.empty()) j["attention_kernel"] = c.attention_kernel;
    if (!c.loss_kernel.empty()) {
      j["stack"] = c.stack;
      j["loss_kernel"] = c.loss_kernel;
      j["train_metric_passes"] = c.train_metric_passes;
    }
    j["fits_in_memory"] = c.fits_in_memory;
    if (c.sibling_deviation_pct) {
      j["sibling_series_size"] = c.siblings;
      j["sibling_deviation_pct"] = *c.sibling_deviation_pct;
    }
    if (c.longer_sequence_deficit_pct) {
      j["faster_longer_sequence_id"] = c.faster_longer_sequence_id;
      j["longer_sequence_deficit_pct"] = *c.longer_sequence_deficit_pct;
    }
    if (c.twin_ratio) {
      j["twin_id"] = c.twin_id;
      j["twin_ratio"] = *c.twin_ratio;
      j["twin_error_floor_pct"] = *c.twin_error_floor_pct;
    }
    j["inconsistent_with_siblings"] = c.inconsistent;
    if (c.settings_low_tokens_per_s_per_gpu) {
      j["settings_low_tokens_per_s_per_gpu"] = *c.settings_low_tokens_per_s_per_gpu;
      j["settings_high_tokens_per_s_per_gpu"] = *c.settings_high_tokens_per_s_per_gpu;
      j["measured_within_settings_range"] = MeasuredWithinSettingsRange(c);
    }
    cases.push_back(std::move(j));
  }
  auto speedups = [](const std::vector<Speedup>& v, const char* context, const char* a,
                     const char* b) {
    json out = json::array();
    for (const Speedup& g : v) {
      json j = {{"source", g.source},
                {a, g.a},
                {b, g.b},
                {"pairs", g.pairs},
                {"measured_ratio", g.measured_ratio},
                {"projected_ratio", g.projected_ratio},
                {"median_abs_error_pct", g.median_abs_error_pct},
                {"mean_error_pct", g.mean_error_pct}};
      if (context != nullptr) j[context] = g.context;
      out.push_back(std::move(j));
    }
    return out;
  };
  auto summaries = [](const std::vector<ErrorSummary>& v) {
    json a = json::array();
    for (const ErrorSummary& s : v) a.push_back(SummaryJson(s));
    return a;
  };
  json summary = SummaryJson(r.summary);
  summary.erase("group");
  summary["inconsistent_cases"] = r.inconsistent_cases;
  summary["measured_but_not_fitting"] = r.measured_but_not_fitting;
  summary["twin_groups"] = r.twin_groups;
  if (r.with_settings_range > 0) {
    summary["with_settings_range"] = r.with_settings_range;
    summary["within_settings_range"] = r.within_settings_range;
  }
  summary["max_twin_error_floor_pct"] = r.max_twin_error_floor_pct;
  return {{"file", r.file},
          {"cases", cases},
          {"summary", summary},
          {"by_gpu", summaries(r.by_gpu)},
          {"by_source", summaries(r.by_source)},
          {"by_model_family", summaries(r.by_model_family)},
          {"by_precision", summaries(r.by_precision)},
          {"by_seq_len", summaries(r.by_seq_len)},
          {"by_scale", summaries(r.by_scale)},
          {"gpu_speedups", speedups(r.gpu_speedups, nullptr, "gpu_a", "gpu_b")},
          {"precision_speedups",
           speedups(r.precision_speedups, "gpu", "precision_a", "precision_b")},
          {"elapsed_s", r.elapsed_s}};
}

}  // namespace projector
