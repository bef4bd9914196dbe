// A convolutional image classifier (the classic workloads' ResNet-50), read from
// models/convnets/<name>.json: a 7x7 stride-2 stem convolution and a 3x3 stride-2 max pool,
// stages of bottleneck residual blocks (1x1 reduce, 3x3 at the stage's stride in its first block
// (ResNet v1.5), 1x1 expand by `expansion`, a 1x1 projection shortcut in each stage's first
// block), global average pooling and a fully connected classifier. Every convolution is followed
// by batch normalisation (and ReLU, except before the residual add, which is followed by one).
#ifndef PROJECTOR_MODELS_CONVNET_SPEC_H_
#define PROJECTOR_MODELS_CONVNET_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace projector {

struct ConvStage {
  int64_t blocks = 0;
  int64_t width = 0;  // channels of the block's 1x1 reduce and 3x3 convolutions
};

struct ConvNetSpec {
  std::string name;
  std::string source;
  int64_t image_size = 224;
  int64_t in_channels = 3;
  int64_t classes = 1000;
  int64_t stem_channels = 64;
  std::vector<ConvStage> stages;
  int64_t expansion = 4;
};

// What a convolution is in the network: the stem, a bottleneck block's 1x1 reduce, 3x3 and
// 1x1 expand, or a block's projection shortcut.
enum class ConvRole { kStem, kReduce, kSpatial, kExpand, kShortcut };

// One convolution, in forward order, with its input and output resolution (square).
struct ConvLayer {
  std::string name;  // "stem", "s2b0_conv2", "s2b0_shortcut", ...
  ConvRole role = ConvRole::kStem;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t in_size = 0;
  int64_t out_size = 0;
  // Per image: out_size² output positions, each a dot product of in_channels·kernel² inputs.
  double MacsPerImage() const;
  // The implicit GEMM of a batch of `images`: M = images·out_size², N = out_channels,
  // K = in_channels·kernel².
  int64_t GemmM(int64_t images) const { return images * out_size * out_size; }
  int64_t GemmK() const { return in_channels * kernel * kernel; }
  int64_t Weights() const { return out_channels * GemmK(); }
};

// Every convolution of the network in forward order.
std::vector<ConvLayer> ConvLayers(const ConvNetSpec& spec);
// Resolution after the stem's convolution and max pool.
int64_t ConvNetPooledStemSize(const ConvNetSpec& spec);
// Channels into the classifier (the last stage's width · expansion).
int64_t ConvNetFeatures(const ConvNetSpec& spec);
// Multiply-accumulates of one image's forward pass: every convolution and the classifier (the
// "GFLOPs" of the vision literature, which counts one multiply-add as one).
double ConvNetForwardMacsPerImage(const ConvNetSpec& spec);
// Trainable parameters: convolution weights, batch-norm scale and shift (2 per channel), the
// classifier's weights and bias.
double ConvNetParameters(const ConvNetSpec& spec);

// models/convnets/ of the model library.
std::string ConvNetLibraryDir();
std::vector<std::string> ListConvNets();
// A library name ("resnet50", any case) or a path to a .json file; kInvalidArgument naming the
// file and field (or listing the library's networks) otherwise.
absl::StatusOr<ConvNetSpec> ResolveConvNet(const std::string& name_or_path);

}  // namespace projector

#endif  // PROJECTOR_MODELS_CONVNET_SPEC_H_
