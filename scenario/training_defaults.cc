#include "scenario/training_defaults.h"

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace projector {

bool IsGptStyle(const ModelSpec& model) {
  return model.mlp == MlpKind::kGelu && model.norm == NormKind::kLayerNorm;
}

DropoutRates ResolvedDropout(const ModelSpec& model, const ParallelConfig& parallel,
                             const TrainingConfig& training) {
  const double stack_default =
      ResolvedStack(training, parallel) == TrainingStack::kMegatron && IsGptStyle(model)
          ? kMegatronDefaultDropout
          : 0.0;
  auto resolve = [&](double p) { return p == kAutoDropout ? stack_default : p; };
  return {.hidden = resolve(training.hidden_dropout),
          .attention = resolve(training.attention_dropout)};
}

bool SourceIsMegatronBridgePresets(std::string_view source) {
  return source.find("Megatron-Bridge") != std::string_view::npos;
}

bool SourceIsMegatronSc21(std::string_view source) {
  return source.find("Efficient Large-Scale Language Model Training on GPU Clusters") !=
             std::string_view::npos ||
         (source.find("SC21") != std::string_view::npos &&
          source.find("Megatron") != std::string_view::npos);
}

std::optional<TrainingStack> StackNamedBySource(std::string_view source) {
  struct Named {
    std::string_view text;  // found in the source, case-sensitively
    TrainingStack stack;
  };
  static constexpr Named kNamed[] = {{"torchtitan", TrainingStack::kTorchTitan},
                                     {"llm-foundry", TrainingStack::kLlmFoundry},
                                     {"Megatron", TrainingStack::kMegatron},
                                     {"NeMo", TrainingStack::kMegatron},
                                     {"dgxc-benchmarking", TrainingStack::kMegatron}};
  for (const Named& n : kNamed) {
    if (source.find(n.text) != std::string_view::npos) return n.stack;
  }
  return std::nullopt;
}

bool HasMxBlockScaling(std::string_view arch) {
  if (arch.starts_with("sm_")) {
    int major = 0;
    for (char c : arch.substr(3)) {
      if (c < '0' || c > '9') break;
      major = major * 10 + (c - '0');
    }
    return major >= 100;
  }
  return arch == "gfx950";
}

Fp8Recipe ResolvedFp8Recipe(const TrainingConfig& training, const ParallelConfig& parallel,
                            std::string_view arch) {
  if (training.precision != DType::kFp8) return Fp8Recipe::kDelayed;
  if (training.fp8_recipe != Fp8Recipe::kAuto) return training.fp8_recipe;
  switch (ResolvedStack(training, parallel)) {
    case TrainingStack::kTorchTitan:
      return Fp8Recipe::kTensorwise;
    case TrainingStack::kMegatron:
      return arch.starts_with("sm_") && HasMxBlockScaling(arch) ? Fp8Recipe::kMxfp8
                                                                : Fp8Recipe::kDelayed;
    case TrainingStack::kAuto:
    case TrainingStack::kLlmFoundry:
      break;
  }
  return Fp8Recipe::kDelayed;
}

namespace {

// The megatron stack on an NVIDIA GPU: Transformer Engine's CUDA build (its multi-stream
// GroupedLinear, the cuBLAS scale swizzles), not ROCm's.
bool RunsCudaTransformerEngine(const TrainingConfig& training, const ParallelConfig& parallel,
                               std::string_view arch) {
  return ResolvedStack(training, parallel) == TrainingStack::kMegatron && arch.starts_with("sm_");
}

}  // namespace

bool ResolvedGemmScaleSwizzle(const TrainingConfig& training, const ParallelConfig& parallel,
                              std::string_view arch) {
  if (training.precision != DType::kFp8) return false;
  // ROCm's Transformer Engine builds no swizzle for hipBLASLt (pytorch/csrc/util.h declares
  // swizzle_scaling_factors under #ifndef USE_ROCM).
  if (!RunsCudaTransformerEngine(training, parallel, arch)) return false;
  switch (ResolvedFp8Recipe(training, parallel, arch)) {
    case Fp8Recipe::kMxfp8:
      return true;
    case Fp8Recipe::kBlockwise:
      // pytorch/csrc/extensions/gemm.cpp: "Emulate the FP8 block scaling recipe with MXFP8 on
      // Blackwell and newer as it is not natively supported by cublasLt"
      // (convert_block_scaling_to_mxfp8_tensor, one kernel per operand).
      return HasMxBlockScaling(arch);
    default:
      return false;
  }
}

bool ResolvedMoePermuteFusion(const TrainingConfig& training, const ParallelConfig& parallel) {
  if (training.moe_permute_fusion) return *training.moe_permute_fusion;
  return ResolvedStack(training, parallel) != TrainingStack::kTorchTitan;
}

int64_t ResolvedMoeQuantAlign(const ModelSpec& model, const TrainingConfig& training,
                              const ParallelConfig& parallel, std::string_view arch) {
  if (!model.moe || training.precision != DType::kFp8 ||
      ResolvedStack(training, parallel) != TrainingStack::kMegatron) {
    return 0;
  }
  return ResolvedFp8Recipe(training, parallel, arch) == Fp8Recipe::kMxfp8 ? 32 : 16;
}

bool ResolvedMoeRouterPadding(const TrainingConfig& training, const ParallelConfig& parallel) {
  return training.moe_router_padding.value_or(parallel.deepep);
}

bool MoeRouterPaddingApplies(const ModelSpec& model, const TrainingConfig& training,
                             const ParallelConfig& parallel, std::string_view arch) {
  return ResolvedMoeQuantAlign(model, training, parallel, arch) > 0 &&
         !(training.moe_capacity_factor > 0 && training.moe_pad_to_capacity);
}

bool CaseDispatchesWithDeepEp(const ModelSpec& model, const ParallelConfig& parallel,
                              const TrainingConfig& training, int64_t gpus_per_node) {
  if (!model.moe || model.moe->num_groups <= 0 || training.moe_capacity_factor > 0) return false;
  const ProcessGroup ep = parallel.EpGroup();
  return ResolvedStack(training, parallel) == TrainingStack::kMegatron && ep.size > 1 &&
         ep.size * ep.stride > gpus_per_node;
}

RunChoices ResolveRunChoices(const ModelSpec& model, const ParallelConfig& parallel,
                             const TrainingConfig& training, std::string_view arch) {
  const DropoutRates dropout = ResolvedDropout(model, parallel, training);
  return RunChoices{
      .stack = ResolvedStack(training, parallel),
      .loss_kernel = ResolvedLossKernel(training, parallel),
      .fsdp_impl = ResolvedFsdpImpl(training, parallel),
      .train_metric_passes = ResolvedTrainMetricPasses(training, parallel),
      .dropout = dropout,
      .eager_elementwise = RunsEagerElementwise(training, parallel),
      .fp8_recipe = ResolvedFp8Recipe(training, parallel, arch),
      .moe_permute_fused = ResolvedMoePermuteFusion(training, parallel),
      .grouped_linear_kernel_per_expert = RunsCudaTransformerEngine(training, parallel, arch),
      .gemm_scale_swizzle = ResolvedGemmScaleSwizzle(training, parallel, arch),
      .moe_quant_align = ResolvedMoeQuantAlign(model, training, parallel, arch),
      .moe_router_padding = MoeRouterPaddingApplies(model, training, parallel, arch) &&
                            ResolvedMoeRouterPadding(training, parallel)};
}

namespace {

// The prefixes of the notes below (IsRunChoiceNote).
constexpr std::string_view kLossNotePrefix = "loss_kernel=";
constexpr std::string_view kMetricNotePrefix = "train_metric_passes=";
constexpr std::string_view kStackNotePrefix = "stack=";
constexpr std::string_view kHiddenDropoutNotePrefix = "hidden_dropout=";
constexpr std::string_view kFsdpImplNotePrefix = "fsdp_impl=";
constexpr std::string_view kAttentionDropoutNotePrefix = "attention_dropout=";
constexpr std::string_view kFp8RecipeNotePrefix = "fp8_recipe=";
constexpr std::string_view kMoePermuteNotePrefix = "moe_permute_fusion=";
constexpr std::string_view kScatterAddNotePrefix = "scatter_add_rate=";
constexpr std::string_view kRouterPaddingNotePrefix = "moe_router_padding=";

// The defaults_used entry of an "auto" loss kernel.
std::string AutoLossNote(const TrainingConfig& t, const ParallelConfig& parallel) {
  const LossKernel k = ResolvedLossKernel(t, parallel);
  std::string why;
  switch (k) {
    case LossKernel::kFused:
      why = "runs a fused cross-entropy, llm-foundry's default flash-attn kernel";
      break;
    case LossKernel::kPyTorch:
      why = "runs torch's cross-entropy eagerly on an fp32 copy of the logits";
      break;
    case LossKernel::kAuto:
    case LossKernel::kMegatron:
      why = "runs Megatron's vocab-parallel cross-entropy";
      break;
  }
  return absl::StrFormat("%s%s (auto: %s %s)", kLossNotePrefix, LossKernelName(k),
                         StackPhrase(t, parallel), why);
}

// The defaults_used entry of an "auto" training.train_metric_passes.
std::string AutoMetricNote(const TrainingConfig& t, const ParallelConfig& parallel) {
  const int64_t n = ResolvedTrainMetricPasses(t, parallel);
  return n > 0 ? absl::StrFormat(
                     "%s%d (auto: %s, where Composer evaluates the training metrics "
                     "LanguageCrossEntropy and LanguagePerplexity on the logits after every "
                     "micro-batch's backward, an eager cross-entropy each; --train-metric-passes "
                     "0 without them)",
                     kMetricNotePrefix, n, StackPhrase(t, parallel))
               : absl::StrFormat("%s0 (auto: %s evaluates no metric on the logits)",
                                 kMetricNotePrefix, StackPhrase(t, parallel));
}

// The defaults_used entry of an "auto" training.fsdp_impl (FSDP layouts only).
std::string AutoFsdpImplNote(const TrainingConfig& t, const ParallelConfig& parallel) {
  const FsdpImpl f = ResolvedFsdpImpl(t, parallel);
  const char* what = f == FsdpImpl::kFsdp1   ? "wraps the model in PyTorch FSDP1"
                     : f == FsdpImpl::kFsdp2 ? "shards with PyTorch FSDP2"
                                             : "shards with Megatron-FSDP's persistent buffers";
  return absl::StrFormat(
      "%s%s (auto: %s %s; --fsdp-impl megatron-fsdp, fsdp1 or fsdp2 for "
      "another)",
      kFsdpImplNotePrefix, FsdpImplName(f), StackPhrase(t, parallel), what);
}

// The defaults_used entry of an "auto" hidden_dropout or attention_dropout (or both).
std::string AutoDropoutNote(const ModelSpec& model, const ParallelConfig& parallel,
                            const TrainingConfig& t) {
  const DropoutRates d = ResolvedDropout(model, parallel, t);
  std::vector<std::string> fields;
  if (t.hidden_dropout == kAutoDropout) {
    fields.push_back(absl::StrFormat("%s%g", kHiddenDropoutNotePrefix, d.hidden));
  }
  if (t.attention_dropout == kAutoDropout) {
    fields.push_back(absl::StrFormat("%s%g", kAttentionDropoutNotePrefix, d.attention));
  }
  std::string why;
  if (ResolvedStack(t, parallel) != TrainingStack::kMegatron) {
    why = absl::StrCat(StackPhrase(t, parallel), " trains without dropout");
  } else if (IsGptStyle(model)) {
    why = "Megatron-LM's default, which its recipes for GELU/LayerNorm GPT models keep";
  } else {
    why = "the Megatron/NeMo recipes of Llama-style models set no dropout";
  }
  return absl::StrFormat("%s (auto: %s; --hidden-dropout, --attention-dropout to set)",
                         absl::StrJoin(fields, ", "), why);
}

}  // namespace

std::string StackPhrase(const TrainingConfig& training, const ParallelConfig& parallel) {
  return absl::StrFormat("the %s stack", TrainingStackName(ResolvedStack(training, parallel)));
}

// The defaults_used entry of an "auto" training.stack.
std::string AutoStackNote(const TrainingConfig& t, const ParallelConfig& parallel) {
  const TrainingStack st = ResolvedStack(t, parallel);
  return absl::StrFormat(
      "%s%s (auto: %s; --stack megatron, llm-foundry or torchtitan for another)", kStackNotePrefix,
      TrainingStackName(st),
      st == TrainingStack::kLlmFoundry
          ? "an FSDP-only layout is taken as a PyTorch-native stack, MosaicML's llm-foundry"
          : "a layout with TP, PP or without FSDP is taken as Megatron-LM/NeMo");
}

std::vector<std::string> StackChoiceNotes(const ModelSpec& model, const ParallelConfig& parallel,
                                          const TrainingConfig& training) {
  std::vector<std::string> notes;
  if (training.loss_kernel == LossKernel::kAuto) notes.push_back(AutoLossNote(training, parallel));
  if (training.train_metric_passes == kAutoTrainMetricPasses) {
    notes.push_back(AutoMetricNote(training, parallel));
  }
  if (training.hidden_dropout == kAutoDropout || training.attention_dropout == kAutoDropout) {
    notes.push_back(AutoDropoutNote(model, parallel, training));
  }
  if (parallel.fsdp && training.fsdp_impl == FsdpImpl::kAuto) {
    notes.push_back(AutoFsdpImplNote(training, parallel));
  }
  return notes;
}

std::string AutoFp8RecipeNote(const TrainingConfig& training, const ParallelConfig& parallel,
                              std::string_view arch, std::string_view gpu_name) {
  if (training.precision != DType::kFp8 || training.fp8_recipe != Fp8Recipe::kAuto) return "";
  const Fp8Recipe r = ResolvedFp8Recipe(training, parallel, arch);
  std::string why;
  switch (ResolvedStack(training, parallel)) {
    case TrainingStack::kTorchTitan:
      why = "runs torchao Float8 with its default tensorwise scaling";
      break;
    case TrainingStack::kMegatron:
      why = r == Fp8Recipe::kMxfp8
                ? absl::StrFormat("runs Transformer Engine's MXFP8 on %s's block-scaled tensor cores",
                                  gpu_name)
                : absl::StrFormat("runs Transformer Engine's delayed scaling on %s", gpu_name);
      break;
    case TrainingStack::kAuto:
    case TrainingStack::kLlmFoundry:
      why = "runs Transformer Engine's default, delayed scaling";
      break;
  }
  return absl::StrFormat("%s%s (auto: %s %s; --fp8-recipe for another)", kFp8RecipeNotePrefix,
                         Fp8RecipeName(r), StackPhrase(training, parallel), why);
}

std::string AutoMoePermuteFusionNote(const ModelSpec& model, const TrainingConfig& training,
                                     const ParallelConfig& parallel) {
  if (!model.moe || training.moe_permute_fusion) return "";
  std::string why;
  switch (ResolvedStack(training, parallel)) {
    case TrainingStack::kTorchTitan:
      why = "gathers the routed tokens with torch.gather and sums them back with scatter_add, "
            "one atomic add per element in each scatter-add";
      break;
    case TrainingStack::kLlmFoundry:
      why = "runs MegaBlocks' own gather and scatter kernels, taken as fused";
      break;
    case TrainingStack::kAuto:
    case TrainingStack::kMegatron:
      why = "runs Transformer Engine's fused permutation, as the Megatron-Bridge/NeMo MoE "
            "recipes set moe_permute_fusion=True (Megatron-Core's own default is False)";
      break;
  }
  const bool fused = ResolvedMoePermuteFusion(training, parallel);
  return absl::StrFormat("%s%s (auto: %s %s%s)", kMoePermuteNotePrefix, fused ? "true" : "false",
                         StackPhrase(training, parallel), why,
                         fused ? "; --moe-permute-fusion false for PyTorch's index_select and "
                                 "scatter_add_"
                               : "");
}

std::string AutoMoeRouterPaddingNote(const ModelSpec& model, const TrainingConfig& training,
                                     const ParallelConfig& parallel, std::string_view arch) {
  if (training.moe_router_padding || !MoeRouterPaddingApplies(model, training, parallel, arch)) {
    return "";
  }
  const int64_t align = ResolvedMoeQuantAlign(model, training, parallel, arch);
  if (ResolvedMoeRouterPadding(training, parallel)) {
    return absl::StrFormat(
        "%strue (auto: the run dispatches with DeepEP, and Megatron-Bridge's DeepEP preset sets "
        "moe_router_padding_for_fp8=True: each local expert's token count rounded up to %d by "
        "the router; --moe-router-padding false for Transformer Engine's Fp8Padding copies)",
        kRouterPaddingNotePrefix, align);
  }
  return absl::StrFormat(
      "%sfalse (auto: Megatron-Core's default moe_router_padding_for_fp8=False, which "
      "Megatron-Bridge's MoE recipes keep: Transformer Engine's Fp8Padding copies each local "
      "expert's rows into a buffer padded to %d rows before the fp8 expert GEMMs and unpads "
      "after; --moe-router-padding true to pad the routing map instead)",
      kRouterPaddingNotePrefix, align);
}

std::string UnmeasuredScatterAddNote(const ModelSpec& model, const TrainingConfig& training,
                                     const ParallelConfig& parallel, const HardwareProfile& hw) {
  if (!model.moe || ResolvedMoePermuteFusion(training, parallel)) return "";
  const bool torchtitan = ResolvedStack(training, parallel) == TrainingStack::kTorchTitan;
  const bool measured = hw.gpu.scatter_add_rate.has_value() &&
                        (torchtitan || hw.gpu.index_add_rate.has_value());
  if (measured) return "";
  return absl::StrFormat(
      "%sunmeasured (%s's profile has no gpu.scatter_add_gelems_per_s/index_add_gelems_per_s: the "
      "unfused permutation's atomic scatter-adds are timed by their bytes, faster than they run; "
      "on an H200 they ran 4-9x slower than a copy)",
      kScatterAddNotePrefix, hw.name);
}

bool IsRunChoiceNote(std::string_view note) {
  for (std::string_view prefix :
       {kLossNotePrefix, kMetricNotePrefix, kStackNotePrefix, kHiddenDropoutNotePrefix,
        kAttentionDropoutNotePrefix, kFsdpImplNotePrefix, kFp8RecipeNotePrefix,
        kMoePermuteNotePrefix, kScatterAddNotePrefix, kRouterPaddingNotePrefix}) {
    if (note.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace projector
