#include "report/html_report.h"

#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/toy_scenario.h"

namespace projector {
namespace {

using ::projector::testing::FakeBackends;
using ::projector::testing::IsOk;
using ::projector::testing::ToyScenario;
using ::testing::HasSubstr;
using ::testing::Not;

Projection ProjectToy(const Scenario& s, bool keep_everything = true) {
  FakeBackends fakes;
  ProjectionOptions options;
  options.keep_ops = keep_everything;
  options.keep_timeline = keep_everything;
  auto p = Project(s, fakes.Refs(), options);
  EXPECT_THAT(p, IsOk());
  return *p;
}

// Two pipeline stages, DP 4, m = 4 micro-batches per pipeline.
Scenario TwoStageToy() {
  Scenario s = ToyScenario();
  s.parallel.pp = 2;
  s.parallel.dp = 4;
  s.training.global_batch = 16;
  return s;
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The n-th <svg>...</svg> of the page.
std::string Svg(const std::string& html, int n) {
  size_t at = 0;
  for (int i = 0; i <= n; ++i) {
    at = html.find("<svg", i == 0 ? 0 : at + 1);
    if (at == std::string::npos) return "";
  }
  return html.substr(at, html.find("</svg>", at) - at);
}

TEST(HtmlEscapeTest, EscapesTheFiveMarkupCharacters) {
  EXPECT_EQ(HtmlEscape("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  EXPECT_EQ(HtmlEscape("plain text 1.5"), "plain text 1.5");
  EXPECT_EQ(HtmlEscape(""), "");
}

TEST(ProjectionHtmlTest, NamesFromInputFilesAreEscaped) {
  Scenario s = ToyScenario();
  s.name = "<script>alert('x')</script>";
  s.model.name = "toy & <b>";
  const std::string html = ProjectionHtml(s, ProjectToy(s));
  EXPECT_THAT(html, Not(HasSubstr("<script>")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("toy &amp; &lt;b&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("toy & <b>")));
}

TEST(ProjectionHtmlTest, IsOneCompletePageWithEverySection) {
  const Scenario s = TwoStageToy();
  const Projection p = ProjectToy(s);
  const std::string html = ProjectionHtml(s, p);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(html, HasSubstr("</body></html>"));
  for (const char* section :
       {"Where the step goes", "Per layer, one micro-batch", "Memory per GPU, per pipeline stage",
        "Pipeline timeline of one step", "Slowest ops, one micro-batch", "Text report"}) {
    EXPECT_THAT(html, HasSubstr(section)) << section;
  }
  // Self-contained: nothing fetched, nothing run.
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  EXPECT_EQ(Count(html, "<svg"), Count(html, "</svg>"));
  // Every pipeline rank has its row.
  EXPECT_THAT(html, HasSubstr(">PP rank 0<"));
  EXPECT_THAT(html, HasSubstr(">PP rank 1<"));
}

// With --lod high, the page gains the event replay: the two levels' step, pipeline and exposed
// DP rows, the NIC line, and one busy bar per compute stream and communication resource (two
// stages, DP 4: 2 streams and 2 DP streams), each as wide as its share of the step.
TEST(ProjectionHtmlTest, TheEventReplayHasItsFiguresAndABarPerResource) {
  const Scenario s = TwoStageToy();
  FakeBackends fakes;
  absl::StatusOr<HighLodResult> high = ProjectAtHighLod(s, fakes.Refs());
  ASSERT_THAT(high, IsOk());
  const std::string html = ProjectionHtml(s, high->medium, nullptr, &*high);
  for (const char* part : {"Event replay", "step time", "pipeline (last pass)",
                           "exposed DP communication", "NIC ", "Busy share of the step"}) {
    EXPECT_THAT(html, HasSubstr(part)) << part;
  }
  const size_t at = html.find("Busy share of the step");
  const std::string bars = html.substr(html.find("<svg", at), html.find("</svg>", at) - at);
  int shown = 0;
  for (const ResourceUse& u : high->resource_use) {
    if (!IsComputeStream(u) && !IsCommunication(u)) continue;
    ++shown;
    const double share = u.busy.value() / high->step_time.value();
    EXPECT_THAT(bars, HasSubstr(absl::StrFormat("%s: %.1f%% of the step", u.name, 100 * share)))
        << u.name;
  }
  EXPECT_EQ(shown, 4);
  EXPECT_THAT(ProjectionHtml(s, high->medium), Not(HasSubstr("Event replay")));
}

// --sensitivity: a tornado chart after the bottlenecks. Moves of +10% and -20%: the largest
// move spans the half axis of 240 units either side of the centre at 400 + 60 + 240 = 700, so
// the -20% bar (largest, on top at y 6) runs from 460 to 700 in the slower colour and the +10%
// bar (y 6 + 24 = 30) from 700, 120 wide, in the faster colour; each bar's title is its flags.
TEST(ProjectionHtmlTest, SensitivityTornadoScalesToTheLargestMove) {
  const Scenario s = TwoStageToy();
  const Projection p = ProjectToy(s);
  const double tgs = p.tokens_per_s_per_gpu;
  const std::vector<SettingChange> changes = {{.setting = "cuda_graphs",
                                               .projected = "false",
                                               .alternative = "true",
                                               .result = {.flags = "--cuda-graphs",
                                                          .peak_memory = Gibibytes(1),
                                                          .tokens_per_s_per_gpu = 1.1 * tgs}},
                                              {.setting = "fp8_recipe",
                                               .projected = "mxfp8",
                                               .alternative = "tensorwise",
                                               .result = {.flags = "--fp8-recipe tensorwise",
                                                          .peak_memory = Gibibytes(1),
                                                          .tokens_per_s_per_gpu = 0.8 * tgs}}};
  const std::string html = ProjectionHtml(s, p, nullptr, nullptr, &changes);
  const size_t at = html.find("Sensitivity to run settings");
  ASSERT_NE(at, std::string::npos);
  const std::string chart = html.substr(html.find("<svg", at), html.find("</svg>", at) - at);
  EXPECT_THAT(chart, HasSubstr("<rect x=\"460.00\" y=\"6.00\" width=\"240.00\" height=\"16.00\" "
                               "fill=\"#c0392b\"><title>--fp8-recipe tensorwise</title>"));
  EXPECT_THAT(chart, HasSubstr("<rect x=\"700.00\" y=\"30.00\" width=\"120.00\" height=\"16.00\" "
                               "fill=\"#59a14f\"><title>--cuda-graphs</title>"));
  EXPECT_THAT(chart, HasSubstr(">fp8_recipe: mxfp8 \u2192 tensorwise<"));
  EXPECT_THAT(chart, HasSubstr(">-20.0%<"));
  EXPECT_THAT(chart, HasSubstr(">+10.0%<"));
  EXPECT_THAT(ProjectionHtml(s, p), Not(HasSubstr("Sensitivity to run settings")));
}

TEST(ProjectionHtmlTest, BreakdownBarSegmentsFillTheBarInProportion) {
  const Scenario s = TwoStageToy();
  const Projection p = ProjectToy(s);
  const std::string bar = Svg(ProjectionHtml(s, p), 0);
  ASSERT_FALSE(bar.empty());
  // The StepBreakdown terms add up to the step time, so the segments fill the 1000-unit bar.
  const std::regex width("width=\"([0-9.]+)\"");
  double total = 0;
  int segments = 0;
  for (auto it = std::sregex_iterator(bar.begin(), bar.end(), width); it != std::sregex_iterator();
       ++it) {
    total += std::stod((*it)[1]);
    ++segments;
  }
  int nonzero = 0;
  for (const BreakdownTerm& term : kBreakdownTerms)
    nonzero += (p.breakdown.*term.member).value() > 0;
  EXPECT_EQ(segments, nonzero);
  EXPECT_NEAR(total, 1000.0, 0.05);
  // The compute segment's width is its share of the step: 1000 · compute / step.
  std::smatch first;
  ASSERT_TRUE(std::regex_search(bar, first, width));
  EXPECT_NEAR(std::stod(first[1]), 1000.0 * p.breakdown.compute.value() / p.step_time.value(),
              0.01);
}

TEST(ProjectionHtmlTest, TimelineDrawsEveryPassOnce) {
  const Scenario s = TwoStageToy();
  const Projection p = ProjectToy(s);
  const std::string html = ProjectionHtml(s, p);
  ASSERT_LE(p.timeline.size(), kTimelineTooltipLimit);
  // 1F1B: each of the 2 ranks runs F and B of each of the 4 micro-batches once; each pass's
  // tooltip names it ("F3, rank 1: ...").
  for (int mb = 0; mb < 4; ++mb) {
    for (int rank = 0; rank < 2; ++rank) {
      for (const char* pass : {"F", "B"}) {
        EXPECT_EQ(Count(html, absl::StrCat("<title>", pass, mb, ", rank ", rank, ":")), 1)
            << pass << mb << " rank " << rank;
      }
    }
  }
  EXPECT_EQ(Count(html, "<title>W"), 0);  // no weight-gradient passes outside zero bubble
}

// 2 ranks x 400 micro-batches x (F + B) = 1,600 passes, 800 a lane: past one per 3 px of the
// 920 px plot, so the lanes are drawn as 460 columns of 2 px (kind that filled most of each,
// opacity by how busy), not pass by pass; 4 micro-batches stay pass by pass.
TEST(ProjectionHtmlTest, TimelineAggregatesWhenPassesAreTooManyToDraw) {
  Scenario s = TwoStageToy();
  s.training.global_batch = 1600;  // 1600 / (1 · DP 4) = 400 micro-batches
  const Projection p = ProjectToy(s);
  const std::string html = ProjectionHtml(s, p);
  EXPECT_THAT(html, HasSubstr("too many to draw one by one"));
  EXPECT_EQ(Count(html, "<title>F"), 0);
  const int columns = Count(html, "fill-opacity=");
  // Every compute column of both ranks is busy at some point of the step, less the fill/drain
  // idle at the start of rank 1: between one lane's and two lanes' columns (+ comm columns).
  EXPECT_GT(columns, 460);
  EXPECT_LE(columns, 4 * 460);
  const std::string small = ProjectionHtml(TwoStageToy(), ProjectToy(TwoStageToy()));
  EXPECT_THAT(small, Not(HasSubstr("too many to draw one by one")));
}

TEST(ProjectionHtmlTest, ModuleChartsShareOneScaleWithAnAxis) {
  const Scenario s = TwoStageToy();
  const std::string html = ProjectionHtml(s, ProjectToy(s));
  EXPECT_THAT(html, HasSubstr("Every chart on one scale"));
  EXPECT_THAT(html, HasSubstr(">0 ms</text>"));
}

TEST(ProjectionHtmlTest, MemoryVerdictAndMeasurementAreShown) {
  Scenario s = ToyScenario();
  s.measured_tokens_per_s_per_gpu = 1000.0;
  Projection p = ProjectToy(s);
  std::string html = ProjectionHtml(s, p);
  EXPECT_THAT(html, HasSubstr("projected vs measured 1,000 TGS"));
  EXPECT_THAT(html, HasSubstr(absl::StrFormat("%+.1f%%", *p.error_pct)));
  EXPECT_EQ(p.fits_in_memory, html.find("does not fit") == std::string::npos);

  s.hw.gpu.hbm_capacity = Gibibytes(0.001);  // nothing fits in a MiB
  p = ProjectToy(s);
  ASSERT_FALSE(p.fits_in_memory);
  html = ProjectionHtml(s, p);
  EXPECT_THAT(html, HasSubstr("does not fit"));
}

TEST(ProjectionHtmlTest, WithoutKeptOpsAndTimelineThoseSectionsAreLeftOut) {
  Scenario s = ToyScenario();
  const std::string html = ProjectionHtml(s, ProjectToy(s, /*keep_everything=*/false));
  EXPECT_THAT(html, Not(HasSubstr("Pipeline timeline of one step")));
  EXPECT_THAT(html, Not(HasSubstr("Slowest ops")));
  EXPECT_THAT(html, HasSubstr("Where the step goes"));
}

// Two projected cases (one flagged inconsistent) and one the tool could not project.
ValidationReport ToyValidation() {
  ValidationReport r;
  r.file = "cases<1>.jsonl";
  ValidationCase a;
  a.id = "run<a>";
  a.source = "lab & co";
  a.status = "ok";
  a.measured_tokens_per_s_per_gpu = 1000;
  a.projected_tokens_per_s_per_gpu = 1100;
  a.error_pct = 10.0;
  a.attention_kernel = "fa<1>";
  a.loss_kernel = "fused";
  a.train_metric_passes = 2;
  a.stack = "llm-foundry";
  ValidationCase b = a;
  b.id = "run_b";
  b.measured_tokens_per_s_per_gpu = 4000;
  b.projected_tokens_per_s_per_gpu = 3000;
  b.error_pct = -25.0;
  b.inconsistent = true;
  b.sibling_deviation_pct = 14.0;
  b.siblings = 4;
  b.fits_in_memory = false;
  ValidationCase c;
  c.id = "run_c";
  c.line = 3;
  c.source = "other";
  c.status = "unsupported";
  c.reason = "cp > 1 with <unfused> attention";
  r.cases = {a, b, c};
  r.summary = {.group = "all",
               .count = 3,
               .projected = 2,
               .median_abs_error_pct = 17.5,
               .mean_error_pct = -7.5,
               .within_10_pct = 50,
               .within_20_pct = 50,
               .within_30_pct = 100};
  r.by_source = {{.group = "lab & co", .count = 2, .projected = 2}};
  r.inconsistent_cases = 1;
  r.measured_but_not_fitting = 1;
  return r;
}

// An image model's case counts images/s: the axes say so, and "(tokens or images)/s" when a file
// mixes both kinds.
TEST(ValidationHtmlTest, AxesNameTheUnitTheCasesCount) {
  ValidationReport r = ToyValidation();
  for (ValidationCase& c : r.cases) c.unit = "images";
  EXPECT_THAT(ValidationHtml(r), HasSubstr(">measured images/s per GPU</text>"));
  r.cases[0].unit = "tokens";
  const std::string mixed = ValidationHtml(r);
  EXPECT_THAT(mixed, HasSubstr(">measured (tokens or images)/s per GPU</text>"));
  EXPECT_THAT(mixed, HasSubstr(">projected (tokens or images)/s per GPU</text>"));
}

// With --sensitivity each projected case names its run-settings range and whether the
// measurement lies within it, and a card counts them: run_a measured 1,000 within 900-1,200,
// run_b measured 4,000 outside 2,500-3,500.
TEST(ValidationHtmlTest, RunSettingsRangesAreListedAndCounted) {
  ValidationReport r = ToyValidation();
  r.cases[0].settings_low_tokens_per_s_per_gpu = 900;
  r.cases[0].settings_high_tokens_per_s_per_gpu = 1200;
  r.cases[1].settings_low_tokens_per_s_per_gpu = 2500;
  r.cases[1].settings_high_tokens_per_s_per_gpu = 3500;
  r.with_settings_range = 2;
  r.within_settings_range = 1;
  const std::string html = ValidationHtml(r);
  EXPECT_THAT(html, HasSubstr("run settings 900\u20131,200: measured within"));
  EXPECT_THAT(html, HasSubstr("run settings 2,500\u20133,500: measured outside"));
  EXPECT_THAT(html, HasSubstr("1 of 2"));
  EXPECT_THAT(html, HasSubstr("measured within their run-settings range"));
  EXPECT_THAT(ValidationHtml(ToyValidation()), Not(HasSubstr("run-settings range")));
}

TEST(ValidationHtmlTest, EveryProjectedCaseIsPlottedTwiceAndEveryOtherListed) {
  const std::string html = ValidationHtml(ToyValidation());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  // Scatter + error strip: one circle per projected case in each.
  EXPECT_EQ(Count(html, "<circle"), 4);
  EXPECT_EQ(Count(html, "<title>run&lt;a&gt;: measured 1000, projected 1100 tokens/s per GPU "
                        "(+10.0%)</title>"),
            2);
  EXPECT_THAT(html, HasSubstr(">measured tokens/s per GPU</text>"));
  // The inconsistent case is drawn hollow, and its flags are listed.
  EXPECT_EQ(Count(html, "fill=\"none\""), 2);
  EXPECT_THAT(html, HasSubstr("does not fit; inconsistent: +14% vs 4-case series"));
  // The case not projected is listed with its reason, escaped.
  EXPECT_THAT(html, HasSubstr("<td>run_c</td><td class=\"n\">3</td><td>cp &gt; 1 with "
                              "&lt;unfused&gt; attention</td>"));
  // Headline figures.
  EXPECT_THAT(html, HasSubstr(">17.5%</div><div class=\"k\">median |error|"));
  EXPECT_THAT(html, HasSubstr(">50 / 50 / 100%</div>"));
  // Names from the file are escaped everywhere.
  EXPECT_THAT(html, HasSubstr("cases&lt;1&gt;.jsonl"));
  EXPECT_THAT(html, HasSubstr("lab &amp; co"));
  EXPECT_THAT(html, Not(HasSubstr("lab & co")));
  EXPECT_THAT(html, Not(HasSubstr("run<a>")));
  // The stack by source counts the projected cases only (run_c is not).
  EXPECT_THAT(html, HasSubstr("<tr><td>lab &amp; co</td><td>llm-foundry 2</td><td>fa&lt;1&gt; "
                              "2</td><td>fused 2</td><td>2 2</td></tr>"));
}

TEST(ValidationHtmlTest, ScatterPointsSitOnTheDiagonalWhenExact) {
  ValidationReport r = ToyValidation();
  r.cases.resize(1);
  r.cases[0].projected_tokens_per_s_per_gpu = r.cases[0].measured_tokens_per_s_per_gpu;
  r.cases[0].error_pct = 0.0;
  const std::string scatter = Svg(ValidationHtml(r), 0);
  const std::regex point("<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(scatter, m, point));
  // Square log-log plot (left 64, top 10, side 520): y = x maps to cx − 64 = 530 − cy.
  EXPECT_NEAR(std::stod(m[1]) - 64.0, 530.0 - std::stod(m[2]), 0.02);
}

TEST(ClockWhatIfHtmlTest, ChartsEveryClockAgainstProportionalScaling) {
  Scenario s = ToyScenario();
  s.name = "sweep <1>";
  // Given out of order: the chart sorts by clock, the table keeps the given order.
  const std::vector<ClockRow> rows = {{.clock_mhz = 2000,
                                       .step_time = Seconds(2.0),
                                       .tokens_per_s_per_gpu = 150,
                                       .tflops_per_gpu = 300,
                                       .clock_scaled_share = 0.5},
                                      {.clock_mhz = 1000,
                                       .step_time = Seconds(3.0),
                                       .tokens_per_s_per_gpu = 100,
                                       .tflops_per_gpu = 200,
                                       .clock_scaled_share = 0.8}};
  const std::string html = ClockWhatIfHtml(s, rows);
  EXPECT_THAT(html, HasSubstr("Clock what-if: sweep &lt;1&gt;"));
  EXPECT_EQ(Count(html, "<circle"), 2);
  EXPECT_THAT(html, HasSubstr("<title>1000 MHz: 100.0 TGS, step 3000.00 ms</title>"));
  // Doubling the clock gives 1.5x the TGS here; the proportional line would give 2x.
  EXPECT_THAT(html, HasSubstr("<td class=\"n\">1.500x</td><td class=\"n\">2.000x</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"n\">50.0%</td>"));
  // Plot: x 70..950 over 1000..2000 MHz, y 12..312 over 0..1.1·200 TGS (the proportional line
  // tops at 2 · 100). The proportional line ends at (950, 312 − 200/220 · 300).
  EXPECT_THAT(html,
              HasSubstr(absl::StrFormat("x2=\"950.00\" y2=\"%.2f\"", 312 - 200.0 / 220 * 300)));
  // The TGS polyline runs from the lowest clock to the highest.
  EXPECT_THAT(html, HasSubstr(absl::StrFormat("points=\"70.00,%.2f 950.00,%.2f \"",
                                              312 - 100.0 / 220 * 300, 312 - 150.0 / 220 * 300)));
}

TEST(SearchHtmlTest, PlotsEveryLayoutAndTheParetoFrontAsAStaircase) {
  const Scenario base = ToyScenario();
  SearchResult result;
  result.candidates_enumerated = 10;
  result.candidates_evaluated = 3;
  result.memory_check = Gibibytes(25);
  result.memory_limit = result.memory_check;
  auto layout = [](int64_t tp, double gib, double tgs, bool fits) {
    RankedLayout r;
    r.candidate.parallel.tp = tp;
    r.metrics.peak_memory_per_gpu = Gibibytes(gib);
    r.metrics.tokens_per_s_per_gpu = tgs;
    r.fits_memory = fits;
    return r;
  };
  // Ranked best first: 150 TGS at 20 GiB, 120 at 30 GiB (over the limit), 100 at 10 GiB.
  result.ranked = {layout(2, 20, 150, true), layout(4, 30, 120, false), layout(1, 10, 100, true)};
  const std::string html = SearchHtml(base, result, /*top_k=*/2);
  EXPECT_EQ(Count(html, "<circle"), 3);
  EXPECT_EQ(Count(html, "fill=\"none\" stroke=\"#4e79a7\""), 1);  // the one over the limit
  EXPECT_THAT(html, HasSubstr("<title>#1 "));
  // Axes: memory 0..1.05 · 30 GiB over x 70..950, TGS 0..1.1 · 150 over y 372..12.
  auto x = [](double gib) { return 70 + gib / 31.5 * 880; };
  auto y = [](double tgs) { return 372 - tgs / 165 * 360; };
  // Front by memory: 100 TGS from 10 GiB, 150 from 20 GiB on; the 30 GiB layout is slower.
  EXPECT_THAT(
      html, HasSubstr(absl::StrFormat("points=\"%.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f \"", x(10),
                                      y(100), x(20), y(100), x(20), y(150), x(31.5), y(150))));
  // The table lists the best top_k layouts with their commands.
  EXPECT_THAT(html, HasSubstr("Best 2 layouts"));
  EXPECT_EQ(Count(html, "<td><code>project "), 2);
}

}  // namespace
}  // namespace projector
