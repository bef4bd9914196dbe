// HTML report of one projection: a single self-contained page (inline CSS and SVG charts, no
// script, no network access) that a planner can open in any browser, mail or attach to a ticket.
#ifndef PROJECTOR_REPORT_HTML_REPORT_H_
#define PROJECTOR_REPORT_HTML_REPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include "projection/projection.h"
#include "scenario/scenario.h"
#include "serving/serve.h"
#include "serving/serve_flags.h"
#include "studies/bottlenecks.h"
#include "studies/compare.h"
#include "studies/lod_high.h"
#include "studies/scale.h"
#include "studies/search.h"
#include "studies/sensitivity.h"
#include "studies/validate.h"
#include "studies/what_if.h"

namespace projector {

// Sections, in order:
//   headline figures: TGS, step time, MFU, TFLOP/s per GPU, peak memory of capacity (marked
//     when it does not fit), projected vs measured when the scenario has a measurement;
//   step breakdown: one bar of the step split into its StepBreakdown terms, and their table;
//   per-layer modules: forward / backward / recompute bars of every module of each layer kind,
//     the embedding and the output layer (one micro-batch);
//   memory per pipeline stage: stacked bars (weights, gradients, optimizer state, activations,
//     workspace) against the HBM capacity line;
//   pipeline timeline (with ProjectionOptions::keep_timeline): every F/B/W pass of every
//     pipeline rank, its DP gradient-bucket reduces and the step tail, on a ms axis; passes are
//     drawn without tooltips above kTimelineTooltipLimit events to keep the page small;
//   slowest ops (with ProjectionOptions::keep_ops): the kTopOps longest ops of each op table with
//     shape, time, TFLOP/s and GB/s;
//   defaults used, and the full text report (ProjectionText + OpsText) in a folded block.
// Every string that comes from an input file is escaped.
// With `bottlenecks`, a section after the headline: each bottleneck's value against its high
// threshold as a bar coloured by severity, and its re-projected recommendations.
// With `high` (`--lod high`), a section on the event replay: medium against high (step,
// pipeline, exposed DP), what shares the NIC, the straggler or slow link, the events, and how
// busy the streams and the busiest links were, as bars.
// With `sensitivity` (`--sensitivity`), a section after the bottlenecks: each run setting's move
// as a tornado chart (faster to the right, slower to the left of the projection, the largest on
// top) and a table with the flags of each.
std::string ProjectionHtml(const Scenario& scenario, const Projection& projection,
                           const std::vector<Bottleneck>* bottlenecks = nullptr,
                           const HighLodResult* high = nullptr,
                           const std::vector<SettingChange>* sensitivity = nullptr);

// `project validate --html`: the accuracy of a whole case file on one page. Headline cards
// (cases, projected, median |error|, mean error, share within 10/20/30%, inconsistent and
// not-fitting counts); a log-log scatter of projected against measured TGS, one point per
// projected case coloured by source (hollow when the case is flagged inconsistent), with the
// y = x line and the ±10% and ±20% bands; a strip of each source's errors; the summary tables
// (overall, by GPU, source, precision, sequence band, scale); every case with its error and
// flags, and the cases not projected with the reason.
std::string ValidationHtml(const ValidationReport& report);

// A clock what-if sweep (`--gpu-clock-mhz A,B,...`): the scenario, a chart of TGS against the
// sustained clock with the line of TGS proportional to the clock through the lowest clock (how
// far the step is from compute-bound), and the table of every clock.
std::string ClockWhatIfHtml(const Scenario& scenario, const std::vector<ClockRow>& rows);

// `project search --html`: the search (space, survivors, memory limit), a chart of TGS against
// peak memory per GPU of the best kSearchPlotLimit layouts by the objective (the memory limit as a
// line, layouts over it hollow, the memory/TGS Pareto front joined: the fastest layout for each
// memory budget), and the top `top_k` layouts with their breakdown and `project` command.
std::string SearchHtml(const Scenario& base, const SearchResult& result, int64_t top_k);

// `project serve --html`: the deployment, engine and workload; headline cards (throughput per GPU,
// TTFT and TPOT percentiles, completed requests, preemptions, peak KV use); replica 0 over time
// (requests running and waiting, KV-cache use, preemptions when there are any, new tokens per
// pass); the distributions (CDF) of
// TTFT, TPOT and end-to-end latency over replica 0's requests; the pass anatomy; the text report.
std::string ServeHtml(const ServeJob& job, const ServeResult& result);

// `project scale --html`: the job, headline cards (breakdown point, Amdahl's serial fraction and
// maximum speedup, the growing term), the scaling efficiency against the GPU count with the 70%
// line, tokens/s per GPU against the GPU count, the step breakdown of each count (stacked), and
// the table with each count's best layout.
std::string ScaleHtml(const Scenario& base, const ScaleResult& result);

// `project compare --html`: the sides, their headline figures, the step of each side stacked by
// term on one scale, and what sets the first two apart.
std::string CompareHtml(const Comparison& c);

// The charts of a page as standalone SVG files (`--plots DIR`): each <svg> of `html` with the
// <h2> title above it and its legend drawn inside, a white background and the page's font, named
// after the title ("where-the-step-goes.svg"; repeated titles get -2, -3).
struct SvgFile {
  std::string name;
  std::string svg;
};
std::vector<SvgFile> ChartsOf(const std::string& html);

inline constexpr size_t kSearchPlotLimit = 5000;
inline constexpr size_t kTimelineTooltipLimit = 4000;
inline constexpr size_t kTopOps = 12;

// &, <, >, " and ' as character references: safe in text and in quoted attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace projector

#endif  // PROJECTOR_REPORT_HTML_REPORT_H_
