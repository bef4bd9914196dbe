#include "projection/layer_composer.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "core/status_macros.h"
#include "profilers/module_profilers.h"

namespace projector {
namespace {

// Activations and gradients cross the wire in bf16 (Megatron communicates in the params dtype;
// fp8 training keeps bf16 activations between layers).
constexpr double kCommBytesPerElement = 2.0;


// HBM traffic of a collective per byte it moves over the wire in each direction. A byte sent is
// read from HBM by the sending CTA and a byte received is written to HBM by the receiving side
// (NCCL's Simple protocol lands it in the peer's staging buffer, the receiver then copies it on:
// both sides of the copy are counted once here, as the brief's "each byte sent/received is
// read/written"): 2 B per wire byte. A reduction step also reads the local operand it adds the
// received chunk to: 3 B. Ring volumes per rank and direction (nccl-tests' busbw factors):
// AllGather/ReduceScatter/AllToAll (n−1)/n·S, AllReduce (n−1)/n·S reduced + (n−1)/n·S copied,
// SendRecv and Broadcast S.
constexpr double kHbmBytesPerCopiedWireByte = 2.0;
constexpr double kHbmBytesPerReducedWireByte = 3.0;

double CollectiveHbmBytes(const CollectiveOp& op) {
  const double n = static_cast<double>(op.group.size);
  const double ring = n > 1 ? (n - 1) / n * op.bytes.value() : 0.0;
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
      return ring * (kHbmBytesPerReducedWireByte + kHbmBytesPerCopiedWireByte);
    case CollectiveKind::kReduceScatter:
      return ring * kHbmBytesPerReducedWireByte;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kAllToAll:
      return ring * kHbmBytesPerCopiedWireByte;
    case CollectiveKind::kSendRecv:
    case CollectiveKind::kBroadcast:
      return op.group.size > 1 ? op.bytes.value() * kHbmBytesPerCopiedWireByte : 0.0;
  }
  return 0.0;
}

double Fraction01(double v) { return std::clamp(v, 0.0, 1.0); }

// Per-module compute sums and the overlap windows the communication rules need.
struct ModuleSums {
  std::string_view module;
  Seconds fwd, bwd, rec;
  Seconds fwd_cs, bwd_cs, rec_cs;
  Seconds first_mb, first_mb_cs;  // kOncePerStep: once per step
  Seconds mem_fwd, mem_bwd, mem_rec;  // memory-bound kernels
  Seconds wgrad;                      // weight-gradient ops (part of bwd)
  Seconds attention_fwd, attention_bwd, attention_rec;  // flash-attention kernels
  Seconds max_fwd_gemm, max_dgrad_gemm, max_wgrad_gemm;  // largest single GEMM per phase
  // Forward shared-expert work Megatron-Core's --moe-shared-expert-overlap runs beside the
  // dispatch (fc1 and the activation, the latter memory-bound) and beside the combine (fc2).
  Seconds shared_fc1_fwd, shared_act_fwd, shared_fc2_fwd;
};

ModuleSums SumModule(const ModuleProfile& m) {
  ModuleSums s;
  s.module = m.module;
  for (const Op& op : m.ops) {
    if (op.kind == OpKind::kCollective) continue;  // profilers add none; be safe
    switch (op.phase) {
      case OpPhase::kForward:
        s.fwd += op.time;
        s.fwd_cs += op.clock_scaled_time;
        if (op.kind == OpKind::kMemory) s.mem_fwd += op.time;
        if (op.kind == OpKind::kAttention) s.attention_fwd += op.time;
        if (op.kind == OpKind::kGemm) s.max_fwd_gemm = std::max(s.max_fwd_gemm, op.time);
        if (op.name == kSharedExpertFc1) s.shared_fc1_fwd += op.time;
        if (op.name == kSharedExpertAct) s.shared_act_fwd += op.time;
        if (op.name == kSharedExpertFc2) s.shared_fc2_fwd += op.time;
        break;
      case OpPhase::kBackwardDgrad:
      case OpPhase::kBackwardWgrad:
        s.bwd += op.time;
        s.bwd_cs += op.clock_scaled_time;
        if (op.kind == OpKind::kMemory) s.mem_bwd += op.time;
        if (op.kind == OpKind::kAttention) s.attention_bwd += op.time;
        if (op.kind == OpKind::kGemm && op.phase == OpPhase::kBackwardDgrad) {
          s.max_dgrad_gemm = std::max(s.max_dgrad_gemm, op.time);
        }
        if (op.phase == OpPhase::kBackwardWgrad) s.wgrad += op.time;
        if (op.kind == OpKind::kGemm && op.phase == OpPhase::kBackwardWgrad) {
          s.max_wgrad_gemm = std::max(s.max_wgrad_gemm, op.time);
        }
        break;
      case OpPhase::kRecompute:
        s.rec += op.time;
        s.rec_cs += op.clock_scaled_time;
        if (op.kind == OpKind::kMemory) s.mem_rec += op.time;
        if (op.kind == OpKind::kAttention) s.attention_rec += op.time;
        break;
      case OpPhase::kOncePerStep:
        s.first_mb += op.time;
        s.first_mb_cs += op.clock_scaled_time;
        break;
    }
  }
  return s;
}

// A window made of one GEMM (or other compute-bound kernel).
OverlapWindow ComputeBoundWindow(Seconds t) {
  return {.total = t, .compute_bound = t, .memory_bound = Seconds(0)};
}

// One timed collective: its time (all repeats) and what it takes from compute beside it.
// Exposure of one collective overlapping `window` (OverlappedExposure of its InterferenceCost).
Seconds Exposure(const TimedCollective& c, const OverlapWindow& window) {
  return OverlappedExposure(c.time, InterferenceCost(c.time, c.slowdown, window), window);
}

class CommBuilder {
 public:
  CommBuilder(const CollectiveBackend& collective, const CommInterferenceModel& interference,
              OpList& ops)
      : collective_(collective), interference_(interference), ops_(ops) {}

  // Adds and times one collective; returns its time (all `repeat`s) and slowdown.
  absl::StatusOr<TimedCollective> Add(std::string_view name, std::string_view module, OpPhase phase,
                                CommDim dim, CollectiveKind kind, Bytes bytes, ProcessGroup group,
                                CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto,
                                int64_t repeat = 1, A2aRouting routing = {}) {
    if (group.size <= 1 || bytes.value() <= 0) return TimedCollective{};
    CollectiveOp c{.kind = kind, .bytes = bytes, .group = group, .routing = routing};
    absl::StatusOr<CollectiveEstimate> e = collective_.Estimate(c, algorithm);
    // PXN needs a group that spans nodes; inside one node fall back to the backend's choice.
    if (!e.ok() && e.status().code() == absl::StatusCode::kUnimplemented &&
        algorithm != CollectiveAlgorithm::kAuto) {
      algorithm = CollectiveAlgorithm::kAuto;
      e = collective_.Estimate(c, algorithm);
    }
    if (!e.ok()) return e.status();
    Op& op = ops_.emplace_back();
    op.name = name;
    op.module = module;
    op.kind = OpKind::kCollective;
    op.phase = phase;
    op.comm_dim = dim;
    op.collective = c;
    op.algorithm = e->algorithm;
    op.repeat = repeat;
    op.bytes = bytes * static_cast<double>(repeat);
    op.time = e->time * static_cast<double>(repeat);
    // A DeepEP-style kernel runs on its own SM budget, NCCL's on its channels.
    const bool ep_dispatch = dim == CommDim::kEp && kind == CollectiveKind::kAllToAll &&
                             e->algorithm == CollectiveAlgorithm::kPxn;
    return TimedCollective{.time = op.time,
                     .slowdown = CollectiveSlowdown(interference_, c, *e, ep_dispatch)};
  }

 private:
  const CollectiveBackend& collective_;
  const CommInterferenceModel& interference_;
  OpList& ops_;
};

// Exposed time of the TP collectives around one TP-sharded block (attention, or the MLP /
// shared experts): Megatron's ColumnParallelLinear → ... → RowParallelLinear pattern.
//
// Without sequence parallelism (Megatron `f`/`g` operators):
//   fwd: one AllReduce of the block output [tokens, h]            → exposed
//   bwd: one AllReduce of the block input grad, issued async and overlapped with the wgrad GEMM
//        of the column-parallel linear (LinearWithGradAccumulationAndAsyncCommunication)
//        → exposed max(AR − wgrad, interference) (OverlappedExposure)
// With sequence parallelism (Korthikanti et al. 2022, §4.2.2):
//   fwd: AllGather of the block input + ReduceScatter of its output  → both exposed
//   bwd: AllGather of the output grad (the RS's backward)             → exposed;
//        re-AllGather of the saved SP-sharded input for the wgrad GEMM, async under the dgrad
//        GEMM → max(0, AG − dgrad); ReduceScatter of the input grad, async under the wgrad GEMM
//        → max(0, RS − wgrad).
// With --tp-comm-overlap the forward collectives also hide behind the adjacent GEMM.
// Sizes follow nccl-tests: AR buffer = AG output = RS input = tokens·h·2 B, so an AG or RS
// moves half the bytes of an AR. Every "max(0, comm − window)" below is OverlappedExposure, so a
// hidden collective still costs the compute slowdown it causes.
struct TpExposure {
  Seconds fwd, bwd;
};

// `fp8_gathers`: FP8 training with sequence parallelism. Transformer Engine casts a
// column-parallel GEMM's input to FP8 before gathering it over TP (LayerNormLinear's norm writes
// its output in FP8, ln_out_dtype uint8; Linear casts its input first), gathers that saved FP8
// input again for the weight gradient, and casts the output gradient to FP8 before gathering it
// for a row-parallel GEMM's backward (TE pytorch/module/{layernorm_linear,linear,base}.py,
// _grad_output_preprocess); so those three AllGathers move 1 B per element (the per-tensor
// scale is negligible). The ReduceScatters reduce GEMM outputs and stay in bf16.
absl::StatusOr<TpExposure> AddTpBlock(CommBuilder& b, std::string_view module,
                                      const ModuleSums& s, const ParallelConfig& par, Bytes act,
                                      bool tp_comm_overlap, bool fp8_gathers) {
  TpExposure x;
  ProcessGroup g = par.TpGroup();
  if (g.size <= 1) return x;
  const OverlapWindow fwd_window =
      ComputeBoundWindow(tp_comm_overlap ? s.max_fwd_gemm : Seconds(0));
  const OverlapWindow dgrad = ComputeBoundWindow(s.max_dgrad_gemm);
  const OverlapWindow wgrad = ComputeBoundWindow(s.max_wgrad_gemm);
  if (!par.sequence_parallel) {
    PROJECTOR_ASSIGN_OR_RETURN(TimedCollective ar_f, b.Add("tp_allreduce", module, OpPhase::kForward,
                                                     CommDim::kTp, CollectiveKind::kAllReduce,
                                                     act, g));
    PROJECTOR_ASSIGN_OR_RETURN(TimedCollective ar_b,
                               b.Add("tp_allreduce_grad", module, OpPhase::kBackwardDgrad,
                                     CommDim::kTp, CollectiveKind::kAllReduce, act, g));
    x.fwd = Exposure(ar_f, fwd_window);
    x.bwd = Exposure(ar_b, wgrad);
    return x;
  }
  const Bytes gathered = fp8_gathers ? act * 0.5 : act;
  PROJECTOR_ASSIGN_OR_RETURN(TimedCollective ag_f, b.Add("sp_allgather", module, OpPhase::kForward,
                                                   CommDim::kTp, CollectiveKind::kAllGather,
                                                   gathered, g));
  PROJECTOR_ASSIGN_OR_RETURN(TimedCollective rs_f, b.Add("sp_reducescatter", module, OpPhase::kForward,
                                                   CommDim::kTp, CollectiveKind::kReduceScatter,
                                                   act, g));
  PROJECTOR_ASSIGN_OR_RETURN(TimedCollective ag_grad,
                             b.Add("sp_allgather_grad", module, OpPhase::kBackwardDgrad,
                                   CommDim::kTp, CollectiveKind::kAllGather, gathered, g));
  PROJECTOR_ASSIGN_OR_RETURN(TimedCollective ag_input,
                             b.Add("sp_allgather_wgrad_input", module, OpPhase::kBackwardDgrad,
                                   CommDim::kTp, CollectiveKind::kAllGather, gathered, g));
  PROJECTOR_ASSIGN_OR_RETURN(TimedCollective rs_grad,
                             b.Add("sp_reducescatter_grad", module, OpPhase::kBackwardWgrad,
                                   CommDim::kTp, CollectiveKind::kReduceScatter, act, g));
  x.fwd = Exposure(ag_f, fwd_window) + Exposure(rs_f, fwd_window);
  const OverlapWindow bwd_window = tp_comm_overlap ? dgrad : ComputeBoundWindow(Seconds(0));
  x.bwd = Exposure(ag_grad, bwd_window) + Exposure(ag_input, dgrad) + Exposure(rs_grad, wgrad);
  return x;
}

}  // namespace

CommInterferenceModel MakeCommInterferenceModel(const HardwareProfile& hw) {
  const CommInterference& c = hw.comm_interference;
  return {.compute_units = hw.gpu.compute_units,
          .scale_up_ctas = c.scale_up_ctas,
          .scale_out_ctas = c.scale_out_ctas,
          .ep_dispatch_ctas = c.ep_dispatch_ctas,
          // Contention only where the profile models interference at all.
          .hbm_bandwidth = c.scale_up_ctas + c.scale_out_ctas + c.ep_dispatch_ctas > 0
                               ? hw.gpu.hbm_bandwidth * hw.gpu.hbm_efficiency
                               : BytesPerSecond(0)};
}

// SM share: a CTA holds its SM for the whole collective, and a compute-bound kernel beside it
// (GEMM, flash attention) runs its waves on the SMs left, so its rate drops by CTAs / SMs.
// HBM share: the collective's HBM traffic rate over the achievable bandwidth; a memory-bound
// kernel beside it gets the rest. Each capped to [0, 1].
TimedCollective Sum(const TimedCollective& a, const TimedCollective& b) {
  const Seconds t = a.time + b.time;
  if (t.value() <= 0) return {};
  const double wa = a.time.value() / t.value(), wb = b.time.value() / t.value();
  return {.time = t,
          .slowdown = {.compute = wa * a.slowdown.compute + wb * b.slowdown.compute,
                       .memory = wa * a.slowdown.memory + wb * b.slowdown.memory}};
}

CommSlowdown CollectiveSlowdown(const CommInterferenceModel& model, const CollectiveOp& op,
                                const CollectiveEstimate& estimate, bool ep_dispatch) {
  CommSlowdown s;
  if (model.compute_units <= 0 || op.group.size <= 1 || estimate.time.value() <= 0) return s;
  const int64_t ctas = ep_dispatch                    ? model.ep_dispatch_ctas
                       : estimate.nodes_spanned > 1 ? model.scale_out_ctas
                                                    : model.scale_up_ctas;
  s.compute =
      Fraction01(static_cast<double>(ctas) / static_cast<double>(model.compute_units));
  if (model.hbm_bandwidth.value() > 0) {
    s.memory = Fraction01(CollectiveHbmBytes(op) / estimate.time.value() /
                          model.hbm_bandwidth.value());
  }
  return s;
}

// Compute of the window runs at (1 − s) while the collective runs; spread over the window, the
// collective overlaps compute-bound kernels for comm · compute_bound / total and memory-bound
// ones for comm · memory_bound / total.
Seconds InterferenceCost(Seconds comm, CommSlowdown slowdown, const OverlapWindow& window) {
  if (window.total.value() <= 0 || comm.value() <= 0) return Seconds(0);
  const double share = (window.compute_bound.value() * slowdown.compute +
                        window.memory_bound.value() * slowdown.memory) /
                       window.total.value();
  return comm * share;
}

// Closed form of a compute window W slowed to rate 1 − s while a collective of duration t runs
// beside it (both start together): if the compute outlasts the collective it ends at
// W + s·t (the work lost while they overlapped), else the collective ends last, at t. So the
// window ends at max(t, W + s·t) and grows by max(t − W, s·t) = max(t − W, cost).
Seconds OverlappedExposure(Seconds comm, Seconds cost, const OverlapWindow& window) {
  return std::max(Max0(comm - window.total), Max0(cost));
}

Bytes LayerInputBytes(const ModelSpec& model, const ParallelConfig& parallel,
                      const TrainingConfig& training) {
  double tokens = static_cast<double>(training.micro_batch * training.seq_len) /
                  static_cast<double>(parallel.cp);
  if (parallel.sequence_parallel) tokens /= static_cast<double>(parallel.tp);
  return Bytes(tokens * static_cast<double>(model.hidden_size) * kCommBytesPerElement);
}

namespace {

// The module sums of the TP-sharded blocks: attention, and the dense MLP or the MoE module.
struct ShardedBlocks {
  ModuleSums attention, mlp;
  bool has_mlp = false;
};

// Adds every module's times, parameters and activations to the layer, and returns the sums of
// the blocks whose communication is composed below.
ShardedBlocks SumModules(const LayerProfile& timed_layer, ComposedLayer& out) {
  ShardedBlocks blocks;
  for (const ModuleProfile& m : timed_layer.modules) {
    ModuleSums s = SumModule(m);
    out.forward_compute += s.fwd;
    out.backward_compute += s.bwd;
    out.backward_weight_grad += s.wgrad;
    out.recompute_compute += s.rec;
    out.once_per_step_compute += s.first_mb;
    out.once_per_step_clock_scaled += s.first_mb_cs;
    out.forward_clock_scaled += s.fwd_cs;
    out.backward_clock_scaled += s.bwd_cs;
    out.recompute_clock_scaled += s.rec_cs;
    out.forward_memory_bound += s.mem_fwd;
    out.backward_memory_bound += s.mem_bwd;
    out.recompute_memory_bound += s.mem_rec;
    out.dense_parameters += m.dense_parameters;
    out.expert_parameters += m.expert_parameters;
    out.activation_bytes += m.activation_bytes;
    out.activation_bytes_selective += m.activation_bytes_selective;
    out.modules.push_back({.module = m.module, .forward = s.fwd, .backward = s.bwd,
                           .recompute = s.rec});
    if (m.module == "attention") blocks.attention = s;
    if (m.module == "mlp" || m.module == "moe") {
      blocks.mlp = s;
      blocks.has_mlp = true;
    }
  }
  return blocks;
}

// --- TP: around attention, and around the dense MLP or the MoE's shared experts. Routed
// experts are not TP-sharded (expert-TP handled with EP below).
absl::Status AddTpComm(CommBuilder& b, const LayerProfile& timed_layer,
                       const LayerCompositionContext& ctx, ShardedBlocks blocks,
                       ComposedLayer& layer) {
  const ModelSpec& model = ctx.model;
  const ParallelConfig& par = ctx.parallel;
  const TrainingConfig& tr = ctx.training;
  // Activation [micro_batch · seq/CP tokens, hidden] gathered over TP.
  Bytes act(static_cast<double>(tr.micro_batch * tr.seq_len) / static_cast<double>(par.cp) *
            static_cast<double>(model.hidden_size) * kCommBytesPerElement);
  const bool fp8_gathers = tr.precision == DType::kFp8 && par.sequence_parallel;
  if (ctx.weight_grad_deferred) {
    blocks.attention.max_wgrad_gemm = Seconds(0);
    blocks.mlp.max_wgrad_gemm = Seconds(0);
  }
  PROJECTOR_ASSIGN_OR_RETURN(TpExposure tp_attn,
                             AddTpBlock(b, "attention", blocks.attention, par, act,
                                        ctx.tp_comm_overlap, fp8_gathers));
  TpExposure tp_mlp;
  bool mlp_is_tp_sharded =
      blocks.has_mlp && (!timed_layer.is_moe ||
                         (model.moe.has_value() && model.moe->num_shared_experts > 0));
  if (mlp_is_tp_sharded) {
    PROJECTOR_ASSIGN_OR_RETURN(tp_mlp, AddTpBlock(b, timed_layer.is_moe ? "moe" : "mlp",
                                                  blocks.mlp, par, act, ctx.tp_comm_overlap,
                                                  fp8_gathers));
  }
  layer.forward_comm.tp = tp_attn.fwd + tp_mlp.fwd;
  layer.backward_comm.tp = tp_attn.bwd + tp_mlp.bwd;
  if (ctx.recompute == Recompute::kFull) layer.recompute_comm.tp = layer.forward_comm.tp;
  // Megatron-Core's module checkpoints re-run the collectives inside them: the dense MLP's (its
  // gather and reduce-scatter under SP) for "mlp", the shared experts' for "shared_experts" or
  // "moe".
  const bool mlp_rerun =
      timed_layer.is_moe ? tr.Recomputes(RecomputeModule::kSharedExperts) ||
                               tr.Recomputes(RecomputeModule::kMoe)
                         : tr.Recomputes(RecomputeModule::kMlp);
  if (ctx.recompute == Recompute::kSelective && mlp_rerun) layer.recompute_comm.tp = tp_mlp.fwd;
  return absl::OkStatus();
}

  // --- CP: Megatron's default cp_comm_type "p2p" is a ring: CP − 1 steps, each sending the
  // local K/V block to the next rank while attention runs on the block received before
  // (TransformerEngine's AttnFuncWithCPAndKVP2P). Backward circulates K/V and dK/dV (2× bytes).
  // Exposed = max(0, ring comm − attention kernel time).
absl::Status AddCpComm(CommBuilder& b, const LayerCompositionContext& ctx,
                       const ModuleSums& attention, ComposedLayer& layer) {
  const ModelSpec& model = ctx.model;
  const ParallelConfig& par = ctx.parallel;
  const TrainingConfig& tr = ctx.training;
  double kv_heads =
      std::max(1.0, static_cast<double>(model.num_kv_heads) / static_cast<double>(par.tp));
  Bytes kv(static_cast<double>(tr.micro_batch * tr.seq_len) / static_cast<double>(par.cp) *
           kv_heads * static_cast<double>(model.QkHeadDim() + model.VHeadDim()) *
           kCommBytesPerElement);
  ProcessGroup neighbours{.size = 2, .stride = par.CpGroup().stride};
  int64_t steps = par.cp - 1;
  PROJECTOR_ASSIGN_OR_RETURN(
      TimedCollective f, b.Add("cp_kv_ring", "attention", OpPhase::kForward, CommDim::kCp,
                       CollectiveKind::kSendRecv, kv, neighbours, CollectiveAlgorithm::kAuto,
                       steps));
  PROJECTOR_ASSIGN_OR_RETURN(
      TimedCollective bw, b.Add("cp_kv_dkv_ring", "attention", OpPhase::kBackwardDgrad, CommDim::kCp,
                        CollectiveKind::kSendRecv, kv * 2.0, neighbours,
                        CollectiveAlgorithm::kAuto, steps));
  layer.forward_comm.cp = Exposure(f, ComputeBoundWindow(attention.attention_fwd));
  layer.backward_comm.cp = Exposure(bw, ComputeBoundWindow(attention.attention_bwd));
  if (ctx.recompute != Recompute::kNone && attention.attention_rec.value() > 0) {
    layer.recompute_comm.cp = Exposure(f, ComputeBoundWindow(attention.attention_rec));
  }
  return absl::OkStatus();
}

// Expert-TP > 1: the AllGather of the dispatched tokens before the experts and the
// ReduceScatter after them, forward and backward.
struct EtpTimes {
  Seconds forward, backward;
};

absl::StatusOr<EtpTimes> AddEtpComm(CommBuilder& b, const ParallelConfig& par, Bytes msg) {
  if (par.etp <= 1) return EtpTimes{};
  ProcessGroup etp{.size = par.etp, .stride = 1};
  PROJECTOR_ASSIGN_OR_RETURN(
      TimedCollective ag, b.Add("etp_allgather", "moe", OpPhase::kForward, CommDim::kEp,
                        CollectiveKind::kAllGather, msg * static_cast<double>(par.etp), etp));
  PROJECTOR_ASSIGN_OR_RETURN(
      TimedCollective rs, b.Add("etp_reducescatter", "moe", OpPhase::kForward, CommDim::kEp,
                        CollectiveKind::kReduceScatter, msg * static_cast<double>(par.etp),
                        etp));
  PROJECTOR_ASSIGN_OR_RETURN(
      TimedCollective agb, b.Add("etp_allgather_grad", "moe", OpPhase::kBackwardDgrad, CommDim::kEp,
                         CollectiveKind::kAllGather, msg * static_cast<double>(par.etp),
                         etp));
  PROJECTOR_ASSIGN_OR_RETURN(
      TimedCollective rsb, b.Add("etp_reducescatter_grad", "moe", OpPhase::kBackwardDgrad,
                         CommDim::kEp, CollectiveKind::kReduceScatter,
                         msg * static_cast<double>(par.etp), etp));
  return EtpTimes{.forward = ag.time + rs.time, .backward = agb.time + rsb.time};
}

  // --- EP: All-to-All dispatch and combine in forward, and their gradients in backward. The
  // message is what this GPU sends: its tokens (÷TP under sequence parallelism) × top_k ×
  // hidden × 2 B. PXN when DeepEP-style dispatch is on, else the backend's best (single-shot /
  // hierarchical). Either runs in the layer's stream, all exposed, unless moe_a2a_overlap hides
  // the A2A of one micro-batch behind the expert and shared-expert compute of another:
  // exposed = max(0, A2A − MoE compute of the phase), the compute slowed by the SMs the A2A
  // holds. Expert-TP > 1 adds an AllGather of the dispatched tokens before and a ReduceScatter
  // after the experts.
  // DeepEP also sends a token once per destination node and fans it out over NVLink there
  // (DeepSeek-V3 report, arXiv 2412.19437 §3.2.2), so the routing goes with the A2A; and with
  // training.moe_dispatch_fp8 it dispatches in FP8, 1 B per element plus one fp32 scale per 128,
  // the combine staying BF16, and likewise in backward for the gradient of the combine and of the
  // dispatch (§3.3.2 "Low-Precision Communication").
absl::Status AddEpComm(CommBuilder& b, const LayerCompositionContext& ctx,
                       const ModuleSums& mlp, ComposedLayer& layer) {
  const ModelSpec& model = ctx.model;
  const ParallelConfig& par = ctx.parallel;
  const TrainingConfig& tr = ctx.training;
  double tokens = static_cast<double>(tr.micro_batch * tr.seq_len) / static_cast<double>(par.cp);
  if (par.sequence_parallel) tokens /= static_cast<double>(par.tp);
  // The busiest EP rank receives (dispatch) and sends back (combine) L times the balanced
  // share (MoeExpertLoad), and every rank waits for it. Router padding before the dispatch adds
  // the pairs it routes (MoeRouterPaddingPairsRouted).
  const double pairs = tokens * static_cast<double>(model.moe->top_k) +
                       MoeRouterPaddingPairsRouted(ctx.run, par.deepep, model.moe->num_experts);
  const double rows = pairs * static_cast<double>(model.hidden_size) * MoeExpertLoad(tr);
  Bytes msg(rows * kCommBytesPerElement);
  CollectiveAlgorithm algo = par.deepep ? CollectiveAlgorithm::kPxn : CollectiveAlgorithm::kAuto;
  const A2aRouting routing =
      par.deepep ? A2aRouting{.top_k = model.moe->top_k,
                              .experts = model.moe->num_experts,
                              .groups = model.moe->num_groups,
                              .topk_groups = model.moe->topk_groups}
                 : A2aRouting{};
  const bool fp8_dispatch = par.deepep && tr.precision == DType::kFp8 && tr.moe_dispatch_fp8;
  ProcessGroup ep = par.EpGroup();
  auto a2a = [&](std::string_view name, OpPhase phase, Bytes bytes, int64_t repeat) {
    return b.Add(name, "moe", phase, CommDim::kEp, CollectiveKind::kAllToAll, bytes, ep, algo,
                 repeat, routing);
  };
  TimedCollective a2a_f, a2a_b;
  TimedCollective one_way;  // the dispatch (or the combine) alone, alltoall dispatcher
  Seconds count_gather(0);
  if (ep.size > 1 && fp8_dispatch) {
    const Bytes fp8_msg(rows * kFp8DispatchBytesPerElement);
    PROJECTOR_ASSIGN_OR_RETURN(TimedCollective d, a2a("ep_dispatch_fp8", OpPhase::kForward, fp8_msg, 1));
    PROJECTOR_ASSIGN_OR_RETURN(TimedCollective c, a2a("ep_combine", OpPhase::kForward, msg, 1));
    PROJECTOR_ASSIGN_OR_RETURN(TimedCollective cg,
                               a2a("ep_combine_grad_fp8", OpPhase::kBackwardDgrad, fp8_msg, 1));
    PROJECTOR_ASSIGN_OR_RETURN(TimedCollective dg,
                               a2a("ep_dispatch_grad", OpPhase::kBackwardDgrad, msg, 1));
    a2a_f = Sum(d, c);
    a2a_b = Sum(cg, dg);
  } else if (ep.size > 1) {
    PROJECTOR_ASSIGN_OR_RETURN(a2a_f, a2a("ep_dispatch_combine", OpPhase::kForward, msg, 2));
    one_way = {.time = a2a_f.time / 2.0, .slowdown = a2a_f.slowdown};
    if (!par.deepep && MoeForwardSyncsHost(tr)) {
      // Megatron's All-to-All dispatcher gathers every EP rank's per-expert token counts
      // (E int64) before the dispatch (its preprocess); padded to capacity the splits are
      // static and it does not. DeepEP exchanges them inside its own dispatch kernels.
      const Bytes counts(static_cast<double>(model.moe->num_experts) * 8.0 *
                         static_cast<double>(ep.size));
      PROJECTOR_ASSIGN_OR_RETURN(
          const TimedCollective gather,
          b.Add("ep_count_gather", "moe", OpPhase::kForward, CommDim::kEp,
                CollectiveKind::kAllGather, counts, ep, CollectiveAlgorithm::kAuto, 1, {}));
      a2a_f = Sum(gather, a2a_f);
      count_gather = gather.time;
    }
    PROJECTOR_ASSIGN_OR_RETURN(a2a_b,
                               a2a("ep_dispatch_combine_grad", OpPhase::kBackwardDgrad, msg, 2));
  }
  PROJECTOR_ASSIGN_OR_RETURN(const EtpTimes etp, AddEtpComm(b, par, msg));
  if (tr.moe_a2a_overlap) {
    // The A2A kernels (DeepEP's Buffer.num_sms SMs, or NCCL's channels) hold their SMs while
    // the MoE compute runs beside them.
    const OverlapWindow fwd{.total = mlp.fwd, .compute_bound = mlp.fwd - mlp.mem_fwd,
                            .memory_bound = mlp.mem_fwd};
    const OverlapWindow bwd{.total = mlp.bwd, .compute_bound = mlp.bwd - mlp.mem_bwd,
                            .memory_bound = mlp.mem_bwd};
    layer.forward_comm.ep = Exposure(a2a_f, fwd) + etp.forward;
    layer.backward_comm.ep = Exposure(a2a_b, bwd) + etp.backward;
  } else if (tr.moe_shared_expert_overlap && ep.size > 1 && !par.deepep) {
    // Megatron-Core's shared-expert overlap (moe_layer.py / token_dispatcher.py: the shared
    // experts on their own stream, linear_fc1_forward_and_act after the dispatch is launched,
    // linear_fc2_forward after the combine): each A2A exposed where it outlasts that work, which
    // loses the SMs the A2A holds. Backward runs in order.
    const OverlapWindow beside_dispatch{.total = mlp.shared_fc1_fwd + mlp.shared_act_fwd,
                                        .compute_bound = mlp.shared_fc1_fwd,
                                        .memory_bound = mlp.shared_act_fwd};
    layer.forward_comm.ep = count_gather + Exposure(one_way, beside_dispatch) +
                            Exposure(one_way, ComputeBoundWindow(mlp.shared_fc2_fwd)) +
                            etp.forward;
    layer.backward_comm.ep = a2a_b.time + etp.backward;
  } else {
    layer.forward_comm.ep = a2a_f.time + etp.forward;
    layer.backward_comm.ep = a2a_b.time + etp.backward;
  }
  // Megatron-Core's "moe" recompute re-runs the whole MoE layer, its All-to-Alls included.
  if (ctx.recompute == Recompute::kFull ||
      (ctx.recompute == Recompute::kSelective && tr.Recomputes(RecomputeModule::kMoe))) {
    layer.recompute_comm.ep = layer.forward_comm.ep;
  }
  return absl::OkStatus();
}

// The communication of each parallel dimension as a module of the layer's table.
void AddCommModules(const LayerProfile& timed_layer, const ParallelConfig& par,
                    ComposedLayer& out) {
  out.modules.push_back({.module = "tp_comm", .forward = out.forward_comm.tp,
                         .backward = out.backward_comm.tp, .recompute = out.recompute_comm.tp});
  if (par.cp > 1) {
    out.modules.push_back({.module = "cp_comm", .forward = out.forward_comm.cp,
                           .backward = out.backward_comm.cp,
                           .recompute = out.recompute_comm.cp});
  }
  if (timed_layer.is_moe) {
    out.modules.push_back({.module = "ep_comm", .forward = out.forward_comm.ep,
                           .backward = out.backward_comm.ep,
                           .recompute = out.recompute_comm.ep});
  }
}

}  // namespace

absl::StatusOr<ComposedLayer> ComposeLayer(const LayerProfile& timed_layer,
                                           const LayerCompositionContext& ctx,
                                           const CollectiveBackend& collective) {
  ComposedLayer out;
  out.is_moe = timed_layer.is_moe;
  out.modules.reserve(timed_layer.modules.size() + 3);
  const ShardedBlocks blocks = SumModules(timed_layer, out);
  out.input_bytes = LayerInputBytes(ctx.model, ctx.parallel, ctx.training);
  CommBuilder b(collective, ctx.interference, out.comm_ops);
  PROJECTOR_RETURN_IF_ERROR(AddTpComm(b, timed_layer, ctx, blocks, out));
  if (ctx.parallel.cp > 1) PROJECTOR_RETURN_IF_ERROR(AddCpComm(b, ctx, blocks.attention, out));
  if (timed_layer.is_moe && ctx.model.moe.has_value()) {
    PROJECTOR_RETURN_IF_ERROR(AddEpComm(b, ctx, blocks.mlp, out));
  }
  AddCommModules(timed_layer, ctx.parallel, out);
  out.host = LayerHostExposure({.layer = timed_layer,
                                .comm_ops = out.comm_ops,
                                .gpu_forward = out.Forward(),
                                .gpu_backward = out.Backward(),
                                .gpu_recompute = out.Recompute(),
                                .forward_comm = out.forward_comm.Total()},
                               ctx.host, ctx.training);
  if (out.host.forward.value() + out.host.backward.value() + out.host.recompute.value() > 0) {
    out.modules.push_back({.module = "host", .forward = out.host.forward,
                           .backward = out.host.backward, .recompute = out.host.recompute});
  }
  return out;
}

absl::StatusOr<ComposedEndModule> ComposeEndModule(const ModuleProfile& timed_module,
                                                   bool is_output,
                                                   const LayerCompositionContext& ctx,
                                                   const CollectiveBackend& collective) {
  const ParallelConfig& par = ctx.parallel;
  const TrainingConfig& tr = ctx.training;
  ComposedEndModule out;
  ModuleSums s = SumModule(timed_module);
  if (s.first_mb.value() > 0) {
    return absl::InternalError(absl::StrCat("layer composer: the ", std::string(timed_module.module),
                                            " module has once-per-step ops, which only layers "
                                            "compose"));
  }
  out.forward_compute = s.fwd;
  out.backward_compute = s.bwd;
  out.backward_weight_grad = s.wgrad;
  out.forward_clock_scaled = s.fwd_cs;
  out.backward_clock_scaled = s.bwd_cs;
  out.forward_memory_bound = s.mem_fwd;
  out.backward_memory_bound = s.mem_bwd;
  out.parameters = timed_module.dense_parameters + timed_module.expert_parameters;
  out.activation_bytes = timed_module.activation_bytes;
  out.transient_bytes = timed_module.transient_bytes;
  out.after_backward_bytes = timed_module.after_backward_bytes;
  ProcessGroup g = par.TpGroup();
  if (g.size <= 1) return out;
  OpList scratch;
  CommBuilder b(collective, ctx.interference, scratch);
  double tokens = static_cast<double>(tr.micro_batch * tr.seq_len) / static_cast<double>(par.cp);
  Bytes act(tokens * static_cast<double>(ctx.model.hidden_size) * kCommBytesPerElement);
  const bool sp = par.sequence_parallel;
  std::string_view module = timed_module.module;
  if (!is_output) {
    PROJECTOR_ASSIGN_OR_RETURN(
        TimedCollective f, b.Add("embedding_tp", module, OpPhase::kForward, CommDim::kTp,
                           sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, act,
                           g));
    out.forward_tp_comm = f.time;
    if (sp) {
      PROJECTOR_ASSIGN_OR_RETURN(
          TimedCollective bw, b.Add("embedding_tp_grad", module, OpPhase::kBackwardDgrad, CommDim::kTp,
                              CollectiveKind::kAllGather, act, g));
      out.backward_tp_comm = bw.time;
    }
    return out;
  }
  TimedCollective f;
  if (sp) {
    PROJECTOR_ASSIGN_OR_RETURN(f, b.Add("output_sp_allgather", module, OpPhase::kForward,
                                        CommDim::kTp, CollectiveKind::kAllGather, act, g));
  }
  PROJECTOR_ASSIGN_OR_RETURN(
      TimedCollective ce, b.Add("cross_entropy_allreduce", module, OpPhase::kForward, CommDim::kTp,
                        CollectiveKind::kAllReduce, Bytes(tokens * 4.0), g,
                        CollectiveAlgorithm::kAuto, 3));
  PROJECTOR_ASSIGN_OR_RETURN(
      TimedCollective bw, b.Add("output_tp_grad", module, OpPhase::kBackwardWgrad, CommDim::kTp,
                          sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, act,
                          g));
  out.forward_tp_comm = f.time + ce.time;
  out.backward_tp_comm =
      Exposure(bw, ComputeBoundWindow(ctx.weight_grad_deferred ? Seconds(0) : s.max_wgrad_gemm));
  return out;
}

}  // namespace projector
