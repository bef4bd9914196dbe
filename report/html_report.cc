#include "report/html_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/number_format.h"
#include "report/compare_report.h"
#include "report/lod_report.h"
#include "report/report.h"
#include "report/scale_report.h"
#include "report/serve_report.h"
#include "report/validate_report.h"

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
table.grid tr:nth-child(even){background:#f5f6fa}td.wrap{overflow-wrap:anywhere;min-width:14em}
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
constexpr std::string_view kTermColors[] = {"#4e79a7", "#e15759", "#f28e2b", "#b07aa1",
                                            "#d37295", "#bab0ac", "#9c755f", "#76b7b2",
                                            "#edc948", "#ff9da7", "#59a14f"};
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
    const std::string grouped = GroupThousands(absl::StrFormat("%.0f", std::abs(v)));
    return v < 0 ? "-" + grouped : grouped;
  }
  return absl::StrFormat("%.3g", v);
}

// "200k", "1.5M", "50" for axis labels.
std::string CompactFigure(double v) {
  if (v >= 1e6) return absl::StrFormat("%gM", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("%gk", v / 1e3);
  return absl::StrFormat("%g", v);
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

// A line from (x1, y1) to (x2, y2); `dash` as an SVG dash array ("6 4"), empty for solid.
constexpr std::string_view kGridColor = "#e3e5ee";
constexpr std::string_view kGuideColor = "#8a90a6";
constexpr std::string_view kLimitColor = "#c0392b";
constexpr std::string_view kFasterColor = "#59a14f";
void Line(std::string& out, double x1, double y1, double x2, double y2, std::string_view stroke,
          std::string_view dash = "", double width = 1.0) {
  absl::StrAppendFormat(&out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\"",
                        x1, y1, x2, y2, stroke);
  if (!dash.empty()) absl::StrAppendFormat(&out, " stroke-dasharray=\"%s\"", dash);
  if (width != 1.0) absl::StrAppendFormat(&out, " stroke-width=\"%g\"", width);
  out += "/>";
}

void Legend(std::string& out,
            const std::vector<std::pair<std::string_view, std::string_view>>& items) {
  out += "<p>";
  for (const auto& [label, color] : items) {
    Put(out, {"<span class=\"sw\" style=\"background:", color, "\"></span>", label, " &nbsp; "});
  }
  out += "</p>";
}

// The document head (title already escaped) and the opening body tag.
void PageStart(std::string& out, std::string_view title) {
  Put(out, {"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            "<title>",
            title, "</title><style>", kCss, "</style></head><body>\n"});
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

// One chart of module rows: forward, backward and recompute bars on the ms scale `scale_ms`
// (the longest row of every chart of the section, so the charts compare), with its axis.
void ModuleChart(std::string& out, std::string_view title,
                 const std::vector<const ModuleTimes*>& rows, double scale_ms) {
  constexpr double kLabel = 130, kBar = 760, kRow = 22, kAxis = 22;
  const double bars = kRow * static_cast<double>(rows.size()) + 4;
  Put(out, {"<h3>", title, "</h3>"});
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", bars + kAxis);
  auto x_of = [&](double ms) { return kLabel + (scale_ms > 0 ? ms / scale_ms * kBar : 0.0); };
  const double tick = TickStep(scale_ms, 6);
  for (double t = 0; t <= scale_ms + 1e-12; t += tick) {
    Line(out, x_of(t), 0, x_of(t), bars, kGridColor);
    Text(out, x_of(t), bars + 14, absl::StrFormat("%g ms", t), "middle", "#667");
  }
  double y = 2;
  for (const ModuleTimes* m : rows) {
    Text(out, 0, y + 14, HtmlEscape(m->module));
    double ms = 0;
    for (const auto& [t, color, phase] : {std::tuple{m->forward, kForwardColor, "forward"},
                                          std::tuple{m->backward, kBackwardColor, "backward"},
                                          std::tuple{m->recompute, kRecomputeColor, "recompute"}}) {
      Rect(out, x_of(ms), y, x_of(ms + Ms(t)) - x_of(ms), kRow - 6, color,
           absl::StrFormat("%s %s: %.3f ms", HtmlEscape(m->module), phase, Ms(t)));
      ms += Ms(t);
    }
    Text(out, x_of(ms) + 6, y + 14, absl::StrFormat("%.3f ms", ms), "start", "#556");
    y += kRow;
  }
  out += "</svg>\n";
}

void ModulesSection(std::string& out, const Projection& p) {
  out += "<h2>Per layer, one micro-batch</h2>\n";
  Legend(
      out,
      {{"forward", kForwardColor}, {"backward", kBackwardColor}, {"recompute", kRecomputeColor}});
  // One scale for every chart: the longest module of the layer kinds and the end modules.
  double scale_ms = 0;
  auto widen = [&scale_ms](const ModuleTimes& m) {
    scale_ms = std::max(scale_ms, Ms(m.forward + m.backward + m.recompute));
  };
  for (const LayerKindTimes& k : p.layer_kinds) {
    for (const ModuleTimes& m : k.modules) widen(m);
  }
  widen(p.embedding);
  widen(p.output_layer);
  for (const LayerKindTimes& k : p.layer_kinds) {
    std::vector<const ModuleTimes*> rows;
    for (const ModuleTimes& m : k.modules) rows.push_back(&m);
    ModuleChart(out,
                absl::StrFormat("%s layer (x%d): %.3f ms, %.1f MiB of stored activations",
                                k.is_moe ? "MoE" : "dense", k.count,
                                Ms(k.forward + k.backward + k.recompute),
                                k.activation_bytes.value() / (1024.0 * 1024.0)),
                rows, scale_ms);
  }
  ModuleChart(out, "embedding and output layer", {&p.embedding, &p.output_layer}, scale_ms);
  out +=
      "<p class=\"note\">Every chart on one scale: bars compare across layer kinds and the "
      "end modules.</p>\n";
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
    Line(out, kLeft, y_of(g), kLeft + kPlotW, y_of(g), kGridColor);
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
    Line(out, kLeft, y_of(capacity), kLeft + kPlotW, y_of(capacity), kLimitColor, "6 4", 1.5);
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
  // Past about one pass per 3 px of a lane the passes merge into one band: then each 2 px column
  // of a lane shows the kind that filled most of it, as opaque as the column is busy.
  constexpr double kColumn = 2;
  const bool aggregate =
      static_cast<double>(p.timeline.size()) / static_cast<double>(ranks) > kPlotW / 3;
  if (aggregate) {
    const auto columns = static_cast<size_t>(kPlotW / kColumn);
    constexpr size_t kKinds = std::size(kTimelineColors);
    // Busy seconds per (rank, lane: compute or comm, column, kind).
    std::vector<double> busy(static_cast<size_t>(ranks) * 2 * columns * kKinds, 0.0);
    const double column_s = step / static_cast<double>(columns);
    for (const TimelineEvent& e : p.timeline) {
      const size_t lane = e.kind == TimelineKind::kGradReduce ? 1 : 0;
      const size_t base = (static_cast<size_t>(e.rank) * 2 + lane) * columns;
      for (double t = e.start.value(); t < e.end.value() && column_s > 0;) {
        const auto c = std::min(columns - 1, static_cast<size_t>(t / column_s));
        const double until = std::min(e.end.value(), static_cast<double>(c + 1) * column_s);
        busy[(base + c) * kKinds + static_cast<size_t>(e.kind)] += std::max(until - t, 0.0);
        t = until > t ? until : e.end.value();
      }
    }
    for (size_t lane_index = 0; lane_index < static_cast<size_t>(ranks) * 2; ++lane_index) {
      const bool comm = lane_index % 2 == 1;
      const double y = kTop + row * static_cast<double>(lane_index / 2) + (comm ? kLane + 1 : 0.0);
      for (size_t c = 0; c < columns; ++c) {
        const double* kinds = &busy[(lane_index * columns + c) * kKinds];
        const size_t top = static_cast<size_t>(std::max_element(kinds, kinds + kKinds) - kinds);
        const double filled = std::min(1.0, std::accumulate(kinds, kinds + kKinds, 0.0) / column_s);
        if (!(filled > 0)) continue;
        absl::StrAppendFormat(&out,
                              "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                              "fill=\"%s\" fill-opacity=\"%.2f\"/>",
                              kLeft + static_cast<double>(c) * kColumn, y, kColumn,
                              comm ? kComm : kLane, kTimelineColors[top], 0.25 + 0.75 * filled);
      }
    }
  }
  for (const TimelineEvent& e : p.timeline) {
    if (aggregate) break;
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
    Line(out, x, kTop, x, axis_y, kGridColor);
    Text(out, x, axis_y + 14, absl::StrFormat("%g ms", t), "middle", "#667");
  }
  out += "</svg>\n";
  absl::StrAppendFormat(
      &out,
      "<p class=\"note\">%d passes and transfers%s. The same replay as "
      "<code>--trace</code> (Perfetto) gives, with zoom.</p>\n",
      p.timeline.size(),
      aggregate  ? absl::StrFormat(", too many to draw one by one: each %.1f ms column shows the "
                                    "kind that filled most of it, fainter where the rank idled",
                                   Ms(p.step_time) / (kPlotW / kColumn))
      : tooltips ? "; hover a pass for its times"
                 : "");
}

void OpsSection(std::string& out, const Projection& p) {
  if (p.op_tables.empty()) return;
  absl::StrAppendFormat(&out, "<h2>Slowest ops, one micro-batch</h2>\n");
  for (const OpTable& t : p.op_tables) {
    std::vector<const Op*> ops;
    Seconds total(0);
    for (const Op& op : t.ops) {
      ops.push_back(&op);
      if (op.phase != OpPhase::kOncePerStep) total += op.time;  // the micro-batch's own time
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

// Colours of the sources of a validation page, cycled.
constexpr std::string_view kSourceColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                              "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                              "#9c755f", "#bab0ac"};

std::string_view ErrorClass(double error_pct) {
  const double e = std::abs(error_pct);
  return e <= 10.0 ? "good" : (e > 20.0 ? "bad" : "");
}

void SummaryTable(std::string& out, std::string_view title, const std::vector<ErrorSummary>& rows) {
  Put(out, {"<h3>", title, "</h3>\n"});
  out +=
      "<table class=\"grid\"><tr><th>group</th><th class=\"n\">cases</th>"
      "<th class=\"n\">projected</th><th class=\"n\">median |err|</th>"
      "<th class=\"n\">mean err</th><th class=\"n\">&le;10%</th>"
      "<th class=\"n\">&le;20%</th><th class=\"n\">&le;30%</th></tr>";
  for (const ErrorSummary& r : rows) {
    absl::StrAppendFormat(&out,
                          "<tr><td>%s</td><td class=\"n\">%d</td><td class=\"n\">%d</td>"
                          "<td class=\"n %s\">%.1f%%</td><td class=\"n\">%+.1f%%</td>"
                          "<td class=\"n\">%.0f%%</td><td class=\"n\">%.0f%%</td>"
                          "<td class=\"n\">%.0f%%</td></tr>",
                          HtmlEscape(r.group), r.count, r.projected,
                          ErrorClass(r.median_abs_error_pct), r.median_abs_error_pct,
                          r.mean_error_pct, r.within_10_pct, r.within_20_pct, r.within_30_pct);
  }
  out += "</table>\n";
}

// Index of each case's source in `sources` (first-appearance order).
std::vector<size_t> SourceIndex(const std::vector<ValidationCase>& cases,
                                std::vector<std::string>& sources) {
  std::vector<size_t> index;
  index.reserve(cases.size());
  for (const ValidationCase& c : cases) {
    auto it = std::find(sources.begin(), sources.end(), c.source);
    if (it == sources.end()) it = sources.insert(sources.end(), c.source);
    index.push_back(static_cast<size_t>(it - sources.begin()));
  }
  return index;
}

std::string CaseTooltip(const ValidationCase& c) {
  return HtmlEscape(absl::StrFormat("%s: measured %.0f, projected %.0f %s/s per GPU (%+.1f%%)",
                                    c.id, c.measured_tokens_per_s_per_gpu,
                                    *c.projected_tokens_per_s_per_gpu, c.unit, *c.error_pct));
}

// The throughput the cases count: "tokens/s", "images/s", or both when a file mixes them.
std::string ThroughputUnit(const std::vector<ValidationCase>& cases) {
  bool tokens = false, images = false;
  for (const ValidationCase& c : cases) (c.unit == "images" ? images : tokens) = true;
  if (tokens && images) return "(tokens or images)/s";
  return images ? "images/s" : "tokens/s";
}

// Log-log projected against measured TGS with the y = x line and the ±10% / ±20% bands.
void ScatterChart(std::string& out, const ValidationReport& r, const std::vector<size_t>& source,
                  const std::vector<std::string>& sources) {
  double lo = 0, hi = 0;
  for (const ValidationCase& c : r.cases) {
    if (!c.projected_tokens_per_s_per_gpu) continue;
    for (double v : {c.measured_tokens_per_s_per_gpu, *c.projected_tokens_per_s_per_gpu}) {
      if (!(v > 0)) continue;
      lo = lo > 0 ? std::min(lo, v) : v;
      hi = std::max(hi, v);
    }
  }
  if (!(lo > 0) || !(hi > 0)) return;
  const double l0 = std::log10(lo / 1.3), l1 = std::log10(hi * 1.3);
  constexpr double kLeft = 64, kTop = 10, kSize = 520;
  auto px = [&](double v) { return kLeft + (std::log10(v) - l0) / (l1 - l0) * kSize; };
  auto py = [&](double v) { return kTop + kSize - (std::log10(v) - l0) / (l1 - l0) * kSize; };
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", kTop + kSize + 40);
  // Grid at 1, 2 and 5 times each power of ten inside the range.
  for (double decade = std::pow(10.0, std::floor(l0)); decade <= std::pow(10.0, l1); decade *= 10) {
    for (double f : {1.0, 2.0, 5.0}) {
      const double v = f * decade;
      if (std::log10(v) < l0 || std::log10(v) > l1) continue;
      Line(out, px(v), kTop, px(v), kTop + kSize, kGridColor);
      Line(out, kLeft, py(v), kLeft + kSize, py(v), kGridColor);
      if (f > 1.0 && l1 - l0 > 3.0) continue;  // wide ranges: label the decades only
      Text(out, px(v), kTop + kSize + 14, CompactFigure(v), "middle", "#667");
      Text(out, kLeft - 6, py(v) + 4, CompactFigure(v), "end", "#667");
    }
  }
  // y = k·x from the left or bottom edge to the top or right edge.
  const double a = std::pow(10.0, l0), b = std::pow(10.0, l1);
  for (const auto& [k, dash] :
       {std::pair{1.0, ""}, {1.1, "2 3"}, {1 / 1.1, "2 3"}, {1.2, "6 4"}, {1 / 1.2, "6 4"}}) {
    const double x0 = std::max(a, a / k), x1 = std::min(b, b / k);
    Line(out, px(x0), py(k * x0), px(x1), py(k * x1), kGuideColor, dash);
  }
  for (size_t i = 0; i < r.cases.size(); ++i) {
    const ValidationCase& c = r.cases[i];
    if (!c.projected_tokens_per_s_per_gpu || !(c.measured_tokens_per_s_per_gpu > 0) ||
        !(*c.projected_tokens_per_s_per_gpu > 0)) {
      continue;
    }
    const std::string_view color = kSourceColors[source[i] % std::size(kSourceColors)];
    absl::StrAppendFormat(&out,
                          "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"%s\" "
                          "stroke=\"%s\" fill-opacity=\"0.75\"><title>%s</title></circle>",
                          px(c.measured_tokens_per_s_per_gpu),
                          py(*c.projected_tokens_per_s_per_gpu), c.inconsistent ? "none" : color,
                          color, CaseTooltip(c));
  }
  const std::string unit = ThroughputUnit(r.cases);
  Text(out, kLeft + kSize / 2, kTop + kSize + 32, absl::StrCat("measured ", unit, " per GPU"),
       "middle");
  absl::StrAppendFormat(&out,
                        "<text x=\"14\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#1d2330\" "
                        "transform=\"rotate(-90 14 %.0f)\">projected %s per GPU</text>",
                        kTop + kSize / 2, kTop + kSize / 2, unit);
  // Legend: one row per source.
  double y = kTop + 10;
  for (size_t s = 0; s < sources.size(); ++s) {
    Rect(out, kLeft + kSize + 40, y - 9, 11, 11, kSourceColors[s % std::size(kSourceColors)]);
    Text(out, kLeft + kSize + 58, y, HtmlEscape(sources[s]));
    y += 18;
  }
  Text(out, kLeft + kSize + 40, y + 8, "solid line: projected = measured", "start", "#667");
  Text(out, kLeft + kSize + 40, y + 24, "dotted: ±10%, dashed: ±20%", "start", "#667");
  Text(out, kLeft + kSize + 40, y + 40, "hollow: flagged inconsistent", "start", "#667");
  out += "</svg>\n";
}

// One row per source: every projected case's error on a −50..+50% axis (clamped), with the
// ±10% and ±20% bands shaded.
void ErrorStrip(std::string& out, const ValidationReport& r, const std::vector<size_t>& source,
                const std::vector<std::string>& sources) {
  constexpr double kLeft = 230, kWidth = 740, kRow = 26, kTop = 6, kRange = 50;
  const double height = kTop + kRow * static_cast<double>(sources.size()) + 24;
  auto px = [&](double e) {
    return kLeft + (std::clamp(e, -kRange, kRange) + kRange) / (2 * kRange) * kWidth;
  };
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", height);
  const double bottom = kTop + kRow * static_cast<double>(sources.size());
  Rect(out, px(-20), kTop, px(20) - px(-20), bottom - kTop, "#eef6ee");
  Rect(out, px(-10), kTop, px(10) - px(-10), bottom - kTop, "#dcefdc");
  for (double e = -kRange; e <= kRange; e += 10) {
    Line(out, px(e), kTop, px(e), bottom, e == 0 ? kGuideColor : kGridColor);
    Text(out, px(e), bottom + 14,
         absl::StrFormat("%s%+.0f%%", e == -kRange ? "&le;" : (e == kRange ? "&ge;" : ""), e),
         "middle", "#667");
  }
  for (size_t s = 0; s < sources.size(); ++s) {
    Text(out, 0, kTop + kRow * static_cast<double>(s) + kRow / 2 + 4,
         HtmlEscape(sources[s].substr(0, 34)));
  }
  for (size_t i = 0; i < r.cases.size(); ++i) {
    const ValidationCase& c = r.cases[i];
    if (!c.error_pct) continue;
    // A small deterministic vertical spread so that equal errors stay visible.
    const double jitter = (static_cast<double>(i % 7) - 3.0) * 2.2;
    const std::string_view color = kSourceColors[source[i] % std::size(kSourceColors)];
    absl::StrAppendFormat(&out,
                          "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\" "
                          "stroke=\"%s\" fill-opacity=\"0.7\"><title>%s</title></circle>",
                          px(*c.error_pct),
                          kTop + kRow * static_cast<double>(source[i]) + kRow / 2 + jitter,
                          c.inconsistent ? "none" : color, color, CaseTooltip(c));
  }
  out += "</svg>\n";
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

// The bottlenecks: value over the high threshold as a bar (the threshold a dashed line at 100%),
// coloured by severity, and the recommendations of each.
void BottlenecksSection(std::string& out, const std::vector<Bottleneck>& bottlenecks, double tgs) {
  out += "<h2>Bottlenecks (value against the high threshold)</h2>\n";
  if (bottlenecks.empty()) {
    out += "<p class=\"note\">None at or above its threshold.</p>\n";
    return;
  }
  Legend(out, {{"high", kLimitColor}, {"medium", kBackwardColor}, {"low", kForwardColor}});
  constexpr double kRow = 26, kLeft = 150, kW = 700;
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">",
                        kRow * static_cast<double>(bottlenecks.size()) + 30);
  // Bars to 150% of the threshold; the threshold itself at 100%.
  constexpr double kScale = 1.5;
  for (size_t i = 0; i < bottlenecks.size(); ++i) {
    const Bottleneck& b = bottlenecks[i];
    const double y = 6 + kRow * static_cast<double>(i);
    const double ratio = b.threshold > 0 ? b.value / b.threshold : 0;
    const std::string_view color = b.severity == Severity::kHigh     ? kLimitColor
                                   : b.severity == Severity::kMedium ? kBackwardColor
                                                                     : kForwardColor;
    Text(out, kLeft - 8, y + 14, BottleneckKindName(b.kind), "end");
    Rect(out, kLeft, y, std::min(ratio, kScale) / kScale * kW, kRow - 8, color,
         HtmlEscape(b.detail));
    Text(out, kLeft + std::min(ratio, kScale) / kScale * kW + 6, y + 14,
         absl::StrFormat("%.0f%% of the threshold", 100 * ratio), "start", "#667");
  }
  const double x100 = kLeft + kW / kScale;
  Line(out, x100, 0, x100, kRow * static_cast<double>(bottlenecks.size()) + 6, kGuideColor, "6 4");
  Text(out, x100, kRow * static_cast<double>(bottlenecks.size()) + 22, "high threshold", "middle",
       "#667");
  out +=
      "</svg>\n<table class=\"grid\"><tr><th>bottleneck</th><th>change</th>"
      "<th class=\"n\">TGS</th><th class=\"n\">vs now</th><th>fits</th></tr>";
  for (const Bottleneck& b : bottlenecks) {
    for (const Reprojected& r : b.recommendations) {
      absl::StrAppendFormat(&out,
                            "<tr><td>%s</td><td><code>%s</code></td><td class=\"n\">%.1f</td>"
                            "<td class=\"n\">%+.1f%%</td><td>%s</td></tr>",
                            BottleneckKindName(b.kind), HtmlEscape(r.flags), r.tokens_per_s_per_gpu,
                            tgs > 0 ? 100 * (r.tokens_per_s_per_gpu - tgs) / tgs : 0.0,
                            r.fits ? "yes" : "no");
    }
  }
  out += "</table>\n";
  for (const Bottleneck& b : bottlenecks) {
    if (b.kernel_classes.empty()) continue;
    out +=
        "<h3>Compute by class of kernel</h3>\n<table class=\"grid\"><tr><th>kernels</th>"
        "<th class=\"n\">share of compute</th><th class=\"n\">achieved</th>"
        "<th class=\"n\">peak</th><th class=\"n\">of peak</th></tr>";
    for (const KernelClassUse& c : b.kernel_classes) {
      absl::StrAppendFormat(&out,
                            "<tr><td>%s</td><td class=\"n\">%.1f%%</td><td class=\"n\">%.0f %s</td>"
                            "<td class=\"n\">%.0f %s</td><td class=\"n\">%.0f%%</td></tr>",
                            c.kernel_class, 100 * c.share, c.achieved, c.unit, c.peak, c.unit,
                            c.peak > 0 ? 100 * c.achieved / c.peak : 0.0);
    }
    out += "</table>\n";
  }
}

// The run-setting sensitivity as a tornado chart: one bar per setting from the projection's TGS,
// right (green) where the alternative is faster, left (red) where slower, the largest move on
// top, the axis spanning the largest move; then the table with each change's flags.
void SensitivitySection(std::string& out, const std::vector<SettingChange>& changes, double tgs) {
  out += "<h2>Sensitivity to run settings (each switched alone and re-projected)</h2>\n";
  if (changes.empty() || tgs <= 0) {
    out += "<p class=\"note\">No setting of the catalogue applies.</p>\n";
    return;
  }
  auto change_pct = [tgs](const SettingChange& c) {
    return 100 * (c.result.tokens_per_s_per_gpu - tgs) / tgs;
  };
  std::vector<const SettingChange*> rows;
  double span = 1;  // % either side of the centre; at least 1 so that no bar divides by 0
  for (const SettingChange& c : changes) {
    rows.push_back(&c);
    span = std::max(span, std::fabs(change_pct(c)));
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const SettingChange* a, const SettingChange* b) {
    return std::fabs(change_pct(*a)) > std::fabs(change_pct(*b));
  });
  Legend(out, {{"faster", kFasterColor}, {"slower", kLimitColor}});
  // Labels end at kLabel; kValue leaves room for a full-length slower bar's figure.
  constexpr double kRow = 24, kLabel = 400, kValue = 60, kHalf = 240;
  const double centre = kLabel + kValue + kHalf;
  const double height = kRow * static_cast<double>(rows.size()) + 30;
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", height);
  for (size_t i = 0; i < rows.size(); ++i) {
    const SettingChange& c = *rows[i];
    const double y = 6 + kRow * static_cast<double>(i);
    const double pct = change_pct(c);
    const double w = std::fabs(pct) / span * kHalf;
    Text(out, kLabel, y + 13,
         HtmlEscape(absl::StrCat(c.setting, ": ", c.projected, " \u2192 ", c.alternative)), "end");
    Rect(out, pct >= 0 ? centre : centre - w, y, w, kRow - 8, pct >= 0 ? kFasterColor : kLimitColor,
         HtmlEscape(c.result.flags));
    Text(out, pct >= 0 ? centre + w + 6 : centre - w - 6, y + 13,
         std::fabs(pct) < 0.05 ? "0.0%" : absl::StrFormat("%+.1f%%", pct),
         pct >= 0 ? "start" : "end", "#667");
  }
  Line(out, centre, 0, centre, height - 24, kGuideColor, "");
  Text(out, centre, height - 8,
       absl::StrFormat("the projection, %.1f tokens/s/GPU (axis \u00b1%.0f%%)", tgs, span),
       "middle", "#667");
  out +=
      "</svg>\n<table class=\"grid\"><tr><th>setting</th><th>projected</th><th>alternative</th>"
      "<th>flags</th><th class=\"n\">TGS</th><th class=\"n\">vs now</th><th>fits</th></tr>";
  for (const SettingChange* c : rows) {
    absl::StrAppendFormat(&out,
                          "<tr><td>%s</td><td>%s</td><td>%s</td><td><code>%s</code></td>"
                          "<td class=\"n\">%.1f</td><td class=\"n\">%+.1f%%</td><td>%s</td></tr>",
                          HtmlEscape(c->setting), HtmlEscape(c->projected),
                          HtmlEscape(c->alternative), HtmlEscape(c->result.flags),
                          c->result.tokens_per_s_per_gpu, change_pct(*c),
                          c->result.fits ? "yes" : "no");
  }
  out += "</table>\n";
}

// The event replay beside the analytical projection: the two levels' figures, then the busy
// share of the streams (every one while they fit, else the busiest and the least busy) and of
// the busiest links and NICs.
void HighLodSection(std::string& out, const HighLodResult& r) {
  out += "<h2>Event replay (<code>--lod high</code>)</h2>\n<table>\n";
  out += "<tr><th></th><th>medium</th><th>high</th><th>difference</th></tr>\n";
  auto row = [&](std::string_view what, Seconds medium, Seconds high) {
    // No difference in per cent from nothing: a dash where medium has none.
    const std::string diff = medium.value() > 0
                                 ? absl::StrFormat("%+.2f%%", (high - medium) / medium * 100.0)
                             : high.value() > 0 ? "&ndash;"
                                                : "+0.00%";
    absl::StrAppendFormat(&out,
                          "<tr><td>%s</td><td class=\"num\">%.3f ms</td><td class=\"num\">%.3f "
                          "ms</td><td class=\"num\">%s</td></tr>\n",
                          what, Ms(medium), Ms(high), diff);
  };
  row("step time", r.medium.step_time, r.step_time);
  row("pipeline (last pass)", r.medium.pipeline_time, r.pipeline_time);
  row("exposed DP communication", r.medium.breakdown.exposed_dp_comm, r.exposed_dp_comm);
  for (const GroupExposureRow& g : GroupExposureRows(r)) {
    row(absl::StrCat("exposed ", std::string(g.group), " communication"), g.medium, g.high);
  }
  out += "</table>\n<ul>";
  if (r.network.empty()) {
    Put(out,
        {"<li>NIC ", r.nic_shared ? "shared: " : "not shared: ", HtmlEscape(r.nic_note), "</li>"});
  } else {
    Put(out, {"<li>network '", HtmlEscape(r.network),
              "': the DP reduces and the layers' TP, CP and EP collectives (their algorithm's "
              "steps, a hidden part beside the compute it hides behind), FSDP's gathers and "
              "reduce-scatters and the pipeline's activations as flows on ",
              absl::StrCat(r.network_links), " of its links, max-min fair</li>"});
  }
  if (r.slow_rank) {
    Put(out,
        {"<li>straggler: rank ", absl::StrCat(r.slow_rank->rank), " (pipeline stage ",
         absl::StrCat(r.slow_stage), ") ", absl::StrFormat("x%g", r.slow_rank->factor), "</li>"});
  }
  if (r.slow_link) {
    Put(out, {"<li>slow link: ", r.network.empty() ? "ranks " : "nodes ",
              absl::StrCat(r.slow_link->a, "-", r.slow_link->b), " ",
              absl::StrFormat("x%g", r.slow_link->factor), ", ", HtmlEscape(r.slow_link_carries),
              "</li>"});
  }
  if (r.slow_rank || r.slow_link) {
    Put(out, {"<li>step ",
              absl::StrFormat("%.3f ms, %+.2f%% over %.3f ms without", Ms(r.step_time),
                              r.DisturbedSlowdownPct(), Ms(r.step_time_undisturbed)),
              "</li>"});
  }
  Put(out, {"<li>", Figure(static_cast<double>(r.events)), " events on ",
            Figure(static_cast<double>(r.resources)), " streams and links; ",
            r.unfolded ? absl::StrCat("every one of ", r.pipeline_ranks, " GPUs simulated")
                       : absl::StrCat(r.pipeline_ranks * r.gpus_per_rank, " GPUs folded as ",
                                      r.pipeline_ranks, " pipeline ranks of ", r.gpus_per_rank),
            absl::StrFormat("; %.2f ms to replay beside %.2f ms for medium", r.high_wall_s * 1e3,
                            r.medium_wall_s * 1e3),
            "</li></ul>\n"});
  // Busy share bars.
  std::vector<const ResourceUse*> streams, links;
  for (const ResourceUse& u : r.resource_use) {
    if (IsComputeStream(u)) streams.push_back(&u);
    if (IsCommunication(u)) links.push_back(&u);
  }
  auto by_busy = [](const ResourceUse* a, const ResourceUse* b) { return a->busy > b->busy; };
  std::stable_sort(links.begin(), links.end(), [](const ResourceUse* a, const ResourceUse* b) {
    return a->carried > b->carried;
  });
  constexpr size_t kListed = 12;
  if (streams.size() > kListed) {
    std::stable_sort(streams.begin(), streams.end(), by_busy);
    streams.erase(streams.begin() + kListed / 2, streams.end() - kListed / 2);
  }
  if (links.size() > kListed / 2) links.resize(kListed / 2);
  std::vector<const ResourceUse*> bars = streams;
  bars.insert(bars.end(), links.begin(), links.end());
  if (bars.empty()) return;
  const double step = r.step_time.value();
  constexpr double kLeft = 330, kBarW = 600, kRow = 20, kTop = 4;
  const double height = kTop + kRow * static_cast<double>(bars.size()) + 24;
  out += "<h3>Busy share of the step</h3>\n";
  Legend(out, {{"GPU stream (passes, receives)", kForwardColor},
               {"link, NIC or DP stream (the most used: utilisation)", kCommColor}});
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", height);
  for (size_t i = 0; i < bars.size(); ++i) {
    const ResourceUse& u = *bars[i];
    const bool is_stream = i < streams.size();
    // Streams: the share of the step they ran; links: their utilisation.
    const Seconds used = is_stream ? u.busy : u.carried;
    const double share = step > 0 ? std::min(1.0, used.value() / step) : 0.0;
    const double y = kTop + kRow * static_cast<double>(i);
    const std::string label = HtmlEscape(u.name.starts_with("link ") ? u.name.substr(5) : u.name);
    Text(out, kLeft - 8, y + 13, label, "end");
    Rect(out, kLeft, y + 2, kBarW * share, kRow - 6, is_stream ? kForwardColor : kCommColor,
         absl::StrFormat("%s: %.1f%% of the step", label, share * 100.0));
    Text(out, kLeft + kBarW * share + 6, y + 13, absl::StrFormat("%.1f%%", share * 100.0));
  }
  const double axis_y = kTop + kRow * static_cast<double>(bars.size()) + 2;
  for (int pct = 0; pct <= 100; pct += 25) {
    const double x = kLeft + kBarW * pct / 100.0;
    Line(out, x, kTop, x, axis_y, kGridColor);
    Text(out, x, axis_y + 14, absl::StrFormat("%d%%", pct), "middle", "#667");
  }
  out += "</svg>\n";
  if (r.resource_use.size() > bars.size()) {
    absl::StrAppendFormat(&out,
                          "<p class=\"note\">%d of %d streams and links shown: the busiest and the "
                          "least busy streams, the most used links. JSON <code>lod_high."
                          "resources_busy</code> lists every one.</p>\n",
                          bars.size(), r.resource_use.size());
  }
}

std::string ProjectionHtml(const Scenario& scenario, const Projection& p,
                           const std::vector<Bottleneck>* bottlenecks, const HighLodResult* high,
                           const std::vector<SettingChange>* sensitivity) {
  std::string out;
  PageStart(out, absl::StrCat("Projection: ", HtmlEscape(p.scenario_name)));
  Headline(out, scenario, p);
  if (bottlenecks != nullptr) BottlenecksSection(out, *bottlenecks, p.tokens_per_s_per_gpu);
  if (sensitivity != nullptr) SensitivitySection(out, *sensitivity, p.tokens_per_s_per_gpu);
  BreakdownSection(out, p);
  ModulesSection(out, p);
  MemorySection(out, p);
  TimelineSection(out, scenario, p);
  if (high != nullptr) HighLodSection(out, *high);
  OpsSection(out, p);
  if (!p.defaults_used.empty()) {
    out += "<h2>Defaults used</h2>\n<ul>";
    for (const std::string& d : p.defaults_used) Put(out, {"<li>", HtmlEscape(d), "</li>"});
    out += "</ul>\n";
  }
  Put(out,
      {"<h2>Text report</h2>\n<details><summary>show</summary><pre>",
       HtmlEscape(ProjectionText(scenario, p) + OpsText(scenario, p)), "</pre></details>\n</body></html>\n"});
  return out;
}

std::string ValidationHtml(const ValidationReport& r) {
  std::string out;
  PageStart(out, absl::StrCat("Projected vs measured: ", HtmlEscape(r.file)));
  Put(out, {"<h1>Projected vs measured: ", HtmlEscape(r.file), "</h1>\n"});
  const ErrorSummary& s = r.summary;
  out += "<div class=\"cards\">";
  Card(out, absl::StrCat(s.count), "cases");
  Card(out, absl::StrCat(s.projected), "projected", s.projected < s.count ? "bad" : "");
  Card(out, absl::StrFormat("%.1f%%", s.median_abs_error_pct), "median |error|",
       ErrorClass(s.median_abs_error_pct));
  Card(out, absl::StrFormat("%+.1f%%", s.mean_error_pct), "mean error (projected high > 0)");
  Card(out,
       absl::StrFormat("%.0f / %.0f / %.0f%%", s.within_10_pct, s.within_20_pct, s.within_30_pct),
       "within 10 / 20 / 30%");
  Card(out, absl::StrCat(r.inconsistent_cases), "flagged inconsistent");
  if (r.twin_groups > 0) {
    Card(out, absl::StrFormat("%d (floor %.0f%%)", r.twin_groups, r.max_twin_error_floor_pct),
         "twin groups: same inputs, measured apart");
  }
  if (r.with_settings_range > 0) {
    Card(out, absl::StrFormat("%d of %d", r.within_settings_range, r.with_settings_range),
         "measured within their run-settings range");
  }
  Card(out, absl::StrCat(r.measured_but_not_fitting), "measured, projected not to fit");
  out += "</div>\n";

  std::vector<std::string> sources;
  const std::vector<size_t> source = SourceIndex(r.cases, sources);
  out += "<h2>Projected against measured</h2>\n";
  ScatterChart(out, r, source, sources);
  out +=
      "<h2>Error by source</h2>\n<p class=\"note\">(projected &minus; measured) / measured; "
      "shaded: within 10% and 20%.</p>\n";
  ErrorStrip(out, r, source, sources);

  out += "<h2>Summary</h2>\n";
  SummaryTable(out, "All cases", {r.summary});
  SummaryTable(out, "By GPU", r.by_gpu);
  SummaryTable(out, "By source", r.by_source);
  out +=
      "<h3>Stack by source</h3>\n<p class=\"note\">What the cases ran: defaults for what the "
      "case schema does not state, or the what-if flags.</p>\n<table class=\"grid\"><tr>"
      "<th>source</th><th>stack</th><th>attention kernel</th><th>loss kernel</th>"
      "<th>train-metric passes</th></tr>";
  for (const SourceStack& st : StacksBySource(r)) {
    Put(out, {"<tr><td>", HtmlEscape(st.source), "</td><td>", HtmlEscape(st.stacks), "</td><td>",
              HtmlEscape(st.attention_kernels), "</td><td>", HtmlEscape(st.loss_kernels),
              "</td><td>", HtmlEscape(st.train_metric_passes), "</td></tr>"});
  }
  out += "</table>\n";
  SummaryTable(out, "By model family", r.by_model_family);
  SummaryTable(out, "By precision", r.by_precision);
  SummaryTable(out, "By sequence length", r.by_seq_len);
  SummaryTable(out, "By scale", r.by_scale);

  out +=
      "<h2>Cases</h2>\n<table class=\"grid\"><tr><th>id</th><th>model</th><th>GPU</th>"
      "<th class=\"n\">GPUs</th><th>layout</th><th class=\"n\">measured</th>"
      "<th class=\"n\">projected</th><th class=\"n\">error</th><th>dominant terms</th>"
      "<th>flags</th></tr>";
  for (const ValidationCase& c : r.cases) {
    if (!c.projected_tokens_per_s_per_gpu || !c.error_pct) continue;
    std::string flags = c.fits_in_memory ? "" : "does not fit";
    if (c.inconsistent) {
      absl::StrAppend(&flags, flags.empty() ? "" : "; ", "inconsistent: ", InconsistencyNote(c));
    }
    if (c.settings_low_tokens_per_s_per_gpu) {
      absl::StrAppend(&flags, flags.empty() ? "" : "; ", "run settings ",
                      Figure(*c.settings_low_tokens_per_s_per_gpu), "\u2013",
                      Figure(*c.settings_high_tokens_per_s_per_gpu),
                      MeasuredWithinSettingsRange(c) ? ": measured within" : ": measured outside");
    }
    // The id and the flags (which name twins by id) may break anywhere: ids are long and have no
    // spaces, and the table keeps to the page.
    absl::StrAppendFormat(&out,
                          "<tr><td class=\"wrap\">%s</td><td>%s</td><td>%s</td><td class=\"n\">%d</td>"
                          "<td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                          "<td class=\"n %s\">%+.1f%%</td><td>%s</td><td class=\"wrap\">%s</td></tr>",
                          HtmlEscape(c.id), HtmlEscape(c.model), HtmlEscape(c.gpu), c.num_gpus,
                          HtmlEscape(c.layout), Figure(c.measured_tokens_per_s_per_gpu),
                          Figure(*c.projected_tokens_per_s_per_gpu), ErrorClass(*c.error_pct),
                          *c.error_pct, HtmlEscape(c.dominant_terms), HtmlEscape(flags));
  }
  out += "</table>\n";
  bool header = false;
  for (const ValidationCase& c : r.cases) {
    if (c.projected_tokens_per_s_per_gpu && c.error_pct) continue;
    if (!header) {
      out +=
          "<h2>Cases not projected</h2>\n<table class=\"grid\"><tr><th>id</th>"
          "<th class=\"n\">line</th><th>reason</th></tr>";
      header = true;
    }
    absl::StrAppendFormat(&out, "<tr><td>%s</td><td class=\"n\">%d</td><td>%s</td></tr>",
                          HtmlEscape(c.id), c.line, HtmlEscape(c.reason));
  }
  if (header) out += "</table>\n";
  absl::StrAppendFormat(&out, "<p class=\"note\">%d cases in %.2f s.</p>\n</body></html>\n",
                        r.cases.size(), r.elapsed_s);
  return out;
}

std::string ClockWhatIfHtml(const Scenario& scenario, const std::vector<ClockRow>& rows) {
  std::string out;
  PageStart(out, absl::StrCat("Clock what-if: ", HtmlEscape(scenario.name)));
  Put(out, {"<h1>Clock what-if: ", HtmlEscape(scenario.name), "</h1>\n<pre>",
            HtmlEscape(DescribeScenario(scenario)), "</pre>\n"});
  if (rows.empty()) return out + "</body></html>\n";
  const auto [lo_it, hi_it] = std::minmax_element(
      rows.begin(), rows.end(),
      [](const ClockRow& a, const ClockRow& b) { return a.clock_mhz < b.clock_mhz; });
  const ClockRow& lowest = *lo_it;
  const double c0 = lowest.clock_mhz, c1 = hi_it->clock_mhz;
  double top = 0;
  for (const ClockRow& r : rows) {
    top = std::max({top, r.tokens_per_s_per_gpu,
                    lowest.tokens_per_s_per_gpu * r.clock_mhz / std::max(c0, 1e-9)});
  }
  top *= 1.1;
  constexpr double kLeft = 70, kTop = 12, kW = 880, kH = 300;
  const double span = c1 > c0 ? c1 - c0 : 1.0;
  auto px = [&](double mhz) { return kLeft + (c1 > c0 ? (mhz - c0) / span : 0.5) * kW; };
  auto py = [&](double tgs) { return kTop + kH - (top > 0 ? tgs / top * kH : 0.0); };
  out += "<h2>Tokens/s per GPU against the sustained clock</h2>\n";
  Legend(out, {{"projected TGS", kForwardColor},
               {"proportional to the clock (through the lowest clock)", "#8a90a6"}});
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", kTop + kH + 40);
  const double ytick = TickStep(top, 5);
  for (double v = 0; v <= top; v += ytick) {
    Line(out, kLeft, py(v), kLeft + kW, py(v), kGridColor);
    Text(out, kLeft - 6, py(v) + 4, CompactFigure(v), "end", "#667");
  }
  for (const ClockRow& r : rows) {
    Text(out, px(r.clock_mhz), kTop + kH + 14, absl::StrFormat("%g", r.clock_mhz), "middle",
         "#667");
  }
  Text(out, kLeft + kW / 2, kTop + kH + 32, "sustained clock (MHz)", "middle");
  Line(out, px(c0), py(lowest.tokens_per_s_per_gpu), px(c1),
       py(lowest.tokens_per_s_per_gpu * c1 / std::max(c0, 1e-9)), kGuideColor, "6 4");
  std::vector<const ClockRow*> sorted;
  for (const ClockRow& r : rows) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [](const ClockRow* a, const ClockRow* b) {
    return a->clock_mhz < b->clock_mhz;
  });
  std::string points;
  for (const ClockRow* r : sorted) {
    absl::StrAppendFormat(&points, "%.2f,%.2f ", px(r->clock_mhz), py(r->tokens_per_s_per_gpu));
  }
  absl::StrAppendFormat(&out,
                        "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
                        "stroke-width=\"2\"/>",
                        points, kForwardColor);
  for (const ClockRow* r : sorted) {
    absl::StrAppendFormat(&out,
                          "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"4\" fill=\"%s\"><title>%g MHz: "
                          "%.1f TGS, step %.2f ms</title></circle>",
                          px(r->clock_mhz), py(r->tokens_per_s_per_gpu), kForwardColor,
                          r->clock_mhz, r->tokens_per_s_per_gpu, Ms(r->step_time));
  }
  out +=
      "</svg>\n<table class=\"grid\"><tr><th class=\"n\">clock MHz</th>"
      "<th class=\"n\">step ms</th><th class=\"n\">TGS</th><th class=\"n\">TFLOP/s/GPU</th>"
      "<th class=\"n\">clock-scaled share</th><th class=\"n\">TGS vs lowest clock</th>"
      "<th class=\"n\">clock vs lowest</th></tr>";
  for (const ClockRow& r : rows) {
    absl::StrAppendFormat(&out,
                          "<tr><td class=\"n\">%g</td><td class=\"n\">%.2f</td>"
                          "<td class=\"n\">%.1f</td><td class=\"n\">%.1f</td>"
                          "<td class=\"n\">%.1f%%</td><td class=\"n\">%.3fx</td>"
                          "<td class=\"n\">%.3fx</td></tr>",
                          r.clock_mhz, Ms(r.step_time), r.tokens_per_s_per_gpu, r.tflops_per_gpu,
                          100.0 * r.clock_scaled_share,
                          lowest.tokens_per_s_per_gpu > 0
                              ? r.tokens_per_s_per_gpu / lowest.tokens_per_s_per_gpu
                              : 0.0,
                          c0 > 0 ? r.clock_mhz / c0 : 0.0);
  }
  out +=
      "</table>\n<p class=\"note\">The clock-scaled share is the part of the step that "
      "scales with 1/clock (compute-bound cycles); memory-bound kernels and communication do "
      "not, so TGS grows more slowly than the clock.</p>\n</body></html>\n";
  return out;
}

std::string SearchHtml(const Scenario& base, const SearchResult& result, int64_t top_k) {
  std::string out;
  PageStart(out, absl::StrCat("Layout search: ", HtmlEscape(base.model.name), " on ",
                              HtmlEscape(base.hw.name)));
  Put(out, {"<h1>Layout search: ", HtmlEscape(base.model.name), " on ",
            HtmlEscape(absl::StrFormat("%d x %s", base.num_gpus, base.hw.name)), "</h1>\n"});
  out += "<div class=\"cards\">";
  Card(out, Figure(static_cast<double>(result.candidates_enumerated)), "layouts enumerated");
  Card(out, Figure(static_cast<double>(result.candidates_evaluated)), "projected");
  Card(out,
       result.memory_limit
           ? absl::StrFormat("%.1f GiB", result.memory_limit->value() / Gibibytes(1).value())
           : std::string("none"),
       "memory limit");
  Card(out, std::string(SearchObjectiveName(result.objective)), "objective");
  Card(out, absl::StrFormat("%.2f s", result.elapsed_s),
       absl::StrFormat("on %d threads", result.threads));
  out += "</div>\n";
  const std::vector<RankedLayout>& ranked = result.ranked;
  if (ranked.empty()) return out + "</body></html>\n";
  const size_t plotted = std::min(ranked.size(), kSearchPlotLimit);

  // TGS against peak memory per GPU (GiB).
  double max_mem = GiB(result.memory_check), max_tgs = 0;
  for (size_t i = 0; i < plotted; ++i) {
    max_mem = std::max(max_mem, GiB(ranked[i].metrics.peak_memory_per_gpu));
    max_tgs = std::max(max_tgs, ranked[i].metrics.tokens_per_s_per_gpu);
  }
  max_mem *= 1.05;
  max_tgs *= 1.1;
  constexpr double kLeft = 70, kTop = 12, kW = 880, kH = 360;
  auto px = [&](double gib) { return kLeft + (max_mem > 0 ? gib / max_mem * kW : 0.0); };
  auto py = [&](double tgs) { return kTop + kH - (max_tgs > 0 ? tgs / max_tgs * kH : 0.0); };
  absl::StrAppendFormat(&out, "<h2>Tokens/s per GPU against peak memory</h2>\n");
  Legend(out, {{"layout", kForwardColor},
               {"fastest layout for each memory budget (Pareto front)", kTailColor},
               {"memory limit", "#c0392b"}});
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", kTop + kH + 40);
  for (const auto& [step, vertical] :
       {std::pair{TickStep(max_mem, 8), true}, std::pair{TickStep(max_tgs, 5), false}}) {
    for (double v = 0; v <= (vertical ? max_mem : max_tgs); v += step) {
      if (vertical) {
        Line(out, px(v), kTop, px(v), kTop + kH, kGridColor);
        Text(out, px(v), kTop + kH + 14, absl::StrFormat("%g", v), "middle", "#667");
      } else {
        Line(out, kLeft, py(v), kLeft + kW, py(v), kGridColor);
        Text(out, kLeft - 6, py(v) + 4, CompactFigure(v), "end", "#667");
      }
    }
  }
  Text(out, kLeft + kW / 2, kTop + kH + 32, "peak memory per GPU (GiB)", "middle");
  if (result.memory_check.value() > 0) {
    const double x = px(GiB(result.memory_check));
    Line(out, x, kTop, x, kTop + kH, kLimitColor, "6 4");
  }
  std::vector<const RankedLayout*> by_memory;
  for (size_t i = 0; i < plotted; ++i) {
    const RankedLayout& r = ranked[i];
    by_memory.push_back(&r);
    const bool tooltip = i < kTimelineTooltipLimit;
    absl::StrAppendFormat(&out,
                          "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\" stroke=\"%s\" "
                          "fill-opacity=\"0.6\">",
                          px(GiB(r.metrics.peak_memory_per_gpu)),
                          py(r.metrics.tokens_per_s_per_gpu),
                          r.fits_memory ? kForwardColor : "none", kForwardColor);
    if (tooltip) {
      absl::StrAppendFormat(&out, "<title>#%d %s: %.1f TGS, %.1f GiB</title>", i + 1,
                            HtmlEscape(CandidateLabel(r.candidate)), r.metrics.tokens_per_s_per_gpu,
                            GiB(r.metrics.peak_memory_per_gpu));
    }
    out += "</circle>";
  }
  // Pareto front: by memory, each layout faster than every layout needing less memory.
  std::stable_sort(by_memory.begin(), by_memory.end(),
                   [](const RankedLayout* a, const RankedLayout* b) {
                     return a->metrics.peak_memory_per_gpu < b->metrics.peak_memory_per_gpu;
                   });
  std::string front;
  double best = -1;
  for (const RankedLayout* r : by_memory) {
    if (r->metrics.tokens_per_s_per_gpu <= best) continue;
    // A staircase: the best TGS holds until a layout with more memory beats it.
    const double x = px(GiB(r->metrics.peak_memory_per_gpu));
    if (best >= 0) absl::StrAppendFormat(&front, "%.2f,%.2f ", x, py(best));
    best = r->metrics.tokens_per_s_per_gpu;
    absl::StrAppendFormat(&front, "%.2f,%.2f ", x, py(best));
  }
  if (best >= 0) absl::StrAppendFormat(&front, "%.2f,%.2f ", px(max_mem), py(best));
  absl::StrAppendFormat(&out,
                        "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
                        "stroke-width=\"1.5\"/>",
                        front, kTailColor);
  out += "</svg>\n";
  absl::StrAppendFormat(&out,
                        "<p class=\"note\">%d of %d projected layouts plotted (the best by the "
                        "objective); hollow: over the memory limit.</p>\n",
                        plotted, ranked.size());

  absl::StrAppendFormat(&out, "<h2>Best %d layouts</h2>\n", std::min<size_t>(ranked.size(), top_k));
  out +=
      "<table class=\"grid\"><tr><th class=\"n\">#</th><th>layout</th>"
      "<th class=\"n\">TGS</th><th class=\"n\">step ms</th><th class=\"n\">MFU</th>"
      "<th class=\"n\">GiB</th><th>largest cost</th><th>command</th></tr>";
  for (size_t i = 0; i < ranked.size() && i < static_cast<size_t>(std::max<int64_t>(top_k, 0));
       ++i) {
    const RankedLayout& r = ranked[i];
    absl::StrAppendFormat(&out,
                          "<tr><td class=\"n\">%d</td><td>%s</td><td class=\"n\">%.1f</td>"
                          "<td class=\"n\">%.2f</td><td class=\"n\">%.1f%%</td>"
                          "<td class=\"n %s\">%.1f</td><td>%s</td><td><code>%s</code></td></tr>",
                          i + 1, HtmlEscape(CandidateLabel(r.candidate)),
                          r.metrics.tokens_per_s_per_gpu, Ms(r.metrics.step_time),
                          100.0 * r.metrics.mfu, r.fits_memory ? "" : "bad",
                          GiB(r.metrics.peak_memory_per_gpu), DominantCost(r.metrics),
                          HtmlEscape(ReproduceCommand(base, r.candidate)));
  }
  out += "</table>\n</body></html>\n";
  return out;
}

namespace {

// At most this many points per line of a serving chart.
constexpr size_t kServeChartPoints = 400;

struct Series {
  std::string_view label;
  std::string_view color;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

// Every `stride`-th point, so a line keeps at most kServeChartPoints points (and its last).
std::vector<std::pair<double, double>> Thin(std::vector<std::pair<double, double>> points) {
  if (points.size() <= kServeChartPoints) return points;
  const size_t stride = (points.size() + kServeChartPoints - 1) / kServeChartPoints;
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < points.size(); i += stride) out.push_back(points[i]);
  if (out.back() != points.back()) out.push_back(points.back());
  return out;
}

// Lines over shared axes from 0: x to the largest x, y to `y_max` (the largest y when 0).
void LineChart(std::string& out, std::string_view title, const std::vector<Series>& series,
               std::string_view x_label, double y_max = 0) {
  double x_max = 0;
  double top = y_max;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      x_max = std::max(x_max, x);
      if (y_max <= 0) top = std::max(top, y);
    }
  }
  if (y_max <= 0) top *= 1.1;
  if (!(top > 0)) top = 1;
  if (!(x_max > 0)) x_max = 1;
  constexpr double kLeft = 70, kTop = 12, kW = 880, kH = 220;
  auto px = [&](double x) { return kLeft + x / x_max * kW; };
  auto py = [&](double y) { return kTop + kH - y / top * kH; };
  Put(out, {"<h2>", title, "</h2>\n"});
  std::vector<std::pair<std::string_view, std::string_view>> legend;
  for (const Series& s : series) legend.emplace_back(s.label, s.color);
  Legend(out, legend);
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", kTop + kH + 40);
  const double ytick = TickStep(top, 5);
  for (double v = 0; v <= top * 1.0001; v += ytick) {
    Line(out, kLeft, py(v), kLeft + kW, py(v), kGridColor);
    Text(out, kLeft - 6, py(v) + 4, CompactFigure(v), "end", "#667");
  }
  const double xtick = TickStep(x_max, 8);
  for (double v = 0; v <= x_max * 1.0001; v += xtick) {
    Text(out, px(v), kTop + kH + 14, CompactFigure(v), "middle", "#667");
  }
  Text(out, kLeft + kW / 2, kTop + kH + 32, x_label, "middle");
  for (const Series& s : series) {
    std::string points;
    for (const auto& [x, y] : Thin(s.points)) {
      absl::StrAppendFormat(&points, "%.1f,%.1f ", px(x), py(std::min(y, top)));
    }
    absl::StrAppendFormat(&out,
                          "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"1.6\"/>",
                          points, s.color);
  }
  out += "</svg>\n";
}

// (value, cumulative share) of ascending values.
std::vector<std::pair<double, double>> Cdf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::vector<std::pair<double, double>> out;
  const double n = static_cast<double>(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    out.emplace_back(values[i], static_cast<double>(i + 1) / n);
  }
  return out;
}

}  // namespace

std::string ServeHtml(const ServeJob& job, const ServeResult& r) {
  const ServeMetrics& m = r.metrics;
  const Deployment& d = job.options.deployment;
  std::string out;
  const std::string title =
      HtmlEscape(absl::StrFormat("Serving: %s on %s", d.model.name, d.hw.gpu.name));
  PageStart(out, title);
  const std::string text = ServeText(job, r);
  Put(out,
      {"<h1>", title, "</h1>\n<pre>", HtmlEscape(text.substr(0, text.find("\n\n"))), "</pre>\n"});
  out += "<div class=\"cards\">";
  Card(out, absl::StrFormat("%.1f", m.output_tokens_per_s_per_gpu), "output tokens/s per GPU");
  Card(out, absl::StrFormat("%.2f", m.requests_per_s), "requests/s");
  Card(out, absl::StrFormat("%.1f / %.1f", m.ttft_ms.p50, m.ttft_ms.p99), "TTFT p50 / p99 (ms)");
  Card(out, absl::StrFormat("%.2f / %.2f", m.tpot_ms.p50, m.tpot_ms.p99), "TPOT p50 / p99 (ms)");
  Card(out, absl::StrFormat("%.0f", m.e2e_ms.p50), "end-to-end p50 (ms)");
  Card(out, Figure(static_cast<double>(m.completed)), "completed requests");
  Card(out, absl::StrFormat("%.0f%%", 100.0 * m.peak_kv_utilization), "peak KV-cache use");
  Card(out, Figure(static_cast<double>(m.preemptions)), "preemptions",
       m.preemptions > 0 ? "bad" : "");
  if (m.prefix_caching) {
    Card(out, absl::StrFormat("%.0f%%", 100.0 * m.prefix_cache.HitRate()),
         "prefix-cache hit (prompt tokens)");
  }
  out += "</div>\n";

  // The timeline is one engine's: replica 0, or its first attention rank under DP attention.
  const std::string who = d.dp_attention > 1 ? "replica 0, attention rank 0" : "replica 0";
  const std::vector<PassSample>& passes = r.first_replica.passes;
  Series running{"running (holding KV blocks)", kForwardColor, {}};
  Series waiting{"waiting", kTailColor, {}};
  Series kv{"KV-cache use (%)", kWeightGradColor, {}};
  Series tokens{"new tokens per pass", kBackwardColor, {}};
  Series preempted{"preemptions so far", kTailColor, {}};
  for (const PassSample& p : passes) {
    running.points.emplace_back(p.time_s, p.running);
    waiting.points.emplace_back(p.time_s, p.waiting);
    kv.points.emplace_back(p.time_s, r.kv.blocks > 0
                                         ? 100.0 * static_cast<double>(p.kv_blocks_used) /
                                               static_cast<double>(r.kv.blocks)
                                         : 0.0);
    tokens.points.emplace_back(p.time_s, p.batch_tokens);
    preempted.points.emplace_back(p.time_s, static_cast<double>(p.preemptions));
  }
  LineChart(out, absl::StrCat("Requests in the engine over time (", who, ")"), {running, waiting}, "time (s)");
  LineChart(out, absl::StrCat("KV-cache use over time (", who, ")"), {kv}, "time (s)", 100.0);
  if (m.preemptions > 0) {
    LineChart(out, absl::StrCat("Preemptions over time (", who, ", cumulative)"), {preempted}, "time (s)");
  }
  LineChart(out, absl::StrCat("New tokens per pass (", who, ")"), {tokens}, "time (s)");

  std::vector<double> ttft, tpot, e2e;
  for (const RequestRecord& q : r.first_replica.requests) {
    ttft.push_back(1e3 * (q.first_token_s - q.arrival_s));
    e2e.push_back(1e3 * (q.finish_s - q.arrival_s));
    if (q.output_tokens > 1) {
      tpot.push_back(1e3 * (q.finish_s - q.first_token_s) /
                     static_cast<double>(q.output_tokens - 1));
    }
  }
  LineChart(out, absl::StrCat("TTFT distribution (", who, "; share of requests at or below)"),
            {{"TTFT", kForwardColor, Cdf(ttft)}}, "TTFT (ms)", 1.0);
  LineChart(out, absl::StrCat("TPOT distribution (", who, ")"), {{"TPOT", kBackwardColor, Cdf(tpot)}},
            "TPOT (ms)", 1.0);
  LineChart(out, absl::StrCat("End-to-end latency distribution (", who, ")"),
            {{"end-to-end", kCommColor, Cdf(e2e)}}, "end-to-end latency (ms)", 1.0);
  Put(out, {"<h2>Full report</h2>\n<pre>", HtmlEscape(text), "</pre>\n"});
  out += "</body></html>\n";
  return out;
}

namespace {

// One line per series over evenly spaced categories (the GPU counts), y from 0 to `top`, with a
// dashed guide at `guide` (skipped when <= 0) and a label under each category.
void CategoryChart(std::string& out, std::string_view title, const std::vector<std::string>& labels,
                   const std::vector<Series>& series, double top, double guide,
                   std::string_view x_label, std::string_view y_label) {
  constexpr double kLeft = 70, kTop = 12, kW = 880, kH = 240;
  const double n = static_cast<double>(std::max<size_t>(labels.size(), 1));
  auto px = [&](double i) { return kLeft + (n > 1 ? i / (n - 1) : 0.5) * kW; };
  auto py = [&](double y) { return kTop + kH - std::min(y, top) / top * kH; };
  Put(out, {"<h2>", title, "</h2>\n"});
  std::vector<std::pair<std::string_view, std::string_view>> legend;
  for (const Series& s : series) legend.emplace_back(s.label, s.color);
  Legend(out, legend);
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">", kTop + kH + 44);
  const double ytick = TickStep(top, 5);
  for (double v = 0; v <= top * 1.0001; v += ytick) {
    Line(out, kLeft, py(v), kLeft + kW, py(v), kGridColor);
    Text(out, kLeft - 6, py(v) + 4, CompactFigure(v), "end", "#667");
  }
  Text(out, 14, kTop + kH / 2, y_label, "start", "#667");
  if (guide > 0) Line(out, kLeft, py(guide), kLeft + kW, py(guide), kLimitColor, "6 4");
  for (size_t i = 0; i < labels.size(); ++i) {
    Text(out, px(static_cast<double>(i)), kTop + kH + 14, labels[i], "middle", "#667");
  }
  Text(out, kLeft + kW / 2, kTop + kH + 34, x_label, "middle");
  for (const Series& s : series) {
    std::string points;
    for (const auto& [x, y] : s.points) absl::StrAppendFormat(&points, "%.1f,%.1f ", px(x), py(y));
    absl::StrAppendFormat(&out,
                          "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"2\"/>",
                          points, s.color);
    for (const auto& [x, y] : s.points) {
      absl::StrAppendFormat(&out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>", px(x),
                            py(y), s.color);
    }
  }
  out += "</svg>\n";
}

}  // namespace

std::string ScaleHtml(const Scenario& base, const ScaleResult& r) {
  std::string out;
  const std::string title = HtmlEscape(absl::StrFormat(
      "%s scaling: %s on %s", ScalingModeName(r.mode) == "strong" ? "Strong" : "Weak",
      base.model.name, base.hw.name));
  PageStart(out, title);
  Put(out, {"<h1>", title, "</h1>\n"});
  out += "<div class=\"cards\">";
  Card(out, r.breakdown_point ? Figure(static_cast<double>(*r.breakdown_point)) : "none",
       "breakdown point (GPUs, efficiency < 70%)", r.breakdown_point ? "bad" : "good");
  Card(out, absl::StrFormat("%.4f", r.serial_fraction), "Amdahl serial fraction");
  Card(out, std::isfinite(r.max_speedup) ? absl::StrFormat("%.0fx", r.max_speedup) : "unbounded",
       r.points.empty() ? std::string("maximum speedup")
                        : absl::StrCat("maximum speedup over ",
                                       FormatCount(r.points.front().num_gpus), " GPUs"));
  if (!r.growing_term.empty()) {
    Card(out, absl::StrFormat("%.1f%% &rarr; %.1f%%", 100 * r.growing_from, 100 * r.growing_to),
         HtmlEscape(absl::StrCat("growing term: ", r.growing_term)));
  }
  out += "</div>\n";
  std::vector<std::string> labels;
  Series efficiency{"scaling efficiency (%)", kForwardColor, {}};
  Series tgs{"tokens/s per GPU", kWeightGradColor, {}};
  double top_tgs = 0;
  for (size_t i = 0; i < r.points.size(); ++i) {
    const ScalePoint& p = r.points[i];
    labels.push_back(FormatCount(p.num_gpus));
    if (!p.found) continue;
    efficiency.points.emplace_back(static_cast<double>(i), 100 * p.efficiency);
    tgs.points.emplace_back(static_cast<double>(i), p.best.metrics.tokens_per_s_per_gpu);
    top_tgs = std::max(top_tgs, p.best.metrics.tokens_per_s_per_gpu);
  }
  double top_eff = 100;
  for (const auto& pt : efficiency.points) top_eff = std::max(top_eff, pt.second);
  CategoryChart(out, "Scaling efficiency against the smallest count (dashed: 70%)", labels,
                {efficiency}, top_eff * 1.05, 100 * kBreakdownEfficiency, "GPUs", "%");
  CategoryChart(out, "Tokens per second per GPU", labels, {tgs}, std::max(top_tgs, 1.0) * 1.1, 0,
                "GPUs", "TGS");
  // The step of each count, stacked by term.
  out += "<h2>Step breakdown per GPU count (share of the step)</h2>\n";
  std::vector<std::pair<std::string_view, std::string_view>> legend;
  for (size_t t = 0; t < kNumBreakdownTerms; ++t) {
    legend.emplace_back(BreakdownTermName(static_cast<int>(t)), kTermColors[t]);
  }
  Legend(out, legend);
  constexpr double kRow = 22, kLeft = 90, kW = 860;
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">",
                        kRow * static_cast<double>(r.points.size()) + 10);
  for (size_t i = 0; i < r.points.size(); ++i) {
    const ScalePoint& p = r.points[i];
    const double y = 4 + kRow * static_cast<double>(i);
    Text(out, kLeft - 8, y + 14, FormatCount(p.num_gpus), "end", "#667");
    if (!p.found || p.best.metrics.step_time.value() <= 0) continue;
    double x = kLeft;
    for (size_t t = 0; t < kNumBreakdownTerms; ++t) {
      const double w = p.best.metrics.breakdown[t] / p.best.metrics.step_time * kW;
      Rect(out, x, y, w, kRow - 6, kTermColors[t],
           absl::StrFormat("%s %.1f ms", BreakdownTermName(static_cast<int>(t)),
                           Ms(p.best.metrics.breakdown[t])));
      x += w;
    }
  }
  out += "</svg>\n";
  Put(out, {"<h2>Every count</h2>\n<pre>", HtmlEscape(ScaleText(base, r)), "</pre>\n"});
  out += "</body></html>\n";
  return out;
}

std::string CompareHtml(const Comparison& c) {
  std::string out;
  const std::string title = absl::StrFormat("Comparison of %d projections", c.sides.size());
  PageStart(out, title);
  Put(out, {"<h1>", title, "</h1>\n"});
  out += "<div class=\"cards\">";
  for (size_t i = 0; i < c.sides.size(); ++i) {
    const CompareSide& s = c.sides[i];
    Card(out, absl::StrFormat("%.1f", s.projection.tokens_per_s_per_gpu),
         HtmlEscape(absl::StrFormat("%c: %s TGS (%s, %s)", static_cast<char>('A' + i), s.name,
                                    s.scenario.hw.name, s.projection.layout)));
  }
  out += "</div>\n<h2>Step time by term, on one scale</h2>\n";
  std::vector<std::pair<std::string_view, std::string_view>> legend;
  for (size_t t = 0; t < kNumBreakdownTerms; ++t) {
    legend.emplace_back(kBreakdownTerms[t].short_name, kTermColors[t]);
  }
  Legend(out, legend);
  double longest = 0;
  for (const CompareSide& s : c.sides) longest = std::max(longest, s.projection.step_time.value());
  constexpr double kRow = 30, kLeft = 40, kW = 820;
  absl::StrAppendFormat(&out, "<svg viewBox=\"0 0 1000 %.0f\" role=\"img\">",
                        kRow * static_cast<double>(c.sides.size()) + 30);
  for (size_t i = 0; i < c.sides.size(); ++i) {
    const Projection& p = c.sides[i].projection;
    const double y = 6 + kRow * static_cast<double>(i);
    Text(out, kLeft - 10, y + 16, std::string(1, static_cast<char>('A' + i)), "end");
    double x = kLeft;
    for (size_t t = 0; t < kNumBreakdownTerms; ++t) {
      const Seconds v = p.breakdown.*kBreakdownTerms[t].member;
      const double w = longest > 0 ? v.value() / longest * kW : 0;
      Rect(out, x, y, w, kRow - 8, kTermColors[t],
           absl::StrFormat("%s %.1f ms", kBreakdownTerms[t].short_name, Ms(v)));
      x += w;
    }
    Text(out, x + 6, y + 16, absl::StrFormat("%.1f ms", Ms(p.step_time)), "start", "#667");
  }
  out += "</svg>\n";
  Put(out, {"<h2>Side by side</h2>\n<pre>", HtmlEscape(CompareText(c)), "</pre>\n"});
  out += "</body></html>\n";
  return out;
}

namespace {

// The text of an HTML fragment without its tags, entities as they are (already escaped).
std::string StripTags(std::string_view html) {
  std::string out;
  bool in_tag = false;
  for (char c : html) {
    if (c == '<') in_tag = true;
    if (!in_tag) out += c;
    if (c == '>') in_tag = false;
  }
  return out;
}

std::string Slug(std::string_view title) {
  std::string out;
  for (char c : title) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? std::string("chart") : out;
}

// The (colour, label) items of the legend paragraph `p` (Legend's markup).
std::vector<std::pair<std::string, std::string>> LegendItems(std::string_view p) {
  std::vector<std::pair<std::string, std::string>> items;
  constexpr std::string_view kSwatch = "<span class=\"sw\" style=\"background:";
  for (size_t at = p.find(kSwatch); at != std::string_view::npos; at = p.find(kSwatch, at + 1)) {
    const size_t color_start = at + kSwatch.size();
    const size_t color_end = p.find('"', color_start);
    const size_t label_start = p.find("</span>", color_end) + 7;
    size_t label_end = p.find(" &nbsp;", label_start);
    if (color_end == std::string_view::npos || label_end == std::string_view::npos) break;
    items.emplace_back(std::string(p.substr(color_start, color_end - color_start)),
                       std::string(p.substr(label_start, label_end - label_start)));
  }
  return items;
}

}  // namespace

std::vector<SvgFile> ChartsOf(const std::string& html) {
  std::vector<SvgFile> files;
  std::map<std::string, int> seen;
  constexpr double kHeader = 52;
  for (size_t start = html.find("<svg viewBox=\""); start != std::string::npos;
       start = html.find("<svg viewBox=\"", start + 1)) {
    const size_t end = html.find("</svg>", start);
    const size_t open_end = html.find('>', start);
    if (end == std::string::npos || open_end == std::string::npos) break;
    double w = 1000, h = 300;
    std::sscanf(html.c_str() + start, "<svg viewBox=\"0 0 %lf %lf\"", &w, &h);
    const size_t h2 = html.rfind("<h2>", start);
    const size_t h2_end = h2 == std::string::npos ? h2 : html.find("</h2>", h2);
    const std::string title =
        h2 == std::string::npos ? "chart" : StripTags(html.substr(h2 + 4, h2_end - h2 - 4));
    const size_t p = html.rfind("<p>", start);
    std::vector<std::pair<std::string, std::string>> legend;
    if (p != std::string::npos && (h2 == std::string::npos || p > h2)) {
      legend = LegendItems(std::string_view(html).substr(p, start - p));
    }
    std::string svg = absl::StrFormat(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
        "font-family=\"system-ui,-apple-system,Segoe UI,Roboto,sans-serif\" font-size=\"11\">"
        "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>"
        "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"600\" fill=\"#1d2330\">%s</text>",
        w, h + kHeader, title);
    double x = 10;
    for (const auto& [color, label] : legend) {
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.0f\" y=\"31\" width=\"11\" height=\"11\" rx=\"2\" "
                            "fill=\"%s\"/><text x=\"%.0f\" y=\"41\" fill=\"#1d2330\">%s</text>",
                            x, color, x + 15, label);
      x += 15 + 6.2 * static_cast<double>(StripTags(label).size()) + 16;
    }
    absl::StrAppendFormat(&svg, "<g transform=\"translate(0,%.0f)\">", kHeader);
    svg += html.substr(open_end + 1, end - open_end - 1);
    svg += "</g></svg>\n";
    std::string name = Slug(title);
    const int n = ++seen[name];
    if (n > 1) absl::StrAppend(&name, "-", n);
    files.push_back(SvgFile{.name = name + ".svg", .svg = std::move(svg)});
  }
  return files;
}

}  // namespace projector
