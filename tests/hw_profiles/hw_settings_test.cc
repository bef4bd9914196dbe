#include "hw_profiles/hw_settings.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

HardwareProfile H100() {
  absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile("h100-sxm");
  EXPECT_THAT(hw, IsOk());
  return *hw;
}

std::vector<HwSetting> Settings(std::initializer_list<const char*> texts) {
  std::vector<HwSetting> out;
  for (const char* t : texts) {
    absl::StatusOr<HwSetting> s = ParseHwSetting(t);
    EXPECT_THAT(s, IsOk()) << t;
    if (s.ok()) out.push_back(*s);
  }
  return out;
}

TEST(HwSettingsTest, ParsesDottedPathsPointersAndJsonValues) {
  absl::StatusOr<HwSetting> dots = ParseHwSetting("scale_out.per_nic_bandwidth_gbps=200");
  ASSERT_THAT(dots, IsOk());
  EXPECT_EQ(dots->pointer, "/scale_out/per_nic_bandwidth_gbps");
  EXPECT_EQ(dots->value, 200);
  EXPECT_EQ(dots->text, "--hw-set scale_out.per_nic_bandwidth_gbps=200");
  absl::StatusOr<HwSetting> pointer = ParseHwSetting("/gpu/hbm_bandwidth_tbs=4.8");
  ASSERT_THAT(pointer, IsOk());
  EXPECT_EQ(pointer->pointer, "/gpu/hbm_bandwidth_tbs");
  EXPECT_DOUBLE_EQ(pointer->value.get<double>(), 4.8);
  EXPECT_EQ(ParseHwSetting("scale_up.supports_in_network_reduction=false")->value, false);
  // Anything that is not a JSON scalar is its text.
  EXPECT_EQ(ParseHwSetting("scale_out.name=8x CX-7")->value, "8x CX-7");
  EXPECT_EQ(ParseHwSetting("scale_out.name=\"quoted\"")->value, "quoted");
  for (const char* bad : {"foo", "=1", "gpu.x=", ""}) {
    EXPECT_THAT(ParseHwSetting(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not PATH=VALUE")))
        << bad;
  }
}

// 400 Gb/s NICs at 200: 25 GB/s per NIC; 8 NICs at 4.
TEST(HwSettingsTest, SetsTheFieldAndKeepsTheRest) {
  HardwareProfile hw = H100();
  const double hbm = hw.gpu.hbm_capacity.value();
  ASSERT_THAT(
      ApplyHwSettings(
          Settings({"scale_out.per_nic_bandwidth_gbps=200", "scale_out.nics_per_node=4"}), hw),
      IsOk());
  EXPECT_DOUBLE_EQ(hw.scale_out.per_nic_bandwidth.value(), 25e9);
  EXPECT_EQ(hw.scale_out.nics_per_node, 4);
  EXPECT_DOUBLE_EQ(hw.gpu.hbm_capacity.value(), hbm);
  EXPECT_THAT(hw.figure_sources.at("/scale_out/per_nic_bandwidth_gbps"),
              HasSubstr("what-if: --hw-set scale_out.per_nic_bandwidth_gbps=200"));
}

// H100: 18 NVLink 4 links of 25 GB/s, 450 GB/s per GPU. At 900 GB/s per GPU the per-link
// figure doubles to 50 GB/s, so 18 x 50 still covers it.
TEST(HwSettingsTest, ScaleUpBandwidthScalesThePerLinkFigure) {
  HardwareProfile hw = H100();
  HwSetting s;
  s.pointer = "/scale_up/per_gpu_bandwidth_gbs";
  s.value = 900;
  s.text = "--scale-up-bandwidth-gbs 900";
  ASSERT_THAT(ApplyHwSettings({&s, 1}, hw), IsOk());
  EXPECT_DOUBLE_EQ(hw.scale_up.per_gpu_bandwidth.value(), 900e9);
  EXPECT_DOUBLE_EQ(hw.scale_up.per_link_bandwidth.value(), 50e9);
}

TEST(HwSettingsTest, EveryMistakeIsNamed) {
  HardwareProfile hw = H100();
  EXPECT_THAT(ApplyHwSettings(Settings({"scale_out.per_nic_bandwith_gbps=200"}), hw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--hw-set scale_out.per_nic_bandwith_gbps=200"),
                             HasSubstr("did you mean 'per_nic_bandwidth_gbps'"),
                             HasSubstr("fields here: "))));
  EXPECT_THAT(ApplyHwSettings(Settings({"gpu=1"}), hw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'/gpu' is a section"), HasSubstr("hbm_capacity_gib"))));
  EXPECT_THAT(ApplyHwSettings(Settings({"gpu.hbm_capacity_gib.value.x=1"}), hw),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a value, not a section")));
  EXPECT_THAT(
      ApplyHwSettings(Settings({"scale_out.nics_per_node=abc"}), hw),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("/scale_out/nics_per_node/value"), HasSubstr("expected a number"))));
  EXPECT_THAT(ApplyHwSettings(Settings({"gpu.hbm_bandwidth_tbs=0"}), hw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("with --hw-set gpu.hbm_bandwidth_tbs=0"),
                             HasSubstr("/gpu/hbm_bandwidth_tbs"))));
  // The cross-field checks run too: a sustained clock above the peak.
  EXPECT_THAT(ApplyHwSettings(Settings({"gpu.sustained_clock_mhz=2500"}), hw),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clock")));
  HardwareProfile in_code = H100();
  in_code.source_file.clear();
  EXPECT_THAT(ApplyHwSettings(Settings({"gpu.hbm_capacity_gib=96"}), in_code),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not loaded from a file")));
  // Nothing changed by the refusals.
  EXPECT_DOUBLE_EQ(hw.scale_out.per_nic_bandwidth.value(),
                   H100().scale_out.per_nic_bandwidth.value());
}

TEST(HwSettingsTest, ShorthandsNameRealFields) {
  for (const HwShorthand& h : HwShorthands()) {
    HardwareProfile hw = H100();
    HwSetting s;
    s.pointer = std::string(h.pointer);
    s.value = 4;
    s.text = std::string(h.flag);
    EXPECT_THAT(ApplyHwSettings({&s, 1}, hw), IsOk()) << h.flag;
  }
}

}  // namespace
}  // namespace projector
