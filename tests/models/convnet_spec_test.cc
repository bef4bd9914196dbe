#include "models/convnet_spec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// ResNet-50 v1.5 at 224x224, multiply-adds per image forward, by hand (H_out² · C_out · C_in · k²
// per convolution; each stage's block 0 adds its 1x1 projection shortcut and, after stage 1,
// halves the resolution in its 3x3):
//   stem 7x7/2, 3 -> 64 at 112²: 112² · 64 · 147                    =   118,013,952
//   stage 1 (56², width 64, 3 blocks)                                 =   667,942,912
//     e.g. block 0: conv1 56²·64·64 + conv2 56²·64·576 + conv3 56²·256·64 + shortcut 56²·256·64
//   stage 2 (28², width 128, 4 blocks)                                = 1,027,604,480
//   stage 3 (14², width 256, 6 blocks)                                = 1,464,336,384
//   stage 4 (7², width 512, 3 blocks)                                 =   809,238,528
//   classifier 2048 · 1000                                            =     2,048,000
//   total 4,089,184,256: the "4.1 GFLOPs" the literature quotes for ResNet-50 (one multiply-add
//   counted once).
// Parameters: torchvision's resnet50 has 25,557,032 (convolutions, batch norm scale and shift,
// the classifier's weights and bias).
TEST(ConvNetSpecTest, ResNet50MultiplyAddsAndParametersByHand) {
  absl::StatusOr<ConvNetSpec> r = ResolveConvNet("ResNet50");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->name, "resnet50");
  const std::vector<ConvLayer> convs = ConvLayers(*r);
  // 1 stem + 16 blocks x 3 + 4 projection shortcuts.
  ASSERT_EQ(convs.size(), 53u);
  EXPECT_DOUBLE_EQ(convs[0].MacsPerImage(), 118013952.0);
  EXPECT_EQ(convs[0].GemmK(), 147);
  EXPECT_EQ(convs[0].GemmM(2), 2 * 112 * 112);
  // Stage 1's block 0: conv1 at 56² from 64 channels, its 3x3 at stride 1, its shortcut.
  EXPECT_EQ(convs[1].name, "s1b0_conv1");
  EXPECT_DOUBLE_EQ(convs[1].MacsPerImage(), 56.0 * 56 * 64 * 64);
  EXPECT_EQ(convs[4].name, "s1b0_shortcut");
  // Stage 2's block 0 halves the resolution in its 3x3 (v1.5) and its shortcut.
  EXPECT_EQ(convs[11].name, "s2b0_conv1");
  EXPECT_EQ(convs[11].in_size, 56);
  EXPECT_EQ(convs[11].out_size, 56);
  EXPECT_EQ(convs[12].stride, 2);
  EXPECT_EQ(convs[12].out_size, 28);
  EXPECT_EQ(convs.back().out_size, 7);
  EXPECT_EQ(ConvNetFeatures(*r), 2048);
  EXPECT_DOUBLE_EQ(ConvNetForwardMacsPerImage(*r), 4089184256.0);
  EXPECT_DOUBLE_EQ(ConvNetParameters(*r), 25557032.0);
}

TEST(ConvNetSpecTest, BadNamesAndFieldsAreNamed) {
  EXPECT_THAT(ResolveConvNet("resnet5"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("unknown convolutional network 'resnet5'"),
                             HasSubstr("did you mean 'resnet50'"))));
  EXPECT_THAT(ResolveConvNet("/nonexistent/net.json"), ::testing::Not(IsOk()));
}

}  // namespace
}  // namespace projector
