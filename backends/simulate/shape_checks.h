// Input checks shared by the simulate compute backends: shapes must be positive and the GPU must
// have a matrix rate for the dtype. Header-only; messages follow the house format.
#ifndef PROJECTOR_BACKENDS_SIMULATE_SHAPE_CHECKS_H_
#define PROJECTOR_BACKENDS_SIMULATE_SHAPE_CHECKS_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/dtype.h"
#include "core/op_shapes.h"

namespace projector::shape_checks {

// kInvalidArgument unless m, n, k and batch are positive and kernels is in [1, batch].
inline absl::Status ValidateGemmShape(const GemmShape& s) {
  if (s.m > 0 && s.n > 0 && s.k > 0 && s.batch > 0 && s.kernels >= 1 && s.kernels <= s.batch) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "GEMM shape must have positive m, n, k and batch, and kernels in [1, batch]; got m=%d n=%d "
      "k=%d batch=%d kernels=%d",
      s.m, s.n, s.k, s.batch, s.kernels));
}

// kInvalidArgument unless every size is positive and num_q_heads is a multiple of num_kv_heads.
inline absl::Status ValidateAttentionShape(const AttentionShape& s) {
  if (s.batch <= 0 || s.num_q_heads <= 0 || s.num_kv_heads <= 0 || s.seq_q <= 0 ||
      s.seq_kv <= 0 || s.qk_head_dim <= 0 || s.v_head_dim <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "attention shape must have positive sizes; got batch=%d q_heads=%d kv_heads=%d seq_q=%d "
        "seq_kv=%d qk_head_dim=%d v_head_dim=%d",
        s.batch, s.num_q_heads, s.num_kv_heads, s.seq_q, s.seq_kv, s.qk_head_dim, s.v_head_dim));
  }
  if (s.num_q_heads % s.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "attention num_q_heads %d is not a multiple of num_kv_heads %d", s.num_q_heads,
        s.num_kv_heads));
  }
  return absl::OkStatus();
}

// kUnimplemented "<gpu> has no <dtype> matrix rate" when the rate is not positive.
inline absl::Status CheckMatrixRate(std::string_view gpu_name, DType dtype,
                                    double flops_per_clock) {
  if (flops_per_clock > 0) return absl::OkStatus();
  return absl::UnimplementedError(
      absl::StrFormat("%s has no %s matrix rate", gpu_name, DTypeName(dtype)));
}

}  // namespace projector::shape_checks

#endif  // PROJECTOR_BACKENDS_SIMULATE_SHAPE_CHECKS_H_
