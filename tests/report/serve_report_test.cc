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
