#include "profilers/convnet_profiler.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "profilers/profiler_internal.h"

namespace projector {
namespace {

using profiler_internal::D;

// Bytes per activation element a training-mode pass moves (tool choice, the passes of the
// standard kernels, as for the transformer's norms):
//   batch norm + ReLU forward: a statistics pass reading x, then one reading x and writing y: 3;
//     backward: a pass reading x and dy for the two reductions, one reading them again and
//     writing dx, and the ReLU mask read from y: 6;
//   residual add + ReLU: forward reads both branches and writes y: 3; backward reads dy and y
//     (the mask) and writes the one gradient both branches take: 3.
constexpr double kBnForwardPasses = 3.0, kBnBackwardPasses = 6.0;
constexpr double kAddForwardPasses = 3.0, kAddBackwardPasses = 3.0;
// Vector FLOPs per element of those kernels: mean, variance, normalise, scale and shift, ReLU.
constexpr double kBnFlopsPerElement = 8.0;

MemoryOp Pass(double bytes_per_element, double elements, double flops_per_element) {
  return MemoryOp{.bytes = Bytes(bytes_per_element * elements),
                  .flops = Flops(flops_per_element * elements)};
}

}  // namespace

absl::StatusOr<ModuleProfile> ProfileConvNet(const ConvNetSpec& spec, int64_t images,
                                             DType precision) {
  if (images < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("images per micro-batch must be >= 1, got ", images));
  }
  if (precision != DType::kFp32 && precision != DType::kFp16 && precision != DType::kBf16) {
    return absl::InvalidArgumentError(
        absl::StrCat("a convolutional network trains in fp32, fp16 or bf16; got ",
                     std::string(DTypeName(precision))));
  }
  profiler_internal::LayerDims dims;
  dims.micro_batch = images;
  dims.gemm_dtype = precision;
  dims.act_dtype = precision;
  dims.act_bytes = BytesPerElement(precision);
  const double e = dims.act_bytes;
  const double n = D(images);

  ModuleProfile profile;
  profile.module = "convnet";
  profile.tokens = images;
  const std::vector<ConvLayer> convs = ConvLayers(spec);
  // One builder per convolution and the kernels after it (the builder holds a few forward ops):
  // each group's backward follows its forward in the list, which sums to the same pass times.
  double stored = 0;  // activation elements kept for backward
  for (const ConvLayer& c : convs) {
    profiler_internal::ModuleOpBuilder b("convnet", profile.ops, 4, dims);
    b.Linear("conv", c.GemmM(images), c.GemmK(), c.out_channels, precision);
    const double out = n * D(c.out_size) * D(c.out_size) * D(c.out_channels);
    b.Memory("batch_norm", Pass(kBnForwardPasses * e, out, kBnFlopsPerElement),
             Pass(kBnBackwardPasses * e, out, kBnFlopsPerElement));
    // Kept: the convolution's input (its wgrad reads it; a block's shortcut shares conv1's) and
    // the batch norm's input.
    if (c.role != ConvRole::kShortcut) {
      stored += n * D(c.in_size) * D(c.in_size) * D(c.in_channels);
    }
    stored += out;
    if (c.role == ConvRole::kStem) {
      // 3x3 stride-2 max pool: reads the stem's output, writes a quarter of it; backward reads
      // the gradient and the input, writes the input's gradient.
      b.Memory("max_pool", Pass(1.25 * e, out, 1.0), Pass(2.25 * e, out, 1.0));
    }
    // The block's sum: its expand convolution's output plus the shortcut, then ReLU.
    if (c.role == ConvRole::kExpand) {
      b.Memory("residual_add", Pass(kAddForwardPasses * e, out, 2.0),
               Pass(kAddBackwardPasses * e, out, 1.0));
    }
    b.Finish(Recompute::kNone);
  }
  const double features = D(ConvNetFeatures(spec));
  const int64_t last = spec.image_size / 32;
  const double pooled_in = n * D(last) * D(last) * features;
  profiler_internal::ModuleOpBuilder head("convnet", profile.ops, 4, dims);
  // Global average pool: reads the last stage's output once (its write, one value per channel,
  // is 1/49 of that at 224x224); backward spreads the gradient back over it.
  head.Memory("avg_pool", Pass(e, pooled_in, 1.0), Pass(e, pooled_in, 1.0));
  head.Linear("classifier", images, ConvNetFeatures(spec), spec.classes, precision);
  const double logits = n * D(spec.classes);
  // Softmax cross-entropy in fp32: read the logits, write the probabilities (4 + 4); backward
  // reads them and writes the logits' gradient. FLOPs per logit as the language models' loss
  // (max, exp, sum, normalise, pick: 5; backward 2).
  head.Memory("softmax_loss", Pass(8.0, logits, 5.0), Pass(4.0 + e, logits, 2.0));
  head.Finish(Recompute::kNone);
  profile.dense_parameters = ConvNetParameters(spec);
  profile.activation_bytes = Bytes(e * stored);
  profile.activation_bytes_selective = profile.activation_bytes;
  return profile;
}

}  // namespace projector
