#include "backends/profile/profile_file.h"

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Profiles(const std::string& name) {
  return std::string(PROJECTOR_TESTDATA_DIR) + "/profiles/" + name;
}

Profile SampleProfile() {
  Profile p;
  p.origin = "sample";
  p.tool = "test";
  p.device = "NVIDIA H100";
  p.scenario.model = "llama3.1-8b";
  p.scenario.gpu = "h100-sxm";
  p.scenario.num_gpus = 16;
  p.scenario.gpus_per_node = 8;
  p.scenario.parallel = ParallelConfig{.tp = 2, .pp = 2, .dp = 4, .sequence_parallel = true};
  p.scenario.micro_batch = 2;
  p.scenario.seq_len = 8192;
  p.scenario.global_batch = 64;
  p.scenario.precision = DType::kFp8;
  p.scenario.recompute = Recompute::kSelective;
  p.scenario.clock_mhz = 1755;
  p.scenario.measured_tokens_per_s_per_gpu = 1234.5;
  ProfiledOp g; g.kind = ProfiledOpKind::kGemm; g.name = "qkv_proj"; g.module = "attention";
  g.gemm = GemmShape{.m = 8192, .n = 3072, .k = 4096, .batch = 2, .dtype = DType::kFp8};
  g.gemm.block_scaled = true;  // an MXFP8 GEMM: the flag survives the round trip
  g.time = {.median = Microseconds(100), .min = Microseconds(90), .max = Microseconds(120),
            .repetitions = 20};
  ProfiledOp a; a.kind = ProfiledOpKind::kAttention;
  a.attention = AttentionShape{.batch = 2, .num_q_heads = 16, .num_kv_heads = 4, .seq_q = 8192,
                               .seq_kv = 8192, .qk_head_dim = 128, .v_head_dim = 128};
  a.pass = AttentionPass::kBackward;
  a.time = {.median = Microseconds(900), .min = Microseconds(900), .max = Microseconds(950),
            .repetitions = 5};
  ProfiledOp m; m.kind = ProfiledOpKind::kMemory;
  m.memory = MemoryOp{.bytes = Bytes(1 << 20), .flops = Flops(1000), .launches = 3};
  m.time = {.median = Microseconds(7), .min = Microseconds(6), .max = Microseconds(8),
            .repetitions = 20};
  ProfiledOp c; c.kind = ProfiledOpKind::kCollective;
  c.collective = CollectiveOp{.kind = CollectiveKind::kAllGather, .bytes = Bytes(1 << 24),
                              .group = {.size = 4, .stride = 2}};
  c.time = {.median = Microseconds(80), .min = Microseconds(75), .max = Microseconds(95),
            .repetitions = 10};
  p.ops = {g, a, m, c};
  ProfiledModule a2a;
  a2a.module = "moe_a2a";
  a2a.layer_kind = "moe";
  a2a.forward = TimingStats{.median = Microseconds(300), .min = Microseconds(290),
                            .max = Microseconds(310), .repetitions = 10};
  ProfiledModule output;
  output.module = "output";
  output.backward = TimingStats{.median = Microseconds(50), .min = Microseconds(50),
                                .max = Microseconds(50), .repetitions = 1};
  p.modules = {a2a, output};
  return p;
}

void ExpectSameTiming(const TimingStats& a, const TimingStats& b) {
  EXPECT_DOUBLE_EQ(a.median.value(), b.median.value());
  EXPECT_DOUBLE_EQ(a.min.value(), b.min.value());
  EXPECT_DOUBLE_EQ(a.max.value(), b.max.value());
  EXPECT_EQ(a.repetitions, b.repetitions);
}

void ExpectSameProfile(const Profile& a, const Profile& b) {
  EXPECT_EQ(a.tool, b.tool);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.scenario.model, b.scenario.model);
  EXPECT_EQ(a.scenario.gpu, b.scenario.gpu);
  EXPECT_EQ(a.scenario.num_gpus, b.scenario.num_gpus);
  EXPECT_EQ(a.scenario.gpus_per_node, b.scenario.gpus_per_node);
  EXPECT_EQ(a.scenario.parallel.tp, b.scenario.parallel.tp);
  EXPECT_EQ(a.scenario.parallel.pp, b.scenario.parallel.pp);
  EXPECT_EQ(a.scenario.parallel.dp, b.scenario.parallel.dp);
  EXPECT_EQ(a.scenario.parallel.sequence_parallel, b.scenario.parallel.sequence_parallel);
  EXPECT_EQ(a.scenario.micro_batch, b.scenario.micro_batch);
  EXPECT_EQ(a.scenario.seq_len, b.scenario.seq_len);
  EXPECT_EQ(a.scenario.global_batch, b.scenario.global_batch);
  EXPECT_EQ(a.scenario.precision, b.scenario.precision);
  EXPECT_EQ(a.scenario.recompute, b.scenario.recompute);
  EXPECT_DOUBLE_EQ(a.scenario.clock_mhz, b.scenario.clock_mhz);
  EXPECT_EQ(a.scenario.measured_tokens_per_s_per_gpu, b.scenario.measured_tokens_per_s_per_gpu);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a.ops[i].kind, b.ops[i].kind);
    EXPECT_EQ(a.ops[i].name, b.ops[i].name);
    EXPECT_EQ(a.ops[i].module, b.ops[i].module);
    EXPECT_EQ(a.ops[i].gemm, b.ops[i].gemm);
    EXPECT_EQ(a.ops[i].attention, b.ops[i].attention);
    EXPECT_EQ(a.ops[i].pass, b.ops[i].pass);
    EXPECT_EQ(a.ops[i].memory, b.ops[i].memory);
    EXPECT_EQ(a.ops[i].collective, b.ops[i].collective);
    ExpectSameTiming(a.ops[i].time, b.ops[i].time);
  }
  ASSERT_EQ(a.modules.size(), b.modules.size());
  for (size_t i = 0; i < a.modules.size(); ++i) {
    EXPECT_EQ(a.modules[i].module, b.modules[i].module);
    EXPECT_EQ(a.modules[i].layer_kind, b.modules[i].layer_kind);
    ASSERT_EQ(a.modules[i].forward.has_value(), b.modules[i].forward.has_value());
    ASSERT_EQ(a.modules[i].backward.has_value(), b.modules[i].backward.has_value());
    if (a.modules[i].forward) ExpectSameTiming(*a.modules[i].forward, *b.modules[i].forward);
    if (a.modules[i].backward) ExpectSameTiming(*a.modules[i].backward, *b.modules[i].backward);
  }
}

TEST(ProfileFileTest, JsonRoundTripKeepsEveryField) {
  const Profile p = SampleProfile();
  auto back = ParseProfile(ProfileToJson(p), "round-trip");
  ASSERT_THAT(back, IsOk());
  ExpectSameProfile(p, *back);
}

TEST(ProfileFileTest, FileRoundTripKeepsEveryField) {
  const Profile p = SampleProfile();
  const std::string path = ::testing::TempDir() + "/profile_round_trip.json";
  ASSERT_THAT(WriteProfileFile(p, path), IsOk());
  auto back = LoadProfileFile(path);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->origin, path);
  ExpectSameProfile(p, *back);
  std::remove(path.c_str());
}

TEST(ProfileFileTest, LoadsTheGoodTestProfile) {
  auto p = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->scenario.gpu, "h100-sxm");
  EXPECT_EQ(p->scenario.parallel.dp, 8);
  ASSERT_EQ(p->ops.size(), 5u);
  EXPECT_EQ(p->ops[1].gemm.batch, 1);  // default
  EXPECT_DOUBLE_EQ(ToMicroseconds(p->ops[1].time.min), 950.0);  // min defaults to the median
  EXPECT_EQ(p->ops[4].collective.kind, CollectiveKind::kAllReduce);
  ASSERT_EQ(p->modules.size(), 2u);
  EXPECT_EQ(p->modules[1].layer_kind, "");
}

TEST(ProfileFileTest, MissingFileIsNotFound) {
  EXPECT_THAT(LoadProfileFile(Profiles("missing.json")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.json")));
}

struct BadCase {
  const char* file;
  const char* pointer;
  const char* problem;
};

class MalformedProfileTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(MalformedProfileTest, NamesFileFieldAndProblem) {
  const BadCase& c = GetParam();
  EXPECT_THAT(LoadProfileFile(Profiles(c.file)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(c.file), HasSubstr(c.pointer), HasSubstr(c.problem))));
}

INSTANTIATE_TEST_SUITE_P(
    AllErrors, MalformedProfileTest,
    ::testing::Values(
        BadCase{"bad_version.json", "/version", "unknown version 2; accepted: 1"},
        BadCase{"bad_format.json", "/format", "accepted: projector-profile"},
        BadCase{"bad_missing_field.json", "/scenario/seq_len", "missing"},
        BadCase{"bad_missing_time.json", "/ops/0/time_us", "missing"},
        BadCase{"bad_unknown_key.json", "/ops/1/kk", "unknown key 'kk'"},
        BadCase{"bad_unknown_layout_key.json", "/scenario/layout/tpp", "unknown key"},
        BadCase{"bad_shape_heads.json", "/ops/2/num_kv_heads", "shape mismatch"},
        BadCase{"bad_shape_ranks.json", "/ops/4/ranks", "shape mismatch"},
        BadCase{"bad_layout_product.json", "/scenario/num_gpus", "tp·pp·cp·dp"},
        BadCase{"bad_min_above_median.json", "/ops/0/time_us/min", "min <= median <= max"},
        BadCase{"bad_time_beyond_an_hour.json", "/ops/0/time_us/median", "is over an hour"},
        BadCase{"bad_non_positive.json", "/ops/0/m", "> 0"},
        BadCase{"bad_kind.json", "/ops/0/kind", "gemm"},
        BadCase{"bad_pass.json", "/ops/2/pass", "fwd"},
        BadCase{"bad_module.json", "/modules/0/module", "attention"},
        BadCase{"bad_no_ops.json", "/ops", "ops and/or modules"},
        BadCase{"bad_syntax.json", "bad_syntax.json", ""}),
    [](const ::testing::TestParamInfo<BadCase>& param_info) {
      std::string name = param_info.param.file;
      name = name.substr(0, name.find('.'));
      return name;
    });

}  // namespace
}  // namespace projector
