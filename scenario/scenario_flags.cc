#include "scenario/scenario_flags.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "hw_profiles/hw_overlay.h"
#include "hw_profiles/hw_settings.h"
#include "scenario/network_flags.h"
#include "scenario/training_defaults.h"

namespace projector {

namespace {

constexpr FlagSpec kJobFlags[] = {
    {"scenario", "Scenario JSON file (flags override it)", "FILE"},
    {"case", "One case of a calibration JSONL file", "FILE:ID"},
    {"model", "Model library name or JSON file (see --list-models)", "NAME|FILE"},
    {"gpu-arch", "GPU hardware profile name or JSON file (see --list-gpus)", "NAME|FILE"},
    {"num-gpus", "Number of GPUs in the job", "N"},
    {"gpus-per-node", "GPUs per node (default: the hardware profile's)", "N"},
    {"gpu-clock-mhz", "Sustained GPU clock in MHz; a list (1300,1700,2100) runs a what-if sweep",
     "MHZ[,MHZ...]"},
    {"measured-tgs", "Measured tokens/s/GPU to compare the projection with", "TGS"},
};
constexpr FlagSpec kLayoutFlags[] = {
    {"tp", "Tensor parallel size", "N"},
    {"pp", "Pipeline parallel size", "N"},
    {"vpp", "Virtual pipeline stages per PP rank (interleaved 1F1B)", "N"},
    {"cp", "Context parallel size", "N"},
    {"ep", "Expert parallel size (borrowed from DP)", "N"},
    {"etp", "Tensor parallel size inside an expert", "N"},
    {"dp", "Data parallel size (default: num-gpus / (tp·pp·cp))", "N"},
    {"sequence-parallel", "Sequence parallelism with TP", "BOOL", FlagArity::kBool},
    {"fsdp", "Shard weights, grads and optimizer state over DP", "BOOL", FlagArity::kBool},
    {"distributed-optimizer", "Shard optimizer state over DP (ZeRO-1)", "BOOL", FlagArity::kBool},
    {"first-stage-layers", "Layers on the first pipeline stage (uneven split)", "N"},
    {"last-stage-layers", "Layers on the last pipeline stage (uneven split)", "N"},
    {"pipeline-schedule",
     "Pipeline schedule: 1f1b (default; interleaved with --vpp > 1) or zb-h1 (zero bubble: weight "
     "gradients deferred into the bubble, vpp 1)",
     "1f1b|zb-h1"},
    {"moe-grouped-gemm", "MoE expert GEMMs: turbo (one batched GEMM) or legacy (one per expert)",
     "turbo|legacy"},
    {"deepep",
     "MoE dispatch by DeepEP's kernels: a token sent once per node and fanned out over NVLink, "
     "in BF16 unless --moe-dispatch-fp8 (default false: NCCL All-to-All; a case takes it for "
     "dropless group routing across nodes on the megatron stack)",
     "BOOL", FlagArity::kBool},
};
constexpr FlagSpec kTrainingRunFlags[] = {
    {"seq-len", "Sequence length in tokens", "N"},
    {"micro-batch", "Sequences per micro-batch", "N"},
    {"global-batch", "Sequences per optimizer step", "N"},
    {"recompute", "Activation recomputation: none, selective or full", "MODE"},
    {"recompute-layers", "Layers per stage recomputed under full recompute (default: all)", "N"},
    {"overlap-grad-reduce", "Overlap the DP gradient reduction with backward (default true)",
     "BOOL", FlagArity::kBool},
    {"overlap-param-gather",
     "Overlap the distributed optimizer's parameter AllGather with forward (default true)", "BOOL",
     FlagArity::kBool},
};
constexpr FlagSpec kBackendFlags[] = {
    {"profiling-mode", "simulate, profile, both or measure", "MODE"},
    {"gemm-backend", "GEMM backend (see --list-backends)", "NAME"},
    {"attention-backend", "Attention backend", "NAME"},
    {"memory-backend", "Memory-bound kernel backend", "NAME"},
    {"collective-backend", "Collective backend", "NAME"},
};
constexpr FlagSpec kSearchJobFlags[] = {
    {"scenario",
     "Scenario JSON file: its model, GPU, job and run settings are the search's (flags override "
     "them); its layout is searched over",
     "FILE"},
    {"model", "Model library name or JSON file", "NAME|FILE"},
    {"gpu-arch", "GPU hardware profile name or JSON file", "NAME|FILE"},
    {"num-gpus", "GPUs in the job", "N"},
    {"gpus-per-node", "GPUs per node (default: the profile's)", "N"},
    {"seq-len", "Sequence length in tokens", "N"},
    {"global-batch", "Sequences per optimizer step", "N"},
    {"hw-overlay", "Hardware overlay from `project calibrate` applied to the GPU profile", "FILE"},
    {"gpu-clock-mhz", "Sustained GPU clock in MHz for every layout (one value)", "MHZ"},
};
constexpr FlagSpec kStackFlags[] = {
    {"loss-kernel",
     "Cross-entropy loss: auto (default: fused for FSDP-only layouts, else megatron), megatron "
     "(vocab-parallel, fp32 softmax kept), pytorch (eager F.cross_entropy under autocast: fp32 "
     "logits copy, log-softmax, NLL) or fused (one online-softmax kernel: flash-attn, Liger)",
     "auto|megatron|pytorch|fused"},
    {"stack",
     "Training stack whose choices the auto kernels take: auto (default: llm-foundry for FSDP-only "
     "layouts, else megatron), megatron (TE attention, Megatron's loss, Megatron-FSDP), "
     "llm-foundry (PyTorch SDPA, fused loss, Composer's 2 metric passes, FSDP1, eager elementwise "
     "unless --torch-compile) or torchtitan (PyTorch SDPA, eager fp32 loss, FSDP2, eager "
     "elementwise unless --torch-compile)",
     "auto|megatron|llm-foundry|torchtitan"},
    {"train-metric-passes",
     "Training metrics evaluated on the logits after every micro-batch's backward, one eager "
     "cross-entropy each: auto (default: 2 for FSDP-only layouts, Composer/llm-foundry's "
     "LanguageCrossEntropy and LanguagePerplexity; else 0) or a count",
     "auto|N"},
    {"torch-compile",
     "PyTorch-native stacks (llm-foundry, torchtitan): torch.compile fuses the elementwise chains "
     "(RMSNorm, RoPE, SwiGLU) into single kernels, as Megatron's fused kernels; default false: "
     "eager PyTorch, one kernel per op",
     "BOOL", FlagArity::kBool},
    {"fsdp-impl",
     "How --fsdp shards: auto (default: the stack's: fsdp1 for llm-foundry, fsdp2 for torchtitan, "
     "megatron-fsdp for megatron), megatron-fsdp (persistent buffers, no copies), fsdp1 (PyTorch "
     "FlatParameter FSDP) or fsdp2 (PyTorch per-parameter FSDP, also Megatron-LM "
     "--use-torch-fsdp2)",
     "auto|megatron-fsdp|fsdp1|fsdp2"},
    {"hidden-dropout",
     "Dropout probability after the embedding and on each residual branch: auto (default: 0.1, "
     "Megatron-LM's default, for a GELU/LayerNorm GPT model on the megatron stack; else 0) or a "
     "number in [0, 1); > 0 adds the mask kernels and their 1-byte masks",
     "auto|P"},
    {"attention-dropout",
     "Dropout probability on the attention probabilities: auto (default: as --hidden-dropout) or a "
     "number in [0, 1); > 0 adds the dropout kernel and its masks to the unfused attention (flash "
     "kernels draw it inside, not timed)",
     "auto|P"},
};
constexpr FlagSpec kKernelAndCommFlags[] = {
    {"network",
     "Network file (the tool's JSON/YAML, docs/network.md, or ASTRA-sim's network.yml) with one "
     "NPU per GPU: collectives are priced on its topology, rank r on NPU r, instead of the GPU "
     "profile's two-level network",
     "FILE"},
    {"attention-kernel",
     "Attention core: auto (default: PyTorch SDPA's kernel for FSDP layouts, else the GPU "
     "profile's default), flash (the profile's default fused kernel), a kernel the profile names "
     "(fa2, fa3, ...), or unfused (QKᵀ and P·V GEMMs with the softmax over scores in HBM, as "
     "Megatron-LM before FlashAttention)",
     "NAME"},
    {"tp-comm-overlap",
     "Overlap TP collectives with their GEMMs (Megatron --tp-comm-overlap, TE userbuffers; default "
     "false)",
     "BOOL", FlagArity::kBool},
    {"moe-a2a-overlap",
     "Overlap the EP All-to-All of one micro-batch with another's MoE compute (Megatron "
     "--overlap-moe-expert-parallel-comm, DeepSeek's DualPipe; default false)",
     "BOOL", FlagArity::kBool},
    {"moe-dispatch-fp8",
     "DeepEP's dispatch in FP8 under FP8 training, as DeepSeek-V3 trained (with --deepep and "
     "--precision fp8; default false: BF16, as Megatron-Core's DeepEP path sends)",
     "BOOL", FlagArity::kBool},
    {"moe-shared-expert-overlap",
     "Run the shared experts beside the EP All-to-All in forward, fc1 beside the dispatch and "
     "fc2 beside the combine (Megatron-Core --moe-shared-expert-overlap; alltoall dispatcher "
     "only, not with --deepep; default false)",
     "BOOL", FlagArity::kBool},
    {"cuda-graphs",
     "Run the step as captured CUDA graphs (Megatron --cuda-graph-impl local, full_iteration): "
     "no per-op host cost; a dropless MoE cannot be captured (default false)",
     "BOOL", FlagArity::kBool},
    {"tf-amp",
     "Mixed precision as TensorFlow's AMP graph rewrite runs it: fp32 variables cast to fp16 at "
     "every use, GEMMs in fp16, norms, softmax, activations, dropouts and residual adds in fp32 "
     "(default false)",
     "BOOL", FlagArity::kBool},
    {"grad-reduce-dtype",
     "Gradient reduction and main-grad buffer dtype: fp32 (default, Megatron under bf16) or bf16 "
     "(Megatron --grad-reduce-in-bf16, FSDP reduce_dtype bf16)",
     "fp32|bf16"},
};
constexpr FlagSpec kPrecisionAndRoutingFlags[] = {
    {"recompute-modules",
     "Under selective recompute on the megatron stack, Megatron-Core's modules to re-run, "
     "comma-separated: core_attn, mla_up_proj, layernorm, moe_act, mlp, shared_experts, moe "
     "(default core_attn)",
     "LIST"},
    {"precision", "GEMM precision: bf16, fp16 or fp8", "DTYPE"},
    {"fp8-recipe",
     "FP8 scaling: auto (default: the stack's on this GPU), delayed, tensorwise, blockwise, "
     "mxfp8 (Blackwell, MI355X) or rowwise",
     "RECIPE"},
    {"moe-capacity-factor",
     "MoE: each expert takes at most X times its balanced share of tokens and drops the rest "
     "(Megatron --moe-expert-capacity-factor; default 0 = dropless)",
     "X"},
    {"moe-permute-fusion",
     "MoE token permutation: true (Transformer Engine's fused kernels, Megatron-Core "
     "--moe-permute-fusion), false (PyTorch index_select and atomic scatter_add_) or auto "
     "(default: the stack's; unfused on torchtitan)",
     "auto|true|false"},
    {"moe-router-padding",
     "MoE under fp8 on the megatron stack: true (the router rounds every expert's token count "
     "up to the quantisation alignment, Megatron-Core --moe-router-padding-for-fp8), false "
     "(Transformer Engine's Fp8Padding copies the rows into a padded buffer and back) or auto "
     "(default: true where the run dispatches with DeepEP)",
     "auto|true|false"},
    {"moe-pad-to-capacity",
     "MoE: pad every expert's input to the capacity (Megatron --moe-pad-expert-input-to-capacity)",
     "BOOL", FlagArity::kBool},
    {"moe-imbalance",
     "MoE what-if: tokens routed to the busiest EP rank over the balanced mean (default 1 = "
     "balanced; a search caps it at what each layout's EP allows)",
     "X"},
};

constexpr FlagSpec kHwSetFlag = {
    "hw-set",
    "Hardware what-if: a field of the GPU profile's JSON file set to a value, PATH=VALUE "
    "(scale_out.per_nic_bandwidth_gbps=200); repeat it or separate with commas",
    "PATH=VALUE", FlagArity::kRepeated};

}  // namespace

std::vector<FlagSpec> HardwareWhatIfFlags() {
  std::vector<FlagSpec> flags = {kHwSetFlag};
  for (const HwShorthand& h : HwShorthands()) {
    flags.push_back({absl::string_view(h.flag.data(), h.flag.size()),
                     absl::string_view(h.help.data(), h.help.size()), "X"});
  }
  return flags;
}

std::vector<FlagGroup> ScenarioFlagGroups() {
  std::vector<FlagSpec> run(std::begin(kTrainingRunFlags), std::end(kTrainingRunFlags));
  for (std::span<const FlagSpec> more :
       {PrecisionAndRoutingFlags(), KernelAndCommFlags(), StackFlags()}) {
    run.insert(run.end(), more.begin(), more.end());
  }
  return {{"Scenario", {std::begin(kJobFlags), std::end(kJobFlags)}},
          {"Hardware what-ifs", HardwareWhatIfFlags()},
          {"Parallel layout", {std::begin(kLayoutFlags), std::end(kLayoutFlags)}},
          {"Training run", std::move(run)},
          {"Backends", {std::begin(kBackendFlags), std::end(kBackendFlags)}}};
}

std::span<const FlagSpec> SearchJobFlags() { return kSearchJobFlags; }
std::span<const FlagSpec> StackFlags() { return kStackFlags; }
std::span<const FlagSpec> KernelAndCommFlags() { return kKernelAndCommFlags; }
std::span<const FlagSpec> PrecisionAndRoutingFlags() { return kPrecisionAndRoutingFlags; }

namespace {

// --train-metric-passes: auto or a count in [0, kMaxTrainMetricPasses].
absl::StatusOr<std::optional<int64_t>> TrainMetricPassesFlag(const FlagValues& flags) {
  if (!Given(flags, "train-metric-passes")) return std::nullopt;
  const std::string v = StringFlag(flags, "train-metric-passes");
  if (v == "auto") return kAutoTrainMetricPasses;
  int64_t n = 0;
  if (absl::SimpleAtoi(v, &n) && n >= 0 && n <= kMaxTrainMetricPasses) return n;
  return FlagError("train-metric-passes",
                   absl::StrFormat("'%s' is not a pass count; accepted: auto or an integer from 0 "
                                   "to %d",
                                   v, kMaxTrainMetricPasses));
}

// --hidden-dropout / --attention-dropout: kAutoDropout for "auto", else a probability in [0, 1).
absl::StatusOr<std::optional<double>> DropoutFlag(const FlagValues& flags, absl::string_view name) {
  if (!Given(flags, name)) return std::nullopt;
  const std::string v = StringFlag(flags, name);
  if (v == "auto") return kAutoDropout;
  absl::StatusOr<double> p = ParseNumber(v, name);
  if (p.ok() && *p >= 0 && *p < 1) return *p;
  return FlagError(name, absl::StrFormat("'%s' is not a dropout probability; accepted: auto or "
                                         "a number in [0, 1)",
                                         v));
}

// --precision: bf16, fp16 or fp8.
absl::Status ReadPrecision(const FlagValues& flags, TrainingConfig& training) {
  if (!Given(flags, "precision")) return absl::OkStatus();
  const std::string v = StringFlag(flags, "precision");
  if (v != "bf16" && v != "fp16" && v != "fp8") {
    return FlagError("precision",
                     absl::StrCat("unknown precision '", v, "'; accepted: bf16, fp16, fp8"));
  }
  training.precision = *ParseDType(v);
  return absl::OkStatus();
}

// The run settings `project` and `search` share: precision, kernels, communication, the stack
// and the MoE routing.
absl::Status ReadTrainingSettings(const FlagValues& flags, TrainingConfig& training) {
  PROJECTOR_RETURN_IF_ERROR(ReadPrecision(flags, training));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<Fp8Recipe> recipe,
                             ParsedFlag<Fp8Recipe>(flags, "fp8-recipe", &ParseFp8Recipe));
  if (recipe) training.fp8_recipe = *recipe;
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "tp-comm-overlap", training.tp_comm_overlap));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "moe-a2a-overlap", training.moe_a2a_overlap));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "moe-dispatch-fp8", training.moe_dispatch_fp8));
  PROJECTOR_RETURN_IF_ERROR(
      ReadBoolFlag(flags, "moe-shared-expert-overlap", training.moe_shared_expert_overlap));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "cuda-graphs", training.cuda_graphs));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "tf-amp", training.tf_amp));
  PROJECTOR_ASSIGN_OR_RETURN(
      std::optional<RecomputeModules> modules,
      ParsedFlag<RecomputeModules>(flags, "recompute-modules", &ParseRecomputeModules));
  if (modules) training.recompute_modules = *modules;
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<DType> grad_dtype,
                             ParsedFlag<DType>(flags, "grad-reduce-dtype", &ParseGradReduceDtype));
  if (grad_dtype) training.grad_reduce_dtype = *grad_dtype;
  if (Given(flags, "attention-kernel")) {
    absl::Status k = SetAttentionKernel(StringFlag(flags, "attention-kernel"), training);
    if (!k.ok()) return FlagError("attention-kernel", k.message());
  }
  PROJECTOR_ASSIGN_OR_RETURN(const TrainingOverrides stack, ReadStackFlags(flags));
  stack.ApplyTo(training);
  for (auto [name, target] :
       {std::pair<const char*, double*>{"moe-capacity-factor", &training.moe_capacity_factor},
        {"moe-imbalance", &training.moe_imbalance}}) {
    if (!Given(flags, name)) continue;
    PROJECTOR_ASSIGN_OR_RETURN(*target, NumberFlag(flags, name));
  }
  for (auto [name, target] : {std::pair<const char*, std::optional<bool>*>{
                                  "moe-permute-fusion", &training.moe_permute_fusion},
                              {"moe-router-padding", &training.moe_router_padding}}) {
    if (!Given(flags, name)) continue;
    const std::string v = StringFlag(flags, name);
    if (v != "auto" && v != "true" && v != "false") {
      return FlagError(name, absl::StrCat("unknown value '", v, "'; accepted: auto, true, false"));
    }
    *target = v == "auto" ? std::nullopt : std::optional<bool>(v == "true");
  }
  return ReadBoolFlag(flags, "moe-pad-to-capacity", training.moe_pad_to_capacity);
}

// The model and GPU: the flags' when given (required for a search base).
absl::Status ReadModelAndGpu(const FlagValues& flags, ScenarioUse use, Scenario& s) {
  const bool search = use == ScenarioUse::kSearchBase;
  if (search && !Given(flags, "model")) {
    return FlagError("model", "required; a library name (see project --list-models) or a file");
  }
  if (Given(flags, "model")) {
    absl::StatusOr<ModelSpec> model = ResolveModel(StringFlag(flags, "model"));
    if (!model.ok()) return FlagError("model", model.status().message());
    s.model = *std::move(model);
  }
  if (search && !Given(flags, "gpu-arch")) {
    return FlagError("gpu-arch", "required; a library name (see project --list-gpus) or a file");
  }
  if (Given(flags, "gpu-arch")) {
    absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(StringFlag(flags, "gpu-arch"));
    if (!hw.ok()) return FlagError("gpu-arch", hw.status().message());
    s.hw = *std::move(hw);
  }
  PROJECTOR_RETURN_IF_ERROR(ApplyHwWhatIfFlags(flags, s));
  PROJECTOR_RETURN_IF_ERROR(ApplyHwOverlayFlag(flags, s));
  PROJECTOR_ASSIGN_OR_RETURN(s.hw.gpus_per_node,
                             IntFlag(flags, "gpus-per-node", {}, s.hw.gpus_per_node));
  return absl::OkStatus();
}

// The scenario the flags start from: --scenario FILE, --case FILE:ID or the built-in default,
// whose values the command line left alone are noted in defaults_used.
absl::StatusOr<Scenario> StartingScenario(const FlagValues& flags) {
  if (Given(flags, "scenario") && Given(flags, "case")) {
    return absl::InvalidArgumentError("--scenario and --case are exclusive; give one of them");
  }
  if (Given(flags, "scenario")) return LoadScenarioFile(StringFlag(flags, "scenario"));
  if (Given(flags, "case")) return LoadCalibrationCase(StringFlag(flags, "case"));
  PROJECTOR_ASSIGN_OR_RETURN(Scenario s, DefaultScenario());
  const bool layout_given =
      Given(flags, "dp") || Given(flags, "tp") || Given(flags, "pp") || Given(flags, "cp");
  for (auto [flag, value] : {std::pair<const char*, std::string>{"model", s.model.name},
                             {"gpu-arch", s.hw.name},
                             {"num-gpus", absl::StrCat(s.num_gpus)},
                             {"seq-len", absl::StrCat(s.training.seq_len)},
                             {"micro-batch", absl::StrCat(s.training.micro_batch)},
                             {"global-batch", absl::StrCat(s.training.global_batch)}}) {
    if (Given(flags, flag) || (absl::string_view(flag) == "num-gpus" && layout_given)) continue;
    s.defaults_used.push_back(absl::StrCat(flag, "=", value, " (not given: the built-in default)"));
  }
  return s;
}

// --gpu-clock-mhz (one clock; a list is a sweep the caller runs) and --measured-tgs.
absl::Status ReadClockAndMeasurement(const FlagValues& flags, Scenario& s) {
  if (Given(flags, "gpu-clock-mhz")) {
    PROJECTOR_ASSIGN_OR_RETURN(std::vector<double> clocks, ClockListFlag(flags));
    if (clocks.size() == 1) s.hw.gpu.sustained_clock = Megahertz(clocks[0]);
  }
  if (Given(flags, "measured-tgs")) {
    PROJECTOR_ASSIGN_OR_RETURN(double v, NumberFlag(flags, "measured-tgs"));
    if (!(v > 0)) return FlagError("measured-tgs", absl::StrCat("must be > 0, got ", v));
    s.measured_tokens_per_s_per_gpu = v;
  }
  return absl::OkStatus();
}

// The layout and run-length flags; true when any of the integer ones was given (DP is then
// derived again).
absl::StatusOr<bool> ReadLayoutFlags(const FlagValues& flags, Scenario& s) {
  ParallelConfig& p = s.parallel;
  const std::pair<const char*, int64_t*> positive[] = {{"tp", &p.tp},
                                                       {"pp", &p.pp},
                                                       {"vpp", &p.vpp},
                                                       {"cp", &p.cp},
                                                       {"ep", &p.ep},
                                                       {"etp", &p.etp},
                                                       {"seq-len", &s.training.seq_len},
                                                       {"micro-batch", &s.training.micro_batch},
                                                       {"global-batch", &s.training.global_batch}};
  const std::pair<const char*, int64_t*> non_negative[] = {
      {"first-stage-layers", &p.first_stage_layers},
      {"last-stage-layers", &p.last_stage_layers},
      {"recompute-layers", &s.training.recompute_layers}};
  bool changed = false;
  auto read_ints = [&](std::span<const std::pair<const char*, int64_t*>> list,
                       IntRange range) -> absl::Status {
    for (auto [name, target] : list) {
      if (!Given(flags, name)) continue;
      PROJECTOR_ASSIGN_OR_RETURN(*target, IntFlag(flags, name, range));
      changed = true;
    }
    return absl::OkStatus();
  };
  PROJECTOR_RETURN_IF_ERROR(read_ints(positive, IntRange{}));
  PROJECTOR_RETURN_IF_ERROR(read_ints(non_negative, IntRange{.min = 0}));
  for (auto [name, target] :
       {std::pair<const char*, bool*>{"sequence-parallel", &p.sequence_parallel},
        {"fsdp", &p.fsdp},
        {"distributed-optimizer", &p.distributed_optimizer},
        {"deepep", &p.deepep},
        {"overlap-grad-reduce", &s.training.overlap_grad_reduce},
        {"overlap-param-gather", &s.training.overlap_param_gather}}) {
    PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, name, *target));
  }
  PROJECTOR_ASSIGN_OR_RETURN(
      std::optional<PipelineSchedule> schedule,
      ParsedFlag<PipelineSchedule>(flags, "pipeline-schedule", &ParsePipelineSchedule));
  if (schedule) p.pipeline_schedule = *schedule;
  if (Given(flags, "moe-grouped-gemm")) {
    const std::string v = StringFlag(flags, "moe-grouped-gemm");
    if (v != "turbo" && v != "legacy") {
      return FlagError("moe-grouped-gemm",
                       absl::StrCat("unknown mode '", v, "'; accepted: turbo, legacy"));
    }
    p.turbo_grouped_gemm = v == "turbo";
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<Recompute> recompute,
                             ParsedFlag<Recompute>(flags, "recompute", &ParseRecompute));
  if (recompute) s.training.recompute = *recompute;
  return changed;
}

void ReadBackendFlags(const FlagValues& flags, BackendSelection& backends) {
  for (auto [name, target] : {std::pair<const char*, std::string*>{"gemm-backend", &backends.gemm},
                              {"attention-backend", &backends.attention},
                              {"memory-backend", &backends.memory},
                              {"collective-backend", &backends.collective}}) {
    if (Given(flags, name)) *target = StringFlag(flags, name);
  }
}

// --network: the file's network for the collectives, one NPU per GPU of the run.
absl::Status ReadNetworkFlag(const FlagValues& flags, Scenario& s) {
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<NetworkSpec> network, NetworkFromFlags(flags));
  if (!network) return absl::OkStatus();
  if (Given(flags, "collective-backend")) {
    return FlagError("collective-backend",
                     "--network prices collectives on the network file; leave out one");
  }
  if (network->NpuCount() != s.num_gpus) {
    return FlagError("network", absl::StrCat("the network '", network->name, "' (",
                                             network->source_file, ") has ", network->NpuCount(),
                                             " NPUs but the run has ", s.num_gpus,
                                             " GPUs; give a network with one NPU per GPU"));
  }
  s.backends.network = std::make_shared<const NetworkSpec>(*std::move(network));
  return absl::OkStatus();
}

// --num-gpus and --dp: DP explicit, else derived from the GPU count and the other dimensions.
absl::Status ReadGpuCountAndDp(const FlagValues& flags, bool layout_changed, Scenario& s) {
  ParallelConfig& p = s.parallel;
  const bool num_gpus_given = Given(flags, "num-gpus");
  PROJECTOR_ASSIGN_OR_RETURN(s.num_gpus, IntFlag(flags, "num-gpus", {}, s.num_gpus));
  PROJECTOR_ASSIGN_OR_RETURN(p.dp, IntFlag(flags, "dp", {}, p.dp));
  for (bool with_dp : {false, true}) {
    if (with_dp && !Given(flags, "dp")) continue;
    if (const double product = LayoutProduct(p, with_dp); product > kMaxGpus) {
      return FlagError(with_dp ? "dp" : "tp",
                       absl::StrFormat("%s = %.0f GPUs is beyond any training run (at most %d)",
                                       with_dp ? "tp·pp·cp·dp" : "tp·pp·cp", product, kMaxGpus));
    }
  }
  const int64_t model_parallel = p.tp * p.pp * p.cp;
  if (Given(flags, "dp")) {
    if (!num_gpus_given) s.num_gpus = model_parallel * p.dp;
    return absl::OkStatus();
  }
  if (!num_gpus_given && !layout_changed) return absl::OkStatus();
  if (s.num_gpus % model_parallel != 0) {
    return FlagError(
        num_gpus_given ? "num-gpus" : "tp",
        absl::StrCat(s.num_gpus, " GPUs are not divisible by tp·pp·cp = ", model_parallel,
                     "; choose dimensions whose product divides the GPU count"));
  }
  p.dp = s.num_gpus / model_parallel;
  return absl::OkStatus();
}

// Without --precision (and without a file that states one), a GPU without bf16 tensor cores
// (Volta) trains in fp16, as its mixed-precision recipes do (AMP with loss scaling).
void DefaultPrecisionForGpu(const FlagValues& flags, bool from_file, Scenario& s) {
  if (from_file || Given(flags, "precision")) return;
  const auto& rate = s.hw.gpu.matrix_flops_per_clock_per_cu;
  if (s.training.precision != DType::kBf16 || rate[DTypeIndex(DType::kBf16)] > 0 ||
      rate[DTypeIndex(DType::kFp16)] <= 0) {
    return;
  }
  s.training.precision = DType::kFp16;
  s.defaults_used.push_back(absl::StrCat("precision=fp16 (auto: ", s.hw.name,
                                         " has no bf16 tensor cores; --precision to set)"));
}

// A case's DeepEP default (CaseDispatchesWithDeepEp) no longer holds once flags changed the
// layout or gave a capacity factor: back to NCCL All-to-All, the note gone.
void KeepCaseDispatcherDefaultCurrent(Scenario& s) {
  const bool defaulted = std::any_of(s.defaults_used.begin(), s.defaults_used.end(),
                                     [](const std::string& d) { return d.starts_with("deepep="); });
  if (defaulted && !CaseDispatchesWithDeepEp(s.model, s.parallel, s.training, s.hw.gpus_per_node)) {
    s.parallel.deepep = false;
    DropDefaultNote("deepep", s);
  }
}

absl::StatusOr<Scenario> ProjectionScenarioFromFlags(const FlagValues& flags) {
  PROJECTOR_ASSIGN_OR_RETURN(Scenario s, StartingScenario(flags));
  const bool from_file = Given(flags, "scenario") || Given(flags, "case");
  PROJECTOR_RETURN_IF_ERROR(ReadModelAndGpu(flags, ScenarioUse::kProjection, s));
  PROJECTOR_RETURN_IF_ERROR(ReadClockAndMeasurement(flags, s));
  PROJECTOR_ASSIGN_OR_RETURN(const bool layout_changed, ReadLayoutFlags(flags, s));
  PROJECTOR_RETURN_IF_ERROR(ReadTrainingSettings(flags, s.training));
  for (auto [flag, key] : {std::pair<const char*, const char*>{"overlap-grad-reduce",
                                                               "overlap_grad_reduce"},
                           {"distributed-optimizer", "distributed_optimizer"},
                           {"grad-reduce-dtype", "grad_reduce_dtype"},
                           {"tf-amp", "tf_amp"},
                           {"deepep", "deepep"},
                           {"fp8-recipe", "fp8_recipe"}}) {
    if (Given(flags, flag)) DropDefaultNote(key, s);
  }
  DefaultPrecisionForGpu(flags, from_file, s);
  ReadBackendFlags(flags, s.backends);
  PROJECTOR_RETURN_IF_ERROR(ReadGpuCountAndDp(flags, layout_changed, s));
  PROJECTOR_RETURN_IF_ERROR(ReadNetworkFlag(flags, s));
  if (!from_file) DefaultDistributedOptimizer(Given(flags, "distributed-optimizer"), s);
  KeepCaseDispatcherDefaultCurrent(s);
  // Flags may have changed the GPU, the layout or the kernel the file or case resolved.
  PROJECTOR_RETURN_IF_ERROR(ResolveKernels(s, "command line"));
  PROJECTOR_RETURN_IF_ERROR(ValidateScenario(s, "command line"));
  return s;
}

// The checks of training.moe_* that do not depend on the layout (a search caps the imbalance per
// layout).
absl::Status ValidateSearchRouting(const Scenario& s) {
  Scenario probe = s;
  probe.parallel.ep = 1;
  probe.training.moe_imbalance = 1.0;
  PROJECTOR_RETURN_IF_ERROR(ValidateMoeRouting(probe, "command line"));
  if (!(s.training.moe_imbalance >= 1.0) || !std::isfinite(s.training.moe_imbalance)) {
    return FlagError("moe-imbalance", absl::StrCat("must be a number >= 1 (1 = balanced), got ",
                                                   s.training.moe_imbalance));
  }
  if (s.training.moe_imbalance != 1.0 && !s.model.moe) {
    return FlagError("moe-imbalance", absl::StrCat(s.model.name, " has no experts; leave it out"));
  }
  return absl::OkStatus();
}

// The search's starting point: --scenario FILE (its layout reset to the search's start), or an
// empty scenario the flags fill.
absl::StatusOr<Scenario> SearchStart(const FlagValues& flags) {
  Scenario s;
  if (Given(flags, "scenario")) {
    PROJECTOR_ASSIGN_OR_RETURN(s, LoadScenarioFile(StringFlag(flags, "scenario")));
    s.scenario_file = StringFlag(flags, "scenario");
    s.defaults_used.clear();
    // The file's layout is one point of the space; the search starts from none.
    s.parallel = ParallelConfig{};
    s.training.recompute = Recompute::kNone;
    s.training.micro_batch = 1;
  }
  s.name = "search";
  return s;
}

// --gpu-clock-mhz on a search: one clock for every layout.
absl::Status ReadSearchClock(const FlagValues& flags, Scenario& s) {
  if (!Given(flags, "gpu-clock-mhz")) return absl::OkStatus();
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<double> clocks, ClockListFlag(flags));
  if (clocks.size() != 1) {
    return FlagError("gpu-clock-mhz",
                     "a search runs one clock; give one value (a list is a what-if sweep of "
                     "`project`)");
  }
  s.hw.gpu.sustained_clock = Megahertz(clocks[0]);
  s.hw_settings.push_back(absl::StrCat("--gpu-clock-mhz ", StringFlag(flags, "gpu-clock-mhz")));
  return absl::OkStatus();
}

absl::StatusOr<Scenario> SearchBaseFromFlags(const FlagValues& flags) {
  PROJECTOR_ASSIGN_OR_RETURN(Scenario s, SearchStart(flags));
  const bool from_file = !s.scenario_file.empty();
  PROJECTOR_RETURN_IF_ERROR(
      ReadModelAndGpu(flags, from_file ? ScenarioUse::kProjection : ScenarioUse::kSearchBase, s));
  PROJECTOR_RETURN_IF_ERROR(ReadSearchClock(flags, s));
  constexpr absl::string_view kBeyondRun = " (beyond any training run)";
  auto from = [from_file](int64_t v) {
    return from_file ? std::optional<int64_t>(v) : std::nullopt;
  };
  PROJECTOR_ASSIGN_OR_RETURN(
      s.num_gpus,
      IntFlag(flags, "num-gpus", {.max = kMaxGpus, .beyond = kBeyondRun}, from(s.num_gpus)));
  if (s.num_gpus > s.hw.gpus_per_node && s.num_gpus % s.hw.gpus_per_node != 0) {
    return FlagError("num-gpus", absl::StrFormat("%d GPUs do not fill whole nodes of %d GPUs; "
                                                 "use a multiple of --gpus-per-node",
                                                 s.num_gpus, s.hw.gpus_per_node));
  }
  PROJECTOR_ASSIGN_OR_RETURN(s.training.seq_len,
                             IntFlag(flags, "seq-len", {.max = kMaxSeqLen, .beyond = kBeyondRun},
                                     from(s.training.seq_len)));
  PROJECTOR_ASSIGN_OR_RETURN(
      s.training.global_batch,
      IntFlag(flags, "global-batch", {.max = kMaxGlobalBatch, .beyond = kBeyondRun},
              from(s.training.global_batch)));
  PROJECTOR_RETURN_IF_ERROR(ReadTrainingSettings(flags, s.training));
  DefaultPrecisionForGpu(flags, from_file, s);
  PROJECTOR_RETURN_IF_ERROR(ValidateSearchRouting(s));
  s.parallel.dp = s.num_gpus;
  PROJECTOR_RETURN_IF_ERROR(ReadNetworkFlag(flags, s));
  return s;
}

}  // namespace

absl::StatusOr<Scenario> ScenarioFromFlags(const FlagValues& flags, ScenarioUse use) {
  if (use == ScenarioUse::kSearchBase) return SearchBaseFromFlags(flags);
  return ProjectionScenarioFromFlags(flags);
}

absl::StatusOr<TrainingOverrides> ReadStackFlags(const FlagValues& flags) {
  TrainingOverrides out;
  PROJECTOR_ASSIGN_OR_RETURN(out.stack,
                             ParsedFlag<TrainingStack>(flags, "stack", &ParseTrainingStack));
  PROJECTOR_ASSIGN_OR_RETURN(out.loss_kernel,
                             ParsedFlag<LossKernel>(flags, "loss-kernel", &ParseLossKernel));
  PROJECTOR_ASSIGN_OR_RETURN(out.train_metric_passes, TrainMetricPassesFlag(flags));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "torch-compile", out.torch_compile));
  PROJECTOR_ASSIGN_OR_RETURN(out.fsdp_impl,
                             ParsedFlag<FsdpImpl>(flags, "fsdp-impl", &ParseFsdpImpl));
  PROJECTOR_ASSIGN_OR_RETURN(out.hidden_dropout, DropoutFlag(flags, "hidden-dropout"));
  PROJECTOR_ASSIGN_OR_RETURN(out.attention_dropout, DropoutFlag(flags, "attention-dropout"));
  return out;
}

absl::StatusOr<std::vector<HwSetting>> HwSettingsFromFlags(const FlagValues& flags) {
  std::vector<HwSetting> settings;
  for (const HwShorthand& h : HwShorthands()) {
    const absl::string_view flag(h.flag.data(), h.flag.size());
    if (!Given(flags, flag)) continue;
    PROJECTOR_ASSIGN_OR_RETURN(const double v, NumberFlag(flags, flag));
    if (!(v > 0)) return FlagError(flag, absl::StrCat("must be > 0, got ", v));
    HwSetting& s = settings.emplace_back();
    s.pointer = std::string(h.pointer);
    s.value = v;
    s.text = absl::StrCat("--", flag, " ", StringFlag(flags, flag));
  }
  if (Given(flags, kHwSetFlag.name)) {
    for (const std::string& text : flags.All(kHwSetFlag.name)) {
      PROJECTOR_ASSIGN_OR_RETURN(HwSetting s, ParseHwSetting(text));
      settings.push_back(std::move(s));
    }
  }
  return settings;
}

absl::Status ApplyHwWhatIfFlags(const FlagValues& flags, Scenario& scenario) {
  PROJECTOR_ASSIGN_OR_RETURN(const std::vector<HwSetting> settings, HwSettingsFromFlags(flags));
  PROJECTOR_RETURN_IF_ERROR(ApplyHwSettings(settings, scenario.hw));
  for (const HwSetting& s : settings) scenario.hw_settings.push_back(s.text);
  return absl::OkStatus();
}

absl::Status ApplyHwOverlayFlag(const FlagValues& flags, Scenario& scenario) {
  if (!Given(flags, "hw-overlay")) return absl::OkStatus();
  scenario.hw_overlay_file = StringFlag(flags, "hw-overlay");
  if (scenario.hw_overlay_file.empty()) {
    return FlagError("hw-overlay", "empty file name; give an overlay written by project calibrate");
  }
  absl::Status applied = ApplyHwOverlayFile(scenario.hw_overlay_file, scenario.hw);
  if (!applied.ok()) return WithFlag("hw-overlay", applied);
  return absl::OkStatus();
}

absl::StatusOr<HardwareProfile> HardwareFromFlags(const FlagValues& flags) {
  if (!Given(flags, "gpu-arch")) {
    return FlagError("gpu-arch",
                     absl::StrCat("required; valid: ", absl::StrJoin(ListLibraryGpus(), ", ")));
  }
  absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(StringFlag(flags, "gpu-arch"));
  if (!hw.ok()) return FlagError("gpu-arch", hw.status().message());
  PROJECTOR_ASSIGN_OR_RETURN(hw->gpus_per_node,
                             IntFlag(flags, "gpus-per-node", {}, hw->gpus_per_node));
  if (Given(flags, "gpu-clock-mhz")) {
    PROJECTOR_ASSIGN_OR_RETURN(double mhz, NumberFlag(flags, "gpu-clock-mhz"));
    if (!(mhz >= kMinClockMhz && mhz <= kMaxClockMhz)) {
      return FlagError("gpu-clock-mhz", absl::StrCat("must be in [", kMinClockMhz, ", ",
                                                     kMaxClockMhz, "] MHz, got ", mhz));
    }
    hw->gpu.sustained_clock = Megahertz(mhz);
  }
  return hw;
}

absl::StatusOr<std::vector<double>> ClockListFlag(const FlagValues& flags) {
  PROJECTOR_ASSIGN_OR_RETURN(
      std::vector<double> clocks,
      ParsePositiveList(StringFlag(flags, "gpu-clock-mhz"), "gpu-clock-mhz"));
  for (double mhz : clocks) {
    if (!(mhz >= kMinClockMhz && mhz <= kMaxClockMhz)) {
      return FlagError("gpu-clock-mhz", absl::StrCat("each clock must be in [", kMinClockMhz, ", ",
                                                     kMaxClockMhz, "] MHz, got ", mhz));
    }
  }
  return clocks;
}

}  // namespace projector
