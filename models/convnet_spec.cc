#include "models/convnet_spec.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/json_reader.h"
#include "core/status_macros.h"
#include "core/suggest.h"
#include "core/yaml_reader.h"
#include "models/model_spec.h"

namespace projector {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

// The stem: a 7x7 stride-2 convolution (padding 3), then a 3x3 stride-2 max pool (padding 1);
// every downsampling step strides by 2 (He et al., arXiv:1512.03385, Table 1).
constexpr int64_t kStemKernel = 7;
constexpr int64_t kStride = 2;

absl::StatusOr<ConvNetSpec> ParseConvNet(const nlohmann::json& value, const std::string& origin) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject obj, JsonObject::Make(value, origin, ""));
  ConvNetSpec s;
  PROJECTOR_ASSIGN_OR_RETURN(s.name, obj.String("name"));
  PROJECTOR_ASSIGN_OR_RETURN(s.source, obj.String("source"));
  PROJECTOR_ASSIGN_OR_RETURN(s.image_size, obj.PositiveInt("image_size"));
  PROJECTOR_ASSIGN_OR_RETURN(s.in_channels, obj.PositiveInt("in_channels"));
  PROJECTOR_ASSIGN_OR_RETURN(s.classes, obj.PositiveInt("classes"));
  PROJECTOR_ASSIGN_OR_RETURN(s.stem_channels, obj.PositiveInt("stem_channels"));
  PROJECTOR_ASSIGN_OR_RETURN(s.expansion, obj.PositiveInt("expansion"));
  PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json* stages, obj.Array("stages"));
  if (stages->empty()) return obj.FieldError("stages", "must hold at least one stage");
  for (size_t i = 0; i < stages->size(); ++i) {
    PROJECTOR_ASSIGN_OR_RETURN(JsonObject st,
                               JsonObject::Make((*stages)[i], origin, absl::StrCat("/stages/", i)));
    ConvStage stage;
    PROJECTOR_ASSIGN_OR_RETURN(stage.blocks, st.PositiveInt("blocks"));
    PROJECTOR_ASSIGN_OR_RETURN(stage.width, st.PositiveInt("width"));
    PROJECTOR_RETURN_IF_ERROR(st.CheckNoUnknownKeys());
    s.stages.push_back(stage);
  }
  PROJECTOR_RETURN_IF_ERROR(obj.CheckNoUnknownKeys());
  // Every stride-2 step must halve the resolution exactly: the stem's two and one per stage
  // after the first.
  const int64_t halvings = 2 + static_cast<int64_t>(s.stages.size()) - 1;
  if (s.image_size % (int64_t{1} << halvings) != 0) {
    return obj.FieldError("image_size",
                          absl::StrCat("must be a multiple of ", int64_t{1} << halvings,
                                       " (halved by the stem's two stride-2 steps and once per "
                                       "stage after the first), got ",
                                       s.image_size));
  }
  return s;
}

}  // namespace

double ConvLayer::MacsPerImage() const {
  return D(out_size) * D(out_size) * D(out_channels) * D(GemmK());
}

int64_t ConvNetPooledStemSize(const ConvNetSpec& spec) { return spec.image_size / 4; }

int64_t ConvNetFeatures(const ConvNetSpec& spec) {
  return spec.stages.back().width * spec.expansion;
}

std::vector<ConvLayer> ConvLayers(const ConvNetSpec& spec) {
  std::vector<ConvLayer> out;
  out.push_back({.name = "stem",
                 .role = ConvRole::kStem,
                 .in_channels = spec.in_channels,
                 .out_channels = spec.stem_channels,
                 .kernel = kStemKernel,
                 .stride = kStride,
                 .in_size = spec.image_size,
                 .out_size = spec.image_size / kStride});
  int64_t size = ConvNetPooledStemSize(spec);
  int64_t channels = spec.stem_channels;
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    const ConvStage& stage = spec.stages[i];
    const int64_t out_channels = stage.width * spec.expansion;
    for (int64_t b = 0; b < stage.blocks; ++b) {
      const int64_t stride = (b == 0 && i > 0) ? kStride : 1;
      const int64_t out_size = size / stride;
      const std::string prefix = absl::StrCat("s", i + 1, "b", b, "_");
      out.push_back({.name = prefix + "conv1",
                     .role = ConvRole::kReduce,
                     .in_channels = channels,
                     .out_channels = stage.width,
                     .kernel = 1,
                     .stride = 1,
                     .in_size = size,
                     .out_size = size});
      out.push_back({.name = prefix + "conv2",
                     .role = ConvRole::kSpatial,
                     .in_channels = stage.width,
                     .out_channels = stage.width,
                     .kernel = 3,
                     .stride = stride,
                     .in_size = size,
                     .out_size = out_size});
      out.push_back({.name = prefix + "conv3",
                     .role = ConvRole::kExpand,
                     .in_channels = stage.width,
                     .out_channels = out_channels,
                     .kernel = 1,
                     .stride = 1,
                     .in_size = out_size,
                     .out_size = out_size});
      if (b == 0) {
        out.push_back({.name = prefix + "shortcut",
                       .role = ConvRole::kShortcut,
                       .in_channels = channels,
                       .out_channels = out_channels,
                       .kernel = 1,
                       .stride = stride,
                       .in_size = size,
                       .out_size = out_size});
      }
      channels = out_channels;
      size = out_size;
    }
  }
  return out;
}

double ConvNetForwardMacsPerImage(const ConvNetSpec& spec) {
  double macs = D(ConvNetFeatures(spec)) * D(spec.classes);
  for (const ConvLayer& c : ConvLayers(spec)) macs += c.MacsPerImage();
  return macs;
}

double ConvNetParameters(const ConvNetSpec& spec) {
  double params = D(ConvNetFeatures(spec)) * D(spec.classes) + D(spec.classes);
  for (const ConvLayer& c : ConvLayers(spec)) {
    params += D(c.Weights()) + 2.0 * D(c.out_channels);  // + batch-norm scale and shift
  }
  return params;
}

std::string ConvNetLibraryDir() { return ModelLibraryDir() + "/convnets"; }

std::vector<std::string> ListConvNets() { return JsonFileStems(ConvNetLibraryDir()); }

absl::StatusOr<ConvNetSpec> ResolveConvNet(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (!absl::StrContains(name_or_path, '/') && !absl::EndsWith(name_or_path, ".json") &&
      !IsYamlPath(name_or_path)) {
    const std::vector<std::string> names = ListConvNets();
    const std::string wanted = absl::AsciiStrToLower(name_or_path);
    if (std::find(names.begin(), names.end(), wanted) == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown convolutional network '", name_or_path, "'",
                       DidYouMean(wanted, names), "; valid: ",
                       names.empty() ? std::string("(none in ") + ConvNetLibraryDir() + ")"
                                     : absl::StrJoin(names, ", "),
                       ", or a path to a network JSON file"));
    }
    path = ConvNetLibraryDir() + "/" + wanted + ".json";
  }
  PROJECTOR_ASSIGN_OR_RETURN(nlohmann::json value, ReadConfigFile(path));
  return ParseConvNet(value, path);
}

}  // namespace projector
