#include "serving/workload.h"

#include <cmath>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

WorkloadSpec Spec() {
  WorkloadSpec w;
  w.arrival = ArrivalKind::kPoisson;
  w.qps = 4.0;
  w.num_requests = 20000;
  w.input = LengthSpec{.distribution = LengthDistribution::kFixed, .mean = 512, .spread = 0};
  w.output = LengthSpec{.distribution = LengthDistribution::kFixed, .mean = 128, .spread = 0};
  w.seed = 7;
  return w;
}

TEST(WorkloadTest, SameSeedSameRequestsOtherSeedOthers) {
  const std::vector<Request> a = GenerateRequests(Spec());
  const std::vector<Request> b = GenerateRequests(Spec());
  ASSERT_EQ(a.size(), 20000u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
  WorkloadSpec other = Spec();
  other.seed = 8;
  EXPECT_NE(GenerateRequests(other)[0].arrival_s, a[0].arrival_s);
}

// Exponential gaps of rate 4/s: mean 0.25 s, and the squared coefficient of variation of an
// exponential is 1. 20,000 draws put both within 3% (standard error 0.7%).
TEST(WorkloadTest, PoissonGapsHaveTheRateAndExponentialSpread) {
  const std::vector<Request> r = GenerateRequests(Spec());
  double sum = 0, sum2 = 0, prev = 0;
  for (const Request& q : r) {
    const double gap = q.arrival_s - prev;
    EXPECT_GE(gap, 0.0);
    sum += gap;
    sum2 += gap * gap;
    prev = q.arrival_s;
  }
  const double n = static_cast<double>(r.size());
  const double mean = sum / n;
  const double var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.25, 0.25 * 0.03);
  EXPECT_NEAR(var / (mean * mean), 1.0, 0.05);
  EXPECT_EQ(r[5].prompt_tokens, 512);
  EXPECT_EQ(r[5].output_tokens, 128);
}

TEST(WorkloadTest, FixedRateAndAllAtOnce) {
  WorkloadSpec w = Spec();
  w.arrival = ArrivalKind::kFixedRate;
  w.num_requests = 5;
  const std::vector<Request> r = GenerateRequests(w);
  EXPECT_DOUBLE_EQ(r[0].arrival_s, 0.0);
  EXPECT_DOUBLE_EQ(r[4].arrival_s, 1.0);  // 4 gaps of 1/4 s
  w.arrival = ArrivalKind::kAllAtOnce;
  for (const Request& q : GenerateRequests(w)) EXPECT_EQ(q.arrival_s, 0.0);
}

// Uniform lengths stay in mean·(1 ± spread); lognormal ones have the mean and the coefficient
// of variation asked for (within 3% and 5% over 20,000 draws).
TEST(WorkloadTest, LengthDistributions) {
  WorkloadSpec w = Spec();
  w.input = LengthSpec{.distribution = LengthDistribution::kUniform, .mean = 1000, .spread = 0.5};
  w.output = LengthSpec{.distribution = LengthDistribution::kLognormal, .mean = 200, .spread = 1.0};
  const std::vector<Request> r = GenerateRequests(w);
  double sum = 0, sum2 = 0;
  for (const Request& q : r) {
    EXPECT_GE(q.prompt_tokens, 500);
    EXPECT_LE(q.prompt_tokens, 1500);
    const double o = static_cast<double>(q.output_tokens);
    sum += o;
    sum2 += o * o;
  }
  const double n = static_cast<double>(r.size());
  const double mean = sum / n;
  EXPECT_NEAR(mean, 200.0, 200.0 * 0.03);
  EXPECT_NEAR(std::sqrt(sum2 / n - mean * mean) / mean, 1.0, 0.05);
}

TEST(WorkloadTest, ValidationNamesTheField) {
  WorkloadSpec w = Spec();
  w.qps = 0;
  EXPECT_THAT(ValidateWorkload(w), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("qps")));
  w = Spec();
  w.output.mean = 0;
  EXPECT_THAT(ValidateWorkload(w),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("output_len")));
  w = Spec();
  w.num_requests = 0;
  EXPECT_THAT(ValidateWorkload(w),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_requests")));
  w = Spec();
  w.input.distribution = LengthDistribution::kUniform;
  w.input.spread = 1.5;
  EXPECT_THAT(ValidateWorkload(w),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input_len")));
  EXPECT_THAT(ValidateWorkload(Spec()), IsOk());
  EXPECT_THAT(ParseLengthDistribution("gauss"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lognormal")));
}

// Shared prefixes: each prompt is the prefix plus its own draw, the groups are drawn from a
// stream of their own (arrivals and lengths unchanged), uniformly: 20,000 draws over 4 groups
// put each within 5% of 5,000 (standard error 1.2%).
TEST(WorkloadTest, SharedPrefixesLeaveTheOtherDrawsAsTheyWere) {
  WorkloadSpec w = Spec();
  w.input.distribution = LengthDistribution::kLognormal;
  w.input.spread = 0.5;
  const std::vector<Request> plain = GenerateRequests(w);
  w.shared_prefix_len = 2048;
  w.prefix_groups = 4;
  const std::vector<Request> shared = GenerateRequests(w);
  ASSERT_EQ(shared.size(), plain.size());
  int64_t per_group[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < shared.size(); ++i) {
    EXPECT_EQ(shared[i].arrival_s, plain[i].arrival_s);
    EXPECT_EQ(shared[i].prompt_tokens, plain[i].prompt_tokens + 2048);
    EXPECT_EQ(shared[i].output_tokens, plain[i].output_tokens);
    EXPECT_EQ(shared[i].prefix_tokens, 2048);
    ASSERT_GE(shared[i].prefix_group, 0);
    ASSERT_LT(shared[i].prefix_group, 4);
    ++per_group[shared[i].prefix_group];
    EXPECT_EQ(plain[i].prefix_group, -1);
  }
  for (int64_t n : per_group) EXPECT_NEAR(static_cast<double>(n), 5000.0, 250.0);
  w.shared_prefix_len = 0;
  EXPECT_THAT(ValidateWorkload(w),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("prefix_groups")));
  w.shared_prefix_len = -1;
  w.prefix_groups = 1;
  EXPECT_THAT(ValidateWorkload(w),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shared_prefix_len")));
}

std::string WriteTrace(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(TraceTest, ReadsColumnsInAnyOrder) {
  const std::string path = WriteTrace(
      "trace_ok.csv",
      "# a comment\nprompt_tokens,arrival_s,output_tokens,extra\n100,0.5,10,x\n\n200,0.75,20,y\n");
  absl::StatusOr<std::vector<Request>> r = LoadRequestTrace(path);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].prompt_tokens, 200);
  EXPECT_DOUBLE_EQ((*r)[1].arrival_s, 0.75);
  EXPECT_EQ((*r)[1].output_tokens, 20);
  EXPECT_EQ((*r)[1].id, 1);
}

TEST(TraceTest, BadRowsNameLineAndColumn) {
  EXPECT_THAT(LoadRequestTrace(WriteTrace("t1.csv", "arrival_s,prompt_tokens\n0,1\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("output_tokens")));
  EXPECT_THAT(LoadRequestTrace(WriteTrace(
                  "t2.csv", "arrival_s,prompt_tokens,output_tokens\n0,1,2\n0.1,abc,3\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("t2.csv:3: column prompt_tokens: 'abc' is not a number")));
  EXPECT_THAT(
      LoadRequestTrace(
          WriteTrace("t3.csv", "arrival_s,prompt_tokens,output_tokens\n1,1,2\n0.5,1,3\n")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("t3.csv:3: column arrival_s")));
  EXPECT_THAT(
      LoadRequestTrace(WriteTrace("t4.csv", "arrival_s,prompt_tokens,output_tokens\n0,1,0\n")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column output_tokens")));
  EXPECT_THAT(LoadRequestTrace(WriteTrace("t5.csv", "arrival_s,prompt_tokens,output_tokens\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no requests")));
  EXPECT_THAT(LoadRequestTrace("/nonexistent/trace.csv"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("cannot read")));
}

TEST(TraceTest, ReadsSharedPrefixesAndRefusesInconsistentOnes) {
  const std::string header = "arrival_s,prompt_tokens,output_tokens,prefix_group,prefix_tokens\n";
  absl::StatusOr<std::vector<Request>> r = LoadRequestTrace(
      WriteTrace("prefix_ok.csv", header + "0,900,8,3,512\n0.1,700,8,3,512\n0.2,300,8,-1,0\n"));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ((*r)[1].prefix_group, 3);
  EXPECT_EQ((*r)[1].prefix_tokens, 512);
  EXPECT_EQ((*r)[2].prefix_group, -1);
  EXPECT_EQ((*r)[2].prefix_tokens, 0);
  EXPECT_THAT(LoadRequestTrace(WriteTrace(
                  "p1.csv", "arrival_s,prompt_tokens,output_tokens,prefix_group\n0,9,1,0\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("column prefix_group without prefix_tokens")));
  EXPECT_THAT(LoadRequestTrace(WriteTrace("p2.csv", header + "0,100,1,0,200\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("p2.csv:2: column prefix_tokens: a shared prefix is 0 to the "
                                 "prompt's 100 tokens, got 200")));
  EXPECT_THAT(LoadRequestTrace(WriteTrace("p3.csv", header + "0,900,1,5,512\n0,900,1,5,256\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("p3.csv:3: column prefix_tokens: prefix_group 5 has 512 shared "
                                 "tokens on line 2, 256 here")));
  EXPECT_THAT(LoadRequestTrace(WriteTrace("p4.csv", header + "0,900,1,x,512\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("p4.csv:2: column prefix_group: 'x' is not a whole number")));
}

}  // namespace
}  // namespace projector
