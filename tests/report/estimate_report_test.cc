#include "report/estimate_report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace projector {
namespace {

using ::testing::HasSubstr;

GemmOpEstimate Example() {
  GemmOpEstimate e;
  e.context = {.gpu = "h100-sxm", .clock_mhz = 1830, .gpus_per_node = 8, .backend = "tile"};
  e.shape = GemmShape{.m = 8192, .n = 8192, .k = 8192};
  e.estimate = GemmEstimate{.time = Microseconds(1500), .clock_scaled_time = Microseconds(1500),
                            .bound = Bound::kCompute, .tile_m = 128, .tile_n = 256,
                            .tile_k = 64, .waves = 16};
  e.tflops = 733.0;
  return e;
}

TEST(GemmEstimateTextTest, NamesShapeGpuBackendAndFigures) {
  const std::string text = GemmEstimateText(Example());
  EXPECT_THAT(text, HasSubstr("GEMM 8192x8192x8192 batch 1 bf16 on h100-sxm @ 1830 MHz "
                              "(tile backend)\n"));
  EXPECT_THAT(text, HasSubstr("  time      1500.000 us\n"));
  EXPECT_THAT(text, HasSubstr("  achieved  733.0 TFLOP/s\n"));
  EXPECT_THAT(text, HasSubstr("  tile      128x256x64, 16 waves\n"));
  EXPECT_THAT(text, HasSubstr("  bound     compute\n"));
}

TEST(GemmEstimateJsonTest, FieldsInSiUnits) {
  const nlohmann::json j = GemmEstimateJson(Example());
  EXPECT_EQ(j["op"], "gemm");
  EXPECT_EQ(j["gpu"], "h100-sxm");
  EXPECT_EQ(j["backend"], "tile");
  EXPECT_DOUBLE_EQ(j["time_s"].get<double>(), 1.5e-3);
  EXPECT_DOUBLE_EQ(j["tflops"].get<double>(), 733.0);
  EXPECT_EQ(j["tile"], nlohmann::json::array({128, 256, 64}));
}

}  // namespace
}  // namespace projector
