#include "projection/validate.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(SummariseTest, ClosedFormStatistics) {
  // Errors −5, +10, +25, −40 and one unsupported case:
  // |e| sorted 5, 10, 25, 40 -> median (10 + 25)/2 = 17.5; mean (−5 + 10 + 25 − 40)/4 = −2.5;
  // within 10%: 2/4, within 20%: 2/4, within 30%: 3/4.
  std::vector<ValidationCase> cases(5);
  double errors[] = {-5, 10, 25, -40};
  for (int i = 0; i < 4; ++i) cases[static_cast<size_t>(i)].error_pct = errors[i];
  cases[4].status = "unsupported";
  std::vector<const ValidationCase*> ptrs;
  for (const ValidationCase& c : cases) ptrs.push_back(&c);
  ErrorSummary s = Summarise(ptrs, "all");
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.projected, 4);
  EXPECT_DOUBLE_EQ(s.median_abs_error_pct, 17.5);
  EXPECT_DOUBLE_EQ(s.mean_error_pct, -2.5);
  EXPECT_DOUBLE_EQ(s.within_10_pct, 50.0);
  EXPECT_DOUBLE_EQ(s.within_20_pct, 50.0);
  EXPECT_DOUBLE_EQ(s.within_30_pct, 75.0);
}

TEST(ValidateCasesFileTest, ProjectsEveryPublicCase) {
  auto r = ValidateCasesFile(std::string(PROJECTOR_CALIBRATION_DIR) + "/public.jsonl", 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->summary.count, static_cast<int64_t>(r->cases.size()));
  EXPECT_EQ(r->summary.projected, r->summary.count);
  for (const ValidationCase& c : r->cases) {
    ASSERT_TRUE(c.projected_tokens_per_s_per_gpu.has_value()) << c.id << ": " << c.reason;
    EXPECT_GT(*c.projected_tokens_per_s_per_gpu, 0) << c.id;
  }
  // Groups partition the cases.
  int64_t by_gpu = 0;
  for (const ErrorSummary& g : r->by_gpu) by_gpu += g.count;
  EXPECT_EQ(by_gpu, r->summary.count);
  auto j = ValidationToJson(*r);
  for (const char* key : {"count", "projected", "median_abs_error_pct", "mean_error_pct",
                          "within_10_pct", "within_20_pct", "within_30_pct"}) {
    EXPECT_TRUE(j["summary"].contains(key)) << key;
  }
  for (const char* key : {"id", "measured_tokens_per_s_per_gpu", "projected_tokens_per_s_per_gpu",
                          "error_pct", "status"}) {
    EXPECT_TRUE(j["cases"][0].contains(key)) << key;
  }
}

TEST(ValidateCasesFileTest, MalformedLineNamesLineAndField) {
  EXPECT_THAT(ValidateCasesFile(std::string(PROJECTOR_TESTDATA_DIR) +
                                "/scenarios/cases_bad_line.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("cases_bad_line.jsonl:2"), HasSubstr("/seq_len"))));
}

TEST(ValidateCasesFileTest, InvalidLayoutIsListedNotDropped) {
  auto r = ValidateCasesFile(std::string(PROJECTOR_TESTDATA_DIR) +
                             "/scenarios/cases_unsupported.jsonl");
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->cases.size(), 2u);
  EXPECT_EQ(r->cases[0].status, "ok");
  EXPECT_EQ(r->cases[1].status, "unsupported");
  EXPECT_THAT(r->cases[1].reason, HasSubstr("not divisible by tp 3"));
  EXPECT_EQ(r->summary.count, 2);
  EXPECT_EQ(r->summary.projected, 1);
}

TEST(ValidateCasesFileTest, MissingFile) {
  EXPECT_THAT(ValidateCasesFile("/nonexistent/cases.jsonl"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("cases.jsonl")));
}

}  // namespace
}  // namespace projector
