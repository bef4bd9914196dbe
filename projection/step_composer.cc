#include "projection/step_composer.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace projector {
namespace {

// FSDP2 (torch fully_shard) reshards after forward by default, so every layer is gathered
// again for its backward. Under full recompute that second gather serves both the recompute
// forward and the backward (FSDP2 skips the reshard in the recompute's post-forward), so a
// layer sees 2 AllGathers + 1 ReduceScatter per micro-batch either way — twice the seed's
// forward-only count, which adds its second gather only under full recompute.
constexpr bool kFsdpReshardAfterForward = true;

// Per-micro-batch totals of one chunk, split like StepBreakdown.
struct ChunkCost {
  Seconds forward, backward;
  Seconds weight_grad;  // the part of `backward` in weight-gradient ops
  // Once per step, on the chunk's first forward: its layers' kOncePerStep ops.
  Seconds first_forward_extra, first_forward_clock_scaled;
  Seconds compute, tp, cp, ep, host, fsdp, fsdp_copies;
  ChunkComm comm_parts;  // `tp`, `cp`, `ep` by phase, and the layers they come from
  // The compute-stream windows a DP collective can overlap (backward incl. recompute).
  OverlapWindow forward_window, backward_window;
  Seconds clock_scaled;
  Bytes activations;
  Bytes weight_grad_working_set;  // kept per micro-batch while its W is deferred
  Bytes transient_working_set;
  Bytes after_backward_working_set;
  double dense_parameters = 0;
  double expert_parameters = 0;
  double largest_layer_parameters = 0;
};

// One collective (or a sum of them, with the time-weighted slowdown) and what it takes from
// the compute beside it.
// One FSDP unit (a layer, or the embedding / output layer) in execution order.
struct FsdpUnit {
  OverlapWindow forward, backward;          // compute-stream time (backward incl. recompute)
  TimedCollective gather, reduce;           // one AllGather, one ReduceScatter
  FsdpUnitTraffic traffic;                  // their bytes by group
  Seconds copies_forward, copies_backward;  // FsdpCopyBytesPerParam's kernels, per micro-batch
};

OverlapWindow Window(Seconds total, Seconds compute, Seconds memory_bound) {
  return {
      .total = total, .compute_bound = Max0(compute - memory_bound), .memory_bound = memory_bound};
}
OverlapWindow ForwardWindow(const ComposedLayer& k) {
  return Window(k.Forward(), k.forward_compute, k.forward_memory_bound);
}
OverlapWindow BackwardWindow(const ComposedLayer& k, bool recomputed) {
  if (!recomputed) return Window(k.Backward(), k.backward_compute, k.backward_memory_bound);
  return Window(k.Backward() + k.Recompute(), k.backward_compute + k.recompute_compute,
                k.backward_memory_bound + k.recompute_memory_bound);
}
OverlapWindow ForwardWindow(const ComposedEndModule& e) {
  return Window(e.Forward(), e.forward_compute, e.forward_memory_bound);
}
OverlapWindow BackwardWindow(const ComposedEndModule& e) {
  return Window(e.Backward(), e.backward_compute, e.backward_memory_bound);
}
void Accumulate(OverlapWindow& into, const OverlapWindow& w, double times) {
  into.total += w.total * times;
  into.compute_bound += w.compute_bound * times;
  into.memory_bound += w.memory_bound * times;
}

// One dimension's exposed communication of `n` layers (`dn` forward and backward, `dr`
// recomputed forward).
void AccumulatePassComm(ExposedPassComm& into, Seconds forward, Seconds backward,
                        Seconds recompute, int64_t n, double dn, double dr) {
  into.forward += forward * dn;
  into.backward += backward * dn + recompute * dr;
  if ((forward + backward).value() > 0) into.layers += n;
}

void AddLayers(const ComposedLayer& k, int64_t n, int64_t n_recomputed, Recompute mode,
               ChunkCost& c) {
  if (n == 0) return;
  double dn = static_cast<double>(n), dr = static_cast<double>(n_recomputed);
  c.forward += k.Forward() * dn;
  c.backward += k.Backward() * dn + k.Recompute() * dr;
  c.weight_grad += k.backward_weight_grad * dn;
  c.first_forward_extra += k.once_per_step_compute * dn;
  c.first_forward_clock_scaled += k.once_per_step_clock_scaled * dn;
  c.compute += (k.forward_compute + k.backward_compute) * dn + k.recompute_compute * dr;
  c.tp += (k.forward_comm.tp + k.backward_comm.tp) * dn + k.recompute_comm.tp * dr;
  c.cp += (k.forward_comm.cp + k.backward_comm.cp) * dn + k.recompute_comm.cp * dr;
  c.ep += (k.forward_comm.ep + k.backward_comm.ep) * dn + k.recompute_comm.ep * dr;
  AccumulatePassComm(c.comm_parts.tp, k.forward_comm.tp, k.backward_comm.tp, k.recompute_comm.tp,
                     n, dn, dr);
  AccumulatePassComm(c.comm_parts.cp, k.forward_comm.cp, k.backward_comm.cp, k.recompute_comm.cp,
                     n, dn, dr);
  AccumulatePassComm(c.comm_parts.ep, k.forward_comm.ep, k.backward_comm.ep, k.recompute_comm.ep,
                     n, dn, dr);
  c.host += (k.host.forward + k.host.backward) * dn + k.host.recompute * dr;
  c.clock_scaled +=
      (k.forward_clock_scaled + k.backward_clock_scaled) * dn + k.recompute_clock_scaled * dr;
  Accumulate(c.forward_window, ForwardWindow(k), dn);
  Accumulate(c.backward_window, BackwardWindow(k, false), dn);
  if (n_recomputed > 0) {
    Accumulate(c.backward_window,
               Window(k.Recompute(), k.recompute_compute, k.recompute_memory_bound), dr);
  }
  Bytes stored = mode == Recompute::kSelective ? k.activation_bytes_selective : k.activation_bytes;
  c.weight_grad_working_set += stored * dn;
  if (mode == Recompute::kFull) {
    c.activations += k.activation_bytes * (dn - dr) + k.input_bytes * dr;
    if (n_recomputed > 0)
      c.transient_working_set = std::max(c.transient_working_set, k.activation_bytes);
  } else {
    c.activations += stored * dn;
    // Selective recompute re-creates what it did not keep (the attention core, or under
    // torchtitan's per-op SAC all but the saved outputs) for one layer at a time in backward.
    if (mode == Recompute::kSelective && n_recomputed > 0) {
      c.transient_working_set =
          std::max(c.transient_working_set, k.activation_bytes - k.activation_bytes_selective);
    }
  }
  c.dense_parameters += k.dense_parameters * dn;
  c.expert_parameters += k.expert_parameters * dn;
  c.largest_layer_parameters =
      std::max(c.largest_layer_parameters, k.dense_parameters + k.expert_parameters);
}

// `count_parameters` false: a repeated pass of a module whose weights are already counted (the
// shared output head of an MTP module).
void AddEnd(const ComposedEndModule& e, ChunkCost& c, bool count_parameters = true) {
  c.forward += e.Forward();
  c.backward += e.Backward();
  c.weight_grad += e.backward_weight_grad;
  c.compute += e.forward_compute + e.backward_compute;
  c.tp += e.forward_tp_comm + e.backward_tp_comm;
  c.comm_parts.tp.forward += e.forward_tp_comm;
  c.comm_parts.tp.backward += e.backward_tp_comm;
  c.clock_scaled += e.forward_clock_scaled + e.backward_clock_scaled;
  Accumulate(c.forward_window, ForwardWindow(e), 1.0);
  Accumulate(c.backward_window, BackwardWindow(e), 1.0);
  c.activations += e.activation_bytes;
  c.weight_grad_working_set += e.activation_bytes;
  c.transient_working_set = std::max(c.transient_working_set, e.transient_bytes);
  c.after_backward_working_set = std::max(c.after_backward_working_set, e.after_backward_bytes);
  if (count_parameters) c.dense_parameters += e.parameters;
}

absl::StatusOr<TimedCollective> Collective(const CollectiveBackend& backend,
                                           const CommInterferenceModel& interference,
                                           CollectiveKind kind, Bytes bytes, ProcessGroup group) {
  if (group.size <= 1 || bytes.value() <= 0) return TimedCollective{};
  const CollectiveOp op{.kind = kind, .bytes = bytes, .group = group};
  PROJECTOR_ASSIGN_OR_RETURN(CollectiveEstimate e, backend.Estimate(op));
  return TimedCollective{.time = e.time, .slowdown = CollectiveSlowdown(interference, op, e)};
}

// FSDP AllGather (bf16 weights) and ReduceScatter of the grads in the reduce dtype
// (`grad_bytes` per parameter: 4 for fp32, Megatron's grad_reduce_in_fp32 under bf16; 2 for
// bf16) of one unit's parameters: dense over DP·CP, experts over expert-DP.
absl::StatusOr<FsdpUnit> FsdpComm(const CollectiveBackend& backend,
                                  const CommInterferenceModel& interference,
                                  const ParallelConfig& par, double dense_params,
                                  double expert_params, double grad_bytes) {
  FsdpUnit u;
  const ProcessGroup dg = par.DpCpGroup(), eg = ExpertDpGroup(par);
  // One collective of `kind` moving `bytes_per_param` for the dense and for the expert weights.
  auto both = [&](CollectiveKind kind, double bytes_per_param) -> absl::StatusOr<TimedCollective> {
    PROJECTOR_ASSIGN_OR_RETURN(
        TimedCollective d,
        Collective(backend, interference, kind, Bytes(dense_params * bytes_per_param), dg));
    PROJECTOR_ASSIGN_OR_RETURN(
        TimedCollective e,
        Collective(backend, interference, kind, Bytes(expert_params * bytes_per_param), eg));
    return Sum(d, e);
  };
  PROJECTOR_ASSIGN_OR_RETURN(u.gather, both(CollectiveKind::kAllGather, kWeightBytesPerParam));
  PROJECTOR_ASSIGN_OR_RETURN(u.reduce, both(CollectiveKind::kReduceScatter, grad_bytes));
  u.traffic = {.dense_gather = Bytes(dense_params * kWeightBytesPerParam),
               .expert_gather = Bytes(expert_params * kWeightBytesPerParam),
               .dense_reduce = Bytes(dense_params * grad_bytes),
               .expert_reduce = Bytes(expert_params * grad_bytes),
               .gather = u.gather.time,
               .reduce = u.reduce.time};
  return u;
}

// The unit's FSDP copies per micro-batch, timed as memory-bound kernels: dense parameters
// sharded over DP·CP, experts over expert-DP.
absl::Status TimeFsdpCopies(const MemoryBackend& memory, FsdpImpl impl, const ParallelConfig& par,
                            double dense_params, double expert_params, double grad_bytes,
                            int64_t micro_batches, FsdpUnit& u) {
  const FsdpCopyBytes d = FsdpCopyBytesPerParam(
      impl, grad_bytes, static_cast<double>(par.DpCpGroup().size), micro_batches);
  const FsdpCopyBytes e = FsdpCopyBytesPerParam(
      impl, grad_bytes, static_cast<double>(ExpertDpGroup(par).size), micro_batches);
  auto time = [&](double bytes, int64_t launches) -> absl::StatusOr<Seconds> {
    if (bytes <= 0 || launches <= 0) return Seconds(0);
    PROJECTOR_ASSIGN_OR_RETURN(
        MemoryEstimate est,
        memory.Estimate(MemoryOp{.bytes = Bytes(bytes), .flops = Flops(0), .launches = launches}));
    return est.time;
  };
  PROJECTOR_ASSIGN_OR_RETURN(u.copies_forward,
                             time(d.forward * dense_params + e.forward * expert_params,
                                  d.forward_launches * (expert_params > 0 ? 2 : 1)));
  PROJECTOR_ASSIGN_OR_RETURN(u.copies_backward,
                             time(d.backward * dense_params + e.backward * expert_params,
                                  d.backward_launches * (expert_params > 0 ? 2 : 1)));
  return absl::OkStatus();
}

// Exposed FSDP time of one micro-batch through a chunk's units (execution order).
//   forward:  the first unit's AllGather has nothing to hide behind; unit i's gather is
//             prefetched during unit i−1's forward → max(AG_i − F_{i−1}, cost).
//   backward: unit i's backward gather (prefetched) and its gradient ReduceScatter share the
//             communication stream while unit i's backward (+ recompute) runs
//             → max(g·AG_i + RS_i − B_i, cost), g = 1 with reshard-after-forward.
// cost = InterferenceCost: the compute the hidden collectives slow (OverlappedExposure).
// A unit with unknown (zero) compute falls back to the seed's flat 93 % overlap.
struct FsdpExposure {
  Seconds forward, backward, total_comm;
};
// With `traffic` (the units' records, in the same order), each unit's interference costs too.
FsdpExposure ExposeFsdp(const std::vector<FsdpUnit>& units, FsdpUnitTraffic* traffic) {
  FsdpExposure x;
  const double bwd_gathers = kFsdpReshardAfterForward ? 1.0 : 0.0;
  for (size_t i = 0; i < units.size(); ++i) {
    const FsdpUnit& u = units[i];
    const Seconds gather = u.gather.time, reduce = u.reduce.time;
    Seconds bwd_comm = gather * bwd_gathers + reduce;
    x.total_comm += gather + bwd_comm;
    if (i == 0) {
      x.forward += gather;
    } else if (const OverlapWindow& prev = units[i - 1].forward; prev.total.value() > 0) {
      const Seconds cost = InterferenceCost(gather, u.gather.slowdown, prev);
      x.forward += OverlappedExposure(gather, cost, prev);
      if (traffic != nullptr) traffic[i].forward_interference = cost;
    } else {
      x.forward += gather * (1.0 - kFsdpFallbackOverlap);
    }
    if (u.backward.total.value() > 0) {
      Seconds cost = InterferenceCost(gather * bwd_gathers, u.gather.slowdown, u.backward) +
                     InterferenceCost(reduce, u.reduce.slowdown, u.backward);
      x.backward += OverlappedExposure(bwd_comm, cost, u.backward);
      if (traffic != nullptr) traffic[i].backward_interference = cost;
    } else {
      x.backward += bwd_comm * (1.0 - kFsdpFallbackOverlap);
    }
  }
  return x;
}

// One gradient buffer (dense or expert) of one chunk, split into Megatron DDP buckets.
struct BucketedBuffer {
  int64_t buckets = 0;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Bytes full_bytes, last_bytes;  // a full bucket's reduce, the remainder's
  Seconds full;                                   // one full bucket's reduce
  Seconds last;                                   // the remainder bucket's reduce
  Seconds gather_full, gather_last;               // distributed optimizer param AllGather (bf16)
  CommSlowdown reduce_slowdown, gather_slowdown;  // of a full bucket's collective
  Seconds Total() const {
    if (buckets == 0) return Seconds(0);
    return full * static_cast<double>(buckets - 1) + last;
  }
  Seconds GatherTotal() const {
    if (buckets == 0) return Seconds(0);
    return gather_full * static_cast<double>(buckets - 1) + gather_last;
  }
};

constexpr double kMaxReplayedBuckets = 10000;

absl::StatusOr<BucketedBuffer> BucketBuffer(const CollectiveBackend& backend,
                                            const CommInterferenceModel& interference,
                                            double params, ProcessGroup group,
                                            bool distributed_optimizer, double grad_bytes) {
  BucketedBuffer b;
  if (group.size <= 1 || params <= 0) return b;
  double bucket =
      std::max(kDdpMinBucketParams, kDdpBucketParamsPerDpRank * static_cast<double>(group.size));
  // DrainBuckets replays every bucket; a model far beyond any real one (10^4 buckets is a
  // 400B-parameter chunk) is replayed with larger buckets instead of millions of them.
  bucket = std::max(bucket, params / kMaxReplayedBuckets);
  b.buckets = static_cast<int64_t>(std::ceil(params / bucket));
  double full = std::min(bucket, params);
  double last = params - bucket * static_cast<double>(b.buckets - 1);
  // Megatron reduces fp32 main grads under bf16 (accumulate_allreduce_grads_in_fp32 is forced
  // on for bf16; --grad-reduce-in-bf16 halves them): AllReduce, or ReduceScatter with the
  // distributed optimizer, of grad_bytes per parameter.
  b.kind = distributed_optimizer ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  b.full_bytes = Bytes(full * grad_bytes);
  b.last_bytes = Bytes(last * grad_bytes);
  PROJECTOR_ASSIGN_OR_RETURN(TimedCollective f,
                             Collective(backend, interference, b.kind, b.full_bytes, group));
  PROJECTOR_ASSIGN_OR_RETURN(TimedCollective l,
                             Collective(backend, interference, b.kind, b.last_bytes, group));
  b.full = f.time;
  b.last = l.time;
  b.reduce_slowdown = f.slowdown;
  if (distributed_optimizer) {
    PROJECTOR_ASSIGN_OR_RETURN(
        TimedCollective gf,
        Collective(backend, interference, CollectiveKind::kAllGather, Bytes(full * 2.0), group));
    PROJECTOR_ASSIGN_OR_RETURN(
        TimedCollective gl,
        Collective(backend, interference, CollectiveKind::kAllGather, Bytes(last * 2.0), group));
    b.gather_full = gf.time;
    b.gather_last = gl.time;
    b.gather_slowdown = gf.slowdown;
  }
  return b;
}

// The DP communication stream of one rank: where it ends, and the compute its reduces slowed.
struct GradStream {
  Seconds end;
  Seconds interference;
};

// Serial communication stream: buckets become ready at a uniform rate while [start, end]
// runs (the chunk's last backward, where the grads become final) and are reduced in order.
// The part of each reduce before `compute_end` (the rank's last compute) overlaps the backward
// `window` and slows it by InterferenceCost.
// With `timeline`, each bucket's reduce is appended as a kGradReduce event of `rank`, ready
// after its fraction of `chunk`'s last backward (-1: at the rank's last pass end), marked as
// the expert weights' buffer or the dense one.
GradStream DrainBuckets(const BucketedBuffer& b, Seconds start, Seconds end, GradStream stream,
                        Seconds compute_end, const OverlapWindow& window,
                        std::vector<TimelineEvent>* timeline, int64_t rank, int64_t chunk,
                        bool expert_buffer) {
  for (int64_t j = 0; j < b.buckets; ++j) {
    double frac = static_cast<double>(j + 1) / static_cast<double>(b.buckets);
    Seconds ready = start + (end - start) * frac;
    Seconds begin = std::max(stream.end, ready);
    stream.end = begin + (j + 1 == b.buckets ? b.last : b.full);
    if (timeline != nullptr) {
      timeline->push_back({.kind = TimelineKind::kGradReduce,
                           .rank = static_cast<int32_t>(rank),
                           .chunk = static_cast<int32_t>(chunk),
                           .start = begin,
                           .end = stream.end,
                           .ready_fraction = chunk < 0 ? 1.0 : frac,
                           .expert_buffer = expert_buffer,
                           .reduce_kind = b.kind,
                           .reduce_bytes = j + 1 == b.buckets ? b.last_bytes : b.full_bytes});
    }
    Seconds overlap = Max0(std::min(stream.end, compute_end) - begin);
    stream.interference += InterferenceCost(overlap, b.reduce_slowdown, window);
  }
  return stream;
}

}  // namespace

int64_t MicroBatches(const ParallelConfig& parallel, const TrainingConfig& training) {
  int64_t denom = training.micro_batch * parallel.dp;
  return denom > 0 ? training.global_batch / denom : 0;
}

ProcessGroup ExpertDpGroup(const ParallelConfig& parallel) {
  int64_t block = parallel.tp * parallel.cp * parallel.dp;
  int64_t experts = std::max<int64_t>(1, parallel.ep * parallel.etp);
  return {.size = std::max<int64_t>(1, block / experts), .stride = experts};
}

absl::StatusOr<std::vector<ChunkAssignment>> AssignLayers(const ModelSpec& model,
                                                          const ParallelConfig& parallel,
                                                          const TrainingConfig& training) {
  const int64_t p = std::max<int64_t>(1, parallel.pp), v = std::max<int64_t>(1, parallel.vpp);
  const int64_t layers = model.num_layers;
  // Inline: a search calls this for every layout and split it bounds.
  absl::InlinedVector<int64_t, 64> per_vs(static_cast<size_t>(p * v), 0);
  bool uneven = p > 1 && (parallel.first_stage_layers > 0 || parallel.last_stage_layers > 0);
  if (uneven) {
    absl::InlinedVector<int64_t, 32> per_rank(static_cast<size_t>(p), 0);
    absl::InlinedVector<bool, 32> fixed(static_cast<size_t>(p), false);
    int64_t rest = layers;
    if (parallel.first_stage_layers > 0) {
      per_rank[0] = parallel.first_stage_layers;
      fixed[0] = true;
      rest -= parallel.first_stage_layers;
    }
    if (parallel.last_stage_layers > 0) {
      per_rank[static_cast<size_t>(p - 1)] = parallel.last_stage_layers;
      fixed[static_cast<size_t>(p - 1)] = true;
      rest -= parallel.last_stage_layers;
    }
    int64_t free_ranks = 0;
    for (bool f : fixed) free_ranks += f ? 0 : 1;
    if (rest < 0 || (free_ranks == 0 && rest != 0)) {
      return absl::FailedPreconditionError(
          absl::StrCat("uneven pipeline split: first_stage_layers ", parallel.first_stage_layers,
                       " + last_stage_layers ", parallel.last_stage_layers, " does not fit ",
                       layers, " layers on ", p, " stages"));
    }
    int64_t seen = 0;
    for (int64_t r = 0; r < p; ++r) {
      if (fixed[static_cast<size_t>(r)]) continue;
      per_rank[static_cast<size_t>(r)] = rest / free_ranks + (seen < rest % free_ranks ? 1 : 0);
      ++seen;
    }
    for (int64_t r = 0; r < p; ++r) {
      int64_t n = per_rank[static_cast<size_t>(r)];
      for (int64_t c = 0; c < v; ++c) {
        per_vs[static_cast<size_t>(c * p + r)] = n / v + (c < n % v ? 1 : 0);
      }
    }
  } else {
    int64_t stages = p * v;
    if (stages > 2 && layers % stages != 0 && (layers + 2) % stages == 0) {
      // Megatron's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split
      // (used by the NeMo Llama-3.1-405B recipes: 126 layers on 64 virtual stages): the
      // embedding and the loss each take one layer's slot, on the first and last virtual stage.
      int64_t per = (layers + 2) / stages;
      for (int64_t vs = 0; vs < stages; ++vs) per_vs[static_cast<size_t>(vs)] = per;
      per_vs.front() -= 1;
      per_vs.back() -= 1;
    } else {
      for (int64_t vs = 0; vs < stages; ++vs) {
        per_vs[static_cast<size_t>(vs)] = layers / stages + (vs < layers % stages ? 1 : 0);
      }
    }
  }
  std::vector<ChunkAssignment> out(static_cast<size_t>(p * v));
  int64_t next_layer = 0;
  for (int64_t vs = 0; vs < p * v; ++vs) {
    int64_t r = vs % p, c = vs / p;
    ChunkAssignment& a = out[static_cast<size_t>(r * v + c)];
    a.first_layer = next_layer;
    a.num_layers = per_vs[static_cast<size_t>(vs)];
    int64_t recomputed = 0;
    if (training.recompute == Recompute::kFull) {
      recomputed = training.recompute_layers > 0 ? std::min(training.recompute_layers, a.num_layers)
                                                 : a.num_layers;
    }
    a.moe_layers = model.MoeLayersIn(next_layer, a.num_layers);
    a.dense_layers = a.num_layers - a.moe_layers;
    a.recomputed_moe = model.MoeLayersIn(next_layer, recomputed);
    a.recomputed_dense = recomputed - a.recomputed_moe;
    a.has_embedding = vs == 0;
    a.has_output = vs == p * v - 1;
    if (a.has_output) {
      a.mtp_layers = model.mtp_layers;
      const bool recompute_all =
          training.recompute == Recompute::kFull && training.recompute_layers == 0;
      a.recomputed_mtp = recompute_all ? a.mtp_layers : 0;
    }
    next_layer += a.num_layers;
  }
  return out;
}

FsdpCopyBytes FsdpCopyBytesPerParam(FsdpImpl impl, double grad_bytes, double group,
                                    int64_t micro_batches) {
  constexpr double e = kWeightBytesPerParam;  // bf16 weights and their gradients
  const double r = grad_bytes;
  const double n = std::max(group, 1.0);
  const double mb = static_cast<double>(std::max<int64_t>(micro_batches, 1));
  const double accumulate = (mb - 1.0) / mb * 3.0 * r / n;
  switch (impl) {
    case FsdpImpl::kFsdp1:
      return {.forward = 6.0 / n,
              .backward = 6.0 / n + 2.0 * e + (r != e ? e + r : 0.0) + 2.0 * r + accumulate,
              .forward_launches = 1,
              .backward_launches = 3 + (r != e ? 1 : 0) + (mb > 1 ? 1 : 0),
              .gradient_working_set = e + (r != e ? r : 0.0)};
    case FsdpImpl::kFsdp2:
      return {.forward = 10.0 / n + 2.0 * e,
              .backward = 10.0 / n + 2.0 * e + e + r + accumulate,
              .forward_launches = 3,
              .backward_launches = 4 + (mb > 1 ? 1 : 0),
              .gradient_working_set = e + r};
    case FsdpImpl::kMegatronFsdp:
    case FsdpImpl::kAuto:
      break;
  }
  return {};
}

namespace {

// The FSDP units of one micro-batch: each layer kind's and the end modules' gathers, reduces and
// copies, with the compute windows that hide them.
struct FsdpUnits {
  FsdpUnit dense, moe, embedding, output;
};

absl::StatusOr<FsdpUnits> ComposeFsdpUnits(const StepInputs& in, const BackendRefs& backends,
                                           int64_t micro_batches, double grad_bytes) {
  const ParallelConfig& par = in.parallel;
  const FsdpImpl impl = in.run.fsdp_impl;
  auto unit = [&](double dense_params, double expert_params) -> absl::StatusOr<FsdpUnit> {
    PROJECTOR_ASSIGN_OR_RETURN(FsdpUnit u, FsdpComm(backends.collective, in.interference, par,
                                                    dense_params, expert_params, grad_bytes));
    PROJECTOR_RETURN_IF_ERROR(TimeFsdpCopies(backends.memory, impl, par, dense_params,
                                             expert_params, grad_bytes, micro_batches, u));
    return u;
  };
  FsdpUnits units;
  if (in.dense != nullptr) {
    PROJECTOR_ASSIGN_OR_RETURN(units.dense,
                               unit(in.dense->dense_parameters, in.dense->expert_parameters));
    units.dense.forward = ForwardWindow(*in.dense);
  }
  if (in.moe != nullptr) {
    PROJECTOR_ASSIGN_OR_RETURN(units.moe,
                               unit(in.moe->dense_parameters, in.moe->expert_parameters));
    units.moe.forward = ForwardWindow(*in.moe);
  }
  PROJECTOR_ASSIGN_OR_RETURN(units.embedding, unit(in.embedding.parameters, 0));
  units.embedding.forward = ForwardWindow(in.embedding);
  units.embedding.backward = BackwardWindow(in.embedding);
  PROJECTOR_ASSIGN_OR_RETURN(units.output, unit(in.output.parameters, 0));
  units.output.forward = ForwardWindow(in.output);
  units.output.backward = BackwardWindow(in.output);
  return units;
}

// The layer kind of the MTP modules (nullptr when it was not composed).
const ComposedLayer* MtpLayerKind(const StepInputs& in) {
  return in.model.MtpIsMoe() ? in.moe : in.dense;
}

// One micro-batch of a chunk: its layers (recomputed as the training asks), the embedding and
// output on the first and last chunk, and the MTP modules after the output.
absl::Status CostChunkLayers(const StepInputs& in, const ChunkAssignment& a, ChunkCost& c) {
  const TrainingConfig& tr = in.training;
  const bool selective = tr.recompute == Recompute::kSelective;
  if ((a.dense_layers > 0 && in.dense == nullptr) || (a.moe_layers > 0 && in.moe == nullptr)) {
    return absl::InternalError("step composer: a layer kind placed on a stage was not composed");
  }
  if (a.dense_layers > 0) {
    AddLayers(*in.dense, a.dense_layers, selective ? a.dense_layers : a.recomputed_dense,
              tr.recompute, c);
  }
  if (a.moe_layers > 0) {
    AddLayers(*in.moe, a.moe_layers, selective ? a.moe_layers : a.recomputed_moe, tr.recompute, c);
  }
  if (a.has_embedding) AddEnd(in.embedding, c);
  if (a.has_output) AddEnd(in.output, c);
  if (a.mtp_layers == 0) return absl::OkStatus();
  const ComposedLayer* mtp_kind = MtpLayerKind(in);
  if (mtp_kind == nullptr) {
    return absl::InternalError("step composer: the MTP layer kind was not composed");
  }
  AddLayers(*mtp_kind, a.mtp_layers, selective ? a.mtp_layers : a.recomputed_mtp, tr.recompute, c);
  // The 2h -> h projection of each module: weights only (its GEMM is ~0.3% of a DeepSeek-V3
  // token's FLOPs and is not timed).
  c.dense_parameters += static_cast<double>(a.mtp_layers) * 2.0 *
                        static_cast<double>(in.model.hidden_size) *
                        static_cast<double>(in.model.hidden_size) /
                        static_cast<double>(std::max<int64_t>(1, in.parallel.tp));
  const ComposedEndModule& head = in.mtp_output ? *in.mtp_output : in.output;
  for (int64_t k = 0; k < a.mtp_layers; ++k) AddEnd(head, c, /*count_parameters=*/false);
  return absl::OkStatus();
}

// A chunk's FSDP units in execution order, each with the backward window of its layer (with or
// without recompute), its gathers and reduces exposed against them and its copies added to the
// chunk; returns the chunk's FSDP communication time, hidden or not. With `record`, the units'
// traffic in that order.
Seconds AddChunkFsdp(const StepInputs& in, const ChunkAssignment& a, const FsdpUnits& fsdp,
                     std::vector<FsdpUnit>& units, ChunkCost& c,
                     std::vector<FsdpUnitTraffic>* record) {
  const TrainingConfig& tr = in.training;
  units.clear();
  if (a.has_embedding) units.push_back(fsdp.embedding);
  int64_t recomputed_seen = 0;
  for (int64_t l = 0; l < a.num_layers; ++l) {
    bool moe = in.model.moe.has_value() && in.model.IsMoeLayer(a.first_layer + l);
    const ComposedLayer& k = moe ? *in.moe : *in.dense;
    FsdpUnit u = moe ? fsdp.moe : fsdp.dense;
    bool recomputed = tr.recompute == Recompute::kSelective ||
                      (tr.recompute == Recompute::kFull &&
                       recomputed_seen++ < a.recomputed_dense + a.recomputed_moe);
    u.backward = BackwardWindow(k, recomputed);
    units.push_back(u);
  }
  if (a.has_output) units.push_back(fsdp.output);
  for (int64_t l = 0; l < a.mtp_layers; ++l) {
    FsdpUnit u = in.model.MtpIsMoe() ? fsdp.moe : fsdp.dense;
    u.backward = BackwardWindow(*MtpLayerKind(in),
                                tr.recompute == Recompute::kSelective || l < a.recomputed_mtp);
    units.push_back(u);
  }
  const size_t first_record = record != nullptr ? record->size() : 0;
  if (record != nullptr) {
    for (const FsdpUnit& u : units) record->push_back(u.traffic);
  }
  FsdpExposure x =
      ExposeFsdp(units, record != nullptr ? record->data() + first_record : nullptr);
  c.forward += x.forward;
  c.backward += x.backward;
  c.fsdp += x.forward + x.backward;
  c.comm_parts.fsdp.forward += x.forward;
  c.comm_parts.fsdp.backward += x.backward;
  c.comm_parts.fsdp.layers += static_cast<int64_t>(units.size());
  for (const FsdpUnit& u : units) {
    c.forward += u.copies_forward;
    c.backward += u.copies_backward;
    c.fsdp_copies += u.copies_forward + u.copies_backward;
  }
  return x.total_comm;
}

// The replayed pipeline and the makespan it would have with free point-to-point transfers.
struct PipelineRun {
  PipelineSpec spec;
  PipelineTimeline timeline;
  Seconds makespan_without_p2p;
};

// The schedule of the chunks' passes, without its P2P time.
PipelineSpec ChunkSchedule(const ParallelConfig& par, const std::vector<ChunkCost>& costs,
                           int64_t p, int64_t v, int64_t m) {
  PipelineSpec spec;
  spec.pp = p;
  spec.vpp = v;
  spec.micro_batches = m;
  spec.schedule = par.pipeline_schedule;
  spec.chunks.reserve(costs.size());
  for (const ChunkCost& c : costs) {
    spec.chunks.push_back({.forward = c.forward,
                           .backward = c.backward,
                           .weight_grad = c.weight_grad,
                           .first_forward_extra = c.first_forward_extra});
  }
  return spec;
}

absl::StatusOr<PipelineRun> RunPipeline(const StepInputs& in, const BackendRefs& backends,
                                        PipelineSpec schedule) {
  const ParallelConfig& par = in.parallel;
  const int64_t p = schedule.pp, v = schedule.vpp;
  PipelineRun run;
  PipelineSpec& spec = run.spec;
  spec = std::move(schedule);
  // Megatron's overlap_p2p_comm (default on for interleaving); the zero-bubble runtime posts
  // its sends and receives asynchronously too.
  spec.p2p_overlapped = v > 1 || par.pipeline_schedule == PipelineSchedule::kZeroBubbleH1;
  if (p > 1) {
    // One activation [micro_batch · seq/CP (/TP under SP), hidden] in bf16 to the next stage,
    // on the PP group's stride: inter-node when the neighbouring stages sit on other nodes.
    PROJECTOR_ASSIGN_OR_RETURN(
        TimedCollective p2p,
        Collective(backends.collective, CommInterferenceModel{}, CollectiveKind::kSendRecv,
                   LayerInputBytes(in.model, par, in.training),
                   ProcessGroup{.size = 2, .stride = par.PpGroup().stride}));
    spec.p2p = p2p.time;
  }
  PROJECTOR_ASSIGN_OR_RETURN(run.timeline, SimulatePipeline(spec, in.timeline));
  run.makespan_without_p2p = run.timeline.makespan;
  if (p > 1 && spec.p2p.value() > 0) {
    PipelineSpec free_p2p = spec;
    free_p2p.p2p = Seconds(0);
    PROJECTOR_ASSIGN_OR_RETURN(PipelineTimeline t0, SimulatePipeline(free_p2p));
    run.makespan_without_p2p = std::min(t0.makespan, run.timeline.makespan);
  }
  return run;
}

// The rank with the most work, and the step breakdown of its chunks over all micro-batches
// (compute, exposed TP/CP/EP/FSDP, copies), the P2P time and the bubble.
void BreakDownCriticalRank(const PipelineRun& run, const std::vector<ChunkCost>& costs, int64_t p,
                           int64_t v, int64_t m, StepResult& out) {
  const PipelineTimeline& tl = run.timeline;
  int64_t crit = 0;
  for (int64_t r = 1; r < p; ++r) {
    if (tl.rank_busy[static_cast<size_t>(r)] > tl.rank_busy[static_cast<size_t>(crit)]) crit = r;
  }
  out.critical_rank = crit;
  const double dm = static_cast<double>(m);
  Seconds busy;
  for (int64_t c = 0; c < v; ++c) {
    const ChunkCost& cc = costs[static_cast<size_t>(crit * v + c)];
    out.breakdown.compute += cc.compute * dm + cc.first_forward_extra;
    out.breakdown.exposed_tp_comm += cc.tp * dm;
    out.breakdown.exposed_cp_comm += cc.cp * dm;
    out.breakdown.exposed_ep_comm += cc.ep * dm;
    out.breakdown.exposed_host += cc.host * dm;
    out.breakdown.exposed_fsdp_comm += cc.fsdp * dm;
    out.breakdown.fsdp_copies += cc.fsdp_copies * dm;
    out.clock_scaled += cc.clock_scaled * dm + cc.first_forward_clock_scaled;
    busy += (cc.forward + cc.backward) * dm + cc.first_forward_extra;
  }
  out.breakdown.p2p = Max0(tl.makespan - run.makespan_without_p2p);
  out.breakdown.pipeline_bubble = Max0(tl.makespan - busy - out.breakdown.p2p);
}

// What the memory model needs of pipeline rank r: its chunks' parameters, activations and
// working sets, and how many micro-batches it holds in flight.
StageMemoryInput StageMemoryOf(const std::vector<ChunkCost>& costs, const ParallelConfig& par,
                               int64_t r, int64_t p, int64_t v, int64_t m) {
  StageMemoryInput mi;
  for (int64_t c = 0; c < v; ++c) {
    const ChunkCost& cc = costs[static_cast<size_t>(r * v + c)];
    mi.dense_parameters += cc.dense_parameters;
    mi.expert_parameters += cc.expert_parameters;
    mi.activations_per_micro_batch += cc.activations;
    mi.deferred_weight_grad_bytes += cc.weight_grad_working_set;
    mi.transient_working_set = std::max(mi.transient_working_set, cc.transient_working_set);
    mi.after_backward_working_set =
        std::max(mi.after_backward_working_set, cc.after_backward_working_set);
    mi.largest_layer_parameters =
        std::max(mi.largest_layer_parameters, cc.largest_layer_parameters);
  }
  mi.in_flight_chunk_micro_batches = InFlightChunkMicroBatches(r, p, v, m, par.pipeline_schedule);
  mi.deferred_weight_grad_micro_batches =
      DeferredWeightGradMicroBatches(r, p, m, par.pipeline_schedule);
  return mi;
}

// A pipeline rank's tail after its last backward: the end of its gradient sync (and exposed
// parameter gathers), the optimizer step, and the DP traffic it issued.
struct RankTail {
  Seconds after_sync;
  Seconds optimizer;
  Seconds dp_comm_total;
  Seconds reduce_slowdown;  // RankTailParts
  Seconds param_gather;
};

// The DP gradient reduce of rank r's chunks in the order their gradients become final, bucket
// by bucket (Megatron's overlap_grad_reduce), and the distributed optimizer's gathers.
// `order` is scratch space for the chunk order, kept by the caller across ranks.
absl::StatusOr<RankTail> SyncRankGradients(const StepInputs& in, const BackendRefs& backends,
                                           const std::vector<ChunkCost>& costs,
                                           const PipelineTimeline& tl, int64_t r, int64_t v,
                                           double grad_bytes, std::vector<size_t>& order) {
  const ParallelConfig& par = in.parallel;
  const TrainingConfig& tr = in.training;
  const ProcessGroup dense_group = par.DpCpGroup(), expert_group = ExpertDpGroup(par);
  const Seconds finish = tl.rank_finish[static_cast<size_t>(r)];
  GradStream stream;
  Seconds comm_total, gather_exposed;
  if (!par.fsdp) {
    order.resize(static_cast<size_t>(v));
    for (int64_t c = 0; c < v; ++c) order[static_cast<size_t>(c)] = static_cast<size_t>(c);
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return tl.last_backward_end[static_cast<size_t>(r * v) + x] <
             tl.last_backward_end[static_cast<size_t>(r * v) + y];
    });
    for (size_t c : order) {
      const ChunkCost& cc = costs[static_cast<size_t>(r * v) + c];
      PROJECTOR_ASSIGN_OR_RETURN(
          BucketedBuffer db, BucketBuffer(backends.collective, in.interference, cc.dense_parameters,
                                          dense_group, par.distributed_optimizer, grad_bytes));
      PROJECTOR_ASSIGN_OR_RETURN(
          BucketedBuffer eb,
          BucketBuffer(backends.collective, in.interference, cc.expert_parameters, expert_group,
                       par.distributed_optimizer, grad_bytes));
      // Megatron overlap_grad_reduce: a bucket's reduce is issued as soon as the last
      // micro-batch's backward has produced all its grads. Without it, everything is
      // reduced after the rank's last backward (finish_grad_sync).
      Seconds s =
          tr.overlap_grad_reduce ? tl.last_backward_start[static_cast<size_t>(r * v) + c] : finish;
      Seconds e =
          tr.overlap_grad_reduce ? tl.last_backward_end[static_cast<size_t>(r * v) + c] : finish;
      const int64_t chunk = tr.overlap_grad_reduce ? static_cast<int64_t>(c) : -1;
      stream =
          DrainBuckets(db, s, e, stream, finish, cc.backward_window, in.timeline, r, chunk, false);
      stream =
          DrainBuckets(eb, s, e, stream, finish, cc.backward_window, in.timeline, r, chunk, true);
      comm_total += db.Total() + eb.Total() + db.GatherTotal() + eb.GatherTotal();
      if (!par.distributed_optimizer) continue;
      // overlap_param_gather: the gathers run under the next step's forward, except the
      // one the first forward waits on (first chunk's first bucket); otherwise all exposed.
      // The hidden ones slow that forward (InterferenceCost).
      if (!tr.overlap_param_gather) {
        gather_exposed += db.GatherTotal() + eb.GatherTotal();
        continue;
      }
      Seconds first = c == 0 ? db.gather_last + eb.gather_last : Seconds(0);
      gather_exposed += first;
      gather_exposed += InterferenceCost(
          db.GatherTotal() + eb.GatherTotal() - first,
          Sum({db.GatherTotal(), db.gather_slowdown}, {eb.GatherTotal(), eb.gather_slowdown})
              .slowdown,
          cc.forward_window);
    }
  }
  // The backward the reduces overlapped ends later by what they slowed (OverlappedExposure
  // with the stream's own end as the communication side).
  return RankTail{.after_sync = std::max(finish + stream.interference, stream.end) + gather_exposed,
                  .optimizer = Seconds(0),
                  .dp_comm_total = comm_total,
                  .reduce_slowdown = stream.interference,
                  .param_gather = gather_exposed};
}

// Adam over the parameters this GPU of rank r updates (a DP shard of them when the optimizer
// state is sharded).
absl::StatusOr<Seconds> OptimizerStep(const StepInputs& in, const BackendRefs& backends,
                                      const StageMemoryInput& stage) {
  const ParallelConfig& par = in.parallel;
  const bool shard_optimizer = par.distributed_optimizer || par.fsdp;
  const double updated =
      shard_optimizer ? stage.dense_parameters / static_cast<double>(par.DpCpGroup().size) +
                            stage.expert_parameters / static_cast<double>(ExpertDpGroup(par).size)
                      : stage.dense_parameters + stage.expert_parameters;
  if (updated <= 0) return Seconds(0);
  PROJECTOR_ASSIGN_OR_RETURN(
      MemoryEstimate e, backends.memory.Estimate(MemoryOp{
                            .bytes = Bytes(updated * OptimizerBytesPerUpdatedParam(in.run.stack)),
                            .flops = Flops(updated * 12.0),
                            .launches = 2}));
  return e.time;
}

void RecordRankTail(const StepInputs& in, int64_t r, Seconds finish, const RankTail& tail) {
  if (in.rank_tails != nullptr) {
    in.rank_tails->push_back({.reduce_slowdown = tail.reduce_slowdown,
                              .param_gather = tail.param_gather,
                              .optimizer = tail.optimizer});
  }
  if (in.timeline == nullptr) return;
  const int32_t rank = static_cast<int32_t>(r);
  if (tail.after_sync > finish) {
    in.timeline->push_back(
        {.kind = TimelineKind::kGradSync, .rank = rank, .start = finish, .end = tail.after_sync});
  }
  if (tail.optimizer.value() > 0) {
    in.timeline->push_back({.kind = TimelineKind::kOptimizer,
                            .rank = rank,
                            .start = tail.after_sync,
                            .end = tail.after_sync + tail.optimizer});
  }
}

MemoryModelConfig MemoryConfigOf(const StepInputs& in, int64_t v, int64_t m, double grad_bytes) {
  const ParallelConfig& par = in.parallel;
  return MemoryModelConfig{
      .vpp = v,
      .distributed_optimizer = par.distributed_optimizer,
      .fsdp = par.fsdp,
      .dense_shard = par.DpCpGroup().size,
      .expert_shard = ExpertDpGroup(par).size,
      .grad_bytes_per_param = grad_bytes,
      .fsdp_gradient_bytes_per_unit_param =
          FsdpCopyBytesPerParam(in.run.fsdp_impl, grad_bytes, 1, m).gradient_working_set,
      .hbm_capacity = in.hbm_capacity};
}

}  // namespace

absl::StatusOr<StepResult> ComposeStep(const StepInputs& in, const BackendRefs& backends) {
  const ParallelConfig& par = in.parallel;
  const TrainingConfig& tr = in.training;
  const int64_t p = std::max<int64_t>(1, par.pp), v = std::max<int64_t>(1, par.vpp);
  const double grad_bytes = GradReduceBytesPerParam(tr);
  StepResult out;
  out.micro_batches = MicroBatches(par, tr);
  const int64_t m = out.micro_batches;
  if (m < 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("global batch ", tr.global_batch, " is smaller than micro_batch ",
                     tr.micro_batch, " x DP ", par.dp, "; no full micro-batch per pipeline"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(out.chunks, AssignLayers(in.model, par, tr));

  // Chunk costs of one micro-batch, with FSDP's exposure per chunk.
  std::vector<ChunkCost> costs(out.chunks.size());
  FsdpUnits fsdp;
  if (par.fsdp) {
    PROJECTOR_ASSIGN_OR_RETURN(fsdp, ComposeFsdpUnits(in, backends, m, grad_bytes));
  }
  std::vector<FsdpUnit> units_scratch;
  std::vector<Seconds> fsdp_comm_per_rank(static_cast<size_t>(p), Seconds(0));
  for (size_t i = 0; i < out.chunks.size(); ++i) {
    PROJECTOR_RETURN_IF_ERROR(CostChunkLayers(in, out.chunks[i], costs[i]));
    if (!par.fsdp) continue;
    std::vector<FsdpUnitTraffic>* record = nullptr;
    if (in.chunk_fsdp != nullptr) {
      in.chunk_fsdp->resize(costs.size());
      record = &(*in.chunk_fsdp)[i];
    }
    fsdp_comm_per_rank[i / static_cast<size_t>(v)] +=
        AddChunkFsdp(in, out.chunks[i], fsdp, units_scratch, costs[i], record);
  }

  // The pipeline, and the breakdown of its busiest rank; nothing more when its lower bound is
  // already where the caller stops caring.
  PipelineSpec schedule = ChunkSchedule(par, costs, p, v, m);
  if (std::isfinite(in.abandon_at.value())) {
    out.lower_bound = PipelineLowerBound(schedule);
    if (out.lower_bound >= in.abandon_at) {
      out.abandoned = true;
      // The peak too, where the caller has a memory limit (a search that may prune the layout
      // later for memory rather than time): stage by stage, as EstimateMemory takes it.
      if (in.abandon_above_memory) {
        const MemoryModelConfig config = MemoryConfigOf(in, v, m, grad_bytes);
        Bytes invariant;
        for (int64_t r = 0; r < p; ++r) {
          const StageMemory s = EstimateStageMemory(StageMemoryOf(costs, par, r, p, v, m), config);
          out.memory.peak = std::max(out.memory.peak, s.total);
          invariant += SplitInvariantStateBytes(s, config.fsdp);
        }
        out.split_peak_lower_bound = PeakLowerBoundOverSplits(invariant, p);
      }
      return out;
    }
  }
  // What each pipeline rank holds in memory; the footprint reads no time, so a layout over the
  // caller's limit stops here.
  std::vector<StageMemoryInput> mem(static_cast<size_t>(p));
  for (int64_t r = 0; r < p; ++r)
    mem[static_cast<size_t>(r)] = StageMemoryOf(costs, par, r, p, v, m);
  const MemoryModelConfig memory_config = MemoryConfigOf(in, v, m, grad_bytes);
  out.memory = EstimateMemory(mem, memory_config);
  Bytes invariant;
  for (const StageMemory& s : out.memory.stages) {
    invariant += SplitInvariantStateBytes(s, memory_config.fsdp);
  }
  out.split_peak_lower_bound = PeakLowerBoundOverSplits(invariant, p);
  if (in.abandon_above_memory && out.memory.peak > *in.abandon_above_memory) {
    out.over_memory_limit = true;
    return out;
  }
  PROJECTOR_ASSIGN_OR_RETURN(const PipelineRun run, RunPipeline(in, backends, std::move(schedule)));
  const PipelineTimeline& tl = run.timeline;
  out.pipeline_time = tl.makespan;
  out.p2p_transfer = run.spec.p2p;
  out.p2p_overlapped = run.spec.p2p_overlapped;
  out.chunk_times = run.spec.chunks;
  if (in.chunk_comm != nullptr) {
    for (const ChunkCost& cc : costs) in.chunk_comm->push_back(cc.comm_parts);
  }
  BreakDownCriticalRank(run, costs, p, v, m, out);
  out.fsdp_comm_total =
      fsdp_comm_per_rank[static_cast<size_t>(out.critical_rank)] * static_cast<double>(m);

  // DP gradient sync, parameter gather and optimizer per pipeline rank; the last to finish
  // ends the step.
  std::optional<RankTail> last;
  std::vector<size_t> order;
  for (int64_t r = 0; r < p; ++r) {
    PROJECTOR_ASSIGN_OR_RETURN(RankTail tail,
                               SyncRankGradients(in, backends, costs, tl, r, v, grad_bytes, order));
    PROJECTOR_ASSIGN_OR_RETURN(tail.optimizer,
                               OptimizerStep(in, backends, mem[static_cast<size_t>(r)]));
    RecordRankTail(in, r, tl.rank_finish[static_cast<size_t>(r)], tail);
    if (!last || tail.after_sync + tail.optimizer > last->after_sync + last->optimizer) {
      last = tail;
    }
  }
  const Seconds step_end = std::max(tl.makespan, last->after_sync + last->optimizer);
  out.breakdown.exposed_dp_comm = Max0(last->after_sync - tl.makespan);
  out.breakdown.optimizer = Max0(step_end - tl.makespan - out.breakdown.exposed_dp_comm);
  out.dp_comm_total = last->dp_comm_total;
  out.step_time = out.breakdown.Total();
  return out;
}

}  // namespace projector
