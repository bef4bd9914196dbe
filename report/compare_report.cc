#include "report/compare_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace projector {
namespace {

constexpr double kGib = Gibibytes(1).value();  // core/units.h

// Side letters: A, B, C, ...
std::string Letter(size_t i) { return std::string(1, static_cast<char>('A' + i)); }

// One row: each side's value and, beside every side after the first, its change against A.
void Row(std::string& out, std::string_view label, const Comparison& c, int digits,
         double (*value)(const Projection&)) {
  absl::StrAppendFormat(&out, "  %-24s", std::string(label));
  const double a = value(c.sides[0].projection);
  for (size_t i = 0; i < c.sides.size(); ++i) {
    const double v = value(c.sides[i].projection);
    absl::StrAppendFormat(&out, " %12.*f", digits, v);
    if (i > 0) {
      absl::StrAppend(
          &out, a != 0 ? absl::StrFormat(" %+7.1f%%", 100 * (v - a) / a) : std::string("        "));
    }
  }
  out += "\n";
}

}  // namespace

std::string CompareText(const Comparison& c) {
  std::string out = absl::StrFormat("Comparison of %d projections\n", c.sides.size());
  for (size_t i = 0; i < c.sides.size(); ++i) {
    const CompareSide& s = c.sides[i];
    const TrainingConfig& t = s.scenario.training;
    absl::StrAppendFormat(
        &out, "  %s  %s: %s on %d x %s, %s, seq %d, micro-batch %d, global batch %d, %s, recompute %s%s\n",
        Letter(i), s.name, s.scenario.model.name, s.scenario.num_gpus, s.scenario.hw.name,
        s.projection.layout, t.seq_len, t.micro_batch, t.global_batch, DTypeName(t.precision),
        RecomputePhrase(t.recompute, t.recompute_modules),
        s.projection.fits_in_memory ? "" : "  ** DOES NOT FIT **");
  }
  absl::StrAppendFormat(&out, "\n  %-24s", "");
  for (size_t i = 0; i < c.sides.size(); ++i) {
    absl::StrAppendFormat(&out, " %12s%s", Letter(i), i > 0 ? absl::StrCat("  vs A  ") : "");
  }
  out += "\n";
  Row(out, "tokens/s/GPU (TGS)", c, 1, [](const Projection& p) { return p.tokens_per_s_per_gpu; });
  Row(out, "step time (ms)", c, 1, [](const Projection& p) { return ToMilliseconds(p.step_time); });
  Row(out, "MFU (%)", c, 1, [](const Projection& p) { return 100 * p.mfu; });
  Row(out, "peak memory (GiB)", c, 1,
      [](const Projection& p) { return p.peak_memory_per_gpu.value() / kGib; });
  for (const BreakdownTerm& t : kBreakdownTerms) {
    bool any = false;
    for (const CompareSide& s : c.sides)
      any = any || (s.projection.breakdown.*t.member).value() > 0;
    if (!any) continue;
    absl::StrAppendFormat(&out, "  %-24s", std::string(t.label) + " (ms)");
    const double a = ToMilliseconds(c.sides[0].projection.breakdown.*t.member);
    for (size_t i = 0; i < c.sides.size(); ++i) {
      const double v = ToMilliseconds(c.sides[i].projection.breakdown.*t.member);
      absl::StrAppendFormat(&out, " %12.1f", v);
      if (i > 0) absl::StrAppendFormat(&out, " %+7.1f ", v - a);
    }
    out += "\n";
  }
  const double diff =
      ToMilliseconds(c.sides[1].projection.step_time - c.sides[0].projection.step_time);
  absl::StrAppendFormat(
      &out, "\nWhat sets B apart from A (step %+.1f ms; largest first, share of the difference):\n",
      diff);
  if (c.causes.empty()) out += "  nothing: the steps match term by term\n";
  for (const TermChange& t : c.causes) {
    absl::StrAppendFormat(&out, "  %-16s %+10.1f ms  (%+.0f%%)\n", t.term,
                          ToMilliseconds(t.b - t.a), 100 * t.share);
  }
  return out;
}

nlohmann::json CompareJson(const Comparison& c) {
  nlohmann::json sides = nlohmann::json::array();
  for (const CompareSide& s : c.sides) {
    const Projection& p = s.projection;
    nlohmann::json breakdown = nlohmann::json::object();
    for (const BreakdownTerm& t : kBreakdownTerms) {
      breakdown[std::string(t.short_name)] = ToMilliseconds(p.breakdown.*t.member);
    }
    sides.push_back({{"name", s.name},
                     {"model", s.scenario.model.name},
                     {"gpu", s.scenario.hw.name},
                     {"num_gpus", s.scenario.num_gpus},
                     {"layout", p.layout},
                     {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
                     {"step_time_ms", ToMilliseconds(p.step_time)},
                     {"mfu", p.mfu},
                     {"peak_memory_gib", p.peak_memory_per_gpu.value() / kGib},
                     {"fits", p.fits_in_memory},
                     {"breakdown_ms", breakdown}});
  }
  nlohmann::json causes = nlohmann::json::array();
  for (const TermChange& t : c.causes) {
    causes.push_back({{"term", t.term},
                      {"a_ms", ToMilliseconds(t.a)},
                      {"b_ms", ToMilliseconds(t.b)},
                      {"diff_ms", ToMilliseconds(t.b - t.a)},
                      {"share", t.share}});
  }
  return {{"sides", sides}, {"causes", causes}};
}

}  // namespace projector
