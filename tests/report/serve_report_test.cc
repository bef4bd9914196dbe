#include "report/serve_report.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/html_report.h"
#include "serving/serve.h"
#include "serving/serve_flags.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::testing::HasSubstr;
using ::testing::Not;

ServeJob Job() {
  FlagValues flags;
  SetServeFlagDefaults(flags);
  flags.Add("model", "llama3.1-8b");
  flags.Add("gpu-arch", "h100-sxm");
  flags.Add("qps", "20");
  flags.Add("num-requests", "300");
  flags.Add("input-len", "512");
  flags.Add("output-len", "64");
  absl::StatusOr<ServeJob> job = ServeJobFromFlags(flags);
  EXPECT_THAT(job, IsOk());
  return *std::move(job);
}

TEST(ServeReportTest, TextAndJsonCarryTheSameFigures) {
  const ServeJob job = Job();
  absl::StatusOr<ServeResult> r = Serve(job.options, job.requests);
  ASSERT_THAT(r, IsOk());
  const std::string text = ServeText(job, *r);
  EXPECT_THAT(text, HasSubstr("llama3.1-8b on h100-sxm, TP1 PP1 x 1 replica (1 GPUs)"));
  EXPECT_THAT(text, HasSubstr("completed requests     300 in"));
  EXPECT_THAT(text, HasSubstr("Pass anatomy"));
  const nlohmann::json json = ServeJson(job, *r);
  EXPECT_EQ(json["completed"], 300);
  EXPECT_DOUBLE_EQ(json["ttft_ms"]["p99"].get<double>(), r->metrics.ttft_ms.p99);
  EXPECT_EQ(json["deployment"]["num_gpus"], 1);
  EXPECT_LE(json["timeline"].size(), 200u);
  EXPECT_GT(json["timeline"].size(), 0u);
}

// The page has every chart (one polyline per series: running and waiting, KV use, tokens per
// pass, three distributions), the cards and the full text, and no script.
TEST(ServeReportTest, HtmlHasTheChartsAndNoScript) {
  const ServeJob job = Job();
  absl::StatusOr<ServeResult> r = Serve(job.options, job.requests);
  ASSERT_THAT(r, IsOk());
  const std::string html = ServeHtml(job, *r);
  for (const char* section :
       {"Requests in the engine over time", "KV-cache use over time", "New tokens per pass",
        "TTFT distribution", "TPOT distribution", "End-to-end latency distribution",
        "output tokens/s per GPU", "Full report"}) {
    EXPECT_THAT(html, HasSubstr(section));
  }
  size_t polylines = 0;
  for (size_t at = html.find("<polyline"); at != std::string::npos;
       at = html.find("<polyline", at + 1)) {
    ++polylines;
  }
  EXPECT_EQ(polylines, 7u);
  EXPECT_THAT(html, Not(HasSubstr("<script")));
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// Each <svg> of a page becomes a file named after the <h2> above it, with that title and the
// legend drawn inside, the page's coordinates shifted under them; a repeated title gets -2.
TEST(ChartsOfTest, EverySvgWithItsTitleAndLegend) {
  const std::string html =
      "<h2>Where the step goes</h2>\n<p><span class=\"sw\" style=\"background:#4e79a7\"></span>"
      "compute &nbsp; <span class=\"sw\" style=\"background:#e15759\"></span>tp_comm &nbsp; </p>"
      "<svg viewBox=\"0 0 1000 120\" role=\"img\"><rect x=\"1\"/></svg>\n"
      "<h2>Where the step goes</h2>\n<svg viewBox=\"0 0 500 50\" role=\"img\"><line/></svg>";
  const std::vector<SvgFile> files = ChartsOf(html);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].name, "where-the-step-goes.svg");
  EXPECT_EQ(files[1].name, "where-the-step-goes-2.svg");
  EXPECT_THAT(files[0].svg,
              HasSubstr("xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 1000 172\""));
  EXPECT_THAT(files[0].svg, HasSubstr(">Where the step goes</text>"));
  EXPECT_THAT(files[0].svg, HasSubstr("fill=\"#e15759\"/><text"));
  EXPECT_THAT(files[0].svg, HasSubstr(">tp_comm</text>"));
  EXPECT_THAT(files[0].svg,
              HasSubstr("<g transform=\"translate(0,52)\"><rect x=\"1\"/></g></svg>"));
  EXPECT_THAT(files[1].svg, Not(HasSubstr("tp_comm")));
}

}  // namespace
}  // namespace projector
