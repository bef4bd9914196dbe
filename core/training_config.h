// The training-run settings of one scenario (sequence, batches, recompute, precision, kernels,
// the training stack and what it runs, communication overlap, MoE routing) and the rules that
// turn their "auto" values into what runs for a layout. They sit in core/ because the profilers
// and the composers read them; scenario/ parses, validates and notes them.
#ifndef PROJECTOR_CORE_TRAINING_CONFIG_H_
#define PROJECTOR_CORE_TRAINING_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/parallel_config.h"

namespace projector {

enum class Recompute { kNone, kSelective, kFull };
std::string_view RecomputeName(Recompute r);
absl::StatusOr<Recompute> ParseRecompute(std::string_view name);

// The submodules Megatron-Core's selective recompute re-runs in backward (TransformerConfig
// recompute_modules, --recompute-modules; default core_attn). core_attn, mlp, moe and
// shared_experts are normal checkpoints (the submodule keeps its input, the rest is re-run);
// mla_up_proj, layernorm and moe_act discard their outputs and re-create them before the
// backward needs them (CheckpointWithoutOutput).
//   core_attn       the attention core (scores, softmax, P·V or the flash kernel)
//   mla_up_proj     MLA's q/kv up-projections and RoPE (their Q, K and V are not kept)
//   layernorm       the input and pre-MLP norms that are modules of their own (MLA's input
//                   norm, MoE's pre-MLP norm; a norm fused into a TE linear layer is not)
//   moe_act         the routed experts' activation (fc2's input is not kept)
//   mlp             the dense MLP layers
//   shared_experts  the MoE layers' shared experts
//   moe             the whole MoE layer, its All-to-Alls included
enum class RecomputeModule : uint8_t {
  kCoreAttn,
  kMlaUpProj,
  kLayernorm,
  kMoeAct,
  kMlp,
  kSharedExperts,
  kMoe,
};
inline constexpr size_t kRecomputeModuleCount = 7;
// A set of RecomputeModule, one bit each.
using RecomputeModules = uint32_t;
constexpr RecomputeModules RecomputeBit(RecomputeModule m) {
  return static_cast<RecomputeModules>(1u << static_cast<unsigned>(m));
}
inline constexpr RecomputeModules kDefaultRecomputeModules =
    RecomputeBit(RecomputeModule::kCoreAttn);
std::string_view RecomputeModuleName(RecomputeModule m);
// The names of the modules in `modules`, in enumerator order.
std::vector<std::string> RecomputeModuleNames(RecomputeModules modules);
// Those names joined by commas ("core_attn,mla_up_proj"); "" for the empty set.
std::string RecomputeModulesName(RecomputeModules modules);
// "selective (core_attn,mla_up_proj)" for selective recompute with other modules than the
// default, else the mode's name.
std::string RecomputePhrase(Recompute mode, RecomputeModules modules);
// A comma-separated list of module names (empty: no module); kInvalidArgument naming an unknown
// one and listing the accepted names.
absl::StatusOr<RecomputeModules> ParseRecomputeModules(std::string_view list);

// How the attention core (softmax(QKᵀ)·V) runs. kFlash: one fused tiled kernel per pass
// (FlashAttention / cuDNN / CK / AITER; which one is TrainingConfig::flash_kernel), causal tiles
// skipped, scores never in HBM. kUnfused: the pre-FlashAttention path of Megatron-LM (2019-2022)
// and PyTorch's SDPA "math" fallback: batched GEMMs QKᵀ and P·V over the full s×s score matrix,
// with the scale-mask-softmax (and attention dropout) as memory-bound kernels over scores held
// in HBM.
enum class AttentionKernel { kFlash, kUnfused };

// The cross-entropy loss over the vocabulary logits. kMegatron: Megatron-core's
// vocab_parallel_cross_entropy (fp32 softmax kept for backward, vocab sharded over TP). kPyTorch:
// torch.nn.functional.cross_entropy in eager mode under autocast (an fp32 copy of the logits,
// log-softmax and NLL as separate kernels), what PyTorch-native stacks run (llm-foundry's
// torch_crossentropy, HF Transformers, torchtitan without torch.compile). kFused: one fused
// online-softmax kernel that never writes the fp32 logits (flash-attn's and Liger's Triton
// cross-entropy). kAuto: the stack's (ResolvedLossKernel).
enum class LossKernel { kAuto, kMegatron, kPyTorch, kFused };
// "auto", "megatron", "pytorch" or "fused".
std::string_view LossKernelName(LossKernel k);
absl::StatusOr<LossKernel> ParseLossKernel(std::string_view name);
// The names ParseLossKernel accepts.
inline constexpr std::string_view kLossKernelNames[] = {"auto", "megatron", "pytorch", "fused"};

// The training stack whose kernel choices "auto" takes (ResolvedStack): kMegatron (Megatron-LM,
// NeMo: Transformer Engine's attention, Megatron's vocab-parallel loss, no metric on the
// logits), kLlmFoundry (MosaicML Composer/llm-foundry: PyTorch SDPA's attention, the fused
// cross-entropy, Composer's two training metrics on the logits), kTorchTitan (PyTorch SDPA, an
// eager cross-entropy over an fp32 copy of the logits, no metric). kAuto: kLlmFoundry for a
// PyTorch-native layout (IsPyTorchNativeLayout), else kMegatron.
enum class TrainingStack { kAuto, kMegatron, kLlmFoundry, kTorchTitan };
// "auto", "megatron", "llm-foundry" or "torchtitan".
std::string_view TrainingStackName(TrainingStack s);
absl::StatusOr<TrainingStack> ParseTrainingStack(std::string_view name);
// The names ParseTrainingStack accepts.
inline constexpr std::string_view kTrainingStackNames[] = {"auto", "megatron", "llm-foundry",
                                                           "torchtitan"};

// The FSDP implementation that shards a layout with parallel.fsdp (its memory-bound copies and
// gradient working set: projection/step_composer.h FsdpCopyBytesPerParam). kMegatronFsdp:
// Megatron-FSDP's persistent buffers, no copies; kFsdp1: PyTorch FSDP1 (FlatParameter, what
// llm-foundry/Composer wraps); kFsdp2: PyTorch FSDP2 (per-parameter DTensor, torchtitan's, and
// Megatron-LM's --use-torch-fsdp2, which AMD's Primus runs). kAuto: the stack's
// (ResolvedFsdpImpl).
enum class FsdpImpl { kAuto, kMegatronFsdp, kFsdp1, kFsdp2 };
inline constexpr std::string_view kFsdpImplNames[] = {"auto", "megatron-fsdp", "fsdp1", "fsdp2"};
// "auto", "megatron-fsdp", "fsdp1" or "fsdp2".
std::string_view FsdpImplName(FsdpImpl f);
absl::StatusOr<FsdpImpl> ParseFsdpImpl(std::string_view name);

// How FP8 training scales its tensors (training.fp8_recipe; precision fp8 only), each with its
// quantisation kernels (profilers/profiler_internal.h Fp8Quantization):
//   kDelayed     per-tensor scale from the amax history of earlier steps (Transformer Engine
//                DelayedScaling, Megatron's --fp8-recipe delayed);
//   kTensorwise  per-tensor scale from the tensor's own amax, computed just before the cast
//                (TE Float8CurrentScaling, Megatron-Bridge "cs"; torchao/torchtitan "tensorwise");
//   kBlockwise   fp32 scale per 1x128 activation block and per 128x128 weight block (TE
//                Float8BlockScaling, DeepSeek-V3's recipe);
//   kMxfp8       an E8M0 scale per 32 elements, in both orientations (OCP MX; TE MXFP8BlockScaling,
//                Megatron-Bridge "mx"), on GPUs with block-scaled matrix cores;
//   kRowwise     an fp32 scale per row (torchao/torchtitan "rowwise").
// kAuto: what the stack runs on the GPU (ResolvedFp8Recipe).
enum class Fp8Recipe { kAuto, kDelayed, kTensorwise, kBlockwise, kMxfp8, kRowwise };
inline constexpr std::string_view kFp8RecipeNames[] = {"auto",      "delayed", "tensorwise",
                                                       "blockwise", "mxfp8",   "rowwise"};
std::string_view Fp8RecipeName(Fp8Recipe r);
absl::StatusOr<Fp8Recipe> ParseFp8Recipe(std::string_view name);

// training.train_metric_passes when "auto" (ResolvedTrainMetricPasses), and the largest count
// accepted (a sanity bound: Composer's LanguageCrossEntropy, LanguagePerplexity and the like).
inline constexpr int64_t kAutoTrainMetricPasses = -1;
inline constexpr int64_t kMaxTrainMetricPasses = 16;

// training.hidden_dropout / attention_dropout when "auto" (ResolvedDropout in scenario/training_defaults.h).
inline constexpr double kAutoDropout = -1;

// Training-run settings.
struct TrainingConfig {
  int64_t seq_len = 4096;
  int64_t micro_batch = 1;
  int64_t global_batch = 8;
  Recompute recompute = Recompute::kNone;
  int64_t recompute_layers = 0;  // full recompute: layers per stage (0 = all)
  // Selective recompute on the megatron stack: the submodules it re-runs (RecomputeModule).
  RecomputeModules recompute_modules = kDefaultRecomputeModules;
  // Another recompute mode; the modules (selective only) go back to the default when it is not
  // selective, so that a what-if or a search candidate stays a valid scenario.
  void SetRecompute(Recompute r) {
    recompute = r;
    if (r != Recompute::kSelective) recompute_modules = kDefaultRecomputeModules;
  }
  // Whether the run re-runs `m` in backward: selective recompute with `m` among its modules.
  bool Recomputes(RecomputeModule m) const {
    return recompute == Recompute::kSelective && (recompute_modules & RecomputeBit(m)) != 0;
  }
  DType precision = DType::kBf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::kAuto;  // precision fp8 only (Fp8Recipe)
  AttentionKernel attention_kernel = AttentionKernel::kFlash;
  // The flash kernel asked for: "auto" (PyTorch SDPA's kernel for an FSDP-only layout, the one
  // it falls back to with ALiBi; else the GPU profile's default), "flash" (the profile's
  // default) or a kernel the profile names ("fa2").
  // Checked against the profile when the scenario is resolved (projection/scenario.h).
  std::string flash_kernel = "auto";
  TrainingStack stack = TrainingStack::kAuto;  // whose choices the "auto" kernels take
  LossKernel loss_kernel = LossKernel::kAuto;  // the cross-entropy kernel (LossKernel)
  // Training metrics evaluated on the logits after every micro-batch's backward, each one eager
  // torch cross-entropy forward under autocast without grad (ResolvedTrainMetricPasses):
  // kAutoTrainMetricPasses or 0..kMaxTrainMetricPasses.
  int64_t train_metric_passes = kAutoTrainMetricPasses;
  // torch.compile on a PyTorch-native stack (RunsEagerElementwise): Inductor fuses the
  // elementwise chains of RMSNorm, RoPE and SwiGLU into single kernels, which is what the
  // profilers model for Megatron's fused kernels too. false: they run eagerly, one kernel per
  // PyTorch op. No effect on the megatron stack (Transformer Engine and Megatron's own fusions).
  bool torch_compile = false;
  FsdpImpl fsdp_impl = FsdpImpl::kAuto;  // how parallel.fsdp shards (FsdpImpl)
  // Dropout probabilities, in [0, 1), or kAutoDropout (the stack's choice for the model:
  // ResolvedDropout in scenario/training_defaults.h). hidden_dropout: after the embedding and on
  // each residual branch (Megatron's embedding dropout and bias-dropout-add, MPT's emb_pdrop and
  // resid_pdrop); attention_dropout: on the attention probabilities. Only whether one is > 0
  // changes the cost: the masks are written, stored and read back whatever the probability.
  double hidden_dropout = kAutoDropout;
  double attention_dropout = kAutoDropout;
  bool overlap_grad_reduce = true;   // DP gradient sync overlapped with backward (Megatron)
  bool overlap_param_gather = true;  // distributed optimizer all-gather overlapped with forward
  // Megatron --tp-comm-overlap (Transformer Engine userbuffers): TP AllGather/ReduceScatter
  // overlapped with their GEMMs. Off by default, as in Megatron-LM.
  bool tp_comm_overlap = false;
  // EP All-to-All of one micro-batch overlapped with the compute of another (Megatron
  // --overlap-moe-expert-parallel-comm, the 1F1B A2A overlap; DeepSeek-V3's DualPipe does the
  // same): the A2A is exposed only where it outlasts the MoE compute beside it, which loses the
  // SMs the A2A kernels hold. Off by default, as in Megatron-LM.
  bool moe_a2a_overlap = false;
  // DeepEP's dispatch (and the combine's gradient) in FP8 under FP8 training, one E4M3 byte per
  // element and an fp32 scale per 128, as DeepSeek-V3 trained (arXiv 2412.19437 §3.3.2: FP8
  // dispatch, BF16 combine). Megatron-Core's DeepEP and HybridEP paths send BF16 whatever the
  // GEMM precision (moe/fused_a2a.py; shared/reference/moe_reference.md §4), hence off by
  // default; without parallel.deepep and precision fp8 it has no effect (and says so).
  bool moe_dispatch_fp8 = false;
  // The shared experts run on their own stream beside the dispatcher's All-to-All in forward
  // (Megatron-Core --moe-shared-expert-overlap: fc1 and the activation beside the dispatch, fc2
  // beside the combine; backward runs them in order). Megatron-Core takes it with the alltoall
  // dispatcher only, not DeepEP's (TransformerConfig asserts). Off by default, as there.
  bool moe_shared_expert_overlap = false;
  // The step runs as captured CUDA graphs (Megatron --cuda-graph-impl local with the
  // full_iteration scope, as NVIDIA's Megatron-Bridge benchmark presets for B200/GB200 set it):
  // the host replays one graph instead of issuing every op, so no per-op host cost. A dropless
  // MoE cannot be captured (its per-expert token counts reach the host every layer).
  bool cuda_graphs = false;
  // Mixed precision by TensorFlow's automatic mixed precision graph rewrite (TF 1.x AMP, as
  // NVIDIA's TF1 containers run it with --amp): the variables stay fp32 and every read is cast
  // to fp16 (and every weight gradient back to fp32), the GEMMs (MatMul, BatchMatMul: its
  // allow list) run in fp16, and the elementwise work between them in fp32: its deny list holds
  // Mean, Pow, Softmax, Exp, Log, Sum and the softmax cross-entropies, and the infer-list ops
  // downstream of them (Add, Mul, Sub, Tanh, BiasAdd...) stay fp32 too, so a transformer's layer
  // norms, residual stream, GELU, softmax and dropouts run in fp32 (NVIDIA/tensorflow
  // tensorflow/core/grappler/optimizers/auto_mixed_precision_lists.h, r1.15). Needs precision
  // fp16 or bf16.
  bool tf_amp = false;
  // Data type of the gradient reduction and of Megatron's main-grad buffer: kFp32 (Megatron
  // forces accumulate_allreduce_grads_in_fp32 under bf16; the default) or kBf16 (Megatron
  // --grad-reduce-in-bf16, PyTorch FSDP MixedPrecision(reduce_dtype=bfloat16)).
  DType grad_reduce_dtype = DType::kFp32;
  // MoE token routing (MoE models only; Megatron-core MoE flags). moe_capacity_factor: 0 =
  // dropless (Megatron's default); > 0 = --moe-expert-capacity-factor: each expert takes at most
  // that multiple of its balanced share of the token-expert pairs and drops the rest.
  // moe_pad_to_capacity: --moe-pad-expert-input-to-capacity, every expert's input padded to that
  // capacity. moe_imbalance: the token-expert pairs the busiest EP rank receives over the
  // balanced mean (>= 1; 1 = balanced, as in benchmark runs that force load balancing). A
  // what-if: no router is simulated.
  double moe_capacity_factor = 0;
  bool moe_pad_to_capacity = false;
  double moe_imbalance = 1.0;
  // Megatron-Core --moe-permute-fusion: the token permutation and unpermutation as Transformer
  // Engine's fused kernels (true) or as PyTorch ops (false: index_select, and scatter_add_ to
  // sum the copies back, atomic adds; torchtitan's gather and scatter_add likewise). nullopt =
  // auto, the stack's choice (ResolvedMoePermuteFusion).
  std::optional<bool> moe_permute_fusion;
  // Megatron-Core --moe-router-padding-for-fp8 (renamed --moe-router-padding-for-quantization):
  // under fp8 the router rounds every expert's token count up to the quantisation alignment by
  // routing extra tokens to it (true), instead of Transformer Engine's Fp8Padding copying the
  // routed rows into a padded buffer before the expert GEMMs and back after them (false). The
  // megatron stack's fp8 MoE only; nullopt = auto (ResolvedMoeRouterPadding).
  std::optional<bool> moe_router_padding;
};

// Whether a MoE layer's experts take inputs of a size known only on the GPU (dropless, or a
// capacity without padding), so that the dispatcher copies the per-expert token counts to the
// host and synchronises every forward (projection/host_overhead.h); a layer padded to its
// capacity has static shapes.
inline bool MoeForwardSyncsHost(const TrainingConfig& t) {
  return !(t.moe_capacity_factor > 0 && t.moe_pad_to_capacity);
}

// Token-expert pairs the busiest EP rank's experts process (and receive and send back through
// the All-to-All), over the balanced share: the capacity factor when every expert is padded to
// it; else the imbalance, capped by the capacity factor when one is set (pairs beyond the
// capacity are dropped). 1 for balanced dropless routing.
inline double MoeExpertLoad(const TrainingConfig& t) {
  if (t.moe_capacity_factor > 0 && t.moe_pad_to_capacity) return t.moe_capacity_factor;
  if (t.moe_capacity_factor > 0 && t.moe_imbalance > t.moe_capacity_factor) {
    return t.moe_capacity_factor;
  }
  return t.moe_imbalance;
}

// A stack on PyTorch's own attention (SDPA) rather than Transformer Engine's.
inline bool RunsPyTorchAttention(TrainingStack s) {
  return s == TrainingStack::kLlmFoundry || s == TrainingStack::kTorchTitan;
}
// Elementwise work runs as eager PyTorch ops, one kernel per op (profiler_internal.h's
// Eager* byte counts): a PyTorch-native stack without torch.compile.

// What runs for a scenario's "auto" settings on its layout and model, resolved once by
// scenario/training_defaults.h (ResolveRunChoices); the profilers and composers read these, never
// the requests in TrainingConfig. The defaults are Megatron-LM's.
struct DropoutRates {
  double hidden = 0;
  double attention = 0;
};
struct RunChoices {
  TrainingStack stack = TrainingStack::kMegatron;
  LossKernel loss_kernel = LossKernel::kMegatron;
  FsdpImpl fsdp_impl = FsdpImpl::kMegatronFsdp;
  int64_t train_metric_passes = 0;  // eager cross-entropy passes over the logits (metrics)
  DropoutRates dropout;
  // Elementwise work runs as eager PyTorch ops, one kernel per op (profiler_internal.h's Eager*
  // byte counts): a PyTorch-native stack without torch.compile.
  bool eager_elementwise = false;
  // The FP8 recipe (ResolvedFp8Recipe); kDelayed when the precision is not fp8 (unused).
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  // MoE token permutation by fused kernels, or by PyTorch's gather and atomic scatter-add
  // (ResolvedMoePermuteFusion).
  bool moe_permute_fused = true;
  // A Transformer Engine GroupedLinear launches one GEMM kernel per local expert (cuBLAS over
  // TE's 4 compute streams: the megatron stack on NVIDIA GPUs) rather than one grouped kernel
  // (GemmShape::kernels).
  bool grouped_linear_kernel_per_expert = false;
  // Transformer Engine prepares both operands' block scales for cuBLAS with a kernel each before
  // every fp8 GEMM (profiler_internal.cc ScaleSwizzleOp): MXFP8, and the blockwise recipe where
  // GPUs have MX block scaling (TE emulates it there by converting to MXFP8). The megatron stack
  // (ResolvedGemmScaleSwizzle).
  bool gemm_scale_swizzle = false;
  // The rows of every local expert's quantised GEMMs are padded to this multiple (Transformer
  // Engine's alignment: 32 under MXFP8, 16 for the other fp8 recipes; Megatron-Core
  // get_fp8_align_size): the megatron stack's fp8 MoE; 0 where the experts' GEMMs are not
  // Transformer Engine's fp8 ones (another precision or stack). ResolvedMoeQuantAlign.
  int64_t moe_quant_align = 0;
  // The router pads the routing map to that alignment (MoeRouterPaddingApplies and
  // ResolvedMoeRouterPadding); false: Transformer Engine's Fp8Padding/Fp8Unpadding copy the rows
  // where a count is not aligned (the MoE profiler's ExpertRowsPaddedByCopies).
  bool moe_router_padding = false;
  // The forward of an inference engine (serving/): weights are stored in the GEMM precision
  // (quantised once offline, so no per-step weight casts), no load-balancing loss, no dropout.
  bool inference = false;
};

// The token-expert pairs router padding (RunChoices::moe_router_padding) adds. A count whose
// remainder modulo the alignment a is uniform (dropless routing) is rounded up by (a − 1)/2 on
// average.
// - The alltoall dispatcher pads each rank's own [tokens, E] routing map before the dispatch
//   (Megatron-Core token_dispatcher.py dispatch_preprocess: pad_routing_map "converting some 0s
//   to 1s in the routing map"): every rank routes E·(a − 1)/2 pairs more, which are dispatched,
//   computed and combined like the others (MoeRouterPaddingPairsRouted).
// - The flex dispatcher (DeepEP) pads the map it received, after the dispatch (the counts rounded
//   up per local expert): (E/EP)·(a − 1)/2 more rows computed on a GPU, none sent
//   (MoeRouterPaddingRowsAfterDispatch).
inline double MoeRouterPaddingPerCount(const RunChoices& run) {
  if (run.moe_quant_align <= 0 || !run.moe_router_padding) return 0;
  return (static_cast<double>(run.moe_quant_align) - 1.0) / 2.0;
}
inline double MoeRouterPaddingPairsRouted(const RunChoices& run, bool deepep, int64_t experts) {
  return deepep ? 0.0 : static_cast<double>(experts) * MoeRouterPaddingPerCount(run);
}
inline double MoeRouterPaddingRowsAfterDispatch(const RunChoices& run, bool deepep,
                                                int64_t local_experts) {
  return deepep ? static_cast<double>(local_experts) * MoeRouterPaddingPerCount(run) : 0.0;
}

// How-a-run-executes settings that a command line or a validate/calibrate what-if overrides
// (--stack, --loss-kernel, --train-metric-passes, --torch-compile, --fsdp-impl,
// --hidden-dropout, --attention-dropout); an absent one leaves the config's value.
struct TrainingOverrides {
  std::optional<TrainingStack> stack;
  std::optional<LossKernel> loss_kernel;
  std::optional<int64_t> train_metric_passes;
  std::optional<bool> torch_compile;
  std::optional<FsdpImpl> fsdp_impl;
  std::optional<double> hidden_dropout;  // kAutoDropout for "auto"
  std::optional<double> attention_dropout;
  bool Any() const {
    return stack || loss_kernel || train_metric_passes || torch_compile || fsdp_impl ||
           hidden_dropout || attention_dropout;
  }
  void ApplyTo(TrainingConfig& training) const {
    if (stack) training.stack = *stack;
    if (loss_kernel) training.loss_kernel = *loss_kernel;
    if (train_metric_passes) training.train_metric_passes = *train_metric_passes;
    if (torch_compile) training.torch_compile = *torch_compile;
    if (fsdp_impl) training.fsdp_impl = *fsdp_impl;
    if (hidden_dropout) training.hidden_dropout = *hidden_dropout;
    if (attention_dropout) training.attention_dropout = *attention_dropout;
  }
};





// Reads a training.grad_reduce_dtype value: "fp32" or "bf16"; kInvalidArgument otherwise.
absl::StatusOr<DType> ParseGradReduceDtype(std::string_view name);

// Bytes per parameter of the gradient reduction (and of Megatron's main-grad buffer).
inline double GradReduceBytesPerParam(const TrainingConfig& t) {
  return t.grad_reduce_dtype == DType::kBf16 ? 2.0 : 4.0;
}

// The training.attention_kernel values that name no kernel of a GPU profile; profiles may not
// use them as kernel names.
inline constexpr std::string_view kAttentionKernelRequests[] = {"auto", "flash", "unfused"};

// Reads a training.attention_kernel value: "unfused", else a flash kernel request ("auto",
// "flash" or a kernel name). kInvalidArgument for an empty value.
absl::Status SetAttentionKernel(std::string_view value, TrainingConfig& training);
// The value as written: "unfused" or the flash kernel request.
std::string_view AttentionKernelValue(const TrainingConfig& training);

}  // namespace projector

#endif  // PROJECTOR_CORE_TRAINING_CONFIG_H_
