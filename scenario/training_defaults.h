// The "auto" policy of the training settings: which stack a layout is taken to run, and what
// that stack runs (loss kernel, FSDP implementation, metric passes over the logits, dropout,
// eager or compiled elementwise kernels), resolved once per scenario into RunChoices, and the
// "defaults used" notes that say so in a report. The attention-kernel and distributed-optimizer
// defaults, which also need the GPU profile, are in scenario/scenario.cc.
#ifndef PROJECTOR_SCENARIO_TRAINING_DEFAULTS_H_
#define PROJECTOR_SCENARIO_TRAINING_DEFAULTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/parallel_config.h"
#include "core/training_config.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"

namespace projector {

// The stack that runs: training.stack, with kAuto resolved from the layout; never kAuto.
inline TrainingStack ResolvedStack(const TrainingConfig& t, const ParallelConfig& p) {
  if (t.stack != TrainingStack::kAuto) return t.stack;
  return IsPyTorchNativeLayout(p) ? TrainingStack::kLlmFoundry : TrainingStack::kMegatron;
}

// Elementwise work runs as eager PyTorch ops, one kernel per op: a PyTorch-native stack without
// torch.compile.
inline bool RunsEagerElementwise(const TrainingConfig& t, const ParallelConfig& p) {
  return RunsPyTorchAttention(ResolvedStack(t, p)) && !t.torch_compile;
}

// The loss kernel that runs: training.loss_kernel, with kAuto resolved from the stack
// (ResolvedStack); never kAuto. torchtitan casts the logits to fp32 and calls
// F.cross_entropy eagerly (kPyTorch). llm-foundry gets kFused: its MPT trains with
// loss_fn: fused_crossentropy, flash-attn's Triton cross-entropy, by default (recalled from
// llmfoundry/models/mpt/modeling_mpt.py, not in the stored sources), and the micro-batches of its
// published runs leave no room in HBM for the 14 bytes per logit of the eager loss at its peak
// (CrossEntropyBytesPerLogit). Megatron gets kMegatron.
inline LossKernel ResolvedLossKernel(const TrainingConfig& t, const ParallelConfig& p) {
  if (t.loss_kernel != LossKernel::kAuto) return t.loss_kernel;
  switch (ResolvedStack(t, p)) {
    case TrainingStack::kLlmFoundry:
      return LossKernel::kFused;
    case TrainingStack::kTorchTitan:
      return LossKernel::kPyTorch;
    case TrainingStack::kAuto:
    case TrainingStack::kMegatron:
      break;
  }
  return LossKernel::kMegatron;
}

// The two training metrics Composer evaluates on the logits of every micro-batch for
// llm-foundry's MPT (ComposerMPTCausalLM train_metrics: LanguageCrossEntropy and
// LanguagePerplexity, each its own torch.nn.CrossEntropyLoss over the logits; Trainer
// _train_microbatch calls _eval_train_metrics after the backward, under the autocast precision
// context and without grad; llm-foundry later added `use_train_metrics` to switch them off).
// Recalled from mosaicml/composer trainer.py and composer/metrics/nlp.py, not in the stored
// sources. The published llm-foundry runs show it: a least-squares split of their 8-GPU runs
// on A100 40/80 GB and H100 (tools/split_fit.py --logit-bytes --train-metric-passes 0) finds
// 32-47 bytes per logit of memory-bound work on top of the fused loss (two passes model 44), and
// it leaves the runs' HBM fit intact (the metrics run after the backward has freed the
// activations).
inline constexpr int64_t kComposerTrainMetricPasses = 2;

// The FSDP implementation that runs: training.fsdp_impl, with kAuto resolved from the stack
// (ResolvedStack): FSDP1 for llm-foundry, FSDP2 for torchtitan, Megatron-FSDP for megatron;
// never kAuto.
inline FsdpImpl ResolvedFsdpImpl(const TrainingConfig& t, const ParallelConfig& p) {
  if (t.fsdp_impl != FsdpImpl::kAuto) return t.fsdp_impl;
  switch (ResolvedStack(t, p)) {
    case TrainingStack::kLlmFoundry:
      return FsdpImpl::kFsdp1;
    case TrainingStack::kTorchTitan:
      return FsdpImpl::kFsdp2;
    case TrainingStack::kAuto:
    case TrainingStack::kMegatron:
      break;
  }
  return FsdpImpl::kMegatronFsdp;
}

// The train-metric passes that run: training.train_metric_passes, with auto resolved from the
// stack (ResolvedStack): llm-foundry's kComposerTrainMetricPasses; none for Megatron-LM and
// torchtitan, which log the loss only.
inline int64_t ResolvedTrainMetricPasses(const TrainingConfig& t, const ParallelConfig& p) {
  if (t.train_metric_passes != kAutoTrainMetricPasses) return t.train_metric_passes;
  return ResolvedStack(t, p) == TrainingStack::kLlmFoundry ? kComposerTrainMetricPasses : 0;
}

// The dropout a run trains with (training.hidden_dropout / attention_dropout), each
// kAutoDropout resolved from the stack and the model. Megatron-LM defaults both to
// kMegatronDefaultDropout (arguments.py --hidden-dropout / --attention-dropout, megatron-core
// TransformerConfig hidden_dropout / attention_dropout), which its GPT recipes keep
// (examples/gpt3/train_gpt3_175b_distributed.sh and the SC21-era pretrain_gpt scripts set
// neither): auto is 0.1 for a GPT-style model (IsGptStyle) on the megatron stack. Its
// Llama-style recipes (examples/llama, NeMo's Llama, Mixtral and DeepSeek configs) set both
// to 0, llm-foundry's MPT trains without dropout (MPTConfig attn_pdrop, resid_pdrop and
// emb_pdrop 0.0) and so do torchtitan's models: auto is 0 there. Recalled from those
// repositories, not in the stored sources.
inline constexpr double kMegatronDefaultDropout = 0.1;
// GPT-2/3 style: plain GELU MLP and LayerNorm (Megatron GPT, MPT), not Llama's SwiGLU/RMSNorm.
bool IsGptStyle(const ModelSpec& model);
DropoutRates ResolvedDropout(const ModelSpec& model, const ParallelConfig& parallel,
                             const TrainingConfig& training);

// The stack a measured run's `source` names, when it names one of the frameworks the tool models:
// Megatron-LM and what is built on it (NeMo, Megatron-Bridge, NVIDIA's DGX Cloud recipes, the
// Megatron papers) run the megatron stack, whatever the layout (Megatron-FSDP for FSDP); the
// torchtitan and llm-foundry repositories run their own. nullopt when the source names none.
std::optional<TrainingStack> StackNamedBySource(std::string_view source);

// Whether a measured run's `source` is NVIDIA's Megatron-Bridge performance summary, whose
// presets (scripts/performance/configs/*: every model's, dense and MoE, e.g.
// llama3/llama3_70b_llm_pretrain.py and qwen3/qwen3_30b_a3b_llm_pretrain.py) set
// `cfg.ddp.grad_reduce_in_fp32 = False`: their gradients are kept and reduced in bf16.
bool SourceIsMegatronBridgePresets(std::string_view source);

// Whether a measured run's `source` is Narayanan et al., "Efficient Large-Scale Language Model
// Training on GPU Clusters Using Megatron-LM" (SC21, arXiv 2104.04473), whose runs used
// Megatron-LM as of early 2021: attention as two batched GEMMs around its fused
// scale-mask-softmax kernel (the paper's section 4.2; FlashAttention came in 2022), gradients
// all-reduced by its local DDP after the step's last backward (training.py train_step:
// `model_module.allreduce_gradients()` after forward_backward_func), an optimizer state
// replicated over the data-parallel ranks (the distributed optimizer came to Megatron-LM in 2022).
bool SourceIsMegatronSc21(std::string_view source);

// Whether the GPU's matrix cores take MX block-scaled operands (OCP Microscaling formats, an
// E8M0 scale per 32 elements): NVIDIA Blackwell, sm_100 and later (B200, GB200: NVIDIA
// Blackwell architecture technical brief, "MXFP8" among the 5th-generation Tensor Core
// formats), and AMD CDNA 4, gfx950 (MI355X: AMD CDNA 4 architecture whitepaper, MXFP8/MXFP6/
// MXFP4). `arch` as the hardware profile names it ("sm_100", "gfx950").
bool HasMxBlockScaling(std::string_view arch);

// The FP8 recipe a run uses (training.fp8_recipe), "auto" resolved from the stack and the GPU:
// torchtitan's Float8 training defaults to tensorwise scaling (torchao Float8LinearConfig's
// default recipe); the megatron stack runs Transformer Engine's MXFP8 on NVIDIA Blackwell (the
// recipe of NVIDIA's Megatron-Bridge B200/GB200 FP8 presets, "mx") and delayed scaling
// elsewhere (Megatron-LM's --fp8-recipe default; llm-foundry runs TE's default, delayed, too).
// kDelayed when the precision is not fp8 (no recipe applies).
Fp8Recipe ResolvedFp8Recipe(const TrainingConfig& training, const ParallelConfig& parallel,
                            std::string_view arch);
// "fp8_recipe=mxfp8 (auto: ...)" for an auto recipe under fp8, else empty.
std::string AutoFp8RecipeNote(const TrainingConfig& training, const ParallelConfig& parallel,
                              std::string_view arch, std::string_view gpu_name);

// RunChoices::gemm_scale_swizzle: fp8 on the megatron stack (Transformer Engine) on an NVIDIA GPU
// with the MXFP8 recipe, or the blockwise one on a GPU with MX block scaling (HasMxBlockScaling),
// which TE runs as MXFP8 there.
bool ResolvedGemmScaleSwizzle(const TrainingConfig& training, const ParallelConfig& parallel,
                              std::string_view arch);

// Whether the MoE token permutation runs as fused kernels: training.moe_permute_fusion when set;
// auto: false on torchtitan (its MoE gathers the routed tokens with torch.gather and sums them
// back with scatter_add, PyTorch ops), true elsewhere (the Megatron-Bridge/NeMo MoE recipes set
// moe_permute_fusion=True, Transformer Engine's fused permute kernels, although Megatron-Core's
// own default is False; llm-foundry's MegaBlocks runs its own Triton gather/scatter kernels).
bool ResolvedMoePermuteFusion(const TrainingConfig& training, const ParallelConfig& parallel);
// "moe_permute_fusion=true (auto: ...)" for an auto setting on a MoE model, else empty.
std::string AutoMoePermuteFusionNote(const ModelSpec& model, const TrainingConfig& training,
                                     const ParallelConfig& parallel);
// RunChoices::moe_quant_align: the row alignment of a MoE's quantised expert GEMMs where the
// megatron stack runs the experts in fp8 (Transformer Engine's GroupedLinear; 32 under MXFP8, 16
// under the other recipes: Megatron-Core get_fp8_align_size, TE Fp8Padding "32 for MXFP8 and 16
// for others"), else 0.
int64_t ResolvedMoeQuantAlign(const ModelSpec& model, const TrainingConfig& training,
                              const ParallelConfig& parallel, std::string_view arch);
// Whether the router pads the routing map to that alignment (training.moe_router_padding when
// set). Auto: where the run dispatches with DeepEP, as Megatron-Bridge's DeepEP preset sets
// moe_router_padding_for_fp8=True (DeepSeek-V3, scripts/performance); else Megatron-Core's
// default False, which Megatron-Bridge's other MoE recipes keep (the Qwen3 ones set it False):
// Transformer Engine's Fp8Padding copies the rows instead.
bool ResolvedMoeRouterPadding(const TrainingConfig& training, const ParallelConfig& parallel);
// Whether there is a choice of padding for ResolvedMoeRouterPadding to make: the megatron
// stack's fp8 MoE (ResolvedMoeQuantAlign > 0) whose experts are not padded to a capacity.
bool MoeRouterPaddingApplies(const ModelSpec& model, const TrainingConfig& training,
                             const ParallelConfig& parallel, std::string_view arch);
// "moe_router_padding=false (auto: ...)" for an auto setting where it applies, else empty.
std::string AutoMoeRouterPaddingNote(const ModelSpec& model, const TrainingConfig& training,
                                     const ParallelConfig& parallel, std::string_view arch);
// "scatter_add_rate=unmeasured (...)" where a MoE model's unfused permutation runs on a GPU whose
// profile has no measured rate for its scatter-adds (timed by their bytes, a lower bound), else
// empty.
std::string UnmeasuredScatterAddNote(const ModelSpec& model, const TrainingConfig& training,
                                     const ParallelConfig& parallel, const HardwareProfile& hw);

// Whether a measured run that does not name its MoE dispatcher is taken to dispatch with DeepEP
// (Megatron-Core's flex dispatcher): on the megatron stack, for a dropless MoE with group-limited
// routing whose EP group spans nodes. Group-limited (node-limited) routing exists to bound each
// token's cross-node traffic, which only a dispatcher that sends a token once per node exploits
// (DeepSeek-V3 report, arXiv 2412.19437 §2.1.2, §3.2.2); Megatron-Core's MoE README recommends
// DeepEP for cross-node expert parallelism ("Leverage DeepSeek's DeepEP for High-Performance
// Cross-Node Token Dispatching"), and Megatron-Bridge's DeepSeek-V3 presets run it with dropless
// routing (scripts/performance/configs/deepseek: enable_deepep, which token drop turns off; the
// later presets run the flex dispatcher with HybridEP, node-deduplicated too).
bool CaseDispatchesWithDeepEp(const ModelSpec& model, const ParallelConfig& parallel,
                              const TrainingConfig& training, int64_t gpus_per_node);

// Every choice above for one scenario's model, layout, settings and GPU architecture.
RunChoices ResolveRunChoices(const ModelSpec& model, const ParallelConfig& parallel,
                             const TrainingConfig& training, std::string_view arch);

// The "defaults used" notes, each saying what an "auto" setting became and why, with the flag
// that sets another. StackPhrase: "the llm-foundry stack".
std::string StackPhrase(const TrainingConfig& training, const ParallelConfig& parallel);
// "stack=llm-foundry (auto: ...)", for an auto training.stack.
std::string AutoStackNote(const TrainingConfig& training, const ParallelConfig& parallel);
// The notes of the auto settings the stack decides, each only when auto: loss kernel, metric
// passes, dropout, FSDP implementation (FSDP layouts), in that order.
std::vector<std::string> StackChoiceNotes(const ModelSpec& model, const ParallelConfig& parallel,
                                          const TrainingConfig& training);
// Whether a defaults_used entry is one of these notes (to drop them before resolving again).
bool IsRunChoiceNote(std::string_view note);

}  // namespace projector

#endif  // PROJECTOR_SCENARIO_TRAINING_DEFAULTS_H_
