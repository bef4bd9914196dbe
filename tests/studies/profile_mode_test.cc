#include "studies/profile_mode.h"

#include <optional>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "projection/projection.h"
#include "report/profile_mode_report.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;

using ::testing::HasSubstr;

std::string Profiles(const std::string& name) {
  return std::string(PROJECTOR_TESTDATA_DIR) + "/profiles/" + name;
}

TEST(ProfileModeTest, ScenarioFromProfileResolvesAndValidates) {
  auto profile = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(profile, IsOk());
  auto s = ScenarioFromProfile(*profile);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->hw.name, "h100-sxm");
  EXPECT_EQ(s->parallel.dp, 8);
  EXPECT_EQ(s->training.global_batch, 8);  // micro_batch · dp
}

TEST(ProfileModeTest, UnknownModelNamesTheField) {
  auto profile = LoadProfileFile(Profiles("bad_unknown_model.json"));
  ASSERT_THAT(profile, IsOk());
  EXPECT_THAT(ScenarioFromProfile(*profile),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bad_unknown_model.json: /scenario/model")));
}

// Builds a profile whose ops are the scenario's own ops with made-up times, so every compute
// op of the profile's own scenario is measured.
Profile OwnOpsProfile(const Scenario& s, const Profile& base) {
  Profile p = base;
  p.ops.clear();
  p.modules.clear();
  auto ops = ScenarioComputeOps(s);
  EXPECT_THAT(ops, IsOk());
  for (const Op& op : *ops) {
    ProfiledOp q;
    switch (op.kind) {
      case OpKind::kGemm:
        q.kind = ProfiledOpKind::kGemm;
        q.gemm = op.gemm;
        break;
      case OpKind::kAttention:
        q.kind = ProfiledOpKind::kAttention;
        q.attention = op.attention;
        q.pass = op.attention_pass;
        break;
      case OpKind::kMemory:
        q.kind = ProfiledOpKind::kMemory;
        q.memory = op.memory;
        break;
      case OpKind::kCollective:
        continue;
    }
    q.time = {.median = Microseconds(10), .min = Microseconds(10), .max = Microseconds(10),
              .repetitions = 3};
    p.ops.push_back(q);
  }
  return p;
}

TEST(ProfileModeTest, OwnScenarioOpsAreMeasuredAndJsonMarksThem) {
  auto base = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(base, IsOk());
  auto s = ScenarioFromProfile(*base);
  ASSERT_THAT(s, IsOk());
  const Profile profile = OwnOpsProfile(*s, *base);
  auto report = RunProfileMode(*s, profile, /*both=*/false);
  ASSERT_THAT(report, IsOk());
  EXPECT_GT(report->measured_ops, 0);
  const nlohmann::json j = ProfileModeJson(*s, *report);
  EXPECT_EQ(j["mode"], "profile");
  int measured = 0;
  for (const auto& row : j["ops"]) {
    ASSERT_TRUE(row.contains("provenance"));
    const std::string prov = row["provenance"];
    EXPECT_THAT(prov, ::testing::AnyOf("measured", "scaled_from_measured", "simulated"));
    if (prov == "measured") {
      ++measured;
      EXPECT_DOUBLE_EQ(row["projected_us"].get<double>(), 10.0);
    }
  }
  EXPECT_GT(measured, 0);
  bool compute_measured = false;
  for (const auto& t : j["terms"]) {
    if (t["term"] == "compute") compute_measured = t["provenance"] == "measured";
  }
  EXPECT_TRUE(compute_measured) << j["terms"].dump();
  EXPECT_TRUE(j.contains("projection"));
}

TEST(ProfileModeTest, LargerTensorParallelTargetIsScaledFromMeasured) {
  auto base = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(base, IsOk());
  auto measured = ScenarioFromProfile(*base);
  ASSERT_THAT(measured, IsOk());
  const Profile profile = OwnOpsProfile(*measured, *base);
  Scenario target = *measured;
  target.parallel.tp = 2;
  target.parallel.dp = 32;
  target.num_gpus = 64;
  target.training.global_batch = 32;
  auto report = RunProfileMode(target, profile, /*both=*/false);
  ASSERT_THAT(report, IsOk());
  EXPECT_GT(report->scaled_ops, 0);
  const nlohmann::json j = ProfileModeJson(target, *report);
  EXPECT_GT(j["provenance_counts"]["scaled_from_measured"].get<int64_t>(), 0);
}

TEST(ProfileModeTest, BothModeComparesEveryMeasuredOpAndModule) {
  auto profile = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(profile, IsOk());
  auto s = ScenarioFromProfile(*profile);
  ASSERT_THAT(s, IsOk());
  auto report = RunProfileMode(*s, *profile, /*both=*/true);
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->comparison_ops.size(), profile->ops.size());
  EXPECT_EQ(report->comparison_modules.size(), profile->modules.size());
  EXPECT_TRUE(report->simulated_projection.has_value());
  const std::string text = ProfileModeText(*s, *report);
  EXPECT_THAT(text, HasSubstr("Measured ops vs simulate model"));
  EXPECT_THAT(text, HasSubstr("mean |error|"));
  const nlohmann::json j = ProfileModeJson(*s, *report);
  EXPECT_TRUE(j["comparison"]["ops"][0].contains("error_pct"));
}

// --- Measured module times (profile `modules`) -------------------------------------------------

// A module-only profile of Llama-3.1-8B on 8 H100 (DP8, micro-batch 1, seq 4096).
Profile ModuleProfile8b() {
  Profile p;
  p.origin = "modules.json";
  p.scenario.model = "llama3.1-8b";
  p.scenario.gpu = "h100-sxm";
  p.scenario.num_gpus = 8;
  p.scenario.gpus_per_node = 8;
  p.scenario.parallel = ParallelConfig{.dp = 8};
  p.scenario.micro_batch = 1;
  p.scenario.seq_len = 4096;
  return p;
}

TimingStats Stats(Seconds t) { return {.median = t, .min = t, .max = t, .repetitions = 10}; }

ProfiledModule MeasuredModule(const std::string& module, const std::string& layer_kind,
                              std::optional<Seconds> forward, std::optional<Seconds> backward) {
  ProfiledModule m;
  m.module = module;
  m.layer_kind = layer_kind;
  if (forward) m.forward = Stats(*forward);
  if (backward) m.backward = Stats(*backward);
  return m;
}

const ModuleTimes& FindModule(const LayerKindTimes& layer, std::string_view module) {
  for (const ModuleTimes& m : layer.modules) {
    if (m.module == module) return m;
  }
  ADD_FAILURE() << "no module " << module;
  return layer.modules.front();
}

// Pure simulate projection of `s` (the default simulate backends).
Projection Simulated(const Scenario& s) {
  auto p = Project(s);
  EXPECT_THAT(p, IsOk());
  return *p;
}

TEST(ProfileModeModulesTest, MeasuredModuleOnItsOwnScenarioIsUsedAsMeasured) {
  Profile profile = ModuleProfile8b();
  auto s = ScenarioFromProfile(profile);
  ASSERT_THAT(s, IsOk());
  const Projection sim = Simulated(*s);
  const Seconds attention_fwd = FindModule(sim.layer_kinds[0], "attention").forward;
  // The run measured attention forward at twice the simulate model's time. Same scenario:
  // projected = measured × S / S = 2 · S_attention_fwd; the MLP keeps its simulated time.
  profile.modules.push_back(MeasuredModule("attention", "dense", attention_fwd * 2.0, {}));
  auto report = RunProfileMode(*s, profile, /*both=*/false);
  ASSERT_THAT(report, IsOk());
  const LayerKindTimes& dense = report->projection.layer_kinds[0];
  EXPECT_THAT(FindModule(dense, "attention").forward.value(),
              IsNearRel(2.0 * attention_fwd.value(), 1e-9));
  EXPECT_THAT(FindModule(dense, "attention").backward.value(),
              IsNearRel(FindModule(sim.layer_kinds[0], "attention").backward.value(), 1e-9));
  EXPECT_THAT(FindModule(dense, "mlp").forward.value(),
              IsNearRel(FindModule(sim.layer_kinds[0], "mlp").forward.value(), 1e-9));
  ASSERT_EQ(report->module_terms.size(), 1u);
  EXPECT_EQ(report->module_terms[0].provenance, Provenance::kMeasured);
  EXPECT_THAT(report->module_terms[0].projected_us,
              IsNearRel(2.0 * ToMicroseconds(attention_fwd), 1e-9));
  // Every forward attention op row carries the module's mark; backward ones stay simulated.
  for (const ProfileOpRow& row : report->ops) {
    if (row.layer != "dense" || row.module != "attention") continue;
    SCOPED_TRACE(row.name + " " + row.phase);
    EXPECT_EQ(row.provenance,
              row.phase == "forward" ? Provenance::kMeasured : Provenance::kSimulated);
    if (row.phase == "forward") {
      EXPECT_THAT(row.projected_us, IsNearRel(2.0 * row.simulated_us, 1e-9));
    }
  }
}

TEST(ProfileModeModulesTest, LargerTensorParallelTargetCarriesTheModuleByTheSimulatedRatio) {
  Profile profile = ModuleProfile8b();
  auto measured = ScenarioFromProfile(profile);
  ASSERT_THAT(measured, IsOk());
  const Seconds mlp_bwd_measured_sim =
      FindModule(Simulated(*measured).layer_kinds[0], "mlp").backward;
  profile.modules.push_back(MeasuredModule("mlp", "dense", {}, mlp_bwd_measured_sim * 1.25));
  Scenario target = *measured;
  target.parallel = ParallelConfig{.tp = 2, .dp = 4, .sequence_parallel = true};
  const Seconds mlp_bwd_target_sim = FindModule(Simulated(target).layer_kinds[0], "mlp").backward;
  // projected = 1.25·S_meas × S_tgt / S_meas = 1.25 · S_tgt (TP2 halves the MLP GEMMs' N/K).
  auto report = RunProfileMode(target, profile, /*both=*/false);
  ASSERT_THAT(report, IsOk());
  EXPECT_THAT(FindModule(report->projection.layer_kinds[0], "mlp").backward.value(),
              IsNearRel(1.25 * mlp_bwd_target_sim.value(), 1e-9));
  ASSERT_EQ(report->module_terms.size(), 1u);
  const ProfileModuleTermRow& row = report->module_terms[0];
  EXPECT_EQ(row.provenance, Provenance::kScaledFromMeasured);
  EXPECT_THAT(row.simulated_target_us / row.simulated_measured_us,
              IsNearRel(mlp_bwd_target_sim / mlp_bwd_measured_sim, 1e-9));
  const nlohmann::json j = ProfileModeJson(target, *report);
  EXPECT_EQ(j["module_terms"][0]["provenance"], "scaled_from_measured");
  EXPECT_EQ(j["module_terms"][0]["phase"], "backward");
}

TEST(ProfileModeModulesTest, WholeLayerTimeScalesTheComposedLayer) {
  Profile profile = ModuleProfile8b();
  auto measured = ScenarioFromProfile(profile);
  ASSERT_THAT(measured, IsOk());
  const Projection sim_measured = Simulated(*measured);
  // Layer forward measured 10% slower than simulated (host gaps between kernels, say).
  profile.modules.push_back(
      MeasuredModule("layer", "dense", sim_measured.layer_kinds[0].forward * 1.1, {}));
  Scenario target = *measured;
  target.parallel = ParallelConfig{.tp = 2, .dp = 4, .sequence_parallel = true};
  const Projection sim_target = Simulated(target);
  auto report = RunProfileMode(target, profile, /*both=*/false);
  ASSERT_THAT(report, IsOk());
  // projected = 1.1·F_meas × F_tgt / F_meas = 1.1 · F_tgt, F the composed layer forward
  // (compute + exposed TP communication); the backward is untouched.
  const LayerKindTimes& dense = report->projection.layer_kinds[0];
  EXPECT_THAT(dense.forward.value(), IsNearRel(1.1 * sim_target.layer_kinds[0].forward.value(), 1e-9));
  EXPECT_THAT(dense.backward.value(), IsNearRel(sim_target.layer_kinds[0].backward.value(), 1e-9));
  EXPECT_GT(report->projection.step_time, sim_target.step_time);
  const std::string text = ProfileModeText(target, *report);
  EXPECT_THAT(text, HasSubstr("Measured module times used"));
  EXPECT_THAT(text, HasSubstr("module layer (dense) forward"));
}

TEST(ProfileModeModulesTest, MeasuredAllToAllScalesTheExpertParallelExchange) {
  Profile profile;
  profile.origin = "moe.json";
  profile.scenario.model = "mixtral-8x7b";
  profile.scenario.gpu = "h100-sxm";
  profile.scenario.num_gpus = 8;
  profile.scenario.gpus_per_node = 8;
  profile.scenario.parallel = ParallelConfig{.ep = 8, .dp = 8};
  profile.scenario.micro_batch = 1;
  profile.scenario.seq_len = 4096;
  auto s = ScenarioFromProfile(profile);
  ASSERT_THAT(s, IsOk());
  // The simulate model's A2A time on this scenario, from the `both` comparison.
  profile.modules.push_back(MeasuredModule("moe_a2a", "moe", Microseconds(1), Microseconds(1)));
  auto probe = RunProfileMode(*s, profile, /*both=*/true);
  ASSERT_THAT(probe, IsOk());
  ASSERT_EQ(probe->comparison_modules.size(), 1u);
  const double a2a_fwd_us = probe->comparison_modules[0].simulated_forward_us;
  const double a2a_bwd_us = probe->comparison_modules[0].simulated_backward_us;
  ASSERT_GT(a2a_fwd_us, 0);
  // Measured 3× the simulate model in both phases: every EP All-to-All op takes 3× its
  // simulated time (one factor, (3F + 3B) / (F + B) = 3).
  profile.modules[0] = MeasuredModule("moe_a2a", "moe", Microseconds(3 * a2a_fwd_us),
                                      Microseconds(3 * a2a_bwd_us));
  auto report = RunProfileMode(*s, profile, /*both=*/false);
  ASSERT_THAT(report, IsOk());
  int a2a_rows = 0;
  for (const ProfileOpRow& row : report->ops) {
    if (row.name.rfind("ep_dispatch_combine", 0) != 0) continue;
    ++a2a_rows;
    EXPECT_THAT(row.projected_us, IsNearRel(3.0 * row.simulated_us, 1e-9));
    EXPECT_EQ(row.provenance, Provenance::kMeasured);
  }
  EXPECT_EQ(a2a_rows, 2);  // forward and backward
  for (const ProfileTermRow& t : report->terms) {
    // The A2A ops are measured; the dispatcher's count AllGather (not an All-to-All) stays
    // simulated.
    if (t.term == "exposed_ep_comm") {
      EXPECT_EQ(t.provenance, "mixed (2 measured, 0 scaled, 1 simulated)");
    }
  }
}

TEST(ProfileModeTest, OtherGpuIsRejected) {
  auto profile = LoadProfileFile(Profiles("good.json"));
  ASSERT_THAT(profile, IsOk());
  auto s = ScenarioFromProfile(*profile);
  ASSERT_THAT(s, IsOk());
  Scenario target = *s;
  target.hw.name = "mi300x";
  EXPECT_THAT(RunProfileMode(target, *profile, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/scenario/gpu")));
}

}  // namespace
}  // namespace projector
