// Convolutional image classifier profiler (the classic workloads' ResNet-50): one micro-batch of
// `images` on one GPU as an op list. Each convolution is its implicit GEMM (cuDNN's and XLA's
// formulation: M = images·H_out·W_out, N = out channels, K = in channels·kernel²), with the
// input-gradient (dgrad) and weight-gradient (wgrad) GEMMs of the same FLOPs in backward; batch
// normalisation (with the ReLU folded into it), the residual adds, the pools, the classifier and
// the softmax loss as memory-bound kernels or GEMMs.
#ifndef PROJECTOR_PROFILERS_CONVNET_PROFILER_H_
#define PROJECTOR_PROFILERS_CONVNET_PROFILER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "models/convnet_spec.h"
#include "profilers/module_profilers.h"

namespace projector {

// kInvalidArgument for images < 1 or a precision other than fp32, fp16 or bf16.
absl::StatusOr<ModuleProfile> ProfileConvNet(const ConvNetSpec& spec, int64_t images,
                                             DType precision);

}  // namespace projector

#endif  // PROJECTOR_PROFILERS_CONVNET_PROFILER_H_
