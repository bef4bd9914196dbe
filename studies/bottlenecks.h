// Bottleneck analysis of one projection: what limits the step (memory capacity, exposed
// communication, the pipeline bubble, host overhead, compute), each with the measured value, the
// threshold it is judged against and a severity, and recommendations that are checked, not
// guessed: every candidate change is re-projected (studies/scenario_changes.h) and listed with
// the tokens/s per GPU it gives and whether it fits in memory, fastest first.
//
// Rules (shares are of the step time):
//   memory capacity  peak / usable HBM: high >= 100% (does not fit), medium >= 90%;
//   network          R_comm = exposed TP, CP, EP, DP, FSDP communication and pipeline P2P: high
//                    >= 30% (the seed's threshold), medium >= 15%;
//   pipeline bubble  high >= 15%, medium >= 5%;
//   host overhead    exposed host time: high >= 10%, medium >= 3%;
//   memory bandwidth the memory-bound kernels' time (norms, activations, casts, permutations, the
//                    loss: ComputeByClass::memory_bound's share of the compute, times the
//                    compute's share of the step): high >= 30%, medium >= 15%;
//   compute          compute share >= 50%: the step is compute-bound; severity medium when its
//                    MFU is under 30%, low otherwise (the kernels, precision or batch shape are
//                    what is left to improve). It says where the compute goes by class of
//                    kernel (KernelClassUses): GEMMs and attention against the matrix peak,
//                    memory-bound kernels against the HBM bandwidth.
#ifndef PROJECTOR_STUDIES_BOTTLENECKS_H_
#define PROJECTOR_STUDIES_BOTTLENECKS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "projection/projection.h"
#include "scenario/scenario.h"
#include "studies/scenario_changes.h"

namespace projector {

enum class BottleneckKind {
  kMemoryCapacity,
  kNetwork,
  kPipelineBubble,
  kHost,
  kMemoryBandwidth,
  kCompute
};
std::string_view BottleneckKindName(BottleneckKind kind);  // "memory_capacity", "network", ...

enum class Severity { kLow, kMedium, kHigh };
std::string_view SeverityName(Severity severity);

// One class of kernel in the model's compute (Projection::compute_by_class): its share of the
// compute time and the rate it achieves against its peak: TFLOP/s against the GPU's matrix peak
// at the datasheet clock (the GEMMs' precision; attention runs in bf16 under fp8/fp4) for GEMMs
// and attention, GB/s against the datasheet HBM bandwidth for memory-bound kernels.
struct KernelClassUse {
  std::string_view kernel_class;  // "gemm", "attention", "memory_bound"
  double share = 0;               // of the compute time
  double achieved = 0;            // in `unit`
  double peak = 0;                // in `unit`
  std::string_view unit;          // "TFLOP/s" or "GB/s"
};
// The classes with compute time, in that order.
std::vector<KernelClassUse> KernelClassUses(const Scenario& scenario, const Projection& projection);

struct Bottleneck {
  BottleneckKind kind = BottleneckKind::kCompute;
  Severity severity = Severity::kLow;
  double value = 0;      // the share or ratio the rule judges
  double threshold = 0;  // the value at which it becomes high
  std::string detail;    // "exposed communication 34.1% of the step: dp_comm 20.3%, tp_comm 13.8%"
  // Re-projected changes, fastest first (at most kMaxRecommendations).
  std::vector<Reprojected> recommendations;
  // kCompute: where the compute goes (KernelClassUses).
  std::vector<KernelClassUse> kernel_classes;
};

inline constexpr size_t kMaxRecommendations = 3;

// The bottlenecks of `scenario` as projected (`projection`), most severe first (kinds in the
// order above within a severity); only kinds at or above their medium threshold, and compute when
// it dominates. Errors of a re-projection other than an invalid layout pass through.
absl::StatusOr<std::vector<Bottleneck>> AnalyzeBottlenecks(const Scenario& scenario,
                                                           const Projection& projection);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_BOTTLENECKS_H_
