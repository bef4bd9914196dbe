// Data-parallel training of a convolutional image classifier (the classic workloads' ResNet-50,
// as NVIDIA DeepLearningExamples trains it with Horovod): every GPU runs one micro-batch of
// `images` forward and backward (ProfileConvNet, timed by the simulate backends), the fp32
// gradients are all-reduced over the GPUs while the backward runs (Horovod's tensor fusion), and
// SGD with momentum updates the fp32 master weights.
//   step = forward + backward + max(0, all-reduce − backward) + optimizer
// (the all-reduce hidden as far as the backward lasts: the most overlap the schedule allows).
// Host time is not modelled (graph-mode frameworks issue kernels ahead of the GPU).
#ifndef PROJECTOR_STUDIES_CONVNET_TRAINING_H_
#define PROJECTOR_STUDIES_CONVNET_TRAINING_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"
#include "models/convnet_spec.h"
#include "profilers/op_list.h"

namespace projector {

struct ConvNetTraining {
  std::string network;
  std::string gpu;
  int64_t num_gpus = 1;
  int64_t images_per_gpu = 1;  // per step: one micro-batch
  DType precision = DType::kFp16;
  double forward_macs_per_image = 0;
  double parameters = 0;
  Seconds forward, backward;  // compute of one micro-batch
  Seconds allreduce;          // the gradient all-reduce, whole
  Seconds exposed_allreduce;  // what the backward does not hide
  Seconds optimizer;
  Seconds step;
  Bytes activations;  // kept for backward, one micro-batch
  double images_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;  // 3 · 2 · MACs per image (forward and backward)
  double mfu = 0;                   // of the matrix peak at the datasheet clock
  OpList ops;                       // timed
};

// kInvalidArgument for a count or batch < 1 or a precision the GPU has no matrix rate for.
absl::StatusOr<ConvNetTraining> ProjectConvNetTraining(const ConvNetSpec& spec,
                                                       const HardwareProfile& hw,
                                                       const BackendRefs& backends,
                                                       int64_t images_per_gpu, int64_t num_gpus,
                                                       DType precision);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_CONVNET_TRAINING_H_
