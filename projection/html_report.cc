#include "projection/html_report.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "projection/report.h"

namespace projector {
namespace {

constexpr std::string_view kCss = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;
  max-width:1100px;margin:24px auto;padding:0 16px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde;
  padding-bottom:4px}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left}
th{font-weight:600;color:#556}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
table.meta td:first-child{color:#667;padding-left:0}
table.grid tr:nth-child(even){background:#f5f6fa}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}
.card{border:1px solid #dde;border-radius:6px;padding:8px 14px;min-width:130px}
.card .v{font-size:21px;font-weight:600;font-variant-numeric:tabular-nums}
.card .k{color:#667;font-size:12px}.bad{color:#c0392b}.good{color:#1e8449}
.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px;
  vertical-align:-1px}
svg{display:block;max-width:100%;height:auto;font:11px system-ui,sans-serif}
pre{font-size:12px;background:#f5f6fa;padding:10px;overflow-x:auto}
.note{color:#667;font-size:12px}
)";

// One colour per StepBreakdown term, in kBreakdownTerms order.
constexpr std::string_view kTermColors[] = {"#4e79a7", "#e15759", "#f28e2b", "#b07aa1", "#bab0ac",
                                            "#9c755f", "#76b7b2", "#edc948", "#59a14f"};
static_assert(std::size(kTermColors) == std::size(kBreakdownTerms));
constexpr std::string_view kForwardColor = "#4e79a7";
constexpr std::string_view kBackwardColor = "#f28e2b";
constexpr std::string_view kWeightGradColor = "#59a14f";
constexpr std::string_view kRecomputeColor = "#bab0ac";
constexpr std::string_view kCommColor = "#76b7b2";
constexpr std::string_view kTailColor = "#e15759";

double Ms(Seconds s) { return ToMilliseconds(s); }

// Appends the parts (absl::StrAppend takes absl::string_view, which is not std::string_view in
// the Debian build of Abseil).
void Put(std::string& out, std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) out.append(part);
}
double GiB(Bytes b) { return b.value() / (1024.0 * 1024.0 * 1024.0); }

// "12,345" for big counts, 3 significant digits below 100.
std::string Figure(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (std::abs(v) >= 100.0) {
    std::string digits = absl::StrFormat("%.0f", std::abs(v));
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
      out += digits[i];
    }
    return v < 0 ? "-" + out : out;
  }
  return absl::StrFormat("%.3g", v);
}

void Card(std::string& out, std::string_view value, std::string_view label,
          std::string_view cls = "") {
  Put(out, {"<div class=\"card\"><div class=\"v ", cls, "\">", value, "</div><div class=\"k\">",
            label, "</div></div>"});
}

// A tick step of 1, 2 or 5 × 10^k giving about `target` ticks over [0, span].
double TickStep(double span, double target) {
  if (!(span > 0)) return 1.0;
  const double raw = span / target;
  const double base = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0}) {
    if (f * base >= raw) return f * base;
  }
  return 10.0 * base;
}

void Rect(std::string& out, double x, double y, double w, double h, std::string_view fill,
          std::string_view title = "") {
  absl::StrAppendFormat(&out,
                        "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"", x,
                        y, std::max(w, 0.0), h, fill);
  if (title.empty()) {
    out += "/>";
  } else {
    Put(out, {"><title>", title, "</title></rect>"});
  }
}

void Text(std::string& out, double x, double y, std::string_view text,
          std::string_view anchor = "start", std::string_view fill = "#1d2330") {
  absl::StrAppendFormat(&out,
                        "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\" fill=\"%s\">%s</text>", x,
                        y, anchor, fill, text);
}

void Legend(std::string& out,
            const std::vector<std::pair<std::string_view, std::string_view>>& items) {
  out += "<p>";
  for (const auto& [label, color] : items) {
    Put(out, {"<span class=\"sw\" style=\"background:", color, "\"></span>", label, " &nbsp; "});
  }
  out += "</p>";
}

void Headline(std::string& out, const Scenario& scenario, const Projection& p) {
  Put(out, {"<h1>Projection: ", HtmlEscape(p.scenario_name), "</h1>\n<table class=\"meta\">"});
  for (const auto& [label, value] : ProjectionSummaryRows(scenario, p)) {
    Put(out, {"<tr><td>", label, "</td><td>", HtmlEscape(value), "</td></tr>"});
  }
  out += "</table>\n<div class=\"cards\">";
  Card(out, Figure(p.tokens_per_s_per_gpu), "tokens/s per GPU (TGS)");
  Card(out, absl::StrCat(Figure(Ms(p.step_time)), " ms"), "step time");
  Card(out, absl::StrFormat("%.1f%%", 100.0 * p.mfu),
       absl::StrFormat("MFU of %.0f TFLOP/s", ToTeraFlopsPerSecond(p.peak_flops_per_gpu)));
  Card(out, Figure(p.tflops_per_gpu), "model TFLOP/s per GPU");
  Card(out, absl::StrFormat("%.1f GiB", GiB(p.peak_memory_per_gpu)),
       absl::StrFormat("peak memory of %.1f GiB%s", GiB(p.memory.capacity),
                       p.fits_in_memory ? "" : ": does not fit"),
       p.fits_in_memory ? "" : "bad");
  if (p.measured_tokens_per_s_per_gpu.has_value()) {
    const double err = p.error_pct.value_or(0.0);
    Card(out, absl::StrFormat("%+.1f%%", err),
         absl::StrCat("projected vs measured ", Figure(*p.measured_tokens_per_s_per_gpu), " TGS"),
         std::abs(err) <= 10.0 ? "good" : (std::abs(err) > 20.0 ? "bad" : ""));
  }
  out += "</div>\n";
}

void BreakdownSection(std::string& out, const Projection& p) {
  out += "<h2>Where the step goes</h2>\n";
  const double step = p.step_time.value();
  constexpr double kWidth = 1000, kHeight = 34;
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\">", kWidth, kHeight);
  double x = 0;
  for (size_t i = 0; i < std::size(kBreakdownTerms); ++i) {
    const double t = (p.breakdown.*kBreakdownTerms[i].member).value();
    if (!(t > 0) || !(step > 0)) continue;
    const double w = t / step * kWidth;
    Rect(out, x, 0, w, kHeight, kTermColors[i],
         absl::StrFormat("%s: %.2f ms (%.1f%%)", kBreakdownTerms[i].label, t * 1e3,
                         100.0 * t / step));
    // A label where it fits (~6.5 px per character at 11 px).
    const std::string label =
        absl::StrFormat("%s %.0f%%", kBreakdownTerms[i].label, 100.0 * t / step);
    if (w > 6.5 * static_cast<double>(label.size()) + 8) {
      Text(out, x + 5, kHeight / 2 + 4, label, "start", "#fff");
    }
    x += w;
  }
  out +=
      "</svg>\n<table class=\"grid\"><tr><th>term</th><th class=\"n\">ms</th>"
      "<th class=\"n\">share</th></tr>";
  for (size_t i = 0; i < std::size(kBreakdownTerms); ++i) {
    const Seconds t = p.breakdown.*kBreakdownTerms[i].member;
    absl::StrAppendFormat(&out,
                          "<tr><td><span class=\"sw\" style=\"background:%s\"></span>%s</td>"
                          "<td class=\"n\">%.2f</td><td class=\"n\">%.1f%%</td></tr>",
                          kTermColors[i], kBreakdownTerms[i].label, Ms(t),
                          step > 0 ? 100.0 * t.value() / step : 0.0);
  }
  absl::StrAppendFormat(&out,
                        "<tr><th>step time</th><th class=\"n\">%.2f</th><th class=\"n\">100%%</th>"
                        "</tr></table>\n<p class=\"note\">Pipeline terms are those of the critical "
                        "pipeline rank; hidden communication that slowed the compute it overlapped "
                        "is counted in its exposed term.</p>\n",
                        Ms(p.step_time));
}

// One chart of module rows: forward, backward and recompute bars on a shared ms scale.
void ModuleChart(std::string& out, std::string_view title,
                 const std::vector<const ModuleTimes*>& rows) {
  double longest = 0;
  for (const ModuleTimes* m : rows) {
    longest = std::max(longest, (m->forward + m->backward + m->recompute).value());
  }
  constexpr double kLabel = 130, kBar = 760, kRow = 22;
  const double height = kRow * static_cast<double>(rows.size()) + 6;
  Put(out, {"<h3>", title, "</h3>"});
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", height);
  double y = 2;
  for (const ModuleTimes* m : rows) {
    Text(out, 0, y + 14, HtmlEscape(m->module));
    double x = kLabel;
    for (const auto& [t, color, phase] : {std::tuple{m->forward, kForwardColor, "forward"},
                                          std::tuple{m->backward, kBackwardColor, "backward"},
                                          std::tuple{m->recompute, kRecomputeColor, "recompute"}}) {
      const double w = longest > 0 ? t.value() / longest * kBar : 0.0;
      Rect(out, x, y, w, kRow - 6, color,
           absl::StrFormat("%s %s: %.3f ms", HtmlEscape(m->module), phase, Ms(t)));
      x += w;
    }
    Text(out, x + 6, y + 14,
         absl::StrFormat("%.3f ms", Ms(m->forward + m->backward + m->recompute)), "start", "#556");
    y += kRow;
  }
  out += "</svg>\n";
}

void ModulesSection(std::string& out, const Projection& p) {
  out += "<h2>Per layer, one micro-batch</h2>\n";
  Legend(
      out,
      {{"forward", kForwardColor}, {"backward", kBackwardColor}, {"recompute", kRecomputeColor}});
  for (const LayerKindTimes& k : p.layer_kinds) {
    std::vector<const ModuleTimes*> rows;
    for (const ModuleTimes& m : k.modules) rows.push_back(&m);
    ModuleChart(out,
                absl::StrFormat("%s layer (x%d): %.3f ms, %.1f MiB of stored activations",
                                k.is_moe ? "MoE" : "dense", k.count,
                                Ms(k.forward + k.backward + k.recompute),
                                k.activation_bytes.value() / (1024.0 * 1024.0)),
                rows);
  }
  ModuleChart(out, "embedding and output layer", {&p.embedding, &p.output_layer});
}

void MemorySection(std::string& out, const Projection& p) {
  out += "<h2>Memory per GPU, per pipeline stage</h2>\n";
  const std::vector<StageMemory>& stages = p.memory.stages;
  if (stages.empty()) return;
  constexpr std::string_view kPartColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f",
                                              "#bab0ac"};
  constexpr std::string_view kPartNames[] = {"weights", "gradients", "optimizer state",
                                             "activations", "workspace"};
  Legend(out, {{kPartNames[0], kPartColors[0]},
               {kPartNames[1], kPartColors[1]},
               {kPartNames[2], kPartColors[2]},
               {kPartNames[3], kPartColors[3]},
               {kPartNames[4], kPartColors[4]},
               {"HBM capacity", "#c0392b"}});
  const double capacity = GiB(p.memory.capacity);
  const double top = std::max(capacity, GiB(p.memory.peak)) * 1.08;
  constexpr double kLeft = 50, kPlotW = 930, kPlotH = 220, kTop = 22;
  const double slot = kPlotW / static_cast<double>(stages.size());
  const double bar = std::min(48.0, slot * 0.75);
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", kTop + kPlotH + 24);
  auto y_of = [&](double gib) { return kTop + kPlotH - (top > 0 ? gib / top * kPlotH : 0.0); };
  const double tick = TickStep(top, 5);
  for (double g = 0; g <= top; g += tick) {
    absl::StrAppendFormat(
        &out, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#e3e5ee\"/>", kLeft,
        kLeft + kPlotW, y_of(g), y_of(g));
    Text(out, kLeft - 6, y_of(g) + 4, absl::StrFormat("%g", g), "end", "#667");
  }
  Text(out, kLeft - 6, 10, "GiB", "end", "#667");
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageMemory& s = stages[i];
    const double parts[] = {GiB(s.weights), GiB(s.gradients), GiB(s.optimizer_state),
                            GiB(s.activations), GiB(s.workspace)};
    const double x = kLeft + slot * (static_cast<double>(i) + 0.5) - bar / 2;
    double base = 0;
    for (size_t k = 0; k < std::size(parts); ++k) {
      Rect(out, x, y_of(base + parts[k]), bar, y_of(base) - y_of(base + parts[k]), kPartColors[k],
           absl::StrFormat("stage %d %s: %.2f GiB (total %.2f GiB, %d micro-batches in flight)",
                           s.stage, kPartNames[k], parts[k], GiB(s.total),
                           s.in_flight_micro_batches));
      base += parts[k];
    }
    if (stages.size() <= 32 || i % ((stages.size() + 31) / 32) == 0) {
      Text(out, x + bar / 2, kTop + kPlotH + 14, absl::StrCat(s.stage), "middle", "#667");
    }
  }
  if (capacity > 0) {
    absl::StrAppendFormat(
        &out,
        "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#c0392b\" "
        "stroke-dasharray=\"6 4\" stroke-width=\"1.5\"/>",
        kLeft, kLeft + kPlotW, y_of(capacity), y_of(capacity));
  }
  out += "</svg>\n";
  absl::StrAppendFormat(&out, "<p>Peak %.2f GiB on stage %d of %.2f GiB HBM%s.</p>\n",
                        GiB(p.memory.peak), p.memory.peak_stage, capacity,
                        p.fits_in_memory ? "" : ": <b class=\"bad\">does not fit</b>");
}

// Colour of each TimelineKind, in enum order.
constexpr std::string_view kTimelineColors[] = {kForwardColor, kBackwardColor, kWeightGradColor,
                                                kTailColor,    kTailColor,     kCommColor};

void TimelineSection(std::string& out, const Scenario& scenario, const Projection& p) {
  if (p.timeline.empty()) return;
  out += "<h2>Pipeline timeline of one step</h2>\n";
  Legend(out, {{"forward", kForwardColor},
               {"backward (input gradients)", kBackwardColor},
               {"weight gradients (zero bubble)", kWeightGradColor},
               {"DP grad sync and optimizer", kTailColor},
               {"DP bucket reduce (comm stream)", kCommColor}});
  const int64_t ranks = std::max<int64_t>(1, scenario.parallel.pp);
  const double step = p.step_time.value();
  constexpr double kLeft = 70, kPlotW = 920, kLane = 16, kComm = 6, kGap = 6, kTop = 4;
  const double row = kLane + kComm + kGap;
  const double height = kTop + row * static_cast<double>(ranks) + 22;
  const bool tooltips = p.timeline.size() <= kTimelineTooltipLimit;
  const bool interleaved = scenario.parallel.vpp > 1;
  auto x_of = [&](Seconds t) { return kLeft + (step > 0 ? t.value() / step * kPlotW : 0.0); };
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", height);
  for (int64_t r = 0; r < ranks; ++r) {
    Text(out, 0, kTop + row * static_cast<double>(r) + 12, absl::StrCat("PP rank ", r));
  }
  for (const TimelineEvent& e : p.timeline) {
    const bool comm = e.kind == TimelineKind::kGradReduce;
    const double y = kTop + row * static_cast<double>(e.rank) + (comm ? kLane + 1 : 0.0);
    std::string title;
    if (tooltips) {
      title = absl::StrFormat("%s%s, rank %d: %.3f-%.3f ms", TimelineKindName(e.kind),
                              e.micro_batch >= 0
                                  ? (interleaved ? absl::StrCat(e.micro_batch, ".c", e.chunk)
                                                 : absl::StrCat(e.micro_batch))
                                  : std::string(),
                              e.rank, Ms(e.start), Ms(e.end));
    }
    Rect(out, x_of(e.start), y, std::max(x_of(e.end) - x_of(e.start), 0.3), comm ? kComm : kLane,
         kTimelineColors[static_cast<size_t>(e.kind)], title);
  }
  const double axis_y = kTop + row * static_cast<double>(ranks) + 2;
  const double tick = TickStep(Ms(p.step_time), 8);
  for (double t = 0; t <= Ms(p.step_time) + 1e-9; t += tick) {
    const double x = x_of(Seconds(t * 1e-3));
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.0f\" y2=\"%.2f\" stroke=\"#ccd\"/>",
                          x, x, kTop, axis_y);
    Text(out, x, axis_y + 14, absl::StrFormat("%g ms", t), "middle", "#667");
  }
  out += "</svg>\n";
  absl::StrAppendFormat(&out,
                        "<p class=\"note\">%d passes and transfers%s. The same replay as "
                        "<code>--trace</code> (Perfetto) gives, with zoom.</p>\n",
                        p.timeline.size(), tooltips ? "; hover a pass for its times" : "");
}

void OpsSection(std::string& out, const Projection& p) {
  if (p.op_tables.empty()) return;
  absl::StrAppendFormat(&out, "<h2>Slowest ops, one micro-batch</h2>\n");
  for (const OpTable& t : p.op_tables) {
    std::vector<const Op*> ops;
    Seconds total(0);
    for (const Op& op : t.ops) {
      ops.push_back(&op);
      total += op.time;
    }
    std::stable_sort(ops.begin(), ops.end(),
                     [](const Op* a, const Op* b) { return a->time > b->time; });
    if (ops.size() > kTopOps) ops.resize(kTopOps);
    absl::StrAppendFormat(&out, "<h3>%s (x%d): %.3f ms before overlap</h3>\n", HtmlEscape(t.group),
                          t.count, Ms(total));
    out +=
        "<table class=\"grid\"><tr><th>module</th><th>op</th><th>phase</th><th>shape</th>"
        "<th class=\"n\">ms</th><th class=\"n\">share</th><th class=\"n\">TFLOP/s</th>"
        "<th class=\"n\">GB/s</th></tr>";
    for (const Op* op : ops) {
      const double time = op->time.value();
      absl::StrAppendFormat(
          &out,
          "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"n\">%.3f</td>"
          "<td class=\"n\">%.1f%%</td><td class=\"n\">%.1f</td><td class=\"n\">%.0f</td></tr>",
          HtmlEscape(op->module), HtmlEscape(op->name), OpPhaseName(op->phase),
          HtmlEscape(OpShapeText(*op)), Ms(op->time),
          total.value() > 0 ? 100.0 * time / total.value() : 0.0,
          time > 0 ? op->flops.value() / time * 1e-12 : 0.0,
          time > 0 ? op->bytes.value() / time * 1e-9 : 0.0);
    }
    out += "</table>\n";
  }
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ProjectionHtml(const Scenario& scenario, const Projection& p) {
  std::string out;
  Put(out, {"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            "<title>Projection: ",
            HtmlEscape(p.scenario_name), "</title><style>", kCss, "</style></head><body>\n"});
  Headline(out, scenario, p);
  BreakdownSection(out, p);
  ModulesSection(out, p);
  MemorySection(out, p);
  TimelineSection(out, scenario, p);
  OpsSection(out, p);
  if (!p.defaults_used.empty()) {
    out += "<h2>Defaults used</h2>\n<ul>";
    for (const std::string& d : p.defaults_used) Put(out, {"<li>", HtmlEscape(d), "</li>"});
    out += "</ul>\n";
  }
  Put(out,
      {"<h2>Text report</h2>\n<details><summary>show</summary><pre>",
       HtmlEscape(ProjectionText(scenario, p) + OpsText(p)), "</pre></details>\n</body></html>\n"});
  return out;
}

}  // namespace projector
