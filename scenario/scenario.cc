#include "scenario/scenario.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/json_reader.h"
#include "core/yaml_reader.h"
#include "core/status_macros.h"
#include "scenario/training_defaults.h"

namespace projector {
namespace {

using nlohmann::json;

absl::Status Precondition(const std::string& origin, const std::string& field,
                          const std::string& problem) {
  return absl::FailedPreconditionError(absl::StrCat(origin, ": ", field, ": ", problem));
}

// Resolves a "model" value: a library name, a path, or an inline model object.
absl::StatusOr<ModelSpec> ModelFromJson(JsonObject& obj, std::string_view key,
                                        const std::string& base_dir) {
  obj.Accept(key);
  if (!obj.Has(key)) return obj.FieldError(key, "required field is missing");
  const json& v = obj.json().at(std::string(key));
  if (v.is_object()) return ParseModelJson(v, obj.origin(), obj.PathOf(key));
  if (!v.is_string()) {
    return obj.FieldError(key, "expected a model name, a file path or an inline model object");
  }
  std::string name = v.get<std::string>();
  // Relative paths in a scenario file are relative to the file.
  if (name.find('/') != std::string::npos && name[0] != '/' && !base_dir.empty()) {
    name = absl::StrCat(base_dir, "/", name);
  }
  auto model = ResolveModel(name);
  if (!model.ok()) return obj.FieldError(key, std::string(model.status().message()));
  return model;
}

absl::StatusOr<HardwareProfile> GpuFromJson(JsonObject& obj, std::string_view key,
                                            const std::string& base_dir) {
  PROJECTOR_ASSIGN_OR_RETURN(std::string name, obj.String(key));
  if (name.find('/') != std::string::npos && name[0] != '/' && !base_dir.empty()) {
    name = absl::StrCat(base_dir, "/", name);
  }
  auto hw = ResolveHardwareProfile(name);
  if (!hw.ok()) return obj.FieldError(key, std::string(hw.status().message()));
  return hw;
}

const std::vector<std::string> kPrecisions = {"bf16", "fp16", "fp8"};
const std::vector<std::string> kRecomputes = {"none", "selective", "full"};
const std::vector<std::string> kGradReduceDtypes = {"fp32", "bf16"};
const std::vector<std::string> kLossKernels(std::begin(kLossKernelNames),
                                            std::end(kLossKernelNames));
const std::vector<std::string> kTrainingStacks(std::begin(kTrainingStackNames),
                                               std::end(kTrainingStackNames));
const std::vector<std::string> kFsdpImpls(std::begin(kFsdpImplNames), std::end(kFsdpImplNames));
const std::vector<std::string> kFp8Recipes(std::begin(kFp8RecipeNames), std::end(kFp8RecipeNames));
const std::vector<std::string> kPipelineSchedules(std::begin(kPipelineScheduleNames),
                                                  std::end(kPipelineScheduleNames));

absl::Status ParseParallel(JsonObject& p, ParallelConfig& out, bool& dp_given) {
  PROJECTOR_ASSIGN_OR_RETURN(out.tp, p.IntOr("tp", 1));
  PROJECTOR_ASSIGN_OR_RETURN(out.pp, p.IntOr("pp", 1));
  PROJECTOR_ASSIGN_OR_RETURN(out.vpp, p.IntOr("vpp", 1));
  PROJECTOR_ASSIGN_OR_RETURN(out.cp, p.IntOr("cp", 1));
  PROJECTOR_ASSIGN_OR_RETURN(out.ep, p.IntOr("ep", 1));
  PROJECTOR_ASSIGN_OR_RETURN(out.etp, p.IntOr("etp", 1));
  dp_given = p.Has("dp");
  PROJECTOR_ASSIGN_OR_RETURN(out.dp, p.IntOr("dp", 0));
  PROJECTOR_ASSIGN_OR_RETURN(out.sequence_parallel, p.BoolOr("sequence_parallel", false));
  PROJECTOR_ASSIGN_OR_RETURN(out.fsdp, p.BoolOr("fsdp", false));
  PROJECTOR_ASSIGN_OR_RETURN(out.distributed_optimizer, p.BoolOr("distributed_optimizer", false));
  PROJECTOR_ASSIGN_OR_RETURN(out.first_stage_layers, p.IntOr("first_stage_layers", 0));
  PROJECTOR_ASSIGN_OR_RETURN(out.last_stage_layers, p.IntOr("last_stage_layers", 0));
  PROJECTOR_ASSIGN_OR_RETURN(out.turbo_grouped_gemm, p.BoolOr("turbo_grouped_gemm", true));
  PROJECTOR_ASSIGN_OR_RETURN(out.deepep, p.BoolOr("deepep", false));
  PROJECTOR_ASSIGN_OR_RETURN(std::string schedule,
                             p.EnumOr("pipeline_schedule", kPipelineSchedules, "1f1b"));
  out.pipeline_schedule = *ParsePipelineSchedule(schedule);
  for (const char* key : {"tp", "pp", "vpp", "cp", "ep", "etp"}) {
    if (p.Has(key)) PROJECTOR_RETURN_IF_ERROR(p.PositiveInt(key).status());
  }
  if (dp_given) PROJECTOR_RETURN_IF_ERROR(p.PositiveInt("dp").status());
  for (const char* key : {"first_stage_layers", "last_stage_layers"}) {
    if (p.Has(key)) PROJECTOR_RETURN_IF_ERROR(p.PositiveInt(key, /*allow_zero=*/true).status());
  }
  return p.CheckNoUnknownKeys();
}

// training.train_metric_passes: "auto" (absent) or a count in [0, kMaxTrainMetricPasses].
absl::StatusOr<int64_t> ReadTrainMetricPasses(JsonObject& t) {
  constexpr std::string_view kKey = "train_metric_passes";
  if (!t.Has(kKey)) {  // absent or null: auto
    t.Accept(kKey);
    return kAutoTrainMetricPasses;
  }
  if (t.json().at(kKey).is_string()) {
    PROJECTOR_ASSIGN_OR_RETURN(std::string v, t.String(kKey));
    if (v == "auto") return kAutoTrainMetricPasses;
  } else if (absl::StatusOr<int64_t> n = t.PositiveInt(kKey, /*allow_zero=*/true);
             n.ok() && *n <= kMaxTrainMetricPasses) {
    return *n;
  }
  return t.FieldError(
      kKey, absl::StrFormat("must be \"auto\" or an integer from 0 to %d", kMaxTrainMetricPasses));
}

// A training switch with an auto setting (moe_permute_fusion, moe_router_padding): "auto" (absent
// or null: the stack's choice), true or false.
absl::StatusOr<std::optional<bool>> ReadAutoBool(JsonObject& t, std::string_view kKey) {
  if (!t.Has(kKey)) {
    t.Accept(kKey);
    return std::nullopt;
  }
  const nlohmann::json& v = t.json().at(kKey);
  if (v.is_boolean()) {
    t.Accept(kKey);
    return v.get<bool>();
  }
  if (v.is_string() && v.get<std::string>() == "auto") {
    t.Accept(kKey);
    return std::nullopt;
  }
  return t.FieldError(kKey, "must be true, false or \"auto\" (the stack's choice)");
}

// training.hidden_dropout / attention_dropout: "auto" (absent or null) or a probability in
// [0, 1).
absl::StatusOr<double> ReadDropout(JsonObject& t, std::string_view key) {
  if (!t.Has(key)) {
    t.Accept(key);
    return kAutoDropout;
  }
  if (t.json().at(std::string(key)).is_string()) {
    PROJECTOR_ASSIGN_OR_RETURN(std::string v, t.String(key));
    if (v == "auto") return kAutoDropout;
  } else if (absl::StatusOr<double> p = t.Number(key); p.ok() && *p >= 0 && *p < 1) {
    return *p;
  }
  return t.FieldError(key, "must be \"auto\" or a probability in [0, 1)");
}

// training.recompute_modules: a list of Megatron-Core recompute module names (as its
// TransformerConfig takes them); absent: core_attn.
absl::Status ReadRecomputeModules(JsonObject& t, TrainingConfig& out) {
  if (!t.Has("recompute_modules")) {
    t.Accept("recompute_modules");
    return absl::OkStatus();
  }
  PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json* list, t.Array("recompute_modules"));
  RecomputeModules modules = 0;
  for (const nlohmann::json& name : *list) {
    if (!name.is_string() || name.get<std::string>().empty()) {
      return t.FieldError("recompute_modules",
                          "must be a list of module names (core_attn, mla_up_proj, layernorm, "
                          "moe_act, mlp, shared_experts, moe)");
    }
    absl::StatusOr<RecomputeModules> one = ParseRecomputeModules(name.get<std::string>());
    if (!one.ok()) return t.FieldError("recompute_modules", std::string(one.status().message()));
    modules |= *one;
  }
  out.recompute_modules = modules;
  return absl::OkStatus();
}

// The training fields that say how a run executes rather than what it trains: the stack and its
// kernels, the communication switches and the MoE routing what-ifs. Shared by a scenario's
// training object and a calibration case's optional one. Leaves the unknown-key check to the
// caller.
absl::Status ParseTrainingSwitches(JsonObject& t, TrainingConfig& out) {
  PROJECTOR_ASSIGN_OR_RETURN(std::string kernel, t.StringOr("attention_kernel", "auto"));
  if (absl::Status s = SetAttentionKernel(kernel, out); !s.ok()) {
    return t.FieldError("attention_kernel", std::string(s.message()));
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::string stack, t.EnumOr("stack", kTrainingStacks, "auto"));
  out.stack = *ParseTrainingStack(stack);
  PROJECTOR_ASSIGN_OR_RETURN(std::string loss, t.EnumOr("loss_kernel", kLossKernels, "auto"));
  out.loss_kernel = *ParseLossKernel(loss);
  PROJECTOR_ASSIGN_OR_RETURN(out.train_metric_passes, ReadTrainMetricPasses(t));
  PROJECTOR_ASSIGN_OR_RETURN(out.torch_compile, t.BoolOr("torch_compile", false));
  PROJECTOR_ASSIGN_OR_RETURN(std::string fsdp_impl, t.EnumOr("fsdp_impl", kFsdpImpls, "auto"));
  out.fsdp_impl = *ParseFsdpImpl(fsdp_impl);
  PROJECTOR_ASSIGN_OR_RETURN(out.hidden_dropout, ReadDropout(t, "hidden_dropout"));
  PROJECTOR_ASSIGN_OR_RETURN(out.attention_dropout, ReadDropout(t, "attention_dropout"));
  PROJECTOR_ASSIGN_OR_RETURN(out.overlap_grad_reduce, t.BoolOr("overlap_grad_reduce", true));
  PROJECTOR_ASSIGN_OR_RETURN(out.overlap_param_gather, t.BoolOr("overlap_param_gather", true));
  PROJECTOR_ASSIGN_OR_RETURN(out.tp_comm_overlap, t.BoolOr("tp_comm_overlap", false));
  PROJECTOR_ASSIGN_OR_RETURN(out.moe_a2a_overlap, t.BoolOr("moe_a2a_overlap", false));
  PROJECTOR_ASSIGN_OR_RETURN(out.moe_dispatch_fp8, t.BoolOr("moe_dispatch_fp8", false));
  PROJECTOR_ASSIGN_OR_RETURN(out.moe_shared_expert_overlap,
                             t.BoolOr("moe_shared_expert_overlap", false));
  PROJECTOR_ASSIGN_OR_RETURN(out.cuda_graphs, t.BoolOr("cuda_graphs", false));
  PROJECTOR_ASSIGN_OR_RETURN(out.tf_amp, t.BoolOr("tf_amp", false));
  PROJECTOR_ASSIGN_OR_RETURN(std::string fp8_recipe, t.EnumOr("fp8_recipe", kFp8Recipes, "auto"));
  out.fp8_recipe = *ParseFp8Recipe(fp8_recipe);
  PROJECTOR_ASSIGN_OR_RETURN(std::string grad_reduce,
                             t.EnumOr("grad_reduce_dtype", kGradReduceDtypes, "fp32"));
  out.grad_reduce_dtype = *ParseGradReduceDtype(grad_reduce);
  PROJECTOR_ASSIGN_OR_RETURN(out.moe_capacity_factor, t.NumberOr("moe_capacity_factor", 0.0));
  PROJECTOR_ASSIGN_OR_RETURN(out.moe_pad_to_capacity, t.BoolOr("moe_pad_to_capacity", false));
  PROJECTOR_ASSIGN_OR_RETURN(out.moe_imbalance, t.NumberOr("moe_imbalance", 1.0));
  PROJECTOR_ASSIGN_OR_RETURN(out.moe_permute_fusion, ReadAutoBool(t, "moe_permute_fusion"));
  PROJECTOR_ASSIGN_OR_RETURN(out.moe_router_padding, ReadAutoBool(t, "moe_router_padding"));
  return ReadRecomputeModules(t, out);
}

absl::Status ParseTraining(JsonObject& t, TrainingConfig& out) {
  PROJECTOR_ASSIGN_OR_RETURN(out.seq_len, t.PositiveInt("seq_len"));
  PROJECTOR_ASSIGN_OR_RETURN(out.micro_batch, t.PositiveInt("micro_batch"));
  PROJECTOR_ASSIGN_OR_RETURN(out.global_batch, t.PositiveInt("global_batch"));
  PROJECTOR_ASSIGN_OR_RETURN(std::string recompute, t.EnumOr("recompute", kRecomputes, "none"));
  out.recompute = *ParseRecompute(recompute);
  PROJECTOR_ASSIGN_OR_RETURN(out.recompute_layers, t.IntOr("recompute_layers", 0));
  if (t.Has("recompute_layers")) {
    PROJECTOR_RETURN_IF_ERROR(t.PositiveInt("recompute_layers", true).status());
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::string precision, t.EnumOr("precision", kPrecisions, "bf16"));
  out.precision = *ParseDType(precision);
  PROJECTOR_RETURN_IF_ERROR(ParseTrainingSwitches(t, out));
  return t.CheckNoUnknownKeys();
}

absl::Status ParseBackends(JsonObject& b, BackendSelection& out) {
  PROJECTOR_ASSIGN_OR_RETURN(out.gemm, b.StringOr("gemm", out.gemm));
  PROJECTOR_ASSIGN_OR_RETURN(out.attention, b.StringOr("attention", out.attention));
  PROJECTOR_ASSIGN_OR_RETURN(out.memory, b.StringOr("memory", out.memory));
  PROJECTOR_ASSIGN_OR_RETURN(out.collective, b.StringOr("collective", out.collective));
  return b.CheckNoUnknownKeys();
}

// Mark the defaults_used entries of an "auto" stack, attention kernel, loss kernel and
// train-metric pass count.
constexpr std::string_view kKernelNotePrefix = "attention_kernel=";
// In the note of a setting a calibration case's source names (not the tool's auto choice).
constexpr std::string_view kNamedBySourceNote = "(named by the case's source";

// "the llm-foundry stack" for the notes.
std::string StackPhrase(const Scenario& s) { return StackPhrase(s.training, s.parallel); }

// What "auto" runs: a stack on PyTorch's attention gets PyTorch SDPA's kernel (with ALiBi's
// additive bias, the one SDPA falls back to), when the profile names them; anything else the
// profile's default (Transformer Engine's for Megatron).
enum class AutoChoice { kDefault, kPyTorch, kPyTorchWithBias };
AutoChoice ChooseAuto(const Scenario& s) {
  const GpuSpec& g = s.hw.gpu;
  if (!RunsPyTorchAttention(ResolvedStack(s.training, s.parallel))) return AutoChoice::kDefault;
  if (s.model.position_embedding == PositionEmbedding::kAlibi &&
      !g.attention_kernel_pytorch_bias.empty()) {
    return AutoChoice::kPyTorchWithBias;
  }
  return g.attention_kernel_pytorch.empty() ? AutoChoice::kDefault : AutoChoice::kPyTorch;
}

// The profile kernel the scenario's flash request picks; nullptr when the profile names none
// or lacks the requested one.
const AttentionKernelSpec* PickFlashKernel(const Scenario& s) {
  const GpuSpec& g = s.hw.gpu;
  const std::string& request = s.training.flash_kernel;
  if (request == "auto") {
    switch (ChooseAuto(s)) {
      case AutoChoice::kPyTorchWithBias:
        return g.FindAttentionKernel(g.attention_kernel_pytorch_bias);
      case AutoChoice::kPyTorch:
        return g.FindAttentionKernel(g.attention_kernel_pytorch);
      case AutoChoice::kDefault:
        break;
    }
  }
  if (request == "auto" || request == "flash") {
    return g.attention_kernels.empty() ? nullptr : &g.attention_kernels.front();
  }
  return g.FindAttentionKernel(request);
}

// The defaults_used entry saying what "auto" chose and why.
std::string AutoKernelNote(const Scenario& s) {
  const std::string& k = s.attention_kernel_used;
  switch (ChooseAuto(s)) {
    case AutoChoice::kPyTorchWithBias:
      return absl::StrFormat(
          "%s%s (auto: %s runs PyTorch SDPA; with ALiBi's additive bias it cannot use its flash "
          "backend and runs the memory-efficient kernel, %s on %s)",
          kKernelNotePrefix, k, StackPhrase(s), k, s.hw.name);
    case AutoChoice::kPyTorch:
      return absl::StrFormat("%s%s (auto: %s runs PyTorch SDPA, which runs %s on %s)",
                             kKernelNotePrefix, k, StackPhrase(s), k, s.hw.name);
    case AutoChoice::kDefault:
      break;
  }
  return absl::StrFormat("%s%s (auto: the profile's default kernel)", kKernelNotePrefix, k);
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// Fills dp (when not given) and num_gpus, and records the defaults the input left open.
absl::Status Complete(Scenario& s, bool dp_given, bool num_gpus_given, const std::string& origin) {
  ParallelConfig& p = s.parallel;
  for (bool with_dp : {false, true}) {
    if (with_dp && !dp_given) continue;
    if (const double product = LayoutProduct(p, with_dp); product > kMaxGpus) {
      return Precondition(origin, "/parallel",
                          absl::StrFormat("%s = %.0f GPUs is beyond any training run (at most %d)",
                                          with_dp ? "tp·pp·cp·dp" : "tp·pp·cp", product, kMaxGpus));
    }
  }
  const int64_t model_parallel = p.tp * p.pp * p.cp;
  if (!dp_given) {
    if (!num_gpus_given) {
      p.dp = 1;
    } else {
      if (s.num_gpus % model_parallel != 0) {
        return Precondition(origin, "/parallel/dp",
                            absl::StrFormat("num_gpus %d is not divisible by tp·pp·cp = %d; "
                                            "choose a layout whose product divides the GPU count",
                                            s.num_gpus, model_parallel));
      }
      p.dp = s.num_gpus / model_parallel;
    }
  }
  if (!num_gpus_given) s.num_gpus = p.tp * p.pp * p.cp * p.dp;
  return absl::OkStatus();
}

}  // namespace

void DefaultDistributedOptimizer(bool given, Scenario& s) {
  DropDefaultNote("distributed_optimizer", s);
  if (given || s.parallel.fsdp || s.parallel.dp <= 1) return;
  if (const TrainingStack stack = ResolvedStack(s.training, s.parallel);
      stack != TrainingStack::kMegatron) {
    // PyTorch-native data parallelism without FSDP is DDP: every rank keeps the whole
    // optimizer state.
    s.parallel.distributed_optimizer = false;
    s.defaults_used.push_back(absl::StrFormat(
        "distributed_optimizer=false (the %s stack without FSDP runs PyTorch DDP, which keeps the "
        "optimizer state replicated)",
        TrainingStackName(stack)));
    return;
  }
  s.parallel.distributed_optimizer = true;
  s.defaults_used.push_back(
      "distributed_optimizer=true (Megatron/NeMo benchmark default; set it false for a "
      "replicated optimizer state)");
}

namespace {

// NVIDIA's Megatron-Bridge performance presets (SourceIsMegatronBridgePresets), for what the case
// does not state: gradients reduced in bf16 and, under FP8 on a GPU without MXFP8, Transformer
// Engine's current scaling; each note names the source and stays until a flag sets another.
void DefaultMegatronBridgePresets(bool reduce_dtype_stated, Scenario& s) {
  if (!reduce_dtype_stated) {
    s.training.grad_reduce_dtype = DType::kBf16;
    s.defaults_used.push_back(absl::StrFormat(
        "grad_reduce_dtype=bf16 %s: Megatron-Bridge's performance presets set "
        "grad_reduce_in_fp32 = False; --grad-reduce-dtype for another)",
        kNamedBySourceNote));
  }
  if (s.training.precision == DType::kFp8 && s.training.fp8_recipe == Fp8Recipe::kAuto &&
      !HasMxBlockScaling(s.hw.gpu.arch)) {
    s.training.fp8_recipe = Fp8Recipe::kTensorwise;
    s.defaults_used.push_back(absl::StrFormat(
        "fp8_recipe=tensorwise %s: Megatron-Bridge's performance presets run Transformer "
        "Engine's current scaling, fp8_recipe 'cs', by default on GPUs without MXFP8; "
        "--fp8-recipe for another)",
        kNamedBySourceNote));
  }
}

// Megatron-LM as the SC21 paper ran it (SourceIsMegatronSc21), for what the case's optional
// training object and parallel.distributed_optimizer do not state.
void DefaultMegatronSc21(bool distributed_optimizer_given,
                         const std::optional<JsonObject>& training, Scenario& s) {
  constexpr std::string_view kWho = "the case's source, the SC21 Megatron-LM paper, ran";
  auto stated = [&](const char* key) { return training && training->Has(key); };
  if (!stated("attention_kernel")) {
    s.training.attention_kernel = AttentionKernel::kUnfused;
    s.defaults_used.push_back(absl::StrFormat(
        "attention_kernel=unfused (%s attention as two batched GEMMs around its fused "
        "scale-mask-softmax kernel, section 4.2; FlashAttention came in 2022; "
        "--attention-kernel for another)",
        kWho));
  }
  if (!stated("overlap_grad_reduce")) {
    s.training.overlap_grad_reduce = false;
    s.defaults_used.push_back(absl::StrFormat(
        "overlap_grad_reduce=false (%s Megatron-LM's local DDP of 2021, which all-reduced the "
        "gradients after the step's last backward)",
        kWho));
  }
  if (!distributed_optimizer_given && s.parallel.distributed_optimizer) {
    DropDefaultNote("distributed_optimizer", s);
    s.parallel.distributed_optimizer = false;
    s.defaults_used.push_back(absl::StrFormat(
        "distributed_optimizer=false (%s a replicated optimizer state; the distributed "
        "optimizer came to Megatron-LM in 2022)",
        kWho));
  }
}

}  // namespace

double LayoutProduct(const ParallelConfig& p, bool with_dp) {
  return static_cast<double>(p.tp) * static_cast<double>(p.pp) * static_cast<double>(p.cp) *
         (with_dp ? static_cast<double>(p.dp) : 1.0);
}

std::string_view AttentionKernelOf(const Scenario& s) {
  if (!s.attention_kernel_used.empty()) return s.attention_kernel_used;
  return AttentionKernelValue(s.training);
}

std::string LayoutSummary(const ParallelConfig& p) {
  std::string out = absl::StrFormat("TP%d PP%d", p.tp, p.pp);
  if (p.vpp > 1) absl::StrAppendFormat(&out, " VPP%d", p.vpp);
  absl::StrAppendFormat(&out, " CP%d", p.cp);
  if (p.ep > 1) absl::StrAppendFormat(&out, " EP%d", p.ep);
  if (p.etp > 1) absl::StrAppendFormat(&out, " ETP%d", p.etp);
  absl::StrAppendFormat(&out, " DP%d", p.dp);
  if (p.sequence_parallel) out += " SP";
  // FSDP shards the optimizer state itself; the distributed-optimizer switch has no effect then.
  if (p.fsdp) {
    out += " FSDP";
  } else if (p.distributed_optimizer) {
    out += " DistOpt";
  }
  return out;
}

nlohmann::json ParallelConfigJson(const ParallelConfig& p) {
  return {{"tp", p.tp},
          {"pp", p.pp},
          {"vpp", p.vpp},
          {"cp", p.cp},
          {"ep", p.ep},
          {"etp", p.etp},
          {"dp", p.dp},
          {"sequence_parallel", p.sequence_parallel},
          {"fsdp", p.fsdp},
          {"distributed_optimizer", p.distributed_optimizer},
          {"first_stage_layers", p.first_stage_layers},
          {"last_stage_layers", p.last_stage_layers},
          {"turbo_grouped_gemm", p.turbo_grouped_gemm},
          {"deepep", p.deepep},
          {"pipeline_schedule", std::string(PipelineScheduleName(p.pipeline_schedule))}};
}

nlohmann::json ScenarioToJson(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  const TrainingConfig& t = s.training;
  const DropoutRates dropout = ResolvedDropout(s.model, s.parallel, t);
  json j;
  j["name"] = s.name;
  j["model"] = s.model.name;
  j["gpu"] = s.hw.name;
  j["num_gpus"] = s.num_gpus;
  j["gpus_per_node"] = s.hw.gpus_per_node;
  j["gpu_clock_mhz"] = ToMegahertz(s.hw.gpu.sustained_clock);
  j["parallel"] = ParallelConfigJson(p);
  j["training"] = {{"seq_len", t.seq_len},
                   {"micro_batch", t.micro_batch},
                   {"global_batch", t.global_batch},
                   {"recompute", std::string(RecomputeName(t.recompute))},
                   {"recompute_layers", t.recompute_layers},
                   {"recompute_modules", RecomputeModuleNames(t.recompute_modules)},
                   {"precision", std::string(DTypeName(t.precision))},
                   {"stack", std::string(TrainingStackName(ResolvedStack(t, p)))},
                   {"attention_kernel", std::string(AttentionKernelOf(s))},
                   {"loss_kernel", std::string(LossKernelName(ResolvedLossKernel(t, p)))},
                   {"train_metric_passes", ResolvedTrainMetricPasses(t, p)},
                   {"torch_compile", t.torch_compile},
                   {"fsdp_impl", std::string(FsdpImplName(ResolvedFsdpImpl(t, p)))},
                   {"hidden_dropout", dropout.hidden},
                   {"attention_dropout", dropout.attention},
                   {"overlap_grad_reduce", t.overlap_grad_reduce},
                   {"overlap_param_gather", t.overlap_param_gather},
                   {"tp_comm_overlap", t.tp_comm_overlap},
                   {"moe_a2a_overlap", t.moe_a2a_overlap},
                   {"moe_dispatch_fp8", t.moe_dispatch_fp8},
                   {"moe_shared_expert_overlap", t.moe_shared_expert_overlap},
                   {"cuda_graphs", t.cuda_graphs},
                   {"tf_amp", t.tf_amp},
                   {"fp8_recipe", std::string(Fp8RecipeName(t.fp8_recipe))},
                   {"grad_reduce_dtype", std::string(DTypeName(t.grad_reduce_dtype))},
                   {"moe_capacity_factor", t.moe_capacity_factor},
                   {"moe_pad_to_capacity", t.moe_pad_to_capacity},
                   {"moe_imbalance", t.moe_imbalance}};
  if (s.model.moe) j["training"]["moe_permute_fusion"] = ResolvedMoePermuteFusion(t, p);
  if (t.moe_router_padding) j["training"]["moe_router_padding"] = *t.moe_router_padding;
  j["backends"] = {{"gemm", s.backends.gemm},
                   {"attention", s.backends.attention},
                   {"memory", s.backends.memory},
                   {"collective", s.backends.collective}};
  j["defaults_used"] = s.defaults_used;
  if (s.measured_tokens_per_s_per_gpu) {
    j["measured_tokens_per_s_per_gpu"] = *s.measured_tokens_per_s_per_gpu;
  }
  return j;
}

std::string TrainMetricsPhrase(const TrainingConfig& training, const ParallelConfig& parallel) {
  const int64_t n = ResolvedTrainMetricPasses(training, parallel);
  // How a PyTorch-native stack runs its elementwise work.
  std::string elementwise;
  if (RunsPyTorchAttention(ResolvedStack(training, parallel))) {
    elementwise = training.torch_compile ? ", torch.compile" : ", eager elementwise";
  }
  if (n <= 0) return elementwise;
  return absl::StrFormat(", %d train-metric pass%s%s", n, n == 1 ? "" : "es", elementwise);
}

std::string FsdpImplPhrase(const Scenario& s) {
  if (!s.parallel.fsdp) return "";
  switch (ResolvedFsdpImpl(s.training, s.parallel)) {
    case FsdpImpl::kFsdp1:
      return ", FSDP1";
    case FsdpImpl::kFsdp2:
      return ", FSDP2";
    case FsdpImpl::kAuto:
    case FsdpImpl::kMegatronFsdp:
      break;
  }
  return ", Megatron-FSDP";
}

std::string DropoutPhrase(const Scenario& s) {
  const DropoutRates d = ResolvedDropout(s.model, s.parallel, s.training);
  if (d.hidden <= 0 && d.attention <= 0) return "";
  if (d.hidden == d.attention) return absl::StrFormat(", dropout %g", d.hidden);
  return absl::StrFormat(", dropout hidden %g, attention %g", d.hidden, d.attention);
}

std::string TrainingSwitchesPhrase(const Scenario& s) {
  return TrainMetricsPhrase(s.training, s.parallel) + FsdpImplPhrase(s) + DropoutPhrase(s);
}

std::string DescribeScenario(const Scenario& s) {
  const TrainingConfig& t = s.training;
  std::string out = absl::StrFormat(
      "Scenario %s\n  model      %s (%d layers, hidden %d%s)\n  cluster    %d x %s (%d per "
      "node, clock %.0f MHz)\n  layout     %s\n  training   seq %d, micro-batch %d, global "
      "batch %d, recompute %s, %s, %s stack: %s attention, %s loss%s\n  backends   gemm=%s "
      "attention=%s memory=%s collective=%s\n",
      s.name, s.model.name, s.model.num_layers, s.model.hidden_size,
      s.model.moe
          ? absl::StrFormat(", %d experts top-%d", s.model.moe->num_experts, s.model.moe->top_k)
          : std::string(),
      s.num_gpus, s.hw.name, s.hw.gpus_per_node, ToMegahertz(s.hw.gpu.sustained_clock),
      LayoutSummary(s.parallel), t.seq_len, t.micro_batch, t.global_batch,
      RecomputePhrase(t.recompute, t.recompute_modules), DTypeName(t.precision),
      TrainingStackName(ResolvedStack(t, s.parallel)), AttentionKernelOf(s),
      LossKernelName(ResolvedLossKernel(t, s.parallel)), TrainingSwitchesPhrase(s), s.backends.gemm,
      s.backends.attention, s.backends.memory, s.backends.collective);
  for (const std::string& d : s.defaults_used) absl::StrAppend(&out, "  default    ", d, "\n");
  return out;
}

absl::StatusOr<Scenario> DefaultScenario() {
  Scenario s;
  s.name = "default";
  PROJECTOR_ASSIGN_OR_RETURN(s.model, ResolveModel("llama3.1-8b"));
  PROJECTOR_ASSIGN_OR_RETURN(s.hw, ResolveHardwareProfile("mi300x"));
  s.num_gpus = 8;
  s.parallel.tp = 1;
  s.parallel.dp = 8;
  s.training.seq_len = 8192;
  s.training.micro_batch = 1;
  s.training.global_batch = 64;
  s.training.precision = DType::kBf16;
  PROJECTOR_RETURN_IF_ERROR(ResolveKernels(s, "default"));
  return s;
}

namespace {

// The attention half of ResolveKernels.
absl::Status ResolveAttention(Scenario& s, const std::string& origin) {
  if (s.training.attention_kernel == AttentionKernel::kUnfused) {
    s.attention_kernel_used = "unfused";
    return absl::OkStatus();
  }
  const std::string& request = s.training.flash_kernel;
  const AttentionKernelSpec* kernel = PickFlashKernel(s);
  if (kernel == nullptr && request != "auto" && request != "flash") {
    std::vector<std::string> valid(std::begin(kAttentionKernelRequests),
                                   std::end(kAttentionKernelRequests));
    for (const AttentionKernelSpec& k : s.hw.gpu.attention_kernels) valid.push_back(k.name);
    return JsonFieldError(origin, "/training/attention_kernel",
                          absl::StrCat("'", request, "' is not an attention kernel of ", s.hw.name,
                                       "; valid: ", absl::StrJoin(valid, ", ")));
  }
  s.attention_kernel_used = kernel == nullptr ? "flash" : kernel->name;
  // The tile backend keeps the GPU's kernel family (tile table, softmax overlap); the measured
  // main-loop efficiency of the chosen kernel carries the difference between kernels.
  if (kernel != nullptr) {
    s.hw.gpu.attention_fwd_efficiency = kernel->fwd_efficiency;
    s.hw.gpu.attention_bwd_efficiency = kernel->bwd_efficiency;
  }
  if (request == "auto") s.defaults_used.push_back(AutoKernelNote(s));
  return absl::OkStatus();
}

}  // namespace

void DropDefaultNote(std::string_view key, Scenario& s) {
  std::erase_if(s.defaults_used, [&](const std::string& d) {
    return d.starts_with(key) && d.size() > key.size() && d[key.size()] == '=';
  });
}

absl::Status ResolveKernels(Scenario& s, const std::string& origin) {
  // A kernel the case's source named (not "auto") keeps its note while it is the kernel run.
  std::vector<std::string> named_kernel_notes;
  for (const std::string& d : s.defaults_used) {
    if (d.starts_with(kKernelNotePrefix) && d.find("(auto:") == std::string::npos) {
      named_kernel_notes.push_back(d);
    }
  }
  // A choice the case's source named stays, with its note, until a flag sets another.
  std::erase_if(s.defaults_used, [](const std::string& d) {
    return d.starts_with(kKernelNotePrefix) ||
           (IsRunChoiceNote(d) && d.find(kNamedBySourceNote) == std::string::npos);
  });
  if (s.training.stack == TrainingStack::kAuto) {
    s.defaults_used.push_back(AutoStackNote(s.training, s.parallel));
  }
  PROJECTOR_RETURN_IF_ERROR(ResolveAttention(s, origin));
  for (std::string& note : named_kernel_notes) {
    if (note.starts_with(absl::StrCat(std::string(kKernelNotePrefix), s.attention_kernel_used, " ("))) {
      s.defaults_used.push_back(std::move(note));
    }
  }
  for (std::string& note : StackChoiceNotes(s.model, s.parallel, s.training)) {
    s.defaults_used.push_back(std::move(note));
  }
  std::string fp8_note =
      AutoFp8RecipeNote(s.training, s.parallel, s.hw.gpu.arch, s.hw.name);
  if (!fp8_note.empty()) s.defaults_used.push_back(std::move(fp8_note));
  for (std::string note : {AutoMoePermuteFusionNote(s.model, s.training, s.parallel),
                           AutoMoeRouterPaddingNote(s.model, s.training, s.parallel, s.hw.gpu.arch),
                           UnmeasuredScatterAddNote(s.model, s.training, s.parallel, s.hw)}) {
    if (!note.empty()) s.defaults_used.push_back(std::move(note));
  }
  return absl::OkStatus();
}

// training.moe_router_padding: Megatron-Core's switch of the fp8 MoE (TransformerConfig: "fp8 must
// be specified when moe_router_padding_for_fp8 is True"), where the experts' token counts vary.
absl::Status ValidateMoeRouterPadding(const Scenario& s, const std::string& origin) {
  const TrainingConfig& t = s.training;
  if (!t.moe_router_padding) return absl::OkStatus();
  const std::string kField = "/training/moe_router_padding";
  if (ResolvedStack(t, s.parallel) != TrainingStack::kMegatron) {
    return Precondition(origin, kField,
                        "router padding is Megatron-Core's (--moe-router-padding-for-fp8), for "
                        "Transformer Engine's fp8 expert GEMMs; other stacks align the expert "
                        "rows their own way: leave it out, or take the megatron stack");
  }
  if (t.precision != DType::kFp8) {
    return Precondition(origin, kField,
                        absl::StrFormat("pads expert rows for fp8 GEMMs; the precision is %s: "
                                        "leave it out, or set precision fp8",
                                        DTypeName(t.precision)));
  }
  if (t.moe_capacity_factor > 0 && t.moe_pad_to_capacity) {
    return Precondition(origin, kField,
                        "experts padded to their capacity take fixed token counts, so there is "
                        "nothing for the router to pad: leave it out, or moe_pad_to_capacity "
                        "false");
  }
  return absl::OkStatus();
}

// training.moe_*: only on MoE models; a capacity factor in (0, E/top_k] (above E/top_k an
// expert's capacity exceeds every token of the batch); padding needs a capacity; the imbalance
// in [1, ep·min(top_k, E/ep)/top_k] (the busiest EP rank can receive at most min(top_k, its
// experts) pairs of every token, ep·min(...)/top_k times the balanced share).
absl::Status ValidateMoeRouting(const Scenario& s, const std::string& origin) {
  const TrainingConfig& t = s.training;
  const bool set = t.moe_capacity_factor != 0 || t.moe_pad_to_capacity || t.moe_imbalance != 1.0 ||
                   t.moe_permute_fusion.has_value() || t.moe_router_padding.has_value();
  if (!s.model.moe) {
    if (!set) return absl::OkStatus();
    const char* field = t.moe_capacity_factor != 0 ? "/training/moe_capacity_factor"
                        : t.moe_pad_to_capacity    ? "/training/moe_pad_to_capacity"
                        : t.moe_imbalance != 1.0   ? "/training/moe_imbalance"
                        : t.moe_permute_fusion     ? "/training/moe_permute_fusion"
                                                   : "/training/moe_router_padding";
    return Precondition(origin, field,
                        absl::StrFormat("%s has no experts; MoE routing settings apply to MoE "
                                        "models only (leave them out)",
                                        s.model.name));
  }
  const MoeSpec& moe = *s.model.moe;
  const double max_capacity = static_cast<double>(moe.num_experts) / static_cast<double>(moe.top_k);
  if (!(t.moe_capacity_factor >= 0) || t.moe_capacity_factor > max_capacity) {
    return JsonFieldError(
        origin, "/training/moe_capacity_factor",
        absl::StrFormat("must be 0 (dropless) or in (0, %g] (num_experts/top_k = %d/%d: beyond "
                        "it an expert's capacity exceeds every token), got %g",
                        max_capacity, moe.num_experts, moe.top_k, t.moe_capacity_factor));
  }
  if (t.cuda_graphs && !(t.moe_capacity_factor > 0 && t.moe_pad_to_capacity)) {
    return Precondition(origin, "/training/cuda_graphs",
                        "a MoE whose experts' inputs change size (dropless, or a capacity "
                        "without padding) copies its per-expert token counts to the host every "
                        "layer and cannot be captured in a CUDA graph: set moe_capacity_factor "
                        "> 0 with moe_pad_to_capacity (static shapes) or cuda_graphs false");
  }
  if (t.moe_shared_expert_overlap && s.parallel.deepep) {
    return Precondition(origin, "/training/moe_shared_expert_overlap",
                        "Megatron-Core overlaps the shared experts with the alltoall "
                        "dispatcher's All-to-All only, not with DeepEP's (its TransformerConfig "
                        "refuses the pair): set deepep false or moe_shared_expert_overlap false");
  }
  if (t.moe_permute_fusion.value_or(false) &&
      ResolvedStack(t, s.parallel) == TrainingStack::kTorchTitan) {
    return Precondition(origin, "/training/moe_permute_fusion",
                        "torchtitan's MoE permutes with torch.gather and scatter_add and has no "
                        "fused permutation: leave moe_permute_fusion out, or false, or take "
                        "another stack");
  }
  PROJECTOR_RETURN_IF_ERROR(ValidateMoeRouterPadding(s, origin));
  if (t.moe_pad_to_capacity && t.moe_capacity_factor == 0) {
    return Precondition(origin, "/training/moe_pad_to_capacity",
                        "padding to capacity needs a capacity: set moe_capacity_factor > 0");
  }
  const int64_t local = moe.num_experts / s.parallel.ep;
  const double max_imbalance = MaxMoeImbalance(s.model, s.parallel);
  if (!(t.moe_imbalance >= 1.0) || t.moe_imbalance > max_imbalance) {
    return JsonFieldError(
        origin, "/training/moe_imbalance",
        absl::StrFormat("must be in [1, %g] (the busiest of ep %d ranks receives at most "
                        "min(top_k %d, %d local experts) pairs of every token: ep·min(...)/top_k "
                        "times the balanced share; 1 = balanced), got %g",
                        max_imbalance, s.parallel.ep, moe.top_k, local, t.moe_imbalance));
  }
  return absl::OkStatus();
}

std::optional<std::pair<int64_t, int64_t>> SuggestUnevenSplit(int64_t layers, int64_t pp,
                                                              int64_t vpp, int64_t mtp_layers) {
  if (pp < 2 || layers < pp) return std::nullopt;
  if (pp == 2) return std::make_pair(layers - layers / 2, layers / 2);
  const int64_t m = (layers + pp - 1) / pp;
  // rest <= 2·m since m >= layers/pp; rest >= 2 gives the first and last stage a layer each.
  const int64_t rest = layers - m * (pp - 2);
  if (rest < 2) return std::nullopt;
  if (mtp_layers > 0 && vpp <= 1) {
    // The last stage also runs the MTP modules: Megatron-Bridge's DeepSeek-V3 layouts
    // (recipes/deepseek/deepseek_v3.py, layout_map for pp 4, 8, 16 without VPP) give the first
    // stage as many layers as a middle one and the last stage the rest (16 stages: 4 | 4 x 14 |
    // 1 + MTP + loss).
    const int64_t first = std::min(m, rest - 1);
    return std::make_pair(first, rest - first);
  }
  return std::make_pair(rest - rest / 2, rest / 2);
}

bool UnevenSplitAccepted(int64_t layers, int64_t pp, int64_t vpp, int64_t first, int64_t last) {
  if (pp < 2 || first < 0 || last < 0 || (first == 0 && last == 0)) return false;
  const int64_t middle_stages = pp - (first > 0) - (last > 0);
  const int64_t rest = layers - first - last;
  if (rest < 0 || (middle_stages == 0 ? rest != 0 : rest % middle_stages != 0)) return false;
  if (vpp <= 1) return true;
  const int64_t middle = middle_stages > 0 ? rest / middle_stages : vpp;
  return (first == 0 || first >= vpp) && (last == 0 || last >= vpp) && middle >= vpp;
}

bool InterleavedMicroBatchesFit(const ParallelConfig& parallel, int64_t micro_batches) {
  return parallel.vpp <= 1 || parallel.pp <= 1 || micro_batches % parallel.pp == 0;
}

bool LayersSplitEvenly(int64_t layers, int64_t virtual_stages) {
  return layers % virtual_stages == 0 || (virtual_stages > 2 && (layers + 2) % virtual_stages == 0);
}

double MaxMoeImbalance(const ModelSpec& model, const ParallelConfig& parallel) {
  if (!model.moe || parallel.ep <= 0 || model.moe->top_k <= 0) return 1.0;
  const int64_t local = model.moe->num_experts / parallel.ep;
  return static_cast<double>(parallel.ep) * static_cast<double>(std::min(model.moe->top_k, local)) /
         static_cast<double>(model.moe->top_k);
}

namespace {

// Sizes beyond any training run, a clock no GPU runs at, a measurement no run reaches.
absl::Status ValidateRunBounds(const Scenario& s, const std::string& origin) {
  const TrainingConfig& t = s.training;
  // Sizes beyond any training run; they would overflow the integer arithmetic of the projection
  // (tokens per micro-batch x hidden) or blow up the schedule replay (micro-batches per step).
  for (auto [pointer, v, max] :
       {std::tuple<const char*, int64_t, int64_t>{"/num_gpus", s.num_gpus, kMaxGpus},
        {"/training/seq_len", t.seq_len, kMaxSeqLen},
        {"/training/micro_batch", t.micro_batch, kMaxMicroBatch},
        {"/training/global_batch", t.global_batch, kMaxGlobalBatch}}) {
    if (v > max) {
      return JsonFieldError(
          origin, pointer, absl::StrCat("must be <= ", max, " (beyond any training run), got ", v));
    }
  }
  if (const double mhz = ToMegahertz(s.hw.gpu.sustained_clock);
      !(mhz >= kMinClockMhz && mhz <= kMaxClockMhz)) {
    return JsonFieldError(origin, "/gpu_clock_mhz",
                          absl::StrFormat("the sustained clock must be in [%g, %g] MHz, got %g",
                                          kMinClockMhz, kMaxClockMhz, mhz));
  }
  if (s.measured_tokens_per_s_per_gpu &&
      !(*s.measured_tokens_per_s_per_gpu > 0 &&
        *s.measured_tokens_per_s_per_gpu <= kMaxMeasuredTokensPerSecondPerGpu)) {
    return JsonFieldError(
        origin, "/measured_tokens_per_s_per_gpu",
        absl::StrFormat("must be in (0, %g] tokens/s per GPU, got %g",
                        kMaxMeasuredTokensPerSecondPerGpu, *s.measured_tokens_per_s_per_gpu));
  }
  return absl::OkStatus();
}

// Every parallel degree positive and bounded, their product the GPU count, whole nodes.
absl::Status ValidateLayoutDegrees(const Scenario& s, const std::string& origin) {
  const ParallelConfig& p = s.parallel;
  const ModelSpec& m = s.model;
  for (auto [name, v] : {std::pair<const char*, int64_t>{"tp", p.tp},
                         {"pp", p.pp},
                         {"vpp", p.vpp},
                         {"cp", p.cp},
                         {"ep", p.ep},
                         {"etp", p.etp},
                         {"dp", p.dp}}) {
    if (v <= 0) {
      return JsonFieldError(origin, absl::StrCat("/parallel/", name),
                            absl::StrCat("must be > 0, got ", v));
    }
    // Each degree is at most the GPU count (ep, etp and vpp too: EP and ETP borrow GPUs, and no
    // stage holds more model chunks than there are GPUs, let alone layers), which keeps their
    // products (tp·pp·cp·dp, pp·vpp, ep·etp) far inside int64.
    if (v > kMaxGpus) {
      return JsonFieldError(
          origin, absl::StrCat("/parallel/", name),
          absl::StrCat("must be <= ", kMaxGpus, " (beyond any training run), got ", v));
    }
  }
  if (s.num_gpus <= 0) {
    return JsonFieldError(origin, "/num_gpus", absl::StrCat("must be > 0, got ", s.num_gpus));
  }
  // In double: four degrees of up to 2^24 would overflow int64 (exact up to 2^53, and beyond
  // that far above any num_gpus).
  const double layout_gpus = LayoutProduct(p, /*with_dp=*/true);
  if (layout_gpus != static_cast<double>(s.num_gpus)) {
    return Precondition(origin, "/parallel",
                        absl::StrFormat("tp·pp·cp·dp = %d·%d·%d·%d = %.0f does not equal num_gpus "
                                        "%d; the layout must use every GPU exactly once",
                                        p.tp, p.pp, p.cp, p.dp, layout_gpus, s.num_gpus));
  }
  for (auto [name, v] :
       {std::pair<const char*, int64_t>{"first_stage_layers", p.first_stage_layers},
        {"last_stage_layers", p.last_stage_layers}}) {
    if (v > m.num_layers) {
      return JsonFieldError(
          origin, absl::StrCat("/parallel/", name),
          absl::StrCat("must be <= the model's ", m.num_layers, " layers, got ", v));
    }
  }
  if (s.hw.gpus_per_node <= 0) {
    return JsonFieldError(origin, "/gpus_per_node",
                          absl::StrCat("must be > 0, got ", s.hw.gpus_per_node));
  }
  if (s.num_gpus > s.hw.gpus_per_node && s.num_gpus % s.hw.gpus_per_node != 0) {
    return Precondition(origin, "/num_gpus",
                        absl::StrFormat("%d GPUs do not fill whole nodes of %d GPUs; use a "
                                        "multiple of gpus_per_node",
                                        s.num_gpus, s.hw.gpus_per_node));
  }
  return absl::OkStatus();
}

// Attention and key/value heads split (or replicated) evenly over TP.
absl::Status ValidateHeadSplit(const Scenario& s, const std::string& origin) {
  const ParallelConfig& p = s.parallel;
  const ModelSpec& m = s.model;
  if (m.num_attention_heads % p.tp != 0) {
    return Precondition(origin, "/parallel/tp",
                        absl::StrFormat("%d attention heads of %s are not divisible by tp %d; "
                                        "tp must divide the head count",
                                        m.num_attention_heads, m.name, p.tp));
  }
  if (!m.mla) {
    bool kv_ok = m.num_kv_heads >= p.tp ? m.num_kv_heads % p.tp == 0 : p.tp % m.num_kv_heads == 0;
    if (!kv_ok) {
      return Precondition(origin, "/parallel/tp",
                          absl::StrFormat("%d key/value heads of %s cannot be split or replicated "
                                          "evenly over tp %d; tp must divide or be a multiple of "
                                          "the kv head count",
                                          m.num_kv_heads, m.name, p.tp));
    }
  }
  return absl::OkStatus();
}

// The layers dealt over pp·vpp model chunks, evenly or with the uneven first/last stage.
absl::Status ValidatePipelineSplit(const Scenario& s, const std::string& origin) {
  const ParallelConfig& p = s.parallel;
  const ModelSpec& m = s.model;
  if (p.vpp > 1 && p.pp == 1) {
    return Precondition(origin, "/parallel/vpp",
                        absl::StrFormat("vpp %d needs pipeline parallelism (pp > 1)", p.vpp));
  }
  if (p.pipeline_schedule == PipelineSchedule::kZeroBubbleH1 && p.vpp > 1) {
    return Precondition(origin, "/parallel/pipeline_schedule",
                        absl::StrFormat("zb-h1 runs one model chunk per pipeline rank, got vpp "
                                        "%d; use vpp 1, or the 1f1b schedule (interleaved "
                                        "with vpp > 1)",
                                        p.vpp));
  }
  int64_t chunks = p.pp * p.vpp;
  bool uneven = p.first_stage_layers > 0 || p.last_stage_layers > 0;
  if (uneven) {
    if (p.pp < 2) {
      return Precondition(origin, "/parallel/first_stage_layers",
                          "an uneven first/last stage needs pp >= 2");
    }
    int64_t middle_stages = p.pp - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
    int64_t rest = m.num_layers - p.first_stage_layers - p.last_stage_layers;
    if (rest < 0) {
      return Precondition(
          origin, "/parallel/first_stage_layers",
          absl::StrFormat("first %d + last %d stage layers exceed the %d layers of "
                          "%s",
                          p.first_stage_layers, p.last_stage_layers, m.num_layers, m.name));
    }
    if (rest < 0 || (middle_stages > 0 && rest % middle_stages != 0) ||
        (middle_stages == 0 && rest != 0)) {
      return Precondition(
          origin, "/parallel/first_stage_layers",
          absl::StrFormat("%d layers minus first %d and last %d do not split "
                          "evenly over the %d remaining stages",
                          m.num_layers, p.first_stage_layers, p.last_stage_layers, middle_stages));
    }
    // With vpp > 1 every stage's layers are dealt over its vpp model chunks (the first chunks
    // taking one more when they do not divide), so each stage needs a layer per chunk.
    const int64_t middle = middle_stages > 0 ? rest / middle_stages : 0;
    int64_t fewest = std::numeric_limits<int64_t>::max();
    for (int64_t n : {p.first_stage_layers > 0 ? p.first_stage_layers : middle,
                      p.last_stage_layers > 0 ? p.last_stage_layers : middle}) {
      fewest = std::min(fewest, n);
    }
    if (middle_stages > 0) fewest = std::min(fewest, middle);
    if (p.vpp > 1 && fewest < p.vpp) {
      return Precondition(
          origin, "/parallel/vpp",
          absl::StrFormat("a stage of %d layers cannot fill vpp %d model chunks "
                          "(first %d, last %d, middle %d); give each stage at "
                          "least vpp layers or lower vpp",
                          fewest, p.vpp, p.first_stage_layers, p.last_stage_layers, middle));
    }
  } else if (!LayersSplitEvenly(m.num_layers, chunks)) {
    // (layers + 2) divisible is accepted: Megatron's embedding/loss-aware pipeline split gives
    // the first and last virtual stage one layer less.
    std::string hint;
    if (auto split = SuggestUnevenSplit(m.num_layers, p.pp, p.vpp, m.mtp_layers);
        split && split->second >= p.vpp) {
      hint = absl::StrFormat(" (e.g. first_stage_layers %d, last_stage_layers %d)", split->first,
                             split->second);
    }
    return Precondition(origin, "/parallel/pp",
                        absl::StrFormat("%d layers of %s are not divisible by pp·vpp = %d; choose "
                                        "pp·vpp dividing the layer count (or layers + 2, for "
                                        "the embedding/loss-aware split) or give "
                                        "first_stage_layers/last_stage_layers%s",
                                        m.num_layers, m.name, chunks, hint));
  }
  return absl::OkStatus();
}

// Experts over EP, EP·ETP inside the data-parallel ranks, the expert FFN over ETP.
absl::Status ValidateExpertSplit(const Scenario& s, const std::string& origin) {
  const ParallelConfig& p = s.parallel;
  const ModelSpec& m = s.model;
  if (m.moe) {
    if (m.moe->num_experts % p.ep != 0) {
      return Precondition(origin, "/parallel/ep",
                          absl::StrFormat("%d experts of %s are not divisible by ep %d",
                                          m.moe->num_experts, m.name, p.ep));
    }
    if ((p.tp * p.cp * p.dp) % (p.ep * p.etp) != 0) {
      return Precondition(origin, "/parallel/ep",
                          absl::StrFormat("ep·etp = %d must divide tp·cp·dp = %d (expert "
                                          "parallelism borrows from the data-parallel ranks)",
                                          p.ep * p.etp, p.tp * p.cp * p.dp));
    }
    if (m.moe->expert_ffn_hidden % p.etp != 0) {
      return Precondition(origin, "/parallel/etp",
                          absl::StrFormat("expert FFN %d is not divisible by etp %d",
                                          m.moe->expert_ffn_hidden, p.etp));
    }
  } else if (p.ep > 1) {
    return Precondition(
        origin, "/parallel/ep",
        absl::StrFormat("ep %d given but %s has no experts; use ep 1", p.ep, m.name));
  }
  return absl::OkStatus();
}

// Sequence over CP (and TP under SP), the global batch over micro-batches and DP, and the sizes a
// replay can hold.
absl::Status ValidateBatchShape(const Scenario& s, const std::string& origin) {
  const ParallelConfig& p = s.parallel;
  const TrainingConfig& t = s.training;
  if (t.seq_len <= 0 || t.micro_batch <= 0 || t.global_batch <= 0) {
    return JsonFieldError(origin, "/training", "seq_len, micro_batch and global_batch must be > 0");
  }
  if (t.seq_len % p.cp != 0) {
    return Precondition(origin, "/training/seq_len",
                        absl::StrFormat("seq_len %d is not divisible by cp %d", t.seq_len, p.cp));
  }
  if (p.sequence_parallel && t.seq_len / p.cp % p.tp != 0) {
    return Precondition(origin, "/parallel/sequence_parallel",
                        absl::StrFormat("sequence parallelism needs seq_len/cp = %d divisible by "
                                        "tp %d",
                                        t.seq_len / p.cp, p.tp));
  }
  if (t.global_batch % (t.micro_batch * p.dp) != 0) {
    return Precondition(origin, "/training/global_batch",
                        absl::StrFormat("global batch %d is not divisible by micro_batch·dp = "
                                        "%d·%d = %d",
                                        t.global_batch, t.micro_batch, p.dp, t.micro_batch * p.dp));
  }
  if (!InterleavedMicroBatchesFit(p, t.global_batch / (t.micro_batch * p.dp))) {
    return Precondition(
        origin, "/training/global_batch",
        absl::StrFormat("the interleaved schedule (vpp %d) needs the micro-batches per step, "
                        "global_batch / (micro_batch·dp) = %d, divisible by pp %d (Megatron-LM "
                        "runs them in groups of pp per model chunk; with a shorter last group "
                        "its order waits on itself); accepted: a global batch that is a multiple "
                        "of micro_batch·dp·pp = %d, or vpp 1",
                        p.vpp, t.global_batch / (t.micro_batch * p.dp), p.pp,
                        t.micro_batch * p.dp * p.pp));
  }
  if (t.global_batch / (t.micro_batch * p.dp) > kMaxMicroBatchesPerStep) {
    return JsonFieldError(
        origin, "/training/global_batch",
        absl::StrFormat("%d micro-batches per step (global_batch / (micro_batch·dp)) are more "
                        "than the %d a projection replays; accepted: a global batch of at most "
                        "%d sequences at this micro-batch and dp",
                        t.global_batch / (t.micro_batch * p.dp), kMaxMicroBatchesPerStep,
                        kMaxMicroBatchesPerStep * t.micro_batch * p.dp));
  }
  if (t.micro_batch * t.seq_len > kMaxTokensPerMicroBatch) {
    return JsonFieldError(origin, "/training/micro_batch",
                          absl::StrFormat("micro_batch·seq_len = %d tokens per micro-batch is "
                                          "beyond any training run; accepted: at most %d",
                                          t.micro_batch * t.seq_len, kMaxTokensPerMicroBatch));
  }
  return absl::OkStatus();
}

// training.fp8_recipe: only with precision fp8; MXFP8 only on a GPU with MX block-scaled
// matrix cores (HasMxBlockScaling).
absl::Status ValidateFp8Recipe(const Scenario& s, const std::string& origin) {
  const TrainingConfig& t = s.training;
  if (t.fp8_recipe == Fp8Recipe::kAuto) return absl::OkStatus();
  if (t.precision != DType::kFp8) {
    return Precondition(origin, "/training/fp8_recipe",
                        absl::StrFormat("an FP8 recipe applies to precision fp8 only, got "
                                        "precision %s; set precision fp8 or leave the recipe out",
                                        DTypeName(t.precision)));
  }
  if (t.fp8_recipe == Fp8Recipe::kMxfp8 && !HasMxBlockScaling(s.hw.gpu.arch)) {
    return Precondition(origin, "/training/fp8_recipe",
                        absl::StrFormat("mxfp8 needs MX block-scaled matrix cores (NVIDIA "
                                        "Blackwell sm_100+, AMD gfx950); %s is %s: use delayed, "
                                        "tensorwise, blockwise or rowwise",
                                        s.hw.name, s.hw.gpu.arch));
  }
  return absl::OkStatus();
}

}  // namespace

// training.recompute_modules: Megatron-Core's, under selective recompute, each module one the
// model has (a module that re-runs nothing is a mistake in the input, not a no-op to ignore).
absl::Status ValidateRecomputeModules(const Scenario& s, const std::string& origin) {
  const TrainingConfig& t = s.training;
  if (t.recompute_modules == kDefaultRecomputeModules) return absl::OkStatus();
  const std::string kField = "/training/recompute_modules";
  if (t.recompute != Recompute::kSelective) {
    return Precondition(origin, kField,
                        absl::StrFormat("recompute_modules (%s) apply to recompute selective "
                                        "(Megatron-Core's recompute_granularity); recompute is %s",
                                        RecomputeModulesName(t.recompute_modules),
                                        RecomputeName(t.recompute)));
  }
  if (const TrainingStack stack = ResolvedStack(t, s.parallel); stack != TrainingStack::kMegatron) {
    return Precondition(
        origin, kField,
        absl::StrFormat("recompute_modules are Megatron-Core's; the %s stack's selective "
                        "recompute is its own (leave recompute_modules unset or use stack megatron)",
                        TrainingStackName(stack)));
  }
  const ModelSpec& m = s.model;
  const bool moe = m.moe.has_value() && m.NumMoeLayers() > 0;
  struct Needs {
    RecomputeModule module;
    bool present;
    std::string_view what;
  };
  const Needs needs[] = {
      {RecomputeModule::kMlaUpProj, m.mla.has_value(), "multi-latent attention"},
      {RecomputeModule::kLayernorm, m.mla.has_value() || moe,
       "a norm of its own (MLA's input norm or a MoE layer's pre-MLP norm; Megatron fuses the "
       "others into their linear layers)"},
      {RecomputeModule::kMoeAct, moe, "MoE layers"},
      {RecomputeModule::kMoe, moe, "MoE layers"},
      {RecomputeModule::kSharedExperts, moe && m.moe->num_shared_experts > 0, "shared experts"},
      {RecomputeModule::kMlp, m.NumDenseLayers() > 0, "dense MLP layers"},
  };
  for (const Needs& n : needs) {
    if ((t.recompute_modules & RecomputeBit(n.module)) != 0 && !n.present) {
      return Precondition(origin, kField,
                          absl::StrFormat("%s re-runs nothing: model %s has no %s",
                                          RecomputeModuleName(n.module), m.name, n.what));
    }
  }
  return absl::OkStatus();
}

namespace {

// The attention kernel, the recomputed layers and the precision the GPU runs.
absl::Status ValidateKernelsAndRecompute(const Scenario& s, const std::string& origin) {
  const ParallelConfig& p = s.parallel;
  const ModelSpec& m = s.model;
  const TrainingConfig& t = s.training;
  if (t.attention_kernel == AttentionKernel::kUnfused && p.cp > 1) {
    // Megatron's context parallelism is a ring over Transformer Engine's fused attention; the
    // unfused path has no CP implementation.
    return Precondition(origin, "/training/attention_kernel",
                        "attention_kernel unfused does not support cp > 1 (context parallelism "
                        "runs a ring of fused attention kernels); use flash or cp 1");
  }
  PROJECTOR_RETURN_IF_ERROR(ValidateRecomputeModules(s, origin));
  int64_t layers_per_stage = m.num_layers / p.pp;
  if (t.recompute_layers > 0 && t.recompute != Recompute::kFull) {
    return Precondition(origin, "/training/recompute_layers",
                        "recompute_layers applies to full recompute only; set recompute full");
  }
  if (t.recompute_layers > layers_per_stage + p.first_stage_layers + p.last_stage_layers) {
    return Precondition(origin, "/training/recompute_layers",
                        absl::StrFormat("recompute_layers %d exceeds the %d layers of a stage",
                                        t.recompute_layers, layers_per_stage));
  }
  double rate = s.hw.gpu.matrix_flops_per_clock_per_cu[DTypeIndex(t.precision)];
  if (rate <= 0) {
    // What the GPU has a matrix rate for (fp32, on the CUDA cores, always).
    std::string supported;
    for (DType d : kAllDTypes) {
      if (s.hw.gpu.matrix_flops_per_clock_per_cu[DTypeIndex(d)] > 0) {
        absl::StrAppend(&supported, supported.empty() ? "" : ", ", std::string(DTypeName(d)));
      }
    }
    return absl::UnimplementedError(
        absl::StrFormat("%s: /training/precision: %s has no %s matrix rate; accepted: %s", origin,
                        s.hw.name, DTypeName(t.precision), supported));
  }
  if (t.tf_amp && t.precision != DType::kFp16 && t.precision != DType::kBf16) {
    return Precondition(origin, "/training/tf_amp",
                        absl::StrFormat("TensorFlow's automatic mixed precision casts to fp16 "
                                        "or bf16, got precision %s; set precision fp16 or bf16 "
                                        "or tf_amp false",
                                        DTypeName(t.precision)));
  }
  return ValidateFp8Recipe(s, origin);
}

}  // namespace

absl::Status ValidateScenario(const Scenario& s, const std::string& origin) {
  PROJECTOR_RETURN_IF_ERROR(ValidateRunBounds(s, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateLayoutDegrees(s, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateHeadSplit(s, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidatePipelineSplit(s, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateExpertSplit(s, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateMoeRouting(s, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateBatchShape(s, origin));
  return ValidateKernelsAndRecompute(s, origin);
}

absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path) {
  PROJECTOR_ASSIGN_OR_RETURN(json root, ReadConfigFile(path));
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject obj, JsonObject::Make(root, path, ""));
  std::string base = DirOf(path);
  Scenario s;
  PROJECTOR_ASSIGN_OR_RETURN(s.name, obj.StringOr("name", path));
  PROJECTOR_ASSIGN_OR_RETURN(s.model, ModelFromJson(obj, "model", base));
  PROJECTOR_ASSIGN_OR_RETURN(s.hw, GpuFromJson(obj, "gpu", base));
  bool num_gpus_given = obj.Has("num_gpus");
  PROJECTOR_ASSIGN_OR_RETURN(s.num_gpus, obj.IntOr("num_gpus", 0));
  if (num_gpus_given) PROJECTOR_RETURN_IF_ERROR(obj.PositiveInt("num_gpus").status());
  if (obj.Has("gpus_per_node")) {
    PROJECTOR_ASSIGN_OR_RETURN(s.hw.gpus_per_node, obj.PositiveInt("gpus_per_node"));
  } else {
    obj.Accept("gpus_per_node");
  }
  if (obj.Has("gpu_clock_mhz")) {
    PROJECTOR_ASSIGN_OR_RETURN(double mhz, obj.PositiveNumber("gpu_clock_mhz"));
    s.hw.gpu.sustained_clock = Megahertz(mhz);
  } else {
    obj.Accept("gpu_clock_mhz");
  }
  bool dp_given = false;
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<JsonObject> parallel, obj.OptionalObject("parallel"));
  if (parallel) PROJECTOR_RETURN_IF_ERROR(ParseParallel(*parallel, s.parallel, dp_given));
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject training, obj.Object("training"));
  PROJECTOR_RETURN_IF_ERROR(ParseTraining(training, s.training));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<JsonObject> backends, obj.OptionalObject("backends"));
  if (backends) PROJECTOR_RETURN_IF_ERROR(ParseBackends(*backends, s.backends));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<double> measured,
                             obj.OptionalNumber("measured_tokens_per_s_per_gpu"));
  s.measured_tokens_per_s_per_gpu = measured;
  PROJECTOR_RETURN_IF_ERROR(obj.CheckNoUnknownKeys());
  PROJECTOR_RETURN_IF_ERROR(Complete(s, dp_given, num_gpus_given, path));
  DefaultDistributedOptimizer(parallel && parallel->Has("distributed_optimizer"), s);
  PROJECTOR_RETURN_IF_ERROR(ResolveKernels(s, path));
  PROJECTOR_RETURN_IF_ERROR(ValidateScenario(s, path));
  return s;
}

absl::StatusOr<double> ClassicCaseSamplesPerSecondPerGpu(const json& value,
                                                        const std::string& origin) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject obj, JsonObject::Make(value, origin, ""));
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject measured, obj.Object("measured"));
  PROJECTOR_ASSIGN_OR_RETURN(double throughput, measured.PositiveNumber("throughput"));
  PROJECTOR_ASSIGN_OR_RETURN(std::string unit,
                             measured.Enum("unit", {"sequences/s", "tokens/s", "images/s"}));
  PROJECTOR_ASSIGN_OR_RETURN(std::string scope, measured.Enum("scope", {"total", "per_gpu"}));
  PROJECTOR_RETURN_IF_ERROR(measured.CheckNoUnknownKeys());
  PROJECTOR_ASSIGN_OR_RETURN(int64_t num_gpus, obj.PositiveInt("num_gpus"));
  double per_gpu = scope == "total" ? throughput / static_cast<double>(num_gpus) : throughput;
  if (unit == "sequences/s") {
    PROJECTOR_ASSIGN_OR_RETURN(int64_t seq_len, obj.PositiveInt("seq_len"));
    per_gpu *= static_cast<double>(seq_len);
  }
  return per_gpu;
}

namespace {

// A classic case's precision: automatic mixed precision ("amp-fp16") trains its GEMMs in the
// 16-bit type.
absl::StatusOr<DType> ClassicPrecision(JsonObject& obj) {
  PROJECTOR_ASSIGN_OR_RETURN(std::string precision,
                             obj.Enum("precision", {"amp-fp16", "fp16", "fp32", "amp-bf16", "bf16"}));
  return precision.ends_with("fp32")   ? DType::kFp32
         : precision.ends_with("bf16") ? DType::kBf16
                                       : DType::kFp16;
}

// The fields every case of the classic schema states (../shared/calibration/classic_public.jsonl):
// the framework, the model by name, the GPUs, the precision, the images or sequences per GPU and
// step, and the measured throughput; each reader adds its model kind's own fields.
struct ClassicRun {
  std::string id;
  std::string framework;
  std::string model;
  HardwareProfile hw;
  int64_t num_gpus = 1;
  int64_t per_gpu_batch = 1;
  DType precision = DType::kFp16;
  double measured_samples_per_s_per_gpu = 0;
};

absl::StatusOr<ClassicRun> ReadClassicRun(JsonObject& obj, const json& value,
                                          const std::string& origin) {
  ClassicRun r;
  PROJECTOR_ASSIGN_OR_RETURN(r.id, obj.String("id"));
  PROJECTOR_RETURN_IF_ERROR(obj.String("source").status());
  PROJECTOR_RETURN_IF_ERROR(obj.StringOr("notes", "").status());
  PROJECTOR_ASSIGN_OR_RETURN(r.framework, obj.Enum("framework", {"tensorflow", "pytorch"}));
  PROJECTOR_ASSIGN_OR_RETURN(r.model, obj.String("model"));
  PROJECTOR_ASSIGN_OR_RETURN(r.hw, GpuFromJson(obj, "gpu", ""));
  PROJECTOR_ASSIGN_OR_RETURN(r.num_gpus, obj.PositiveInt("num_gpus"));
  PROJECTOR_ASSIGN_OR_RETURN(r.hw.gpus_per_node, obj.PositiveInt("gpus_per_node"));
  PROJECTOR_ASSIGN_OR_RETURN(r.precision, ClassicPrecision(obj));
  PROJECTOR_ASSIGN_OR_RETURN(r.per_gpu_batch, obj.PositiveInt("per_gpu_batch"));
  PROJECTOR_ASSIGN_OR_RETURN(r.measured_samples_per_s_per_gpu,
                             ClassicCaseSamplesPerSecondPerGpu(value, origin));
  obj.Accept("measured");
  return r;
}

// A language model's classic case: data parallelism over every GPU, one micro-batch of
// per_gpu_batch per GPU and step.
absl::StatusOr<Scenario> ScenarioFromClassicCase(const json& value, const std::string& origin) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject obj, JsonObject::Make(value, origin, ""));
  PROJECTOR_ASSIGN_OR_RETURN(const ClassicRun run, ReadClassicRun(obj, value, origin));
  if (IsImageCase(value)) {
    return absl::UnimplementedError(absl::StrCat(
        origin, ": /model: ", run.model,
        " is an image model: `project estimate convnet` projects its training (and `validate` "
        "its case); `project` projects transformers"));
  }
  obj.Accept("image_size");
  Scenario s;
  s.name = run.id;
  const std::string& framework = run.framework;
  PROJECTOR_ASSIGN_OR_RETURN(s.model, ResolveModel(run.model));
  s.hw = run.hw;
  s.num_gpus = run.num_gpus;
  s.training.precision = run.precision;
  s.training.micro_batch = run.per_gpu_batch;
  PROJECTOR_ASSIGN_OR_RETURN(s.training.seq_len, obj.PositiveInt("seq_len"));
  s.training.global_batch = s.training.micro_batch * s.num_gpus;
  s.measured_tokens_per_s_per_gpu = run.measured_samples_per_s_per_gpu;
  PROJECTOR_RETURN_IF_ERROR(obj.CheckNoUnknownKeys());
  s.parallel.dp = s.num_gpus;
  s.parallel.distributed_optimizer = false;
  s.defaults_used.push_back(absl::StrFormat(
      "framework %s: plain data parallelism (Horovod or DDP all-reduce, no sharded optimizer), "
      "one micro-batch of %d per GPU and step (the schema has no gradient accumulation, which "
      "would spread the all-reduce and the optimizer step over more micro-batches: both are "
      "counted every micro-batch here)",
      framework, s.training.micro_batch));
  if (framework == "tensorflow") {
    // TF1's BERT writes attention as matmuls (modeling.py attention_layer: tf.matmul for the
    // scores and the context); XLA fuses the softmax and dropout around them.
    PROJECTOR_RETURN_IF_ERROR(SetAttentionKernel("unfused", s.training));
    s.defaults_used.push_back(
        "framework tensorflow: attention as two GEMMs around the softmax (TF1 BERT's "
        "modeling.py; no fused attention kernel), the rest as the Megatron stack's fused kernels "
        "(XLA's fusions)");
    // The cases' "amp" precision is TF's automatic mixed precision graph rewrite (--amp in
    // DeepLearningExamples' TF1 scripts).
    if (run.precision != DType::kFp32) {
      s.training.tf_amp = true;
      s.defaults_used.push_back(
          "tf_amp=true (framework tensorflow, mixed precision: TF's AMP graph rewrite keeps "
          "fp32 variables cast at every use and the elementwise work between the GEMMs in fp32; "
          "--tf-amp false for fused half-precision kernels)");
    }
  }
  s.defaults_used.push_back(absl::StrFormat("interconnect from hw profile %s", s.hw.name));
  PROJECTOR_RETURN_IF_ERROR(ResolveKernels(s, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateScenario(s, origin));
  return s;
}

}  // namespace

bool IsImageCase(const json& value) {
  return value.is_object() && value.contains("per_gpu_batch") && value.contains("image_size") &&
         !value["image_size"].is_null();
}

absl::StatusOr<ConvNetCase> ConvNetCaseFromJson(const json& value, const std::string& origin) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject obj, JsonObject::Make(value, origin, ""));
  PROJECTOR_ASSIGN_OR_RETURN(ClassicRun run, ReadClassicRun(obj, value, origin));
  ConvNetCase c;
  absl::StatusOr<ConvNetSpec> spec = ResolveConvNet(run.model);
  if (!spec.ok()) return obj.FieldError("model", std::string(spec.status().message()));
  c.spec = *std::move(spec);
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t image_size, obj.PositiveInt("image_size"));
  if (image_size != c.spec.image_size) {
    return obj.FieldError("image_size", absl::StrCat(c.spec.name, " is defined at ",
                                                     c.spec.image_size, "x", c.spec.image_size,
                                                     "; got ", image_size));
  }
  obj.Accept("seq_len");
  PROJECTOR_RETURN_IF_ERROR(obj.CheckNoUnknownKeys());
  c.hw = std::move(run.hw);
  c.num_gpus = run.num_gpus;
  c.images_per_gpu = run.per_gpu_batch;
  c.precision = run.precision;
  c.measured_images_per_s_per_gpu = run.measured_samples_per_s_per_gpu;
  return c;
}

absl::StatusOr<Scenario> ScenarioFromCase(const json& value, const std::string& origin) {
  if (value.is_object() && value.contains("per_gpu_batch")) {
    return ScenarioFromClassicCase(value, origin);
  }
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject obj, JsonObject::Make(value, origin, ""));
  Scenario s;
  PROJECTOR_ASSIGN_OR_RETURN(s.name, obj.String("id"));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string source, obj.String("source"));
  PROJECTOR_RETURN_IF_ERROR(obj.StringOr("notes", "").status());
  obj.Accept("model");
  if (!obj.Has("model")) return obj.FieldError("model", "required field is missing");
  PROJECTOR_ASSIGN_OR_RETURN(s.model, ParseModelJson(value.at("model"), origin, "/model"));
  PROJECTOR_ASSIGN_OR_RETURN(s.hw, GpuFromJson(obj, "gpu", ""));
  PROJECTOR_ASSIGN_OR_RETURN(s.num_gpus, obj.PositiveInt("num_gpus"));
  PROJECTOR_ASSIGN_OR_RETURN(s.hw.gpus_per_node, obj.PositiveInt("gpus_per_node"));
  PROJECTOR_ASSIGN_OR_RETURN(std::string precision, obj.Enum("precision", kPrecisions));
  s.training.precision = *ParseDType(precision);
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject parallel, obj.Object("parallel"));
  bool dp_given = false;
  PROJECTOR_RETURN_IF_ERROR(ParseParallel(parallel, s.parallel, dp_given));
  PROJECTOR_ASSIGN_OR_RETURN(s.training.seq_len, obj.PositiveInt("seq_len"));
  PROJECTOR_ASSIGN_OR_RETURN(s.training.micro_batch, obj.PositiveInt("micro_batch"));
  PROJECTOR_ASSIGN_OR_RETURN(s.training.global_batch, obj.PositiveInt("global_batch"));
  PROJECTOR_ASSIGN_OR_RETURN(std::string recompute, obj.Enum("recompute", kRecomputes));
  s.training.recompute = *ParseRecompute(recompute);
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject measured, obj.Object("measured"));
  PROJECTOR_ASSIGN_OR_RETURN(double tgs, measured.PositiveNumber("tokens_per_s_per_gpu"));
  if (tgs > kMaxMeasuredTokensPerSecondPerGpu) {
    return measured.FieldError(
        "tokens_per_s_per_gpu",
        absl::StrFormat("must be <= %g tokens/s per GPU (beyond any GPU), got %g",
                        kMaxMeasuredTokensPerSecondPerGpu, tgs));
  }
  PROJECTOR_RETURN_IF_ERROR(measured.CheckNoUnknownKeys());
  s.measured_tokens_per_s_per_gpu = tgs;
  // Optional, beyond the published schema: how the run executed (training.stack, its kernels,
  // the communication switches) and the clock it sustained, for cases whose source states them.
  if (obj.Has("gpu_clock_mhz")) {
    PROJECTOR_ASSIGN_OR_RETURN(double mhz, obj.PositiveNumber("gpu_clock_mhz"));
    s.hw.gpu.sustained_clock = Megahertz(mhz);
  } else {
    obj.Accept("gpu_clock_mhz");
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<JsonObject> training, obj.OptionalObject("training"));
  if (training) {
    PROJECTOR_RETURN_IF_ERROR(ParseTrainingSwitches(*training, s.training));
    PROJECTOR_RETURN_IF_ERROR(training->CheckNoUnknownKeys());
  }
  PROJECTOR_RETURN_IF_ERROR(obj.CheckNoUnknownKeys());
  // The framework that ran the case, when the case does not state the stack and its source
  // names one.
  if (const std::optional<TrainingStack> named = StackNamedBySource(source);
      named && s.training.stack == TrainingStack::kAuto) {
    s.training.stack = *named;
    s.defaults_used.push_back(
        absl::StrFormat("stack named by the case's source: %s (%s; --stack for another)",
                        TrainingStackName(*named), source));
  }
  // What the case does not state, the tool's defaults decide.
  DefaultDistributedOptimizer(parallel.Has("distributed_optimizer"), s);
  const bool sc21 = SourceIsMegatronSc21(source);
  if (sc21) DefaultMegatronSc21(parallel.Has("distributed_optimizer"), training, s);
  std::vector<std::string> unstated;
  for (const char* key : {"overlap_grad_reduce", "overlap_param_gather"}) {
    const bool set_by_source = sc21 && std::string_view(key) == "overlap_grad_reduce";
    if ((!training || !training->Has(key)) && !set_by_source) {
      unstated.push_back(absl::StrCat(key, "=true"));
    }
  }
  const bool reduce_dtype_stated = training && training->Has("grad_reduce_dtype");
  if (!reduce_dtype_stated && !SourceIsMegatronBridgePresets(source)) {
    unstated.push_back("grad_reduce_dtype=fp32");
  }
  if (!unstated.empty()) s.defaults_used.push_back(absl::StrJoin(unstated, ", "));
  if (SourceIsMegatronBridgePresets(source)) DefaultMegatronBridgePresets(reduce_dtype_stated, s);
  s.defaults_used.push_back(absl::StrFormat("interconnect from hw profile %s", s.hw.name));
  const std::optional<ModelSpec> twin = LibraryTwin(s.model);
  s.defaults_used.push_back(absl::StrFormat(
      "position_embedding=%s (%s; the case format has no field for it)",
      PositionEmbeddingName(s.model.position_embedding),
      twin ? absl::StrCat("the library model ", twin->name, " of the same name and shape")
      : s.model.position_embedding == PositionEmbedding::kLearned
          ? "a GELU/LayerNorm GPT model: learned absolute positions, Megatron-LM's default"
          : "the default for a SwiGLU model"));
  if (twin) {
    std::vector<std::string> taken;
    if (s.model.qk_norm) taken.push_back("qk_norm=true");
    if (s.model.mtp_layers > 0) taken.push_back(absl::StrCat("mtp_layers=", s.model.mtp_layers));
    if (s.model.moe && s.model.moe->num_groups > 0) {
      taken.push_back(absl::StrFormat("moe routing limited to %d of %d expert groups",
                                      s.model.moe->topk_groups, s.model.moe->num_groups));
    }
    if (!taken.empty()) {
      s.defaults_used.push_back(absl::StrFormat(
          "%s (the library model %s of the same name and shape; the case format has no field "
          "for them)",
          absl::StrJoin(taken, ", "), twin->name));
    }
  }
  PROJECTOR_RETURN_IF_ERROR(Complete(s, dp_given, true, origin));
  // The case format cannot state an uneven pipeline split, which a run whose layers pp does not
  // divide must have used (Megatron's --decoder-first/last-pipeline-num-layers).
  if (const int64_t L = s.model.num_layers; !LayersSplitEvenly(L, s.parallel.pp * s.parallel.vpp)) {
    // The last stage holds the fewest layers; each stage needs one per model chunk.
    if (auto split = SuggestUnevenSplit(L, s.parallel.pp, s.parallel.vpp, s.model.mtp_layers);
        split && split->second >= s.parallel.vpp) {
      s.parallel.first_stage_layers = split->first;
      s.parallel.last_stage_layers = split->second;
      s.defaults_used.push_back(absl::StrFormat(
          "first_stage_layers=%d, last_stage_layers=%d (%d layers do not divide over pp %d and "
          "the case format states no split; middle stages at the fewest layers any split "
          "allows%s)",
          split->first, split->second, L, s.parallel.pp,
          s.model.mtp_layers > 0 && s.parallel.vpp <= 1
              ? ", the first stage as many, the last the rest beside the MTP module, as "
                "Megatron-Bridge's DeepSeek-V3 layouts place them"
              : ""));
    }
  }
  if (!parallel.Has("deepep") &&
      CaseDispatchesWithDeepEp(s.model, s.parallel, s.training, s.hw.gpus_per_node)) {
    s.parallel.deepep = true;
    s.defaults_used.push_back(absl::StrFormat(
        "deepep=true (the case names no dispatcher: a dropless MoE with routing limited to %d of "
        "%d expert groups, its EP group of %d across nodes, on the megatron stack dispatches with "
        "DeepEP, as Megatron-Core recommends for cross-node EP and Megatron-Bridge's DeepSeek-V3 "
        "presets run it; --deepep=false for NCCL All-to-All)",
        s.model.moe->topk_groups, s.model.moe->num_groups, s.parallel.ep));
  }
  PROJECTOR_RETURN_IF_ERROR(ResolveKernels(s, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateScenario(s, origin));
  return s;
}

absl::StatusOr<Scenario> LoadCalibrationCase(const std::string& file_colon_id) {
  size_t colon = file_colon_id.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == file_colon_id.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--case: expected FILE:ID (e.g. cases.jsonl:megatron_sc21_table1_1.7b), got '",
                     file_colon_id, "'"));
  }
  std::string path = file_colon_id.substr(0, colon);
  std::string id = file_colon_id.substr(colon + 1);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  std::string line;
  int64_t line_no = 0;
  std::vector<std::string> ids;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string origin = absl::StrCat(path, ":", line_no);
    PROJECTOR_ASSIGN_OR_RETURN(json value, ParseJsonText(line, origin));
    if (!value.is_object() || !value.contains("id") || !value["id"].is_string()) {
      return JsonFieldError(origin, "/id", "every case needs a string id");
    }
    if (value["id"].get<std::string>() == id) return ScenarioFromCase(value, origin);
    if (ids.size() < 8) ids.push_back(value["id"].get<std::string>());
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": no case with id '", id,
                                                 "'; ids start with: ", absl::StrJoin(ids, ", "),
                                                 ids.size() == 8 ? ", ..." : ""));
}

}  // namespace projector
