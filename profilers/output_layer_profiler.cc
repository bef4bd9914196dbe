// Output-layer profiler (last pipeline stage): the final norm, the vocab-parallel output
// projection (Megatron's ColumnParallelLinear, T × hidden × V/t; bf16 even under FP8 training,
// since it is not a Transformer Engine layer) and the vocab-parallel cross-entropy loss.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "profilers/module_profilers.h"
#include "profilers/profiler_internal.h"

namespace projector {

CrossEntropyTraffic CrossEntropyBytesPerLogit(LossKernel kernel,
                                              bool logits_freed_before_backward) {
  switch (kernel) {
    case LossKernel::kPyTorch:
      // torch.nn.functional.cross_entropy under autocast, eager. Forward: autocast runs the loss
      // in fp32, so the bf16 logits are copied to fp32 (read 2, write 4); log_softmax over rows
      // longer than 1024 runs the block-per-row kernel (cunn_SoftMaxForward), which reads the
      // row for the max, again for the sum of exp and again to write the output (3 x 4 + 4);
      // NLL gathers one value per row. 6 + 16 = 22 bytes. Backward: nll_loss_backward writes a
      // zero-filled fp32 gradient (4); log_softmax_backward reads the gradient for its row sum
      // and again with the kept output to write its result (4 + 4 + 4 + 4); the autocast cast's
      // backward converts it to bf16 (read 4, write 2). 4 + 16 + 6 = 26 bytes. Kept: the fp32
      // log-softmax output (4). Peak, in log_softmax_backward: the bf16 logits the model's
      // output still references (2), the kept output, the NLL gradient and the new gradient
      // (3 x 4) = 14 (the forward peaks at 2 + 4 + 4 = 10). A train step that drops the model
      // output before backward (nothing in autograd keeps the bf16 logits) peaks at 12.
      return {.forward = 22.0,
              .backward = 26.0,
              .kept = 4.0,
              .peak = logits_freed_before_backward ? 12.0 : 14.0};
    case LossKernel::kFused:
      // One online-softmax pass over the bf16 logits keeps the per-row log-sum-exp only (2);
      // backward reads the logits again and writes their bf16 gradient (2 + 2). Kept: the bf16
      // logits (2); peak: they and their gradient (4).
      return {.forward = 2.0, .backward = 4.0, .kept = 2.0, .peak = 4.0};
    case LossKernel::kAuto:
    case LossKernel::kMegatron:
      break;
  }
  // Megatron's vocab_parallel_cross_entropy on T × V/t logits in fp32: forward reads the bf16
  // logits, writes the fp32 softmax it keeps for backward and makes two fp32 passes (max, sum of
  // exp): 2 + 4 + 4 + 4 = 14 bytes per logit; backward reads the softmax and writes the bf16
  // logit gradient: 6 bytes per logit. The max/sum AllReduces over TP carry T floats only.
  // Peak: the bf16 logits and the fp32 copy it turns into the softmax in place (2 + 4); in
  // backward the softmax turned into the gradient in place and its bf16 cast (4 + 2).
  return {.forward = 14.0, .backward = 6.0, .kept = 4.0, .peak = 6.0};
}

TrainMetricTraffic TrainMetricBytesPerLogit() {
  // A metric's torch.nn.CrossEntropyLoss is the eager loss's forward (CrossEntropyBytesPerLogit,
  // kPyTorch: fp32 copy 6 + log-softmax 16 = 22 bytes per logit) without grad: nothing is kept
  // and no backward follows. Its peak is that forward's: the bf16 logits the model output still
  // references (2), the fp32 copy (4) and the log-softmax output (4).
  const CrossEntropyTraffic eager = CrossEntropyBytesPerLogit(LossKernel::kPyTorch);
  return {.per_pass = eager.forward, .peak = 2.0 + 4.0 + 4.0};
}

absl::StatusOr<ModuleProfile> ProfileOutputLayer(const ProfileContext& ctx, OutputHead head) {
  using profiler_internal::D;
  PROJECTOR_ASSIGN_OR_RETURN(const profiler_internal::LayerDims dims,
                             profiler_internal::ResolveDims(ctx));
  const ModelSpec& model = ctx.model;
  if (model.vocab_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", model.name, ": vocab_size must be > 0"));
  }
  const int64_t v_l = PaddedVocabSize(model, dims.tp) / dims.tp;
  const int64_t h = model.hidden_size;
  const double e = dims.act_bytes;
  const bool layer_norm = model.norm == NormKind::kLayerNorm;
  const double norm_n = D(dims.sp_tokens) * D(h);
  // The rows the head computes logits for: every position, or a masked-LM head's gathered ones.
  const int64_t rows = model.OutputRows(dims.tokens);
  const double logits = D(rows) * D(v_l);

  ModuleProfile profile;
  profile.module = "output";
  profile.tokens = dims.tokens;
  profiler_internal::ModuleOpBuilder b("output", profile.ops, 13, dims);
  // One fused kernel each way (read x, write y; read x and dy, write dx), or an eager PyTorch
  // RMSNorm's one kernel per op (EagerRmsNorm), which keeps its fp32 input copy and normalised
  // output.
  const bool eager_norm = dims.eager_elementwise && !layer_norm;
  const profiler_internal::EagerKernels norm = profiler_internal::NormKernels(e, e, eager_norm);
  b.Memory("final_norm", norm.Forward(norm_n, (layer_norm ? 7.0 : 4.0) * norm_n),
           norm.Backward(norm_n, (layer_norm ? 14.0 : 8.0) * norm_n));
  b.Linear("output_proj", rows, h, v_l, dims.act_dtype);
  b.PlainTorchLinear();  // Megatron's own ColumnParallelLinear, not a TE module
  // torchtitan's train step drops the model output before backward (train.py: "need to free to
  // before bwd to avoid peaking memory", del pred).
  const CrossEntropyTraffic ce = CrossEntropyBytesPerLogit(
      ctx.run.loss_kernel,
      /*logits_freed_before_backward=*/ctx.run.stack == TrainingStack::kTorchTitan);
  b.Memory("cross_entropy",
           MemoryOp{.bytes = Bytes(ce.forward * logits), .flops = Flops(5.0 * logits)},
           MemoryOp{.bytes = Bytes(ce.backward * logits), .flops = Flops(2.0 * logits)});
  b.Finish(ctx.recompute);
  const int64_t metric_passes =
      head == OutputHead::kMain ? ctx.run.train_metric_passes : 0;
  const TrainMetricTraffic metric = TrainMetricBytesPerLogit();
  if (metric_passes > 0) {
    // After the backward, without grad: neither recomputed nor part of the loss's gradient, so
    // it is added after Finish. Its phase puts it in the micro-batch's backward, where it runs.
    Op op;
    op.name = "train_metrics";
    op.module = profile.module;
    op.kind = OpKind::kMemory;
    op.phase = OpPhase::kBackwardDgrad;
    op.memory = MemoryOp{.bytes = Bytes(D(metric_passes) * metric.per_pass * logits),
                         .flops = Flops(D(metric_passes) * 5.0 * logits)};
    op.flops = op.memory.flops;
    op.bytes = op.memory.bytes;
    profile.ops.push_back(op);
  }

  const bool shares_embedding = model.tied_embeddings && ctx.parallel.pp == 1;
  profile.dense_parameters =
      profiler_internal::NormParamsPerElement(model) * D(h) +
      (shares_embedding ? 0.0 : D(v_l) * D(h));
  // Kept for backward: the final norm's input (SP-sharded), the output projection's input
  // (the norm output, SP-sharded and re-gathered in backward) and what the loss keeps.
  profile.activation_bytes =
      Bytes((eager_norm ? 4.0 + 2.0 * e : 2.0 * e) * norm_n + ce.kept * logits);
  profile.activation_bytes_selective = profile.activation_bytes;
  profile.transient_bytes = Bytes((ce.peak - ce.kept) * logits);
  if (metric_passes > 0) profile.after_backward_bytes = Bytes(metric.peak * logits);
  return profile;
}

}  // namespace projector
