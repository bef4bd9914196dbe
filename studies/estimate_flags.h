// The flags of `project estimate gemm|attention|collective` (the op's shape, dtype and backend)
// and the estimate they ask for, on a hardware profile the caller resolved.
#ifndef PROJECTOR_STUDIES_ESTIMATE_FLAGS_H_
#define PROJECTOR_STUDIES_ESTIMATE_FLAGS_H_

#include <span>

#include "absl/status/statusor.h"
#include "core/flag_values.h"
#include "hw_profiles/hardware_profile.h"
#include "studies/estimate.h"

namespace projector {

// --dtype, --m/--n/--k (declared as gemm-m/n/k: cxxopts takes one-letter names only as short
// options), --batch, --gemm-backend.
std::span<const FlagSpec> GemmEstimateFlags();
// --dtype, --batch, --heads, --kv-heads, --seq-q, --seq-kv, the head dims, --causal, --pass,
// --attention-backend.
std::span<const FlagSpec> AttentionEstimateFlags();
// --op, --bytes, --ranks, --stride, --algorithm, --collective-backend, --network, --congestion,
// --chunks.
std::span<const FlagSpec> CollectiveEstimateFlags();

// The op the flags describe, estimated by the backend they name; FlagError for a missing or bad
// value, backend errors passed through.
absl::StatusOr<GemmOpEstimate> EstimateGemmFromFlags(const FlagValues& flags,
                                                     const HardwareProfile& hw);
absl::StatusOr<AttentionOpEstimate> EstimateAttentionFromFlags(const FlagValues& flags,
                                                               const HardwareProfile& hw);
absl::StatusOr<CollectiveOpEstimate> EstimateCollectiveFromFlags(const FlagValues& flags,
                                                                 const HardwareProfile& hw);

// With --network: the collective on that network file's topology (--ranks defaults to every
// NPU, --congestion aware|unaware, --chunks for the hierarchical pipeline); FlagError naming
// the flag for a bad value.
absl::StatusOr<NetworkCollectiveOpEstimate> EstimateNetworkCollectiveFromFlags(
    const FlagValues& flags, const NetworkSpec& network);

// --semantics: whether it is astra (FlagError for a value other than native or astra, or
// --astra-* flags without it).
absl::StatusOr<bool> AstraSemanticsFlag(const FlagValues& flags);
// With --network and --semantics astra: the collective on every NPU of the network under
// ASTRA-sim's semantics (--astra-system, --astra-gigabyte); FlagError naming the flag for a bad
// value or what the replay does not support.
absl::StatusOr<AstraCollectiveOpEstimate> EstimateAstraCollectiveFromFlags(
    const FlagValues& flags, const NetworkSpec& network);

// With --network and --concurrent: the main collective (from NPU 0) and each --concurrent one
// started together, alone and beside the others.
absl::StatusOr<ConcurrentCollectivesEstimate> EstimateConcurrentFromFlags(
    const FlagValues& flags, const NetworkSpec& network);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_ESTIMATE_FLAGS_H_
