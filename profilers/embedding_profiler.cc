// Embedding profiler: the vocab-parallel word-embedding lookup of the first pipeline stage
// (Megatron VocabParallelEmbedding). Each TP rank looks up all T tokens in its V/t rows and
// writes a masked output; the composer adds the TP AllReduce (or ReduceScatter under SP).
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "profilers/module_profilers.h"
#include "profilers/profiler_internal.h"

namespace projector {

int64_t PaddedVocabSize(const ModelSpec& model, int64_t tp) {
  const int64_t multiple = 128 * (tp > 0 ? tp : 1);
  return (model.vocab_size + multiple - 1) / multiple * multiple;
}

absl::StatusOr<ModuleProfile> ProfileEmbedding(const ProfileContext& ctx) {
  using profiler_internal::D;
  PROJECTOR_ASSIGN_OR_RETURN(const profiler_internal::LayerDims dims,
                             profiler_internal::ResolveDims(ctx));
  const ModelSpec& model = ctx.model;
  if (model.vocab_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", model.name, ": vocab_size must be > 0"));
  }
  const int64_t v_l = PaddedVocabSize(model, dims.tp) / dims.tp;
  const double h = D(model.hidden_size);
  const double T = D(dims.tokens);
  const double e = dims.act_bytes;

  ModuleProfile profile;
  profile.module = "embedding";
  profile.tokens = dims.tokens;
  profiler_internal::ModuleOpBuilder b("embedding", profile.ops, 4, dims);
  // Forward: read the int64 token ids and, on average, the T/t rows this rank owns; write the
  // full masked T×h output.
  const MemoryOp lookup{.bytes = Bytes(8.0 * T + e * T * h / D(dims.tp) + e * T * h),
                        .flops = Flops(0)};
  // Backward is a weight gradient only (token ids need none): PyTorch's dense embedding
  // backward zero-fills the V/t×h gradient, reads dY and scatter-adds (read-modify-write) the
  // owned T/t rows; Megatron's DDP hook then accumulates it into the fp32 main_grad (read bf16,
  // read and write fp32): (e + e + 8)·V/t·h + e·T·h + 2e·T·h/t.
  const MemoryOp scatter_add{.bytes = Bytes((2.0 * e + 8.0) * D(v_l) * h + e * T * h +
                                            2.0 * e * T * h / D(dims.tp)),
                             .flops = Flops(T * h / D(dims.tp) + D(v_l) * h)};
  b.Memory("embedding_lookup", lookup, scatter_add, OpPhase::kBackwardWgrad);
  // Learned absolute positions (GPT-2/3, Megatron's learned_absolute): a seq_len × h table,
  // replicated on every TP rank, looked up by position and added to the token embeddings
  // (Megatron LanguageModelEmbedding: word + position, over the T/t tokens under SP). Forward
  // reads the token embeddings and the s rows, writes the sum: e·(2·T_sp·h + s·h). Backward
  // sums dY over the micro-batch into the table (read e·T_sp·h, zero-fill and write e·s·h) and
  // accumulates it into the fp32 main_grad (read e, read and write fp32): the table's weight
  // gradient, (2e + 8)·s·h + e·T_sp·h.
  const double sp_elements = D(dims.sp_tokens) * h;
  const double table =
      model.position_embedding == PositionEmbedding::kLearned ? D(ctx.training.seq_len) * h : 0.0;
  if (table > 0) {
    const MemoryOp add{.bytes = Bytes(e * (2.0 * sp_elements + table)),
                       .flops = Flops(sp_elements)};
    const MemoryOp table_grad{.bytes = Bytes((2.0 * e + 8.0) * table + e * sp_elements),
                              .flops = Flops(sp_elements + table)};
    b.Memory("position_embedding", add, table_grad, OpPhase::kBackwardWgrad);
  }
  // Hidden dropout on the embeddings (Megatron's embedding_dropout, after the scatter to the
  // sequence-parallel region, so over T/t tokens under SP; MPT's emb_pdrop): torch's dropout,
  // forward read e, write e and the 1-byte mask; backward read dy and the mask, write dx.
  if (dims.hidden_dropout) {
    const MemoryOp dropout{.bytes = Bytes((2.0 * e + 1.0) * sp_elements),
                           .flops = Flops(2.0 * sp_elements)};
    b.Memory("embedding_dropout", dropout, dropout);
  }
  b.Finish(ctx.recompute);
  profile.dense_parameters = D(v_l) * h + table;
  // Only the token ids are kept for backward, and the dropout mask.
  profile.activation_bytes = Bytes(8.0 * T + (dims.hidden_dropout ? sp_elements : 0.0));
  profile.activation_bytes_selective = profile.activation_bytes;
  return profile;
}

}  // namespace projector
