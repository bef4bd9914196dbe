#include "projection/projection.h"

#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/backend_registry.h"
#include "core/status_macros.h"
#include "profilers/module_profilers.h"
#include "scenario/training_defaults.h"

namespace projector {
namespace {

// A layer kind's times per micro-batch, without its per-module times (Project adds them when it
// projects to the end).
LayerKindTimes KindTimes(const ComposedLayer& layer, int64_t count, Recompute recompute) {
  LayerKindTimes k;
  k.is_moe = layer.is_moe;
  k.count = count;
  k.forward = layer.Forward();
  k.backward = layer.Backward();
  k.recompute = layer.Recompute();
  switch (recompute) {
    case Recompute::kNone:
      k.activation_bytes = layer.activation_bytes;
      break;
    case Recompute::kSelective:
      k.activation_bytes = layer.activation_bytes_selective;
      break;
    case Recompute::kFull:
      k.activation_bytes = layer.input_bytes;
      break;
  }
  return k;
}

OpTable MakeOpTable(std::string group, int64_t count, const std::vector<ModuleProfile>& modules,
                    const OpList& comm_ops) {
  OpTable t{.group = std::move(group), .count = count, .ops = {}};
  for (const ModuleProfile& m : modules) t.ops.insert(t.ops.end(), m.ops.begin(), m.ops.end());
  t.ops.insert(t.ops.end(), comm_ops.begin(), comm_ops.end());
  return t;
}

// A timed layer composed, with the adjuster's module and layer times when there is one.
absl::StatusOr<ComposedLayer> AdjustedCompose(std::string_view kind, LayerProfile& layer,
                                              const LayerCompositionContext& lctx,
                                              const BackendRefs& backends,
                                              const ProjectionOptions& options) {
  if (options.adjuster == nullptr) return ComposeLayer(layer, lctx, backends.collective);
  for (ModuleProfile& m : layer.modules) options.adjuster->AdjustModule(kind, m);
  PROJECTOR_ASSIGN_OR_RETURN(
      ComposedLayer composed,
      ComposeLayer(layer, lctx, options.adjuster->LayerCollective(kind, backends.collective)));
  options.adjuster->AdjustComposedLayer(kind, composed);
  return composed;
}

ModuleTimes EndTimes(std::string_view name, const ComposedEndModule& m) {
  return {
      .module = name, .forward = m.Forward(), .backward = m.Backward(), .recompute = Seconds(0)};
}

}  // namespace

Flops ModelFlopsPerStep(const ModelSpec& model, const TrainingConfig& training) {
  const double tokens =
      static_cast<double>(training.global_batch) * static_cast<double>(training.seq_len);
  double matmul_params = model.ActiveParameters();
  // With an expert capacity below the balanced share, each expert takes `capacity_factor` of
  // its share and drops the rest (their expert GEMMs never run; balanced routing): count the
  // routed experts' work that runs, so that MFU stays a share of the peak.
  const double capacity = training.moe_capacity_factor;
  if (capacity > 0 && capacity < 1)
    matmul_params -= (1.0 - capacity) * model.RoutedActiveParameters();
  // The input embedding is a table lookup; with tied weights the one table is the output GEMM.
  if (!model.tied_embeddings) {
    matmul_params -= static_cast<double>(model.vocab_size) * static_cast<double>(model.hidden_size);
  }
  // A masked-LM head computes logits for its share of the positions only.
  matmul_params -= (1.0 - model.output_positions_fraction) * static_cast<double>(model.vocab_size) *
                   static_cast<double>(model.hidden_size);
  // Multi-token prediction: each module's own weights and one more pass of the output head.
  const double mtp = static_cast<double>(model.mtp_layers);
  matmul_params +=
      model.MtpParameters(/*active_only=*/true) +
      mtp * static_cast<double>(model.vocab_size) * static_cast<double>(model.hidden_size);
  // Attention scores and values per token per layer, forward: 2·s·H·d_qk + 2·s·H·d_v; ×3 for
  // forward + backward; non-causal (PaLM appendix B).
  const double attention = 6.0 * (static_cast<double>(model.num_layers) + mtp) *
                           static_cast<double>(training.seq_len) *
                           static_cast<double>(model.num_attention_heads) *
                           static_cast<double>(model.QkHeadDim() + model.VHeadDim());
  return Flops(tokens * (6.0 * matmul_params + attention));
}

void ComputeByClass::Add(const Op& op, double times) {
  KernelClassTotals* into = nullptr;
  switch (op.kind) {
    case OpKind::kGemm:
      into = &gemm;
      break;
    case OpKind::kAttention:
      into = &attention;
      break;
    case OpKind::kMemory:
      into = &memory_bound;
      break;
    case OpKind::kCollective:
      return;
  }
  into->time += op.time * times;
  into->flops += op.flops * times;
  into->bytes += op.bytes * times;
}

namespace {

// Adds the per-micro-batch ops of `module` (once-per-step ops left out), `times` over.
void AddToClasses(const ModuleProfile& module, double times, ComputeByClass& into) {
  for (const Op& op : module.ops) {
    if (op.phase != OpPhase::kOncePerStep) into.Add(op, times);
  }
}

// Each distinct layer kind of the model (dense, MoE), profiled, timed and composed once, not
// once per layer; with keep_ops, their op tables.
absl::Status ComposeLayerKinds(const Scenario& scenario, const BackendRefs& backends,
                               const ProjectionOptions& options,
                               const LayerCompositionContext& lctx, const RunChoices& run,
                               ComposedModel& kinds) {
  const TrainingConfig& tr = scenario.training;
  ProfileContext ctx{.model = scenario.model,
                     .parallel = scenario.parallel,
                     .training = tr,
                     .recompute = tr.recompute,
                     .run = run};
  kinds.moe_layers = scenario.model.NumMoeLayers();
  kinds.dense_layers = scenario.model.num_layers - kinds.moe_layers;
  std::optional<ModuleProfile> attention;  // timed; the same in both layer kinds
  for (const bool is_moe : {false, true}) {
    const int64_t count = is_moe ? kinds.moe_layers : kinds.dense_layers;
    if (count <= 0) continue;
    std::optional<ComposedLayer>& kind = is_moe ? kinds.moe : kinds.dense;
    PROJECTOR_ASSIGN_OR_RETURN(LayerProfile lp,
                               ProfileLayer(ctx, is_moe, attention ? &*attention : nullptr));
    PROJECTOR_RETURN_IF_ERROR(TimeLayer(backends, lp));
    if (!attention) attention = lp.modules.front();
    PROJECTOR_ASSIGN_OR_RETURN(
        kind, AdjustedCompose(is_moe ? "moe" : "dense", lp, lctx, backends, options));
    // The MTP modules are layers of the last layer's kind.
    const bool mtp_kind = scenario.model.mtp_layers > 0 && scenario.model.MtpIsMoe() == is_moe;
    for (const ModuleProfile& m : lp.modules) {
      AddToClasses(m, static_cast<double>(count + (mtp_kind ? scenario.model.mtp_layers : 0)),
                   kinds.compute_by_class);
    }
    if (options.keep_ops) {
      kinds.op_tables.push_back(
          MakeOpTable(is_moe ? "moe layer" : "dense layer", count, lp.modules, kind->comm_ops));
    }
  }
  return absl::OkStatus();
}

// The embedding and the output layer, and the output head of the MTP modules when it differs.
absl::Status ComposeEnds(const Scenario& scenario, const BackendRefs& backends,
                         const ProjectionOptions& options, const LayerCompositionContext& lctx,
                         const RunChoices& run, ComposedModel& ends) {
  const TrainingConfig& tr = scenario.training;
  ProfileContext end_ctx{.model = scenario.model,
                         .parallel = scenario.parallel,
                         .training = tr,
                         .recompute = Recompute::kNone,
                         .run = run};
  PROJECTOR_ASSIGN_OR_RETURN(ModuleProfile emb, ProfileEmbedding(end_ctx));
  PROJECTOR_RETURN_IF_ERROR(TimeOps(backends, emb.ops));
  PROJECTOR_ASSIGN_OR_RETURN(ModuleProfile outl, ProfileOutputLayer(end_ctx));
  PROJECTOR_RETURN_IF_ERROR(TimeOps(backends, outl.ops));
  if (options.adjuster != nullptr) {
    options.adjuster->AdjustModule("embedding", emb);
    options.adjuster->AdjustModule("output", outl);
  }
  // The output head runs once more per MTP module (their own head below, when it differs).
  const double mtp = static_cast<double>(scenario.model.mtp_layers);
  const bool own_mtp_head = scenario.model.mtp_layers > 0 && run.train_metric_passes > 0;
  AddToClasses(emb, 1.0, ends.compute_by_class);
  AddToClasses(outl, own_mtp_head ? 1.0 : 1.0 + mtp, ends.compute_by_class);
  PROJECTOR_ASSIGN_OR_RETURN(ends.embedding,
                             ComposeEndModule(emb, /*is_output=*/false, lctx, backends.collective));
  PROJECTOR_ASSIGN_OR_RETURN(ends.output,
                             ComposeEndModule(outl, /*is_output=*/true, lctx, backends.collective));
  if (options.keep_ops) {
    ends.op_tables.push_back(MakeOpTable("embedding", 1, {emb}, {}));
    ends.op_tables.push_back(MakeOpTable("output", 1, {outl}, {}));
  }
  // An MTP module's pass of the output head runs without the training metrics
  // (OutputHead::kMtp); it differs from the main head only when there are metric passes.
  if (own_mtp_head) {
    PROJECTOR_ASSIGN_OR_RETURN(ModuleProfile head, ProfileOutputLayer(end_ctx, OutputHead::kMtp));
    PROJECTOR_RETURN_IF_ERROR(TimeOps(backends, head.ops));
    if (options.adjuster != nullptr) options.adjuster->AdjustModule("output", head);
    AddToClasses(head, mtp, ends.compute_by_class);
    PROJECTOR_ASSIGN_OR_RETURN(
        ends.mtp_output, ComposeEndModule(head, /*is_output=*/true, lctx, backends.collective));
  }
  return absl::OkStatus();
}

// Step time, tokens/s, model TFLOP/s, MFU and the clock-scaled share of a composed step.
absl::Status SetThroughput(const Scenario& scenario, const StepResult& step, Projection& p) {
  const TrainingConfig& tr = scenario.training;
  p.step_time = step.step_time;
  p.breakdown = step.breakdown;
  const double tokens = static_cast<double>(tr.global_batch) * static_cast<double>(tr.seq_len);
  const double step_s = p.step_time.value();
  if (step_s <= 0) {
    return absl::InternalError("projection: non-positive step time");
  }
  p.tokens_per_s = tokens / step_s;
  p.tokens_per_s_per_gpu = p.tokens_per_s / static_cast<double>(scenario.num_gpus);
  p.model_flops_per_step = ModelFlopsPerStep(scenario.model, tr);
  p.tflops_per_gpu =
      p.model_flops_per_step.value() / step_s / static_cast<double>(scenario.num_gpus) * 1e-12;
  p.peak_flops_per_gpu = scenario.hw.gpu.MatrixPeak(tr.precision, scenario.hw.gpu.peak_clock);
  if (p.peak_flops_per_gpu.value() > 0) {
    p.mfu = p.tflops_per_gpu * 1e12 / p.peak_flops_per_gpu.value();
  }
  p.clock_scaled_share = step.clock_scaled.value() / step_s;
  return absl::OkStatus();
}

// Switches that were set but have nothing to act on, said rather than silently ignored.
void NoteInertSwitches(const Scenario& scenario, Projection& p) {
  const ParallelConfig& par = scenario.parallel;
  if (par.sequence_parallel && par.tp == 1) {
    p.defaults_used.push_back(
        "sequence_parallel=true has no effect with tp 1 (no TP group to "
        "shard the sequence over)");
  }
  if (par.deepep && !scenario.model.moe) {
    p.defaults_used.push_back("deepep=true has no effect: the model has no experts");
  }
  if (scenario.training.moe_a2a_overlap && (!scenario.model.moe || par.ep == 1)) {
    p.defaults_used.push_back(scenario.model.moe
                                  ? "moe_a2a_overlap=true has no effect with ep 1 (no All-to-All)"
                                  : "moe_a2a_overlap=true has no effect: the model has no experts");
  }
  if (scenario.training.moe_dispatch_fp8 &&
      (!par.deepep || par.ep == 1 || scenario.training.precision != DType::kFp8)) {
    p.defaults_used.push_back(
        "moe_dispatch_fp8=true has no effect: FP8 dispatch is DeepEP's (deepep with ep > 1) under "
        "precision fp8");
  }
  if (scenario.training.moe_shared_expert_overlap &&
      (!scenario.model.moe || scenario.model.moe->num_shared_experts == 0 || par.ep == 1)) {
    p.defaults_used.push_back(
        !scenario.model.moe || scenario.model.moe->num_shared_experts == 0
            ? "moe_shared_expert_overlap=true has no effect: the model has no shared experts"
            : "moe_shared_expert_overlap=true has no effect with ep 1 (no All-to-All)");
  }
  if (!par.turbo_grouped_gemm && !scenario.model.moe) {
    p.defaults_used.push_back("moe_grouped_gemm=legacy has no effect: the model has no experts");
  }
  if (!scenario.training.tp_comm_overlap && par.tp > 1) {
    p.defaults_used.push_back(
        "tp_comm_overlap=false (Megatron default: TP collectives exposed, backward ones async "
        "under the weight-gradient GEMM; --tp-comm-overlap overlaps them with their GEMMs)");
  }
  if (scenario.training.recompute == Recompute::kSelective &&
      ResolvedStack(scenario.training, par) == TrainingStack::kTorchTitan) {
    p.defaults_used.push_back(
        "recompute selective = torchtitan's per-op SAC (selective_ac_option op): the outputs of "
        "mm and SDPA are kept except every second mm, so the backward re-runs every second mm "
        "and every elementwise op of a block, not the attention kernel");
  }
}

}  // namespace

namespace {

// The layout's process groups a call's group is ("TP", "DP/EP"); empty when it is none of them
// (a call of another layout priced on the same backend). Point-to-point pairs take the name of
// the group whose stride they cross.
std::string GroupNames(const ParallelConfig& p, const CollectiveOp& op) {
  const std::pair<const char*, ProcessGroup> groups[] = {
      {"TP", p.TpGroup()},      {"CP", p.CpGroup()}, {"DP", p.DpGroup()},
      {"DP·CP", p.DpCpGroup()}, {"EP", p.EpGroup()}, {"PP", p.PpGroup()}};
  std::string names;
  for (const auto& [name, group] : groups) {
    if (group.size < 2 || (std::string_view(name) == "DP·CP" && p.cp == 1)) continue;
    const bool same =
        op.kind == CollectiveKind::kSendRecv ? op.group.stride == group.stride : op.group == group;
    if (same) names += (names.empty() ? "" : "/") + std::string(name);
  }
  return names;
}

// Per group and collective kind, the largest call (decisions come largest first).
std::vector<NetworkGroupUse> NetworkUses(const ParallelConfig& p,
                                         const std::vector<CollectiveDecision>& decisions) {
  std::vector<NetworkGroupUse> uses;
  for (const CollectiveDecision& d : decisions) {
    std::string names = GroupNames(p, d.op);
    if (names.empty()) continue;
    const bool seen = std::any_of(uses.begin(), uses.end(), [&](const NetworkGroupUse& u) {
      return u.group == names && u.op.kind == d.op.kind;
    });
    if (seen) continue;
    uses.push_back({.group = std::move(names),
                    .op = d.op,
                    .algorithm = d.algorithm,
                    .placement = d.placement,
                    .time = d.time});
  }
  return uses;
}

// What the layer composer needs of a scenario beyond the layers it composes.
LayerCompositionContext CompositionContext(const Scenario& scenario) {
  const ParallelConfig& par = scenario.parallel;
  const TrainingConfig& tr = scenario.training;
  return {.model = scenario.model,
          .parallel = par,
          .training = tr,
          .recompute = tr.recompute,
          .tp_comm_overlap = tr.tp_comm_overlap,
          .interference = MakeCommInterferenceModel(scenario.hw),
          .weight_grad_deferred = par.pipeline_schedule == PipelineSchedule::kZeroBubbleH1,
          .host = {.per_dispatch = scenario.hw.gpu.host_op_dispatch, .cuda_graphs = tr.cuda_graphs},
          .run = ResolveRunChoices(scenario.model, par, tr, scenario.hw.gpu.arch)};
}

}  // namespace

CompositionKey CompositionKeyOf(const Scenario& scenario) {
  const ParallelConfig& p = scenario.parallel;
  const TrainingConfig& t = scenario.training;
  CompositionKey k;
  k.tp = p.tp;
  k.cp = p.cp;
  k.ep = p.ep;
  k.etp = p.etp;
  k.sequence_parallel = p.sequence_parallel;
  k.fsdp = p.fsdp;
  k.turbo_grouped_gemm = p.turbo_grouped_gemm;
  k.deepep = p.deepep;
  k.moe_a2a_overlap = t.moe_a2a_overlap;
  k.moe_dispatch_fp8 = t.moe_dispatch_fp8;
  k.moe_shared_expert_overlap = t.moe_shared_expert_overlap;
  k.pipelined = p.pp > 1;
  k.zero_bubble = p.pipeline_schedule == PipelineSchedule::kZeroBubbleH1;
  k.stack = ResolvedStack(t, p);
  k.micro_batch = t.micro_batch;
  k.recompute = t.recompute;
  k.recompute_layers = t.recompute_layers;
  k.recompute_modules = t.recompute_modules;
  k.moe_imbalance = t.moe_imbalance;
  return k;
}

absl::StatusOr<ComposedModel> ComposeModel(const Scenario& scenario, const BackendRefs& backends,
                                           const ProjectionOptions& options) {
  const LayerCompositionContext lctx = CompositionContext(scenario);
  const RunChoices& run = lctx.run;
  ComposedModel composed;
  PROJECTOR_RETURN_IF_ERROR(ComposeLayerKinds(scenario, backends, options, lctx, run, composed));
  PROJECTOR_RETURN_IF_ERROR(ComposeEnds(scenario, backends, options, lctx, run, composed));
  return composed;
}

absl::StatusOr<Projection> Project(const Scenario& scenario, const BackendRefs& backends,
                                   const ComposedModel& composed,
                                   const ProjectionOptions& options) {
  const ParallelConfig& par = scenario.parallel;
  const TrainingConfig& tr = scenario.training;
  const LayerCompositionContext lctx = CompositionContext(scenario);
  const RunChoices& run = lctx.run;
  StepInputs in{.model = scenario.model,
                .parallel = par,
                .training = tr,
                .dense = composed.dense ? &*composed.dense : nullptr,
                .moe = composed.moe ? &*composed.moe : nullptr,
                .embedding = composed.embedding,
                .output = composed.output,
                .mtp_output = composed.mtp_output,
                .hbm_capacity = scenario.hw.gpu.hbm_capacity,
                .interference = lctx.interference,
                .run = run,
                .abandon_at = options.abandon_at,
                .abandon_above_memory = options.abandon_above_memory};
  std::vector<TimelineEvent> timeline;
  std::vector<RankTailParts> rank_tails;
  std::vector<ChunkComm> chunk_comm;
  std::vector<std::vector<FsdpUnitTraffic>> chunk_fsdp;
  if (options.keep_timeline) {
    in.timeline = &timeline;
    in.rank_tails = &rank_tails;
    in.chunk_comm = &chunk_comm;
    in.chunk_fsdp = &chunk_fsdp;
  }
  PROJECTOR_ASSIGN_OR_RETURN(StepResult step, ComposeStep(in, backends));

  Projection p;
  p.micro_batches = step.micro_batches;
  if (composed.dense) {
    p.layer_kinds.push_back(KindTimes(*composed.dense, composed.dense_layers, tr.recompute));
  }
  if (composed.moe) {
    p.layer_kinds.push_back(KindTimes(*composed.moe, composed.moe_layers, tr.recompute));
  }
  p.compute_by_class = composed.compute_by_class;
  p.embedding = EndTimes("embedding", in.embedding);
  p.output_layer = EndTimes("output", in.output);
  p.step_lower_bound = step.lower_bound;
  if (step.abandoned) {
    p.abandoned = true;
    p.peak_memory_per_gpu = step.memory.peak;
    p.split_peak_lower_bound = step.split_peak_lower_bound;
    return p;
  }
  if (step.over_memory_limit) {
    p.over_memory_limit = true;
    p.memory = std::move(step.memory);
    p.peak_memory_per_gpu = p.memory.peak;
    p.split_peak_lower_bound = step.split_peak_lower_bound;
    p.fits_in_memory = p.memory.fits;
    return p;
  }
  for (LayerKindTimes& kind : p.layer_kinds) {
    kind.modules = (kind.is_moe ? composed.moe : composed.dense)->modules;
  }
  p.scenario_name = scenario.name;
  p.layout = LayoutSummary(par);
  // How the EP All-to-All runs, where there is one.
  if (par.ep > 1 && par.deepep) p.layout += " DeepEP";
  if (par.ep > 1 && tr.moe_a2a_overlap) p.layout += " A2A-overlap";
  if (par.ep > 1 && tr.moe_shared_expert_overlap && !tr.moe_a2a_overlap) {
    p.layout += " shared-overlap";
  }
  p.num_gpus = scenario.num_gpus;
  p.schedule = par.vpp > 1 ? "interleaved" : PipelineScheduleName(par.pipeline_schedule);
  PROJECTOR_RETURN_IF_ERROR(SetThroughput(scenario, step, p));
  p.memory = std::move(step.memory);
  p.peak_memory_per_gpu = p.memory.peak;
  p.split_peak_lower_bound = step.split_peak_lower_bound;
  p.fits_in_memory = p.memory.fits;
  p.measured_tokens_per_s_per_gpu = scenario.measured_tokens_per_s_per_gpu;
  if (p.measured_tokens_per_s_per_gpu.has_value() && *p.measured_tokens_per_s_per_gpu > 0) {
    p.error_pct = (p.tokens_per_s_per_gpu - *p.measured_tokens_per_s_per_gpu) /
                  *p.measured_tokens_per_s_per_gpu * 100.0;
  }
  p.defaults_used = scenario.defaults_used;
  if (scenario.backends.network) {
    p.network = scenario.backends.network->name;
    p.network_file = scenario.backends.network->source_file;
    for (const NetworkDimension& dim : scenario.backends.network->dimensions) {
      p.network_dimensions.push_back(
          absl::StrCat(std::string(TopologyName(dim.topology)), " of ", dim.npus,
                       dim.label.empty() ? "" : absl::StrCat(" (", dim.label, ")")));
    }
    p.network_uses = NetworkUses(scenario.parallel, backends.collective.Decisions());
  }
  p.op_tables = composed.op_tables;
  p.timeline = std::move(timeline);
  p.rank_tails = std::move(rank_tails);
  p.chunk_comm = std::move(chunk_comm);
  p.chunk_fsdp = std::move(chunk_fsdp);
  if (options.keep_timeline && options.keep_pass_plans) {
    p.chunk_plans = PlanChunks(in, step.chunks);
  }
  p.pipeline_time = step.pipeline_time;
  p.critical_rank = step.critical_rank;
  p.p2p_transfer = step.p2p_transfer;
  p.p2p_overlapped = step.p2p_overlapped;
  NoteInertSwitches(scenario, p);
  return p;
}

absl::StatusOr<Projection> Project(const Scenario& scenario, const BackendRefs& backends,
                                   const ProjectionOptions& options) {
  PROJECTOR_ASSIGN_OR_RETURN(const ComposedModel composed,
                             ComposeModel(scenario, backends, options));
  return Project(scenario, backends, composed, options);
}

absl::StatusOr<Projection> Project(const Scenario& scenario, const ProjectionOptions& options) {
  PROJECTOR_ASSIGN_OR_RETURN(BackendSet set, MakeBackendSet(scenario.backends, scenario.hw));
  return Project(scenario, RefsOf(set), options);
}

BackendRefs RefsOf(const BackendSet& set) {
  return BackendRefs{.gemm = *set.gemm,
                     .attention = *set.attention,
                     .memory = *set.memory,
                     .collective = *set.collective};
}

double ReplayedPasses(const Scenario& scenario) {
  const ParallelConfig& p = scenario.parallel;
  const double micro_batches = static_cast<double>(scenario.training.global_batch) /
                               static_cast<double>(scenario.training.micro_batch * p.dp);
  return static_cast<double>(p.pp * p.vpp) * micro_batches *
         (p.pipeline_schedule == PipelineSchedule::kZeroBubbleH1 ? 3.0 : 2.0);
}

}  // namespace projector
