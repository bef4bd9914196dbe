#include "studies/convnet_training.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "profilers/convnet_profiler.h"

namespace projector {
namespace {

// Gradients all-reduced in fp32: mixed precision keeps fp32 variables and their fp32 gradients
// (TensorFlow's AMP graph rewrite, PyTorch AMP), which Horovod reduces as they are.
constexpr double kGradientBytesPerParam = 4.0;
// SGD with momentum over fp32 master weights: read the weight, gradient and momentum, write the
// weight and momentum (5 x 4 B), and write the fp16/bf16 copy the next forward reads (2 B).
constexpr double kOptimizerBytesPerParam = 22.0;
// m = μ·m + g, then w = w − lr·m: two multiply-adds per parameter.
constexpr double kOptimizerFlopsPerParam = 4.0;

}  // namespace

absl::StatusOr<ConvNetTraining> ProjectConvNetTraining(const ConvNetSpec& spec,
                                                       const HardwareProfile& hw,
                                                       const BackendRefs& backends,
                                                       int64_t images_per_gpu, int64_t num_gpus,
                                                       DType precision) {
  if (num_gpus < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--num-gpus: must be >= 1, got ", num_gpus));
  }
  const FlopsPerSecond peak = hw.gpu.MatrixPeak(precision, hw.gpu.peak_clock);
  if (peak.value() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--precision: ", hw.name, " has no ", std::string(DTypeName(precision)), " matrix rate"));
  }
  ConvNetTraining out;
  out.network = spec.name;
  out.gpu = hw.name;
  out.num_gpus = num_gpus;
  out.images_per_gpu = images_per_gpu;
  out.precision = precision;
  out.forward_macs_per_image = ConvNetForwardMacsPerImage(spec);
  out.parameters = ConvNetParameters(spec);
  PROJECTOR_ASSIGN_OR_RETURN(ModuleProfile profile,
                             ProfileConvNet(spec, images_per_gpu, precision));
  PROJECTOR_RETURN_IF_ERROR(TimeOps(backends, profile.ops));
  out.forward = SumTime(profile.ops, OpPhase::kForward);
  out.backward =
      SumTime(profile.ops, OpPhase::kBackwardDgrad) + SumTime(profile.ops, OpPhase::kBackwardWgrad);
  out.activations = profile.activation_bytes;
  if (num_gpus > 1) {
    const CollectiveOp allreduce{.kind = CollectiveKind::kAllReduce,
                                 .bytes = Bytes(kGradientBytesPerParam * out.parameters),
                                 .group = ProcessGroup{.size = num_gpus, .stride = 1}};
    PROJECTOR_ASSIGN_OR_RETURN(const CollectiveEstimate e, backends.collective.Estimate(allreduce));
    out.allreduce = e.time;
    out.exposed_allreduce = std::max(Seconds(0), e.time - out.backward);
  }
  const MemoryOp update{.bytes = Bytes(kOptimizerBytesPerParam * out.parameters),
                        .flops = Flops(kOptimizerFlopsPerParam * out.parameters)};
  PROJECTOR_ASSIGN_OR_RETURN(const MemoryEstimate optimizer, backends.memory.Estimate(update));
  out.optimizer = optimizer.time;
  out.step = out.forward + out.backward + out.exposed_allreduce + out.optimizer;
  out.images_per_s_per_gpu = static_cast<double>(images_per_gpu) / out.step.value();
  out.model_tflops_per_gpu =
      3.0 * 2.0 * out.forward_macs_per_image * out.images_per_s_per_gpu * 1e-12;
  out.mfu = out.model_tflops_per_gpu * 1e12 / peak.value();
  out.ops = std::move(profile.ops);
  return out;
}

}  // namespace projector
