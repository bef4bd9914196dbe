#include "studies/profile_mode.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "backends/profile/profiled_backends.h"
#include "core/status_macros.h"
#include "models/model_spec.h"
#include "profilers/module_profilers.h"
#include "projection/layer_composer.h"
#include "projection/layer_time_adjuster.h"
#include "scenario/training_defaults.h"

// GCC 12 reports a false -Warray-bounds inside std::map when nlohmann::json objects are built
// (GCC bug 107138); the JSON code here is plain nlohmann::json use.
#pragma GCC diagnostic ignored "-Warray-bounds"

namespace projector {
namespace {

using nlohmann::json;

Provenance ProvenanceOf(TimeSource s) {
  switch (s) {
    case TimeSource::kMeasured:
      return Provenance::kMeasured;
    case TimeSource::kScaledFromMeasured:
      return Provenance::kScaledFromMeasured;
    case TimeSource::kSimulated:
      break;
  }
  return Provenance::kSimulated;
}

// One op resolved through the profile backends (times for all repeats).
struct ResolvedOp {
  Seconds simulated;
  Seconds projected;
  TimeSource source = TimeSource::kSimulated;
  const ProfiledOp* from = nullptr;
  double scale = 1.0;
};

template <typename R>
ResolvedOp FromResolved(const R& r, Seconds simulated, double repeat) {
  return {.simulated = simulated * repeat,
          .projected = r.estimate.time * repeat,
          .source = r.source,
          .from = r.source_op,
          .scale = r.scale};
}

absl::StatusOr<ResolvedOp> ResolveOp(const ProfiledBackendSet& set, const Op& op) {
  const auto repeat = static_cast<double>(op.repeat);
  switch (op.kind) {
    case OpKind::kGemm: {
      PROJECTOR_ASSIGN_OR_RETURN(auto r, set.gemm->Resolve(op.gemm));
      PROJECTOR_ASSIGN_OR_RETURN(auto s, set.target_simulate.gemm->Estimate(op.gemm));
      return FromResolved(r, s.time, repeat);
    }
    case OpKind::kAttention: {
      PROJECTOR_ASSIGN_OR_RETURN(auto r, set.attention->Resolve(op.attention, op.attention_pass));
      PROJECTOR_ASSIGN_OR_RETURN(
          auto s, set.target_simulate.attention->Estimate(op.attention, op.attention_pass));
      return FromResolved(r, s.time, repeat);
    }
    case OpKind::kMemory: {
      PROJECTOR_ASSIGN_OR_RETURN(auto r, set.memory->Resolve(op.memory));
      PROJECTOR_ASSIGN_OR_RETURN(auto s, set.target_simulate.memory->Estimate(op.memory));
      return FromResolved(r, s.time, repeat);
    }
    case OpKind::kCollective: {
      PROJECTOR_ASSIGN_OR_RETURN(auto r, set.collective->Resolve(op.collective, op.algorithm));
      PROJECTOR_ASSIGN_OR_RETURN(
          auto s, set.target_simulate.collective->Estimate(op.collective, op.algorithm));
      return FromResolved(r, s.time, repeat);
    }
  }
  return absl::InternalError("unknown op kind");
}

// Records the collectives and memory ops the projection asks for, to mark the step terms the
// layer op lists do not cover (DP/FSDP, P2P, optimizer).
class RecordingCollectiveBackend final : public CollectiveBackend {
 public:
  explicit RecordingCollectiveBackend(const CollectiveBackend& inner) : inner_(inner) {}
  absl::StatusOr<CollectiveEstimate> Estimate(const CollectiveOp& op,
                                              CollectiveAlgorithm algorithm) const override {
    {
      absl::MutexLock lock(&mu_);
      seen_.push_back({op, algorithm});
    }
    return inner_.Estimate(op, algorithm);
  }
  std::string_view name() const override { return inner_.name(); }
  std::vector<std::pair<CollectiveOp, CollectiveAlgorithm>> Seen() const {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  const CollectiveBackend& inner_;
  mutable absl::Mutex mu_;
  mutable std::vector<std::pair<CollectiveOp, CollectiveAlgorithm>> seen_;
};

class RecordingMemoryBackend final : public MemoryBackend {
 public:
  explicit RecordingMemoryBackend(const MemoryBackend& inner) : inner_(inner) {}
  absl::StatusOr<MemoryEstimate> Estimate(const MemoryOp& op) const override {
    {
      absl::MutexLock lock(&mu_);
      seen_.push_back(op);
    }
    return inner_.Estimate(op);
  }
  std::string_view name() const override { return inner_.name(); }
  std::vector<MemoryOp> Seen() const {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  const MemoryBackend& inner_;
  mutable absl::Mutex mu_;
  mutable std::vector<MemoryOp> seen_;
};

std::string Aggregate(const std::vector<TimeSource>& sources) {
  if (sources.empty()) return "none";
  int64_t counts[3] = {0, 0, 0};
  for (TimeSource s : sources) ++counts[static_cast<int>(s)];
  const int64_t sim = counts[static_cast<int>(TimeSource::kSimulated)];
  const int64_t meas = counts[static_cast<int>(TimeSource::kMeasured)];
  const int64_t scaled = counts[static_cast<int>(TimeSource::kScaledFromMeasured)];
  const auto n = static_cast<int64_t>(sources.size());
  if (meas == n) return "measured";
  if (scaled == n) return "scaled_from_measured";
  if (sim == n) return "simulated";
  return absl::StrFormat("mixed (%d measured, %d scaled, %d simulated)", meas, scaled, sim);
}

struct LayerOps {
  std::string kind;  // dense, moe, embedding, output
  LayerProfile layer;
  std::optional<ComposedLayer> composed;
  // Factors the adjuster applied to the composed layer's forward (and recompute) and backward.
  double forward_scale = 1.0;
  double backward_scale = 1.0;
};

ProfileContext ContextOf(const Scenario& s) {
  return ProfileContext{.model = s.model,
                        .parallel = s.parallel,
                        .training = s.training,
                        .recompute = s.training.recompute,
                        .run = ResolveRunChoices(s.model, s.parallel, s.training, s.hw.gpu.arch)};
}

// The layers (one per kind), embedding and output of `s`, timed with `refs` and composed (comm
// ops added) with `refs.collective`, adjusted by `adjuster` (optional) as Project does.
absl::StatusOr<std::vector<LayerOps>> BuildLayers(const Scenario& s, const BackendRefs* refs,
                                                  const LayerTimeAdjuster* adjuster = nullptr) {
  std::vector<LayerOps> out;
  const ProfileContext ctx = ContextOf(s);
  const bool has_moe = s.model.NumMoeLayers() > 0;
  const bool has_dense = s.model.NumDenseLayers() > 0;
  for (bool is_moe : {false, true}) {
    if (is_moe ? !has_moe : !has_dense) continue;
    LayerOps lo;
    lo.kind = is_moe ? "moe" : "dense";
    PROJECTOR_ASSIGN_OR_RETURN(lo.layer, ProfileLayer(ctx, is_moe));
    if (refs != nullptr) {
      PROJECTOR_RETURN_IF_ERROR(TimeLayer(*refs, lo.layer));
      LayerCompositionContext cctx{.model = s.model,
                                   .parallel = s.parallel,
                                   .training = s.training,
                                   .recompute = s.training.recompute};
      const CollectiveBackend* collective = &refs->collective;
      if (adjuster != nullptr) {
        for (ModuleProfile& m : lo.layer.modules) adjuster->AdjustModule(lo.kind, m);
        collective = &adjuster->LayerCollective(lo.kind, refs->collective);
      }
      PROJECTOR_ASSIGN_OR_RETURN(ComposedLayer composed,
                                 ComposeLayer(lo.layer, cctx, *collective));
      if (adjuster != nullptr) {
        const Seconds forward = composed.Forward();
        const Seconds backward = composed.Backward();
        adjuster->AdjustComposedLayer(lo.kind, composed);
        if (forward.value() > 0) lo.forward_scale = composed.Forward() / forward;
        if (backward.value() > 0) lo.backward_scale = composed.Backward() / backward;
      }
      lo.composed = std::move(composed);
    }
    out.push_back(std::move(lo));
  }
  for (bool is_embedding : {true, false}) {
    LayerOps lo;
    lo.kind = is_embedding ? "embedding" : "output";
    PROJECTOR_ASSIGN_OR_RETURN(ModuleProfile m,
                               is_embedding ? ProfileEmbedding(ctx) : ProfileOutputLayer(ctx));
    lo.layer.modules.push_back(std::move(m));
    if (refs != nullptr) {
      PROJECTOR_RETURN_IF_ERROR(TimeLayer(*refs, lo.layer));
      if (adjuster != nullptr) adjuster->AdjustModule(lo.kind, lo.layer.modules.front());
    }
    out.push_back(std::move(lo));
  }
  return out;
}

bool IsBackward(OpPhase p) { return p == OpPhase::kBackwardDgrad || p == OpPhase::kBackwardWgrad; }

bool IsEpAllToAll(const Op& op) {
  return op.kind == OpKind::kCollective && op.comm_dim == CommDim::kEp &&
         op.collective.kind == CollectiveKind::kAllToAll;
}

// The group (layer kind or end module) a profile module belongs to.
std::string GroupOf(const ProfiledModule& pm) {
  return pm.module == "embedding" || pm.module == "output" ? pm.module : pm.layer_kind;
}

const LayerOps* FindGroup(const std::vector<LayerOps>& layers, const std::string& kind) {
  for (const LayerOps& l : layers) {
    if (l.kind == kind) return &l;
  }
  return nullptr;
}

// Time of one profile module in one phase of a timed layer: "layer" the composed layer (compute
// and exposed communication), "moe_a2a" the EP All-to-All ops (full cost), any other module the
// sum of its compute ops (backward = dgrad + wgrad).
Seconds ModulePhaseTime(const LayerOps& l, const std::string& module, bool backward) {
  Seconds t(0);
  if (module == "layer") {
    if (l.composed) t = backward ? l.composed->Backward() : l.composed->Forward();
    return t;
  }
  if (module == "moe_a2a") {
    if (!l.composed) return t;
    for (const Op& op : l.composed->comm_ops) {
      if (IsEpAllToAll(op) && IsBackward(op.phase) == backward && op.phase != OpPhase::kRecompute) {
        t += op.time;
      }
    }
    return t;
  }
  for (const ModuleProfile& m : l.layer.modules) {
    if (m.module != module) continue;
    t += backward ? SumTime(m.ops, OpPhase::kBackwardDgrad) + SumTime(m.ops, OpPhase::kBackwardWgrad)
                  : SumTime(m.ops, OpPhase::kForward);
  }
  return t;
}

// Module times of the measured scenario under the simulate model, for `both`.
absl::Status CompareModules(const Profile& profile, const std::vector<LayerOps>& layers,
                            ProfileModeReport& report) {
  for (const ProfiledModule& pm : profile.modules) {
    const LayerOps* l = FindGroup(layers, GroupOf(pm));
    if (l == nullptr) {
      report.warnings.push_back(absl::StrCat("profile module ", pm.module, " (", pm.layer_kind,
                                             "): the model has no such layer; not compared"));
      continue;
    }
    ProfileModuleRow row{.layer_kind = pm.layer_kind,
                         .module = pm.module,
                         .measured_forward_us = std::nullopt,
                         .measured_backward_us = std::nullopt};
    if (pm.forward) row.measured_forward_us = ToMicroseconds(pm.forward->median);
    if (pm.backward) row.measured_backward_us = ToMicroseconds(pm.backward->median);
    row.simulated_forward_us = ToMicroseconds(ModulePhaseTime(*l, pm.module, false));
    row.simulated_backward_us = ToMicroseconds(ModulePhaseTime(*l, pm.module, true));
    report.comparison_modules.push_back(std::move(row));
  }
  return absl::OkStatus();
}

// The EP All-to-All timed by the simulate model on the target times a measured factor; every
// other collective by the projection's own backend.
class ScaledAllToAllBackend final : public CollectiveBackend {
 public:
  ScaledAllToAllBackend(const CollectiveBackend& simulate, const CollectiveBackend& others,
                        double factor)
      : simulate_(simulate), others_(others), factor_(factor) {}
  absl::StatusOr<CollectiveEstimate> Estimate(const CollectiveOp& op,
                                              CollectiveAlgorithm algorithm) const override {
    if (op.kind != CollectiveKind::kAllToAll) return others_.Estimate(op, algorithm);
    PROJECTOR_ASSIGN_OR_RETURN(CollectiveEstimate e, simulate_.Estimate(op, algorithm));
    e.time = e.time * factor_;
    e.bus_bandwidth = e.bus_bandwidth / factor_;
    return e;
  }
  std::string_view name() const override { return "profile"; }

 private:
  const CollectiveBackend& simulate_;
  const CollectiveBackend& others_;
  double factor_;
};

// Applies the measured module times of a profile to the target (see ProfileModuleTermRow).
class MeasuredModuleTimes final : public LayerTimeAdjuster {
 public:
  // `measured_sim` / `target_sim`: the layers of the profile's scenario and of the target under
  // the simulate model; `profiled` the target's projection backends (the ones A2A scaling
  // falls back to). Modules that cannot be carried over add a warning.
  MeasuredModuleTimes(const Profile& profile, const std::vector<LayerOps>& measured_sim,
                      const std::vector<LayerOps>& target_sim, const ProfiledBackendSet& set,
                      std::vector<std::string>& warnings) {
    double a2a_measured = 0;
    double a2a_simulated = 0;
    for (const ProfiledModule& pm : profile.modules) {
      const std::string group = GroupOf(pm);
      const LayerOps* source = FindGroup(measured_sim, group);
      const LayerOps* target = FindGroup(target_sim, group);
      if (source == nullptr || target == nullptr) {
        warnings.push_back(absl::StrCat("profile module ", pm.module, " (", group,
                                        "): the ", source == nullptr ? "profile's" : "target",
                                        " model has no such layer; not used"));
        continue;
      }
      for (bool backward : {false, true}) {
        const std::optional<TimingStats>& measured = backward ? pm.backward : pm.forward;
        if (!measured) continue;
        const Seconds sim_measured = ModulePhaseTime(*source, pm.module, backward);
        const Seconds sim_target = ModulePhaseTime(*target, pm.module, backward);
        if (sim_measured.value() <= 0) {
          warnings.push_back(absl::StrCat(
              "profile module ", pm.module, " (", group, ") ", backward ? "backward" : "forward",
              ": the simulate model has no such work on the profile's scenario; not used"));
          continue;
        }
        ProfileModuleTermRow row{
            .layer_kind = group,
            .module = pm.module,
            .phase = backward ? "backward" : "forward",
            .measured_us = ToMicroseconds(measured->median),
            .simulated_measured_us = ToMicroseconds(sim_measured),
            .simulated_target_us = ToMicroseconds(sim_target)};
        const double ratio = sim_target / sim_measured;
        row.projected_us = row.measured_us * ratio;
        row.provenance = std::abs(ratio - 1.0) < 1e-9 ? Provenance::kMeasured
                                                       : Provenance::kScaledFromMeasured;
        if (pm.module == "moe_a2a") {
          a2a_measured += row.measured_us;
          a2a_simulated += row.simulated_measured_us;
        }
        rows_.push_back(std::move(row));
      }
    }
    // Forward and backward A2A have the same shapes, so one factor covers both phases.
    if (a2a_simulated > 0) {
      a2a_ = std::make_unique<ScaledAllToAllBackend>(*set.target_simulate.collective,
                                                     *set.collective,
                                                     a2a_measured / a2a_simulated);
    }
  }

  const std::vector<ProfileModuleTermRow>& rows() const { return rows_; }

  // The row that sets an op's time in group `kind`, or null.
  const ProfileModuleTermRow* RowFor(std::string_view kind, const Op& op) const {
    const bool backward = IsBackward(op.phase);
    const std::string_view module = IsEpAllToAll(op) ? "moe_a2a" : op.module;
    if (op.kind == OpKind::kCollective && module != "moe_a2a") return nullptr;
    return Find(kind, module, backward);
  }
  const ProfileModuleTermRow* LayerRow(std::string_view kind, bool backward) const {
    return Find(kind, "layer", backward);
  }

  void AdjustModule(std::string_view kind, ModuleProfile& module) const override {
    // Recompute re-runs the forward ops: it takes the forward factor.
    double forward_factor = 1.0;
    for (bool backward : {false, true}) {
      const ProfileModuleTermRow* row = Find(kind, module.module, backward);
      if (row == nullptr) continue;
      Seconds current(0);
      for (const Op& op : module.ops) {
        // The phase as ModulePhaseTime sums it (once-per-step ops are not in a module's pass).
        if (backward ? IsBackward(op.phase) : op.phase == OpPhase::kForward) current += op.time;
      }
      if (current.value() <= 0) continue;
      const double factor = Microseconds(row->projected_us) / current;
      if (!backward) forward_factor = factor;
      for (Op& op : module.ops) {
        const bool in_phase = backward ? IsBackward(op.phase)
                                       : op.phase == OpPhase::kForward ||
                                             op.phase == OpPhase::kRecompute;
        if (!in_phase) continue;
        const double f = op.phase == OpPhase::kRecompute ? forward_factor : factor;
        op.time = op.time * f;
        op.clock_scaled_time = op.clock_scaled_time * f;
        op.provenance = row->provenance;
      }
    }
  }

  const CollectiveBackend& LayerCollective(std::string_view kind,
                                           const CollectiveBackend& composing) const override {
    if (kind == "moe" && a2a_ != nullptr) return *a2a_;
    return composing;
  }

  void AdjustComposedLayer(std::string_view kind, ComposedLayer& layer) const override {
    for (bool backward : {false, true}) {
      const ProfileModuleTermRow* row = Find(kind, "layer", backward);
      const Seconds current = backward ? layer.Backward() : layer.Forward();
      if (row == nullptr || current.value() <= 0) continue;
      const double g = Microseconds(row->projected_us) / current;
      auto scale = [g](ExposedComm& c) {
        c.tp = c.tp * g;
        c.cp = c.cp * g;
        c.ep = c.ep * g;
      };
      if (backward) {
        layer.backward_compute = layer.backward_compute * g;
        layer.backward_weight_grad = layer.backward_weight_grad * g;
        layer.backward_clock_scaled = layer.backward_clock_scaled * g;
        scale(layer.backward_comm);
        for (ModuleTimes& m : layer.modules) m.backward = m.backward * g;
        continue;
      }
      layer.forward_compute = layer.forward_compute * g;
      layer.forward_clock_scaled = layer.forward_clock_scaled * g;
      layer.recompute_compute = layer.recompute_compute * g;
      layer.recompute_clock_scaled = layer.recompute_clock_scaled * g;
      scale(layer.forward_comm);
      scale(layer.recompute_comm);
      for (ModuleTimes& m : layer.modules) {
        m.forward = m.forward * g;
        m.recompute = m.recompute * g;
      }
    }
  }

 private:
  const ProfileModuleTermRow* Find(std::string_view kind, std::string_view module,
                                   bool backward) const {
    for (const ProfileModuleTermRow& r : rows_) {
      if (r.layer_kind == kind && r.module == module && (r.phase == "backward") == backward) {
        return &r;
      }
    }
    return nullptr;
  }

  std::vector<ProfileModuleTermRow> rows_;
  std::unique_ptr<ScaledAllToAllBackend> a2a_;
};

}  // namespace

double ErrorPct(double simulated, double measured) {
  return measured > 0 ? (simulated - measured) / measured * 100.0 : 0.0;
}

ProfiledOp ToProfiledOp(const Op& op) {
  ProfiledOp p;
  p.name = std::string(op.name);
  p.module = std::string(op.module);
  switch (op.kind) {
    case OpKind::kGemm:
      p.kind = ProfiledOpKind::kGemm;
      p.gemm = op.gemm;
      break;
    case OpKind::kAttention:
      p.kind = ProfiledOpKind::kAttention;
      p.attention = op.attention;
      p.pass = op.attention_pass;
      break;
    case OpKind::kMemory:
      p.kind = ProfiledOpKind::kMemory;
      p.memory = op.memory;
      break;
    case OpKind::kCollective:
      p.kind = ProfiledOpKind::kCollective;
      p.collective = op.collective;
      break;
  }
  return p;
}

absl::StatusOr<Seconds> SimulateProfiledOp(const BackendSet& set, const ProfiledOp& op) {
  switch (op.kind) {
    case ProfiledOpKind::kGemm: {
      PROJECTOR_ASSIGN_OR_RETURN(auto e, set.gemm->Estimate(op.gemm));
      return e.time;
    }
    case ProfiledOpKind::kAttention: {
      PROJECTOR_ASSIGN_OR_RETURN(auto e, set.attention->Estimate(op.attention, op.pass));
      return e.time;
    }
    case ProfiledOpKind::kMemory: {
      PROJECTOR_ASSIGN_OR_RETURN(auto e, set.memory->Estimate(op.memory));
      return e.time;
    }
    case ProfiledOpKind::kCollective: {
      PROJECTOR_ASSIGN_OR_RETURN(auto e, set.collective->Estimate(op.collective));
      return e.time;
    }
  }
  return absl::InternalError("unknown profiled op kind");
}

absl::StatusOr<Scenario> ScenarioFromProfile(const Profile& profile) {
  const ProfileScenario& ps = profile.scenario;
  Scenario s;
  s.name = absl::StrCat("profile ", profile.origin);
  auto model = ResolveModel(ps.model);
  if (!model.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(profile.origin, ": /scenario/model: ", model.status().message()));
  }
  s.model = *std::move(model);
  auto hw = ResolveHardwareProfile(ps.gpu);
  if (!hw.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(profile.origin, ": /scenario/gpu: ", hw.status().message()));
  }
  s.hw = *std::move(hw);
  if (ps.gpus_per_node > 0) s.hw.gpus_per_node = ps.gpus_per_node;
  if (ps.clock_mhz > 0) s.hw.gpu.sustained_clock = Megahertz(ps.clock_mhz);
  s.parallel = ps.parallel;
  s.num_gpus = ps.num_gpus;
  s.training.seq_len = ps.seq_len;
  s.training.micro_batch = ps.micro_batch;
  s.training.global_batch =
      ps.global_batch > 0 ? ps.global_batch : ps.micro_batch * ps.parallel.dp;
  s.training.precision = ps.precision;
  s.training.recompute = ps.recompute;
  s.measured_tokens_per_s_per_gpu = ps.measured_tokens_per_s_per_gpu;
  const std::string origin = absl::StrCat(profile.origin, ": /scenario");
  PROJECTOR_RETURN_IF_ERROR(ResolveKernels(s, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateScenario(s, origin));
  return s;
}

ProfileScenario ProfileScenarioOf(const Scenario& s, const std::string& model_name) {
  ProfileScenario ps;
  ps.model = model_name;
  ps.gpu = ResolveHardwareProfile(s.hw.name).ok() || s.hw.source_file.empty() ? s.hw.name
                                                                          : s.hw.source_file;
  ps.num_gpus = s.num_gpus;
  ps.gpus_per_node = s.hw.gpus_per_node;
  ps.parallel = s.parallel;
  ps.micro_batch = s.training.micro_batch;
  ps.seq_len = s.training.seq_len;
  ps.global_batch = s.training.global_batch;
  ps.precision = s.training.precision;
  ps.recompute = s.training.recompute;
  ps.clock_mhz = ToMegahertz(s.hw.gpu.sustained_clock);
  return ps;
}

std::string ModelNameForProfile(const ModelSpec& model) {
  for (const std::string& name : ListLibraryModels()) {
    auto m = ResolveModel(name);
    if (m.ok() && m->name == model.name) return name;
  }
  return model.name;
}

absl::StatusOr<OpList> ScenarioComputeOps(const Scenario& scenario) {
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<LayerOps> layers, BuildLayers(scenario, nullptr));
  OpList ops;
  for (const LayerOps& l : layers) {
    for (const ModuleProfile& m : l.layer.modules) ops.insert(ops.end(), m.ops.begin(), m.ops.end());
  }
  return ops;
}

namespace {

// The sources of the times behind each step term: the layer compute ops, the TP/CP/EP
// collectives, and the memory ops of the layers (told apart from the optimizer's).
struct LayerSources {
  std::vector<TimeSource> compute;
  std::vector<TimeSource> comm[3];  // tp, cp, ep
  std::vector<MemoryOp> layer_memory_ops;
};

// One row of the per-op table: where the op's time comes from (measured, scaled from a measured
// shape, simulated, or set by a measured module or layer), counted in the report.
absl::Status AddOpRow(const ProfiledBackendSet& set, const MeasuredModuleTimes& module_times,
                      const LayerOps& l, const Op& op, LayerSources& sources,
                      ProfileModeReport& report) {
  PROJECTOR_ASSIGN_OR_RETURN(ResolvedOp r, ResolveOp(set, op));
  ProfileOpRow row;
  row.layer = l.kind;
  row.module = std::string(op.module);
  row.name = std::string(op.name);
  row.phase = std::string(OpPhaseName(op.phase));
  row.shape = DescribeProfiledOp(ToProfiledOp(op));
  if (op.repeat > 1) absl::StrAppend(&row.shape, " x", op.repeat);
  row.simulated_us = ToMicroseconds(r.simulated);
  row.projected_us = ToMicroseconds(r.projected);
  row.provenance = ProvenanceOf(r.source);
  if (r.source == TimeSource::kMeasured) row.measured_us = row.projected_us;
  if (r.from != nullptr && r.source == TimeSource::kScaledFromMeasured) {
    row.source_shape = DescribeProfiledOp(*r.from);
  }
  row.scale = r.scale;
  // A measured module (or whole layer) sets the time of the ops inside it.
  const bool backward = IsBackward(op.phase);
  const ProfileModuleTermRow* layer_row = module_times.LayerRow(l.kind, backward);
  const ProfileModuleTermRow* module_row = module_times.RowFor(l.kind, op);
  if (const ProfileModuleTermRow* m = layer_row != nullptr ? layer_row : module_row) {
    row.projected_us = ToMicroseconds(op.time) * (backward ? l.backward_scale : l.forward_scale);
    row.provenance = m->provenance;
    row.measured_us.reset();
    row.source_shape = absl::StrCat("module ", m->module, " (", m->layer_kind, ") ", m->phase);
    row.scale = m->simulated_target_us / m->simulated_measured_us;
    r.source = m->provenance == Provenance::kMeasured ? TimeSource::kMeasured
                                                      : TimeSource::kScaledFromMeasured;
  }
  switch (r.source) {
    case TimeSource::kMeasured:
      ++report.measured_ops;
      break;
    case TimeSource::kScaledFromMeasured:
      ++report.scaled_ops;
      break;
    case TimeSource::kSimulated:
      ++report.simulated_ops;
      break;
  }
  if (op.kind == OpKind::kCollective) {
    if (op.comm_dim == CommDim::kTp) sources.comm[0].push_back(r.source);
    if (op.comm_dim == CommDim::kCp) sources.comm[1].push_back(r.source);
    if (op.comm_dim == CommDim::kEp) sources.comm[2].push_back(r.source);
  } else {
    sources.compute.push_back(r.source);
    if (op.kind == OpKind::kMemory) sources.layer_memory_ops.push_back(op.memory);
  }
  report.ops.push_back(std::move(row));
  return absl::OkStatus();
}

// Each term of the step breakdown with the sources of the times it is made of.
absl::Status AttributeStepTerms(
    const Scenario& target, const ProfiledBackendSet& set, const LayerSources& sources,
    const std::vector<std::pair<CollectiveOp, CollectiveAlgorithm>>& recorded_collectives,
    const std::vector<MemoryOp>& recorded_memory_ops, ProfileModeReport& report) {
  std::vector<TimeSource> p2p_sources, dp_sources, optimizer_sources;
  const int64_t dp_stride = target.parallel.tp * target.parallel.cp;
  for (const auto& [op, algorithm] : recorded_collectives) {
    const bool p2p = op.kind == CollectiveKind::kSendRecv;
    const bool dp = !p2p && op.group.stride >= dp_stride && op.group.size > 1 &&
                    op.kind != CollectiveKind::kAllToAll;
    if (!p2p && !dp) continue;
    PROJECTOR_ASSIGN_OR_RETURN(auto r, set.collective->Resolve(op, algorithm));
    (p2p ? p2p_sources : dp_sources).push_back(r.source);
  }
  for (const MemoryOp& op : recorded_memory_ops) {
    const std::vector<MemoryOp>& layer_ops = sources.layer_memory_ops;
    if (std::find(layer_ops.begin(), layer_ops.end(), op) != layer_ops.end()) continue;
    PROJECTOR_ASSIGN_OR_RETURN(auto r, set.memory->Resolve(op));
    optimizer_sources.push_back(r.source);
  }
  const StepBreakdown& b = report.projection.breakdown;
  const std::string compute = Aggregate(sources.compute);
  const std::string dp = Aggregate(dp_sources);
  report.terms = {
      {"compute", b.compute.value(), compute},
      {"exposed_tp_comm", b.exposed_tp_comm.value(), Aggregate(sources.comm[0])},
      {"exposed_cp_comm", b.exposed_cp_comm.value(), Aggregate(sources.comm[1])},
      {"exposed_ep_comm", b.exposed_ep_comm.value(), Aggregate(sources.comm[2])},
      {"pipeline_bubble", b.pipeline_bubble.value(), compute},
      {"p2p", b.p2p.value(), Aggregate(p2p_sources)},
      {"exposed_dp_comm", b.exposed_dp_comm.value(), target.parallel.fsdp ? "none" : dp},
      {"exposed_fsdp_comm", b.exposed_fsdp_comm.value(), target.parallel.fsdp ? dp : "none"},
      {"fsdp_copies", b.fsdp_copies.value(), target.parallel.fsdp ? "simulated" : "none"},
      {"optimizer", b.optimizer.value(), Aggregate(optimizer_sources)},
  };
  return absl::OkStatus();
}

// --profiling-mode both: every measured op against the simulate model on the hardware it was
// measured on, the measured modules against the simulated ones, and the fully simulated
// projection.
absl::Status CompareWithSimulation(const Scenario& target, const Profile& profile,
                                   const ProfiledBackendSet& set,
                                   const std::vector<LayerOps>& measured_sim,
                                   ProfileModeReport& report) {
  // Every measured op against the simulate model on the hardware it was measured on.
  double sum_abs = 0;
  for (const ProfiledOp& p : profile.ops) {
    ProfileOpRow row;
    row.module = p.module;
    row.name = p.name;
    row.shape = DescribeProfiledOp(p);
    PROJECTOR_ASSIGN_OR_RETURN(Seconds sim, SimulateProfiledOp(set.measured_simulate, p));
    row.simulated_us = ToMicroseconds(sim);
    row.measured_us = ToMicroseconds(p.time.median);
    row.projected_us = *row.measured_us;
    row.provenance = Provenance::kMeasured;
    const double err = std::abs(ErrorPct(row.simulated_us, *row.measured_us));
    sum_abs += err;
    report.max_abs_op_error_pct = std::max(report.max_abs_op_error_pct, err);
    report.comparison_ops.push_back(std::move(row));
  }
  if (!profile.ops.empty()) {
    report.mean_abs_op_error_pct = sum_abs / static_cast<double>(profile.ops.size());
  }
  PROJECTOR_RETURN_IF_ERROR(CompareModules(profile, measured_sim, report));
  PROJECTOR_ASSIGN_OR_RETURN(Projection sim, Project(target, RefsOf(set.target_simulate)));
  report.simulated_projection = std::move(sim);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ProfileModeReport> RunProfileMode(const Scenario& target, const Profile& profile,
                                                 bool both) {
  PROJECTOR_ASSIGN_OR_RETURN(Scenario measured, ScenarioFromProfile(profile));
  if (measured.hw.name != target.hw.name) {
    return absl::InvalidArgumentError(absl::StrCat(
        profile.origin, ": /scenario/gpu: measured on '", measured.hw.name,
        "' but the target GPU is '", target.hw.name,
        "'; accepted: a profile measured on the target GPU (or --profiling-mode simulate)"));
  }
  ProfileModeReport report;
  report.both = both;
  report.profile_file = profile.origin;
  report.profile_tool = profile.tool;
  report.profile_device = profile.device;
  report.measured_layout = LayoutSummary(measured.parallel);
  report.measured_model = measured.model.name;
  if (measured.model.name != target.model.name) {
    report.warnings.push_back(absl::StrCat(
        "the profile was measured on ", measured.model.name, ", the target is ", target.model.name,
        ": only ops of similar shape are carried over"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(
      ProfiledBackendSet set,
      MakeProfiledBackendSet(profile, target.backends, target.hw, measured.hw));

  // Measured module times, carried to the target by the ratio of simulated module times.
  const BackendRefs measured_sim_refs = RefsOf(set.measured_simulate);
  const BackendRefs target_sim_refs = RefsOf(set.target_simulate);
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<LayerOps> measured_sim,
                             BuildLayers(measured, &measured_sim_refs));
  std::vector<LayerOps> target_sim;
  if (!profile.modules.empty()) {
    PROJECTOR_ASSIGN_OR_RETURN(target_sim, BuildLayers(target, &target_sim_refs));
  }
  const MeasuredModuleTimes module_times(profile, measured_sim, target_sim, set, report.warnings);
  report.module_terms = module_times.rows();

  // The target's layer ops and layer collectives, with their sources.
  const BackendRefs profiled{.gemm = *set.gemm,
                             .attention = *set.attention,
                             .memory = *set.memory,
                             .collective = *set.collective};
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<LayerOps> layers,
                             BuildLayers(target, &profiled, &module_times));
  LayerSources sources;
  for (const LayerOps& layer : layers) {
    for (const ModuleProfile& m : layer.layer.modules) {
      for (const Op& op : m.ops) {
        PROJECTOR_RETURN_IF_ERROR(AddOpRow(set, module_times, layer, op, sources, report));
      }
    }
    if (!layer.composed) continue;
    for (const Op& op : layer.composed->comm_ops) {
      PROJECTOR_RETURN_IF_ERROR(AddOpRow(set, module_times, layer, op, sources, report));
    }
  }

  // The projection from the measured side, recording what the step composer asks for.
  RecordingCollectiveBackend recording_collective(*set.collective);
  RecordingMemoryBackend recording_memory(*set.memory);
  const BackendRefs recorded{.gemm = *set.gemm,
                             .attention = *set.attention,
                             .memory = recording_memory,
                             .collective = recording_collective};
  PROJECTOR_ASSIGN_OR_RETURN(report.projection,
                             Project(target, recorded, ProjectionOptions{.adjuster = &module_times}));
  PROJECTOR_RETURN_IF_ERROR(AttributeStepTerms(target, set, sources, recording_collective.Seen(),
                                               recording_memory.Seen(), report));
  if (report.measured_ops + report.scaled_ops == 0) {
    report.warnings.push_back(
        "no op of the target matched the profile: the projection is fully simulated");
  }
  if (both) {
    PROJECTOR_RETURN_IF_ERROR(CompareWithSimulation(target, profile, set, measured_sim, report));
  }
  return report;
}

namespace {

bool SameRequest(const ProfiledOp& a, const ProfiledOp& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case ProfiledOpKind::kGemm:
      return a.gemm == b.gemm;
    case ProfiledOpKind::kAttention:
      return a.pass == b.pass && a.attention == b.attention;
    case ProfiledOpKind::kMemory:
      return a.memory == b.memory;
    case ProfiledOpKind::kCollective:
      return a.collective == b.collective;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<ProfiledOp>> DistinctMeasureRequests(const Scenario& scenario) {
  PROJECTOR_ASSIGN_OR_RETURN(OpList ops, ScenarioComputeOps(scenario));
  std::vector<ProfiledOp> requests;
  for (const Op& op : ops) {
    ProfiledOp r = ToProfiledOp(op);
    bool seen = false;
    for (const ProfiledOp& q : requests) seen = seen || SameRequest(q, r);
    if (!seen) requests.push_back(std::move(r));
  }
  return requests;
}

}  // namespace projector
