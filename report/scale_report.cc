#include "report/scale_report.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/number_format.h"

namespace projector {
namespace {

constexpr double kGib = Gibibytes(1).value();  // core/units.h

// The count the efficiencies and the fit are taken against: the first with a layout.
const ScalePoint* BaseCount(const ScaleResult& r) {
  for (const ScalePoint& p : r.points) {
    if (p.found) return &p;
  }
  return nullptr;
}

std::string Summary(const ScaleResult& r) {
  std::string out;
  const ScalePoint* base = BaseCount(r);
  absl::StrAppend(&out, "  breakdown point (efficiency under ",
                  absl::StrFormat("%.0f%%", 100 * kBreakdownEfficiency), "): ",
                  r.breakdown_point ? absl::StrCat(FormatCount(*r.breakdown_point), " GPUs")
                                    : std::string("none in this range"),
                  "\n");
  absl::StrAppendFormat(
      &out, "  Amdahl fit: serial fraction %.4f, maximum speedup %s over %s GPUs\n",
      r.serial_fraction,
      std::isfinite(r.max_speedup) ? absl::StrFormat("%.0fx", r.max_speedup)
                                   : std::string("unbounded"),
      base == nullptr ? std::string("?") : FormatCount(base->num_gpus));
  if (!r.growing_term.empty()) {
    absl::StrAppendFormat(&out, "  growing term: %s, %.1f%% -> %.1f%% of the step\n",
                          r.growing_term, 100 * r.growing_from, 100 * r.growing_to);
  }
  return out;
}

}  // namespace

std::string ScaleText(const Scenario& base, const ScaleResult& r) {
  std::string out = absl::StrFormat(
      "%s scaling of %s on %s, seq %d, global batch %d at %d GPUs (%d counts in %.2f s)\n\n",
      ScalingModeName(r.mode) == "strong" ? "Strong" : "Weak", base.model.name, base.hw.name,
      base.training.seq_len, r.points.empty() ? 0 : r.points.front().global_batch,
      r.points.empty() ? 0 : r.points.front().num_gpus, r.points.size(), r.elapsed_s);
  absl::StrAppendFormat(&out, "  %8s %8s %10s %10s %10s %8s %9s  %s\n", "GPUs", "batch", "TGS",
                        "step ms", "effic.", "speedup", "mem GiB", "best layout");
  for (const ScalePoint& p : r.points) {
    if (!p.found) {
      // The search's reason, from its constraint on (the message before it names the count's
      // candidates, which the table's row already gives).
      const size_t constraint = p.why_not.find("constraint '");
      absl::StrAppendFormat(&out, "  %8s %8d  no layout: %s\n", FormatCount(p.num_gpus),
                            p.global_batch,
                            constraint == std::string::npos ? p.why_not
                                                            : p.why_not.substr(constraint));
      continue;
    }
    const LayoutMetrics& m = p.best.metrics;
    absl::StrAppendFormat(&out, "  %8s %8d %10.1f %10.1f %9.1f%% %8.1f %9.1f  %s\n",
                          FormatCount(p.num_gpus), p.global_batch, m.tokens_per_s_per_gpu,
                          ToMilliseconds(m.step_time), 100 * p.efficiency, p.speedup,
                          m.peak_memory_per_gpu.value() / kGib, CandidateLabel(p.best.candidate));
  }
  absl::StrAppend(&out, "\n", Summary(r));
  return out;
}

nlohmann::json ScaleJson(const Scenario& base, const ScaleResult& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const ScalePoint& p : r.points) {
    nlohmann::json j = {
        {"num_gpus", p.num_gpus}, {"global_batch", p.global_batch}, {"found", p.found}};
    if (!p.found) {
      j["why_not"] = p.why_not;
    } else {
      const LayoutMetrics& m = p.best.metrics;
      nlohmann::json breakdown = nlohmann::json::object();
      for (size_t t = 0; t < kNumBreakdownTerms; ++t) {
        breakdown[std::string(BreakdownTermName(static_cast<int>(t)))] =
            ToMilliseconds(m.breakdown[t]);
      }
      Scenario at = base;
      at.num_gpus = p.num_gpus;
      at.training.global_batch = p.global_batch;
      j["layout"] = CandidateLabel(p.best.candidate);
      j["tokens_per_s_per_gpu"] = m.tokens_per_s_per_gpu;
      j["step_time_ms"] = ToMilliseconds(m.step_time);
      j["mfu"] = m.mfu;
      j["efficiency"] = p.efficiency;
      j["speedup"] = p.speedup;
      j["peak_memory_gib"] = m.peak_memory_per_gpu.value() / kGib;
      j["breakdown_ms"] = breakdown;
      j["command"] = ReproduceCommand(at, p.best.candidate);
    }
    points.push_back(j);
  }
  return {{"mode", ScalingModeName(r.mode)},
          {"model", base.model.name},
          {"gpu", base.hw.name},
          {"seq_len", base.training.seq_len},
          {"points", points},
          {"breakdown_point",
           r.breakdown_point ? nlohmann::json(*r.breakdown_point) : nlohmann::json(nullptr)},
          {"serial_fraction", r.serial_fraction},
          {"max_speedup",
           std::isfinite(r.max_speedup) ? nlohmann::json(r.max_speedup) : nlohmann::json(nullptr)},
          {"growing_term", r.growing_term},
          {"elapsed_s", r.elapsed_s}};
}

}  // namespace projector
