// Internals shared by the module profilers (not part of the public API): the per-layer sizes
// derived from a ProfileContext, and ModuleOpBuilder, which turns a module's forward ops into
// the full op list (forward, recompute copies, backward dgrad/wgrad in reverse order).
#ifndef PROJECTOR_PROFILERS_PROFILER_INTERNAL_H_
#define PROJECTOR_PROFILERS_PROFILER_INTERNAL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/op_shapes.h"
#include "core/training_config.h"
#include "core/units.h"
#include "profilers/module_profilers.h"
#include "profilers/op_list.h"

namespace projector::profiler_internal {

// Sizes every module of one layer derives from the layout, validated once.
struct LayerDims {
  int64_t micro_batch = 1;
  int64_t seq_q = 0;     // local query positions: seq_len/CP
  int64_t seq_kv = 0;    // key/value positions one rank attends over: seq_len (CP gathers KV)
  int64_t tokens = 0;    // T = micro_batch·seq_len/CP: rows of every TP-split GEMM
  int64_t sp_tokens = 0; // T/TP under sequence parallelism, else T: norms, residual, dropout
  int64_t tp = 1;
  DType gemm_dtype = DType::kBf16;  // training.precision
  DType act_dtype = DType::kBf16;   // activations, attention kernel, output layer
  double act_bytes = 2.0;           // bytes per activation element
  // FP8/FP4 training (gemm_dtype narrower than act_dtype): the quantisation work of every
  // low-precision linear layer (see Fp8Casts).
  bool quantized = false;
  // True when Transformer Engine casts each fp8 weight once per step, in the first
  // micro-batch's forward (OpPhase::kOncePerStep), and reuses the cached copy over the
  // step's gradient accumulation; false under FSDP, where the full weight exists for one
  // micro-batch only and is cast in every micro-batch's forward (see ResolveDims).
  bool weight_cast_cached = false;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // the run's (RunChoices::fp8_recipe)
  // Elementwise work runs as eager PyTorch ops (RunsEagerElementwise: a PyTorch-native stack
  // without torch.compile): RMSNorm, RoPE and SwiGLU as the kernels of EagerRmsNorm,
  // EagerRope and EagerSwiGlu instead of one fused kernel each.
  bool eager_elementwise = false;
  // The model is the stack's own PyTorch module code (a PyTorch-native stack, eager or
  // compiled) rather than Megatron's Transformer Engine layers: autograd's glue around an
  // opaque attention kernel (the split backward of a fused Wqkv) runs as it is written.
  bool pytorch_modules = false;
  // Dropout after the embedding and on the residual branches, and on the attention
  // probabilities (ResolvedDropout > 0): 1-byte masks written, kept for backward and read back.
  bool hidden_dropout = false;
  bool attention_dropout = false;
  // The linear layers are Transformer Engine modules (the megatron stack): each forward call
  // costs the host kTeModuleExtraDispatches beyond its GEMM's dispatch.
  bool te_modules = false;
  // Selective recompute is torchtitan's per-op SAC (the torchtitan stack; ModuleOpBuilder::
  // Finish) rather than Megatron's recompute of the attention core.
  bool op_sac = false;
  // The forward of an inference engine (RunChoices::inference): no weight casts.
  bool inference = false;
  // TensorFlow's AMP graph rewrite (TrainingConfig::tf_amp): act_bytes is the fp32 of the
  // elementwise work between the GEMMs, act_dtype the GEMMs' fp16; every linear layer casts its
  // fp32 weight to fp16 each micro-batch and its weight gradient back (ModuleOpBuilder::Linear).
  bool tf_amp = false;
  // RunChoices::grouped_linear_kernel_per_expert: a GroupedLinear's GEMMs launch one kernel per
  // expert.
  bool grouped_linear_kernel_per_expert = false;
  // RunChoices::gemm_scale_swizzle: every quantised GEMM is preceded by its operands' scale
  // swizzles (op "scale_swizzle").
  bool gemm_scale_swizzle = false;
};

// The kernels of one eager PyTorch elementwise block, per element: bytes moved (reads +
// writes, every non-view op one kernel reading its inputs and writing its outputs) and kernel
// launches, forward and backward (the autograd graph). Traced op by op with
// tools/eager_bytes.py (PyTorch's dispatcher, TorchDispatchMode, on PyTorch 1.13.1 from Debian;
// `e` bytes per activation element, fp32 intermediates 4 bytes).
struct EagerKernels {
  double forward_bytes = 0;   // per element
  double backward_bytes = 0;  // per element
  int64_t forward_launches = 0;
  int64_t backward_launches = 0;
  // The memory op of each pass over `elements` elements, `flops` vector FLOPs in all.
  MemoryOp Forward(double elements, double flops) const {
    return MemoryOp{.bytes = Bytes(forward_bytes * elements),
                    .flops = Flops(flops),
                    .launches = forward_launches};
  }
  MemoryOp Backward(double elements, double flops) const {
    return MemoryOp{.bytes = Bytes(backward_bytes * elements),
                    .flops = Flops(flops),
                    .launches = backward_launches};
  }
};
// RMSNorm as torchtitan and Hugging Face Llama write it (and ATen's composite rms_norm):
// y = (x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).type_as(x) * weight.
//   forward: to fp32 (e+4), pow (8), mean (4), mul by the row scale (8), to e (4+e),
//            mul by the weight (2e), plus two row-sized kernels (add eps, rsqrt): 4e + 28 B
//            over 8 kernels;
//   backward: 16 kernels, 8e + 76 B (the weight's product and row sum; the fp32 paths of the
//            scale and of pow, summed; the casts back).
// It keeps the fp32 copy of x and the e-byte normalised output: 4 + e bytes per element where
// a fused norm keeps its e-byte input.
EagerKernels EagerRmsNorm(double e);
// SwiGLU silu(g)·u per output element: forward silu (2e) and mul (3e); backward the two
// products of mul's backward (3e each) and silu_backward (3e). It keeps silu(g) as well (e).
EagerKernels EagerSwiGlu(double e);
// Rotary embedding as torchtitan's apply_rotary_emb (complex view in fp32), per rotated
// element: forward to fp32 (e+4), complex mul (8), back to e (4+e) = 2e + 16 over 3 kernels;
// backward the same three (2e + 16) plus, for a gradient that reached SDPA through a transpose
// and arrives non-contiguous, an fp32 contiguous copy (8): `strided_gradient`. The cos/sin
// table (seq·head_dim/2 complex64) stays in L2 and is not counted.
EagerKernels EagerRope(double e, bool strided_gradient);
// One norm's kernels per element: a fused kernel (forward reads x and writes `out_bytes` of y;
// backward reads x and dy and writes dx, 3e, the weight-gradient reduction riding along), or
// with `eager` an eager PyTorch RMSNorm (EagerRmsNorm; its output is e bytes).
EagerKernels NormKernels(double e, double out_bytes, bool eager);

// Host cost of one Transformer Engine module forward call beyond a plain PyTorch op: TE issue
// #2053 (2025-08) measured te.Linear against torch.nn.Linear forward (bf16, hidden 2048, 8192
// tokens) on the same hosts: 99.66 vs 37.08 µs of CPU on GB200 (2.69x), 90.53 vs 33.17 on GH200
// (2.73x). The module's GEMM is one dispatch already; the rest, 1.7 dispatch-equivalents, is
// the module's Python (recipe and workspace handling, autograd function setup). Forward only:
// the issue measures no backward.
inline constexpr double kTeModuleExtraDispatches = 1.7;

// The quantisation of one bf16 tensor (e bytes per element) into the fp8 copy (q bytes) a
// GEMM reads and the transposed copy its wgrad reads, under an FP8 recipe (Fp8Recipe):
//   delayed     e + 2q bytes, 1 kernel (cast-transpose, the amax recorded on the way);
//   tensorwise  2e + 2q, 3 kernels (amax pass, scale, cast-transpose: the scale must be known
//               before the cast, so the tensor is read twice);
//   blockwise   e + 2q + 2·4/128 (an fp32 scale per 128 elements, both copies), 1 kernel;
//   mxfp8       e + 2q + 2/32 (an E8M0 scale per 32 elements, both copies), 1 kernel;
//   rowwise     2e + 2q, 2 kernels (row amax and cast, per orientation).
// `fused_over_experts`: a GroupedLinear quantises all its experts in one kernel (delayed
// scaling's multi-tensor cast-transpose); the other recipes run their kernels per expert.
// `block_scaled_gemm`: the GEMMs apply the scales per K block in their main loop (blockwise,
// MXFP8; GemmShape::block_scaled), the others once per tensor or row in the epilogue.
struct Fp8Quantization {
  double bytes_per_element = 0;
  int64_t kernels = 1;
  bool fused_over_experts = false;
  bool block_scaled_gemm = false;
};
Fp8Quantization QuantizationOf(Fp8Recipe recipe, double e, double q);

// How a quantised linear layer's input reaches fp8 (Transformer Engine, see profiler_internal.cc).
enum class LinearInput {
  // A bf16 activation: cast + transpose kernel in forward.
  kCast,
  // The output of a norm fused into the layer (TE LayerNormLinear): the norm kernel writes fp8
  // itself; the transposed copy for the weight gradient is made in backward.
  kFusedNorm,
  // The input of the previous linear layer, one TE layer in Megatron (kv_down and k_rope are
  // one linear_kv_down_proj): already quantised, no input cast or transpose.
  kSameAsPrevious,
};

// Bytes per element a linear layer keeps of its input for the weight gradient: the activation
// dtype, or under a Transformer Engine fp8 recipe the quantised column-wise copy (1 byte and the
// recipe's scales); torchao's rowwise recipe keeps the high-precision input.
double SavedLinearInputBytes(const LayerDims& dims);

// Whether selective recompute re-runs Megatron-Core recompute module `m` (one of
// training.recompute_modules): what ModuleProfile::activation_bytes_selective leaves out.
inline bool SelectiveRecomputes(const ProfileContext& ctx, RecomputeModule m) {
  return (ctx.training.recompute_modules & RecomputeBit(m)) != 0;
}

// kInvalidArgument for non-positive sizes in the training config or model; kFailedPrecondition
// when CP does not divide the sequence or, under sequence parallelism, TP does not divide T.
absl::StatusOr<LayerDims> ResolveDims(const ProfileContext& ctx);

// Head dim of a standard (non-MLA) attention: model.head_dim, or hidden/heads when unset.
int64_t StandardHeadDim(const ModelSpec& model);

// kFailedPrecondition "<what> <value> is not divisible by <by_name> <by>" unless value % by == 0.
absl::Status CheckDivisible(std::string_view what, int64_t value, std::string_view by_name,
                            int64_t by);

// Bytes per output element of a GEMM in `dtype`: fp8/fp4 GEMMs write bf16.
double GemmOutputBytes(DType dtype);

// Bytes per element a norm writes: `dims.gemm_dtype` when its output feeds a quantised linear
// layer it is fused into (TE LayerNormLinear), else the activation dtype.
double NormOutputBytes(const LayerDims& dims, bool fused_into_linear);

inline double D(int64_t v) { return static_cast<double>(v); }

// Builds one module's op list. Forward ops are appended as they are declared; Finish() appends
// the recompute copies and then the backward ops in reverse forward order (a linear layer gives
// dgrad then wgrad, as Megatron computes them). Names and module are static strings.
class ModuleOpBuilder {
 public:
  static constexpr size_t kMaxForwardOps = 48;

  // Reserves `capacity` ops once (a module emits at most ~3× its forward op count + recompute).
  // `dims` sets the activation dtype and the quantisation of low-precision linear layers.
  ModuleOpBuilder(std::string_view module, OpList& ops, size_t capacity, const LayerDims& dims);

  // y[m, out] = x[m, in] · W[in, out], `batch` independent problems (turbo grouped GEMM), run
  // `repeat` times back to back (legacy grouped GEMM). Backward: dgrad dX = dY·Wᵀ, shape
  // (m, in, out); wgrad dW = Xᵀ·dY, shape (in, out, m). When `dtype` is narrower than the
  // activations (FP8/FP4 training) the layer also gets its Transformer Engine quantisation
  // kernels (weight, input and output-gradient casts; `input` says how x reaches fp8).
  void Linear(std::string_view name, int64_t m, int64_t in, int64_t out, DType dtype,
              int64_t batch = 1, int64_t repeat = 1, LinearInput input = LinearInput::kCast);
  // The Linear layers declared after this call are one Transformer Engine GroupedLinear over
  // `experts` local experts (1: plain layers again): the host issues their quantisation and
  // GEMMs once per expert (Op::host_fanout).
  void SetLinearHostFanout(int64_t experts) { linear_host_fanout_ = experts; }
  // The last Linear stands for `parts` separate linear layers on the same input (PyTorch
  // modules such as torchtitan's wq/wk/wv, not one fused GEMM): autograd sums their input
  // gradients after the dgrad, parts − 1 add kernels each reading two e-byte gradients and
  // writing one (op "input_grad_sum").
  void SeparateInputGradients(int64_t parts);
  // The last Linear stands for separate PyTorch linear layers (aten.mm calls, in this order)
  // with these output widths summing to its N (torchtitan's wq, wk, wv; w1, w3): what
  // torchtitan's per-op SAC counts (Finish). Without it a Linear is one mm.
  void SetMmOutputs(std::initializer_list<int64_t> widths);
  // The model is the stack's own PyTorch module code (LayerDims::pytorch_modules).
  bool pytorch_modules() const { return pytorch_modules_; }
  // The last Linear is a plain PyTorch linear even under Transformer Engine (Megatron's router
  // gate and its own ColumnParallelLinear output layer): no TE module call on the host.
  void PlainTorchLinear();
  // The last Linear's backward GEMMs (dgrad and wgrad) run in `dtype` rather than its forward's,
  // on operands cast for them by `casts` (op "backward_operand_cast", before the dgrad; it
  // includes casting the gradients back): Megatron-Core's fp32 router gate, whose backward is a
  // pure-FP32 GEMM that Transformer Engine runs on TF32 tensor cores.
  void SetBackwardGemmDType(DType dtype, const MemoryOp& casts);
  // The last Linear's output is split into `parts` tensors by PyTorch module code (MPT's and
  // GPT's fused Wqkv: qkv.chunk(3)) whose gradients come back as separate tensors (the
  // attention kernel allocates dQ, dK and dV), so autograd's split backward concatenates them
  // before the dgrad: one cat kernel reading and writing e bytes per output element (op
  // "output_grad_cat").
  void SplitOutputGradients(int64_t parts);
  // A memory-bound kernel. `backward` with zero bytes and flops has no backward op;
  // `backward_phase` is kBackwardDgrad for activation gradients, kBackwardWgrad for weight
  // gradients that are not GEMMs (embedding scatter-add).
  void Memory(std::string_view name, MemoryOp forward, MemoryOp backward,
              OpPhase backward_phase = OpPhase::kBackwardDgrad);
  // Flash-attention forward now, backward at Finish. Bytes are HBM traffic per pass.
  void Attention(std::string_view name, const AttentionShape& shape, Bytes forward_bytes,
                 Bytes backward_bytes);
  // Ops declared between these calls belong to Megatron-Core recompute module `m` (groups nest:
  // an op can be in several); a flash-attention op is always in core_attn.
  void BeginRecomputeGroup(RecomputeModule m) { current_groups_ |= RecomputeBit(m); }
  void EndRecomputeGroup(RecomputeModule m) {
    current_groups_ &= static_cast<RecomputeModules>(~RecomputeBit(m));
  }
  // Ops declared between these calls form the attention core (the unfused QKᵀ, softmax and P·V
  // kernels): selective recompute re-runs them as it re-runs a flash-attention kernel.
  void BeginAttentionCore() { BeginRecomputeGroup(RecomputeModule::kCoreAttn); }
  void EndAttentionCore() { EndRecomputeGroup(RecomputeModule::kCoreAttn); }
  // Between BeginAttentionCore and EndAttentionCore: GEMMs of activations, no weights.
  bool InAttentionCore() const {
    return (current_groups_ & RecomputeBit(RecomputeModule::kCoreAttn)) != 0;
  }
  // kFull: a kRecompute copy of every forward op; kSelective: of the ops in one of `modules`'
  // groups (Megatron-Core's recompute_modules; by default the attention core), or
  // under LayerDims::op_sac torchtitan's per-op selective activation checkpointing
  // (torchtitan/parallelisms/parallelize_llama.py, _apply_ac_to_transformer_block, late 2024):
  // the outputs of aten.mm, SDPA and reduce-scatter are saved except every second mm of the
  // block, counted in call order, so the backward re-runs every other op: the elementwise
  // kernels (norms, RoPE, SwiGLU, casts, copies), every second mm (wk, wo and w3 of a Llama
  // block: 2, 4 and 6 of wq wk wv wo w1 w3 w2), and the grouped expert GEMMs and unfused
  // attention bmm, which are not aten.mm; not the flash attention kernel. Counted per module:
  // a Llama attention module issues 4 mms, so the MLP's count starts on the block's parity.
  void Finish(Recompute recompute, RecomputeModules modules = kDefaultRecomputeModules);
  // What the module keeps for backward under that per-op policy: the outputs of the saved mms
  // (the odd ones of the block, counted as Finish counts them) and of the flash attention
  // kernel (O and its fp32 log-sum-exp per query row and head); everything else is re-run.
  // The block's input, kept by the checkpoint itself, is the norms module's to count. Summed
  // over the modules finished so far.
  Bytes OpSacStoredBytes() const { return op_sac_stored_; }

 private:
  struct Pending {
    MemoryOp backward_memory;
    Bytes backward_bytes;
    OpPhase backward_phase = OpPhase::kBackwardDgrad;
    bool has_backward = true;
    // Full recompute re-runs the op (false for a weight cast cached for the whole step).
    bool recomputed = true;
    // The recompute modules the op belongs to (BeginRecomputeGroup).
    RecomputeModules groups = 0;
    // SeparateInputGradients: the add kernels after the dgrad.
    MemoryOp input_grad_sum{.bytes = Bytes(0), .flops = Flops(0), .launches = 0};
    // SetMmOutputs: the output widths of the separate mms a Linear stands for (none: one).
    std::array<int64_t, 4> mm_outputs{};
    size_t mm_parts = 0;
    // SplitOutputGradients: the cat before the dgrad.
    MemoryOp output_grad_cat{.bytes = Bytes(0), .flops = Flops(0), .launches = 0};
    // Quantised GEMM: the output-gradient cast before dgrad and, for a fused-norm input, the
    // transpose of the saved fp8 input before wgrad (zero bytes: none).
    MemoryOp grad_cast;
    int64_t grad_cast_host_fanout = 1;
    MemoryOp input_transpose;
    // TF AMP: the fp16 weight gradient cast back to its fp32 variable, after the wgrad.
    MemoryOp wgrad_cast;
    // MXFP8: the scale swizzles before the dgrad and the wgrad (no launches: none).
    MemoryOp dgrad_swizzle{.bytes = Bytes(0), .flops = Flops(0), .launches = 0};
    MemoryOp wgrad_swizzle{.bytes = Bytes(0), .flops = Flops(0), .launches = 0};
    // SetBackwardGemmDType: the dgrad's and wgrad's dtype (none: the forward's) and the casts
    // of their operands.
    std::optional<DType> backward_dtype;
    MemoryOp backward_casts{.bytes = Bytes(0), .flops = Flops(0), .launches = 0};
  };
  Op& AddForward(std::string_view name, OpKind kind);
  void AddOpSacRecompute(size_t first, size_t end);
  // Under op SAC, the output columns of forward op `at` that the policy saves and re-runs;
  // `mm_count` counts the block's mm calls so far. Both zero for an op that is not one aten.mm.
  struct MmColumns {
    int64_t saved = 0;
    int64_t rerun = 0;
  };
  MmColumns OpSacColumns(size_t at, int64_t& mm_count) const;
  // OpSacStoredBytes of the module being finished.
  Bytes StoredUnderOpSac() const;
  // A memory-bound forward op without backward, run `repeat` times: in every micro-batch's
  // forward and its recompute, or once per step (OpPhase::kOncePerStep, not recomputed).
  void AddCast(std::string_view name, Bytes bytes_per_repeat, double elements_per_repeat,
               int64_t repeat, bool once_per_step);
  // The two scale swizzles before a GEMM (forward, recomputed with it; AddScaleSwizzle) or its
  // dgrad / wgrad (Finish), run `repeat` times like it (ScaleSwizzleOp).
  void AddScaleSwizzle(const MemoryOp& swizzle, int64_t repeat);
  void AddBackwardScaleSwizzle(const MemoryOp& swizzle, int64_t repeat, OpPhase phase);
  // TF AMP's cast of a linear layer's fp32 weight to fp16 (LayerDims::tf_amp), in every
  // micro-batch's forward and its recompute, run `repeat` times; no backward op.
  void AddAmpWeightCast(const MemoryOp& cast, int64_t repeat);
  // The kernels of one quantisation (QuantizationOf) over the current GroupedLinear's experts
  // (linear_host_fanout_): one multi-tensor kernel the host still prepares per expert, or
  // kernels per expert.
  MemoryOp CastOp(Bytes bytes, double elements) const;
  int64_t CastHostFanout() const;

  std::string_view module_;
  double act_bytes_;
  bool quantized_;
  Fp8Recipe fp8_recipe_;
  bool weight_cast_cached_;
  bool pytorch_modules_;  // LayerDims::pytorch_modules
  bool te_modules_;       // LayerDims::te_modules
  bool op_sac_;           // LayerDims::op_sac
  bool inference_;        // LayerDims::inference
  bool grouped_linear_kernel_per_expert_;  // LayerDims::grouped_linear_kernel_per_expert
  bool gemm_scale_swizzle_;                // LayerDims::gemm_scale_swizzle
  bool amp_casts_;        // LayerDims::tf_amp outside inference: per-micro-batch weight casts
  Bytes op_sac_stored_;   // OpSacStoredBytes
  OpList& ops_;
  size_t start_;
  // Slot i is constructed by AddForward (std::construct_at) before it is read, so the slots
  // start unconstructed, as a union member is (a zeroed array cost ~2% of a MoE layout search).
  union PendingSlots {
    PendingSlots() {}
    std::array<Pending, kMaxForwardOps> at;
  } pending_slots_;
  std::array<Pending, kMaxForwardOps>& pending_ = pending_slots_.at;
  size_t forward_count_ = 0;
  RecomputeModules current_groups_ = 0;
  int64_t linear_host_fanout_ = 1;
};

// The GEMMs and activation of one (dense, shared-expert or grouped-expert) MLP block:
// gated (SwiGLU): fc1 = fused gate+up projection h → 2·f_local (Megatron's linear_fc1 with
// gated_linear_unit; same FLOPs as separate gate and up GEMMs), SwiGLU, fc2 f_local → h;
// plain: fc1 h → f_local, GELU, fc2. `m`, `batch`, `repeat` as in ModuleOpBuilder::Linear;
// the activation is one element-wise kernel over `act_rows` rows.
struct MlpOpNames {
  std::string_view fc1;
  std::string_view act;
  std::string_view fc2;
  // The routed experts' MLP: its activation is Megatron-Core's "moe_act" recompute module.
  bool routed_experts = false;
};
// `eager`: the SwiGLU runs as eager PyTorch ops (EagerSwiGlu), and the gate and up
// projections are separate linear layers whose input gradients autograd sums (one add kernel,
// 3e per input element); GELU is one kernel either way.
void AddMlpOps(ModuleOpBuilder& b, const MlpOpNames& names, int64_t m, int64_t hidden,
               int64_t f_local, bool gated, DType gemm_dtype, double act_bytes, int64_t act_rows,
               int64_t batch = 1, int64_t repeat = 1, LinearInput fc1_input = LinearInput::kCast,
               bool eager = false);
// Weights of one such block: (gated ? 3 : 2)·hidden·f_local, plus with `bias` the fc1 bias
// ((gated ? 2 : 1)·f_local, split with the columns) and the fc2 bias (hidden: a row-parallel
// bias is replicated on every TP rank).
double MlpParameters(int64_t hidden, int64_t f_local, bool gated, bool bias);
// Weights per normalised element: 1 (RMSNorm, or LayerNorm without bias as in MPT's no_bias);
// 2 for a LayerNorm with bias (GPT / Megatron GPT, i.e. model.linear_bias).
double NormParamsPerElement(const ModelSpec& model);
// Korthikanti et al. 2022 (section 4.1) MLP terms without the fc1 input: activation input
// (gated: both fc1 halves, 2·f_local; plain: 4h → 8sbh) and fc2 input (f_local; 8sbh, in
// SavedLinearInputBytes), in bytes for `rows` rows. An eager gated activation
// (dims.eager_elementwise, EagerSwiGlu) also keeps silu(g), f_local more.
double MlpInnerActivationBytes(int64_t rows, int64_t f_local, bool gated, const LayerDims& dims);

}  // namespace projector::profiler_internal

#endif  // PROJECTOR_PROFILERS_PROFILER_INTERNAL_H_
