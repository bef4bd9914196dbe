#include "hw_profiles/hardware_profile.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/json_reader.h"
#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kLibraryDir = PROJECTOR_SOURCE_DIR "/hw_profiles";
const std::string kTestDataDir = PROJECTOR_SOURCE_DIR "/tests/testdata/hw_profiles";

std::string TestData(const std::string& name) { return absl::StrCat(kTestDataDir, "/", name); }
std::string LibraryFile(const std::string& name) {
  return absl::StrCat(kLibraryDir, "/", name, ".json");
}

// The tests below read the shipped library from the source tree, whatever the environment says.
class LibraryEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { unsetenv("PROJECTOR_HW_PROFILES_DIR"); }
};
const ::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new LibraryEnvironment);

// ---------------------------------------------------------------------------------------------
// The shipped library, one case per file in the directory listing.

class ShippedProfileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedProfileTest, LoadsAndValidates) {
  auto hw = LoadHardwareProfileFile(LibraryFile(GetParam()));
  ASSERT_THAT(hw, IsOk());
  EXPECT_THAT(ValidateHardwareProfile(*hw, hw->source_file), IsOk());
  EXPECT_EQ(hw->name, GetParam()) << "the profile name must equal the file stem";
  EXPECT_EQ(hw->gpu.name, GetParam());
  EXPECT_FALSE(hw->description.empty());
}

TEST_P(ShippedProfileTest, ResolvesByName) {
  auto hw = ResolveHardwareProfile(GetParam());
  ASSERT_THAT(hw, IsOk());
  EXPECT_EQ(hw->name, GetParam());
}

// Walks the JSON: every number or boolean must sit in a figure object
// {"value": ..., "source": "<non-empty>"}; strings (names, topology, notes) need none.
void ExpectSourced(const nlohmann::json& j, const std::string& pointer,
                   std::vector<std::string>& unsourced, int& figures) {
  if (j.is_object() && j.contains("value")) {
    ++figures;
    auto it = j.find("source");
    if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
      unsourced.push_back(pointer);
    }
    return;
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      ExpectSourced(*it, absl::StrCat(pointer, "/", it.key()), unsourced, figures);
    }
    return;
  }
  if (j.is_array()) {
    for (size_t idx = 0; idx < j.size(); ++idx) {
      ExpectSourced(j[idx], absl::StrCat(pointer, "/", idx), unsourced, figures);
    }
    return;
  }
  if (j.is_number() || j.is_boolean()) unsourced.push_back(pointer);
}

TEST_P(ShippedProfileTest, EveryFigureCitesItsSource) {
  auto doc = ReadJsonFile(LibraryFile(GetParam()));
  ASSERT_THAT(doc, IsOk());
  std::vector<std::string> unsourced;
  int figures = 0;
  ExpectSourced(*doc, "", unsourced, figures);
  EXPECT_THAT(unsourced, ::testing::IsEmpty()) << GetParam() << ": figures without a source";
  EXPECT_GE(figures, 35);

  auto hw = LoadHardwareProfileFile(LibraryFile(GetParam()));
  ASSERT_THAT(hw, IsOk());
  EXPECT_EQ(static_cast<int>(hw->figure_sources.size()), figures);
  EXPECT_THAT(hw->figure_sources, ::testing::Contains(::testing::Key("/gpu/peak_clock_mhz")));
}

TEST_P(ShippedProfileTest, FiguresArePlausible) {
  auto hw = LoadHardwareProfileFile(LibraryFile(GetParam()));
  ASSERT_THAT(hw, IsOk());
  const GpuSpec& g = hw->gpu;
  // Invariants every profile must keep, whatever the GPU: fp16 at the bf16 rate where there are
  // bf16 tensor cores (Volta has fp16 only), at least 16 GiB of memory, and no more NICs than
  // GPUs per node (a rail per GPU on DGX/HGX nodes, fewer on DGX-1V and PCIe servers).
  if (g.matrix_flops_per_clock_per_cu[DTypeIndex(DType::kBf16)] > 0) {
    EXPECT_EQ(g.matrix_flops_per_clock_per_cu[DTypeIndex(DType::kFp16)],
              g.matrix_flops_per_clock_per_cu[DTypeIndex(DType::kBf16)]);
  }
  EXPECT_GT(g.matrix_flops_per_clock_per_cu[DTypeIndex(DType::kFp16)], 0);
  EXPECT_GE(ToMegahertz(g.sustained_clock), 1000);
  EXPECT_GE(g.hbm_capacity, Gibibytes(16));
  EXPECT_EQ(g.last_level_cache > Bytes(0), g.vendor == Vendor::kAmd);
  EXPECT_EQ(hw->scale_up.topology == FabricTopology::kFullMesh, g.vendor == Vendor::kAmd);
  EXPECT_GE(hw->scale_out.nics_per_node, 1);
  EXPECT_LE(hw->scale_out.nics_per_node, hw->gpus_per_node);
  if (hw->scale_up.supports_in_network_reduction) {
    EXPECT_EQ(g.vendor, Vendor::kNvidia);
  }
  // Every shipped GPU models compute-communication interference: collectives hold some SMs/CUs
  // but, per NCCL's default cap of 32 channels, well under half of them.
  const CommInterference& ci = hw->comm_interference;
  for (int64_t ctas : {ci.scale_up_ctas, ci.scale_out_ctas, ci.ep_dispatch_ctas}) {
    EXPECT_GT(ctas, 0);
    EXPECT_LT(2 * ctas, g.compute_units);
  }
  EXPECT_TRUE(hw->figure_sources.contains("/comm_interference/scale_up_ctas"));
  // Every shipped GPU names the kernel its attention figures describe; it comes first.
  ASSERT_FALSE(g.attention_kernels.empty());
  EXPECT_DOUBLE_EQ(g.attention_kernels.front().fwd_efficiency, g.attention_fwd_efficiency);
  EXPECT_DOUBLE_EQ(g.attention_kernels.front().bwd_efficiency, g.attention_bwd_efficiency);
  EXPECT_TRUE(hw->figure_sources.contains("/gpu/attention_kernel_default"));
}

INSTANTIATE_TEST_SUITE_P(Library, ShippedProfileTest, ::testing::ValuesIn([] {
                           unsetenv("PROJECTOR_HW_PROFILES_DIR");
                           return ListLibraryGpus();
                         }()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(HardwareLibraryTest, ListsTheShippedGpus) {
  EXPECT_EQ(HardwareLibraryDir(), kLibraryDir);
  EXPECT_THAT(ListLibraryGpus(),
              ElementsAre("a100-sxm-40gb", "a100-sxm-80gb", "a6000", "b200", "gb200", "h100-sxm",
                          "h200-sxm", "h800-sxm", "mi300x", "mi325x", "mi355x", "v100-sxm2-16gb",
                          "v100-sxm2-32gb"));
}

// ---------------------------------------------------------------------------------------------
// Datasheet peaks: compute_units x FLOPs/clk/CU x peak clock must reproduce the vendor's dense
// TFLOPS within 1% (e.g. MI300X 304 x 2048 x 2.1 GHz = 1307.4).

struct DatasheetPeak {
  const char* gpu;
  DType dtype;
  double tflops;  // dense, from the datasheet (shared/reference/hardware_models.md 3.1)
};

class DatasheetPeakTest : public ::testing::TestWithParam<DatasheetPeak> {};

TEST_P(DatasheetPeakTest, MatrixPeakReproducesDatasheet) {
  const DatasheetPeak& want = GetParam();
  auto hw = LoadHardwareProfileFile(LibraryFile(want.gpu));
  ASSERT_THAT(hw, IsOk());
  EXPECT_THAT(ToTeraFlopsPerSecond(hw->gpu.MatrixPeak(want.dtype, hw->gpu.peak_clock)),
              IsNearRel(want.tflops, 0.01))
      << want.gpu << " " << DTypeName(want.dtype);
}

const DatasheetPeak kDatasheetPeaks[] = {
        {"mi300x", DType::kBf16, 1307.4}, {"mi300x", DType::kFp8, 2614.9},
        {"mi300x", DType::kTf32, 653.7}, {"mi300x", DType::kFp32, 163.4},
        {"mi325x", DType::kBf16, 1307.4}, {"mi325x", DType::kFp8, 2614.9},
        {"mi355x", DType::kBf16, 2516.6}, {"mi355x", DType::kFp8, 5033.2},
        {"mi355x", DType::kFp4, 10066.3}, {"mi355x", DType::kFp32, 157.3},
        {"a100-sxm-40gb", DType::kBf16, 312},
        {"a100-sxm-80gb", DType::kBf16, 312},
        {"a100-sxm-80gb", DType::kTf32, 156},
        {"a100-sxm-80gb", DType::kFp32, 19.5},
        {"h100-sxm", DType::kBf16, 989}, {"h100-sxm", DType::kFp8, 1979},
        {"h100-sxm", DType::kTf32, 494.5},
        {"h200-sxm", DType::kBf16, 989}, {"h200-sxm", DType::kFp8, 1979},
        {"h800-sxm", DType::kBf16, 989},
        {"b200", DType::kBf16, 2250}, {"b200", DType::kFp8, 4500},
        {"b200", DType::kFp4, 9000}, {"b200", DType::kTf32, 1125},
        {"gb200", DType::kBf16, 2500}, {"gb200", DType::kFp8, 5000},
        {"gb200", DType::kFp4, 10000},
        // Volta: 80 SMs x 1024 FP16 FLOP/clk (8 tensor cores x 64 FMA x 2) x 1.53 GHz = 125.3,
        // the whitepaper's 125; no bf16 tensor cores.
        {"v100-sxm2-16gb", DType::kFp16, 125}, {"v100-sxm2-32gb", DType::kFp16, 125},
        {"v100-sxm2-32gb", DType::kFp32, 15.7},
        // RTX A6000: 84 x 1024 x 1.8 GHz = 154.8 dense (309.7 with sparsity), FP32 38.7.
        {"a6000", DType::kBf16, 154.8}, {"a6000", DType::kFp16, 154.8}, {"a6000", DType::kFp32, 38.7}};

INSTANTIATE_TEST_SUITE_P(Datasheets, DatasheetPeakTest, ::testing::ValuesIn(kDatasheetPeaks));

// Every GPU's 16-bit training rate is checked: bf16, or fp16 where it has no bf16 tensor cores.
TEST(DatasheetPeakTest, EveryShippedGpuHasA16BitDatasheetRow) {
  for (const std::string& name : ListLibraryGpus()) {
    auto hw = LoadHardwareProfileFile(LibraryFile(name));
    ASSERT_THAT(hw, IsOk()) << name;
    const DType sixteen =
        hw->gpu.matrix_flops_per_clock_per_cu[DTypeIndex(DType::kBf16)] > 0 ? DType::kBf16
                                                                           : DType::kFp16;
    bool found = false;
    for (const DatasheetPeak& row : kDatasheetPeaks) {
      found = found || (row.gpu == name && row.dtype == sixteen);
    }
    EXPECT_TRUE(found) << name << " has no " << DTypeName(sixteen) << " datasheet row";
  }
}

TEST(MatrixPeakTest, UnsupportedDtypeIsZero) {
  auto mi355x = LoadHardwareProfileFile(LibraryFile("mi355x"));
  auto a100 = LoadHardwareProfileFile(LibraryFile("a100-sxm-80gb"));
  ASSERT_THAT(mi355x, IsOk());
  ASSERT_THAT(a100, IsOk());
  EXPECT_EQ(mi355x->gpu.MatrixPeak(DType::kTf32, mi355x->gpu.peak_clock).value(), 0);
  EXPECT_EQ(a100->gpu.MatrixPeak(DType::kFp8, a100->gpu.peak_clock).value(), 0);
}

TEST(MatrixPeakTest, ScalesLinearlyWithClock) {
  auto hw = LoadHardwareProfileFile(LibraryFile("mi300x"));
  ASSERT_THAT(hw, IsOk());
  // 304 CUs x 2048 FLOP/clk x 1 GHz = 622.6 TFLOPS.
  EXPECT_THAT(ToTeraFlopsPerSecond(hw->gpu.MatrixPeak(DType::kBf16, Megahertz(1000))),
              IsNearRel(622.592, 1e-9));
}

// The efficiencies are defined against the peak at the sustained clock, so peak(sustained) x
// gemm_efficiency must give back the measured large-GEMM TFLOPS each was derived from.
struct MeasuredGemm {
  const char* gpu;
  double sustained_mhz;
  double tflops;
  // The clock the measurement ran at, against which the profile states the efficiency; 0 = the
  // sustained clock. B200: MAMF's short runs at the 1856 MHz tensor-spec clock, while a training
  // step runs throttled at the sustained 1580 MHz (flashinfer PR #2899).
  double measured_mhz = 0;
};

Hertz MeasurementClock(const MeasuredGemm& want, const GpuSpec& gpu) {
  return want.measured_mhz > 0 ? Megahertz(want.measured_mhz) : gpu.sustained_clock;
}

class MeasuredGemmTest : public ::testing::TestWithParam<MeasuredGemm> {};

TEST_P(MeasuredGemmTest, SustainedPeakTimesEfficiencyGivesMeasurement) {
  const MeasuredGemm& want = GetParam();
  auto hw = LoadHardwareProfileFile(LibraryFile(want.gpu));
  ASSERT_THAT(hw, IsOk());
  EXPECT_NEAR(ToMegahertz(hw->gpu.sustained_clock), want.sustained_mhz, 1e-9);
  double achieved =
      ToTeraFlopsPerSecond(hw->gpu.MatrixPeak(DType::kBf16, MeasurementClock(want, hw->gpu))) *
      hw->gpu.gemm_efficiency;
  EXPECT_THAT(achieved, IsNearRel(want.tflops, 0.01)) << want.gpu;
}

INSTANTIATE_TEST_SUITE_P(
    Measurements, MeasuredGemmTest,
    ::testing::Values(MeasuredGemm{"mi300x", 1207, 708},     // AMD MAF blog
                      MeasuredGemm{"mi325x", 1447, 843},     // AMD MAF blog
                      MeasuredGemm{"mi355x", 1600, 1591},    // AITER 8192^3 (clock estimated)
                      MeasuredGemm{"a100-sxm-80gb", 1410, 271.2},  // MAMF
                      // 30 s of 8192^3 GEMMs on an H200 at its 700 W cap (docs/gpu_measurements.md,
                      // session 30), the H100 the same silicon
                      MeasuredGemm{"h100-sxm", 1830, 653.9},
                      MeasuredGemm{"h200-sxm", 1830, 653.9},
                      MeasuredGemm{"b200", 1580, 1745, 1856}));    // MAMF

// The same for FP8: peak_fp8(sustained) x gemm_efficiency_fp8 gives back the measured FP8 GEMM
// (hardware_models.md 4.1). MI300X's FP8 run clocked 1230 MHz; its efficiency is against the
// 1207 MHz sustained clock like the bf16 one, so the product still reproduces 1273.
class MeasuredFp8GemmTest : public ::testing::TestWithParam<MeasuredGemm> {};

TEST_P(MeasuredFp8GemmTest, SustainedFp8PeakTimesFp8EfficiencyGivesMeasurement) {
  const MeasuredGemm& want = GetParam();
  auto hw = LoadHardwareProfileFile(LibraryFile(want.gpu));
  ASSERT_THAT(hw, IsOk());
  EXPECT_NEAR(ToMegahertz(hw->gpu.sustained_clock), want.sustained_mhz, 1e-9);
  ASSERT_TRUE(hw->gpu.gemm_efficiency_fp8.has_value()) << want.gpu;
  EXPECT_DOUBLE_EQ(hw->gpu.GemmEfficiency(DType::kFp8), *hw->gpu.gemm_efficiency_fp8);
  EXPECT_FALSE(hw->figure_sources.at("/gpu/gemm_efficiency_fp8").empty());
  double achieved =
      ToTeraFlopsPerSecond(hw->gpu.MatrixPeak(DType::kFp8, MeasurementClock(want, hw->gpu))) *
      hw->gpu.GemmEfficiency(DType::kFp8);
  EXPECT_THAT(achieved, IsNearRel(want.tflops, 0.01)) << want.gpu;
}

INSTANTIATE_TEST_SUITE_P(
    Measurements, MeasuredFp8GemmTest,
    ::testing::Values(MeasuredGemm{"mi300x", 1207, 1273},    // AMD MAF blog (1230 MHz run)
                      MeasuredGemm{"mi325x", 1447, 1519},    // AMD MAF blog
                      // sustained on an H200 at 700 W (session 30); H100 and H800 the same silicon
                      MeasuredGemm{"h100-sxm", 1830, 1197.0},
                      MeasuredGemm{"h800-sxm", 1830, 1197.0},
                      MeasuredGemm{"h200-sxm", 1830, 1197.0},
                      MeasuredGemm{"b200", 1580, 3432.5, 1856}));  // MAMF

TEST(GemmEfficiencyTest, Fp8AndFp4UseTheFp8FigureOtherDtypesTheBf16One) {
  auto h100 = LoadHardwareProfileFile(LibraryFile("h100-sxm"));
  ASSERT_THAT(h100, IsOk());
  EXPECT_DOUBLE_EQ(h100->gpu.GemmEfficiency(DType::kBf16), 0.661);
  EXPECT_DOUBLE_EQ(h100->gpu.GemmEfficiency(DType::kFp16), 0.661);
  EXPECT_DOUBLE_EQ(h100->gpu.GemmEfficiency(DType::kFp8), 0.605);
  EXPECT_DOUBLE_EQ(h100->gpu.GemmEfficiency(DType::kFp4), 0.605);
}

// Block-scaled FP8 (blockwise, MXFP8) takes the measured ratio to the per-tensor-scaled GEMM on
// top of the FP8 figure: B200 0.763 x 0.92 = 0.70196 (FlashInfer MXFP8 3200.9 and 3099.7 against
// MAMF 3432.5: 0.933 and 0.903, mean 0.918 rounded to 0.92), H100 0.605 x 0.91 = 0.55055
// (cuBLASLt blockwise vs per-tensor on an H200 here: 0.900, 0.946, 0.883, mean 0.910). FP4 is block-scaled by format and keeps the FP8
// figure; bf16 never changes; a profile without the ratio (MI300X) prices no difference.
TEST(GemmEfficiencyTest, BlockScaledFp8TakesTheMeasuredRatio) {
  struct Want {
    std::string gpu;
    double block_scaled_fp8;
  };
  for (const Want& w : {Want{"b200", 0.763 * 0.92}, Want{"h100-sxm", 0.605 * 0.91},
                        Want{"mi300x", 0.847}}) {
    auto hw = LoadHardwareProfileFile(LibraryFile(w.gpu));
    ASSERT_THAT(hw, IsOk());
    EXPECT_NEAR(hw->gpu.GemmEfficiency(DType::kFp8, true), w.block_scaled_fp8, 1e-12) << w.gpu;
    EXPECT_DOUBLE_EQ(hw->gpu.GemmEfficiency(DType::kFp4, true),
                     hw->gpu.GemmEfficiency(DType::kFp4)) << w.gpu;
    EXPECT_DOUBLE_EQ(hw->gpu.GemmEfficiency(DType::kBf16, true), hw->gpu.gemm_efficiency) << w.gpu;
  }
  auto h100 = LoadHardwareProfileFile(LibraryFile("h100-sxm"));
  ASSERT_THAT(h100, IsOk());
  EXPECT_FALSE(h100->figure_sources.at("/gpu/fp8_block_scaled_gemm_ratio").empty());
}

// The Hopper profiles carry the scatter-add rates measured on an H200 (docs/gpu_measurements.md,
// session 30), in 10^9 adds/s; other GPUs have none measured.
TEST(AtomicAddRateTest, HopperProfilesCarryTheMeasuredRates) {
  for (const char* gpu : {"h100-sxm", "h200-sxm", "h800-sxm"}) {
    auto hw = LoadHardwareProfileFile(LibraryFile(gpu));
    ASSERT_THAT(hw, IsOk());
    EXPECT_EQ(hw->gpu.AtomicAddRate(AtomicAddKernel::kScatterAdd), 251e9) << gpu;
    EXPECT_EQ(hw->gpu.AtomicAddRate(AtomicAddKernel::kIndexAdd), 116e9) << gpu;
    EXPECT_EQ(hw->gpu.AtomicAddRate(AtomicAddKernel::kNone), std::nullopt) << gpu;
    EXPECT_FALSE(hw->figure_sources.at("/gpu/scatter_add_gelems_per_s").empty()) << gpu;
  }
  auto mi300x = LoadHardwareProfileFile(LibraryFile("mi300x"));
  ASSERT_THAT(mi300x, IsOk());
  EXPECT_EQ(mi300x->gpu.AtomicAddRate(AtomicAddKernel::kScatterAdd), std::nullopt);
}

TEST(GemmEfficiencyTest, AbsentFp8FigureFallsBackToTheBf16One) {
  // MI355X has no measured FP8 GEMM in the stored sources; user_minimal gives none either.
  for (const std::string& path : {LibraryFile("mi355x"), TestData("user_minimal.json")}) {
    auto hw = LoadHardwareProfileFile(path);
    ASSERT_THAT(hw, IsOk());
    EXPECT_FALSE(hw->gpu.gemm_efficiency_fp8.has_value()) << path;
    EXPECT_DOUBLE_EQ(hw->gpu.GemmEfficiency(DType::kFp8), hw->gpu.gemm_efficiency) << path;
    EXPECT_DOUBLE_EQ(hw->gpu.GemmEfficiency(DType::kFp4), hw->gpu.gemm_efficiency) << path;
  }
}

// ---------------------------------------------------------------------------------------------
// Named attention kernels.

std::vector<std::string> KernelNamesOf(const GpuSpec& g) {
  std::vector<std::string> names;
  for (const AttentionKernelSpec& k : g.attention_kernels) names.push_back(k.name);
  return names;
}

TEST(AttentionKernelsTest, H100HasFa3AsDefaultFa2ForPyTorchAndFa1WithABias) {
  auto hw = LoadHardwareProfileFile(LibraryFile("h100-sxm"));
  ASSERT_THAT(hw, IsOk());
  const GpuSpec& g = hw->gpu;
  EXPECT_THAT(KernelNamesOf(g), ElementsAre("fa3", "fa1", "fa2"));
  EXPECT_EQ(g.attention_kernel_pytorch, "fa2");
  EXPECT_EQ(g.attention_kernel_pytorch_bias, "fa1");
  const AttentionKernelSpec* fa3 = g.FindAttentionKernel("fa3");
  const AttentionKernelSpec* fa2 = g.FindAttentionKernel("fa2");
  ASSERT_NE(fa3, nullptr);
  ASSERT_NE(fa2, nullptr);
  EXPECT_EQ(g.FindAttentionKernel("fa4"), nullptr);
  // FA3 paper, H100 SXM5 BF16 hdim 128 seqlen 16k: FA3 648 / 561 TFLOPS, FA2 370 / 322 TFLOPS,
  // over the peak 132 x 4096 FLOP/clk x 1830 MHz = 989.4 TFLOPS.
  EXPECT_NEAR(fa3->fwd_efficiency, 648 / 989.4, 1e-3);
  EXPECT_NEAR(fa3->bwd_efficiency, 561 / 989.4, 1e-3);
  EXPECT_NEAR(fa2->fwd_efficiency, 0.374, 1e-3);
  EXPECT_NEAR(fa2->bwd_efficiency, 0.325, 1e-3);
  const double peak_tflops = ToTeraFlopsPerSecond(g.MatrixPeak(DType::kBf16, g.sustained_clock));
  EXPECT_THAT(peak_tflops * fa2->fwd_efficiency, IsNearRel(370, 0.01));
  EXPECT_THAT(peak_tflops * fa2->bwd_efficiency, IsNearRel(322, 0.01));
  EXPECT_FALSE(hw->figure_sources.at("/gpu/attention_kernels/fa2/fwd_efficiency").empty());
  EXPECT_FALSE(hw->figure_sources.at("/gpu/attention_kernels/fa2/bwd_efficiency").empty());
  EXPECT_FALSE(hw->figure_sources.at("/gpu/attention_kernel_pytorch").empty());
  // fa1 (an estimate): FA2 on H100 scaled by FA1/FA2 on A100, 0.374 x 0.40/0.70 = 0.2137 and
  // 0.325 x 0.30/0.525 = 0.1857.
  const AttentionKernelSpec* fa1 = g.FindAttentionKernel("fa1");
  ASSERT_NE(fa1, nullptr);
  EXPECT_NEAR(fa1->fwd_efficiency, 0.374 * 0.40 / 0.70, 1e-3);
  EXPECT_NEAR(fa1->bwd_efficiency, 0.325 * 0.30 / 0.525, 1e-3);
  EXPECT_FALSE(hw->figure_sources.at("/gpu/attention_kernel_pytorch_bias").empty());
}

// Megatron-Core's attention (Transformer Engine) runs cuDNN's fused attention on Blackwell, so
// the B200 profile's default is cuDNN (cudnn-frontend sdpa_benchmark_training, cuDNN 9.10.2,
// causal hdim 128 at 32k: fwd 1434, bwd 1201 TFLOPS) over the 148 x 8192 FLOP/clk x 1856 MHz =
// 2250.2 TFLOPS peak; FlashAttention-4 (fwd 1837 TFLOPS, PR 2605) is a kernel of its own, and
// so is FlashAttention-2 (the same benchmark: 435.8 / 345.6 TFLOPS), which PyTorch SDPA ran
// before it preferred cuDNN on sm100.
TEST(AttentionKernelsTest, B200DefaultsToCudnnWithFa4AndFa2ByName) {
  auto hw = LoadHardwareProfileFile(LibraryFile("b200"));
  ASSERT_THAT(hw, IsOk());
  const GpuSpec& g = hw->gpu;
  EXPECT_THAT(KernelNamesOf(g), ElementsAre("cudnn", "fa2", "fa4"));
  const AttentionKernelSpec* cudnn = g.FindAttentionKernel("cudnn");
  const AttentionKernelSpec* fa4 = g.FindAttentionKernel("fa4");
  ASSERT_NE(cudnn, nullptr);
  ASSERT_NE(fa4, nullptr);
  EXPECT_NEAR(cudnn->fwd_efficiency, 1434 / 2250.2, 1e-3);
  EXPECT_NEAR(cudnn->bwd_efficiency, 1201 / 2250.2, 1e-3);
  EXPECT_NEAR(fa4->fwd_efficiency, 1837 / 2250.2, 1e-3);
  EXPECT_GT(fa4->bwd_efficiency, cudnn->bwd_efficiency);
  const AttentionKernelSpec* fa2 = g.FindAttentionKernel("fa2");
  ASSERT_NE(fa2, nullptr);
  EXPECT_NEAR(fa2->fwd_efficiency, 435.8 / 2250.2, 1e-3);
  EXPECT_NEAR(fa2->bwd_efficiency, 345.6 / 2250.2, 1e-3);
  EXPECT_EQ(g.attention_kernel_pytorch, "cudnn");
  EXPECT_FALSE(hw->figure_sources.at("/gpu/attention_kernels/fa4/fwd_efficiency").empty());
  EXPECT_FALSE(hw->figure_sources.at("/gpu/attention_kernel_default").empty());
}

TEST(AttentionKernelsTest, A100Fa1IsInsideTheFa2PapersFa1Range) {
  // FA2 paper abstract: FA1 reaches 25-40% of the A100's theoretical maximum.
  auto hw = ResolveHardwareProfile("a100-sxm-80gb");
  ASSERT_THAT(hw, IsOk());
  const AttentionKernelSpec* fa1 = hw->gpu.FindAttentionKernel("fa1");
  ASSERT_NE(fa1, nullptr);
  for (double e : {fa1->fwd_efficiency, fa1->bwd_efficiency}) {
    EXPECT_GE(e, 0.25);
    EXPECT_LE(e, 0.40);
  }
  EXPECT_DOUBLE_EQ(fa1->fwd_efficiency, 0.40);
  EXPECT_NEAR(fa1->bwd_efficiency, 0.40 * 0.525 / 0.70, 1e-9);
}

struct ShippedKernels {
  const char* gpu;
  std::vector<std::string> names;  // default first
  const char* pytorch;             // "" = none (the default)
  const char* pytorch_bias;        // "" = none (attention_kernel_pytorch)
};

class ShippedKernelsTest : public ::testing::TestWithParam<ShippedKernels> {};

TEST_P(ShippedKernelsTest, NamesTheSourcedKernelsOnly) {
  const ShippedKernels& want = GetParam();
  auto hw = ResolveHardwareProfile(want.gpu);
  ASSERT_THAT(hw, IsOk());
  EXPECT_EQ(KernelNamesOf(hw->gpu), want.names);
  EXPECT_EQ(hw->gpu.attention_kernel_pytorch, want.pytorch);
  EXPECT_EQ(hw->gpu.attention_kernel_pytorch_bias, want.pytorch_bias);
}

INSTANTIATE_TEST_SUITE_P(
    Library, ShippedKernelsTest,
    ::testing::Values(ShippedKernels{"h100-sxm", {"fa3", "fa1", "fa2"}, "fa2", "fa1"},
                      ShippedKernels{"h200-sxm", {"fa3", "fa1", "fa2"}, "fa2", "fa1"},
                      ShippedKernels{"h800-sxm", {"fa3", "fa1", "fa2"}, "fa2", "fa1"},
                      ShippedKernels{"a100-sxm-40gb", {"fa2", "fa1"}, "fa2", "fa1"},
                      ShippedKernels{"a100-sxm-80gb", {"fa2", "fa1"}, "fa2", "fa1"},
                      ShippedKernels{"b200", {"cudnn", "fa2", "fa4"}, "cudnn", ""},
                      ShippedKernels{"gb200", {"cudnn", "fa2", "fa4"}, "cudnn", ""},
                      ShippedKernels{"mi300x", {"ck"}, "", ""},
                      ShippedKernels{"mi325x", {"ck"}, "", ""},
                      ShippedKernels{"mi355x", {"aiter"}, "", ""},
                      ShippedKernels{
                          "v100-sxm2-16gb", {"mem_efficient"}, "mem_efficient", "mem_efficient"},
                      ShippedKernels{"a6000", {"fa2"}, "fa2", "fa2"}));

TEST(AttentionKernelsTest, LibraryKernelNamesAreSortedAndDistinct) {
  EXPECT_THAT(ListLibraryAttentionKernels(),
              ElementsAre("aiter", "ck", "cudnn", "fa1", "fa2", "fa3", "fa4", "mem_efficient"));
}

TEST(AttentionKernelsTest, UserProfileTakesBareAndSourcedFigures) {
  auto hw = ResolveHardwareProfile(TestData("user_attention_kernels.json"));
  ASSERT_THAT(hw, IsOk());
  const GpuSpec& g = hw->gpu;
  ASSERT_EQ(g.attention_kernels.size(), 2u);
  EXPECT_EQ(g.attention_kernels[0].name, "fa3");  // the top-level figures
  EXPECT_DOUBLE_EQ(g.attention_kernels[0].fwd_efficiency, 0.6);
  EXPECT_DOUBLE_EQ(g.attention_kernels[0].bwd_efficiency, 0.5);
  EXPECT_EQ(g.attention_kernels[1].name, "fa2");
  EXPECT_DOUBLE_EQ(g.attention_kernels[1].fwd_efficiency, 0.4);
  EXPECT_DOUBLE_EQ(g.attention_kernels[1].bwd_efficiency, 0.3);
  EXPECT_EQ(g.attention_kernel_pytorch, "fa2");
  EXPECT_EQ(hw->figure_sources.at("/gpu/attention_kernel_default"), "a test");
  EXPECT_EQ(hw->figure_sources.at("/gpu/attention_kernels/fa2/fwd_efficiency"), "a test");
}

TEST(AttentionKernelsTest, ProfileWithoutNamesHasNoKernels) {
  auto hw = ResolveHardwareProfile(TestData("user_minimal.json"));
  ASSERT_THAT(hw, IsOk());
  EXPECT_TRUE(hw->gpu.attention_kernels.empty());
  EXPECT_TRUE(hw->gpu.attention_kernel_pytorch.empty());
}

// GB200 is the B200 silicon on a 1200 W board (B200: 1000 W): its sustained clock under dense
// compute is the B200's measured 1580 MHz scaled by f ~ P^(1/3) (dynamic power f V^2, V ~ f),
// 1580 x 1.2^(1/3) = 1678.9 MHz, and it keeps the B200's measured main-loop fractions, so a
// sustained GEMM runs 1679 / 1580 = 1.063x the B200's and a bf16 one at 0.775 x 148 x 8192 x
// 1679 MHz = 1577.6 TFLOP/s.
TEST(ShippedFiguresTest, Gb200IsTheB200SiliconAtItsBoardPower) {
  auto b200 = ResolveHardwareProfile("b200");
  auto gb200 = ResolveHardwareProfile("gb200");
  ASSERT_THAT(b200, IsOk());
  ASSERT_THAT(gb200, IsOk());
  EXPECT_NEAR(ToMegahertz(gb200->gpu.sustained_clock),
              ToMegahertz(b200->gpu.sustained_clock) * std::cbrt(1200.0 / 1000.0), 0.5);
  EXPECT_DOUBLE_EQ(gb200->gpu.gemm_efficiency, b200->gpu.gemm_efficiency);
  EXPECT_EQ(gb200->gpu.gemm_efficiency_fp8, b200->gpu.gemm_efficiency_fp8);
  EXPECT_DOUBLE_EQ(gb200->gpu.attention_fwd_efficiency, b200->gpu.attention_fwd_efficiency);
  EXPECT_DOUBLE_EQ(gb200->gpu.attention_bwd_efficiency, b200->gpu.attention_bwd_efficiency);
  const double sustained_bf16_tflops = gb200->gpu.gemm_efficiency * 148 * 8192 *
                                       ToMegahertz(gb200->gpu.sustained_clock) * 1e6 / 1e12;
  EXPECT_NEAR(sustained_bf16_tflops, 1577.6, 1.0);
}

TEST(ShippedFiguresTest, NetworkFiguresMatchTheReferences) {
  auto mi300x = ResolveHardwareProfile("mi300x");
  auto h100 = ResolveHardwareProfile("h100-sxm");
  auto h800 = ResolveHardwareProfile("h800-sxm");
  auto gb200 = ResolveHardwareProfile("gb200");
  auto a100 = ResolveHardwareProfile("a100-sxm-80gb");
  ASSERT_THAT(mi300x, IsOk());
  ASSERT_THAT(h100, IsOk());
  ASSERT_THAT(h800, IsOk());
  ASSERT_THAT(gb200, IsOk());
  ASSERT_THAT(a100, IsOk());
  // 7 xGMI links x 64 GB/s uni; busbw 312.9 GB/s measured.
  EXPECT_NEAR(ToGigabytesPerSecond(mi300x->scale_up.per_gpu_bandwidth), 448, 1e-9);
  EXPECT_THAT(mi300x->scale_up.allreduce_efficiency, IsNearRel(312.9 / 448, 0.01));
  EXPECT_NEAR(ToMicroseconds(mi300x->scale_up.alltoall_per_peer_overhead), 28, 1e-9);
  EXPECT_NEAR(ToGigabytesPerSecond(h100->scale_up.per_gpu_bandwidth), 450, 1e-9);
  EXPECT_TRUE(h100->scale_up.supports_in_network_reduction);
  // H800: 8 NVLink links, 400 GB/s bidirectional.
  EXPECT_EQ(h800->scale_up.links_per_gpu, 8);
  EXPECT_NEAR(ToGigabytesPerSecond(h800->scale_up.per_gpu_bandwidth), 200, 1e-9);
  // 400 Gb/s = 50 GB/s per NIC; A100 HDR 200 Gb/s = 25 GB/s.
  EXPECT_NEAR(ToGigabytesPerSecond(h100->scale_out.per_nic_bandwidth), 50, 1e-9);
  EXPECT_NEAR(ToGigabytesPerSecond(a100->scale_out.per_nic_bandwidth), 25, 1e-9);
  // DeepEP's normal kernels on a ConnectX-7 400G: 43.7 of 50 GB/s on the wire (the README's
  // EP32/EP64 rows, hardware_profile.h); a profile without the figure (A100, no DeepEP
  // measurement) prices them as NCCL: its scale_out.efficiency.
  EXPECT_DOUBLE_EQ(h100->scale_out.DeepEpEfficiency(), 0.87);
  EXPECT_DOUBLE_EQ(h800->scale_out.DeepEpEfficiency(), 0.87);
  EXPECT_FALSE(a100->scale_out.deepep_efficiency.has_value());
  EXPECT_DOUBLE_EQ(a100->scale_out.DeepEpEfficiency(), a100->scale_out.efficiency);
  // NCCL's point-to-point traffic (All-to-All, send/recv) on a ConnectX-7 NDR NIC: 47 of 50 GB/s
  // (nccl-tests #267/#290), above the ring collectives' scale_out.efficiency; without a figure
  // of its own (A100) the profile's one.
  EXPECT_DOUBLE_EQ(h100->scale_out.PointToPointEfficiency(), 0.94);
  EXPECT_DOUBLE_EQ(h800->scale_out.PointToPointEfficiency(), 0.94);
  EXPECT_GT(h100->scale_out.PointToPointEfficiency(), h100->scale_out.efficiency);
  EXPECT_FALSE(a100->scale_out.p2p_efficiency.has_value());
  EXPECT_DOUBLE_EQ(a100->scale_out.PointToPointEfficiency(), a100->scale_out.efficiency);
  // Their low-latency kernels: 37.4 of 50 GB/s (the README's EP128/EP256 rows); without a
  // figure of their own they take the normal kernels' one.
  EXPECT_DOUBLE_EQ(h800->scale_out.DeepEpLowLatencyEfficiency(), 0.75);
  EXPECT_DOUBLE_EQ(a100->scale_out.DeepEpLowLatencyEfficiency(), a100->scale_out.efficiency);
  ScaleOutNetwork normal_only = h800->scale_out;
  normal_only.deepep_low_latency_efficiency.reset();
  EXPECT_DOUBLE_EQ(normal_only.DeepEpLowLatencyEfficiency(), 0.87);
  // GB200 NVL72: the node is the 72-GPU NVLink domain.
  EXPECT_EQ(gb200->gpus_per_node, 72);
  // Cache sizes are binary: 4 MiB per XCD x 8.
  EXPECT_EQ(mi300x->gpu.l2_cache, Mebibytes(32));
  // HBM capacity is the usable GiB the driver reports (rocm-smi 205822885888 B), not 192e9 B.
  EXPECT_NEAR(mi300x->gpu.hbm_capacity / Gibibytes(1), 191.69, 1e-9);
  EXPECT_NEAR(a100->gpu.hbm_capacity.value(), 80.0 * 1024 * 1024 * 1024, 1);
}

// ---------------------------------------------------------------------------------------------
// User-written profiles and bad input: one test per rule, each naming code, file and pointer.

TEST(LoadHardwareProfileTest, UserProfileWithBareNumbersLoads) {
  auto hw = LoadHardwareProfileFile(TestData("user_minimal.json"));
  ASSERT_THAT(hw, IsOk());
  EXPECT_THAT(ValidateHardwareProfile(*hw, hw->source_file), IsOk());
  EXPECT_EQ(hw->name, "user_minimal");  // from the file stem
  EXPECT_TRUE(hw->figure_sources.empty());
  EXPECT_EQ(hw->gpu.compute_units, 304);
  EXPECT_NEAR(ToMegahertz(hw->gpu.sustained_clock), 1500, 1e-9);
  EXPECT_EQ(hw->gpu.lds_per_cu, Kibibytes(64));
  EXPECT_EQ(hw->scale_up.topology, FabricTopology::kFullMesh);
  // Absent optional figures keep the struct defaults; absent dtypes are unsupported.
  EXPECT_DOUBLE_EQ(hw->gpu.attention_fwd_efficiency, GpuSpec{}.attention_fwd_efficiency);
  EXPECT_EQ(hw->gpu.matrix_flops_per_clock_per_cu[DTypeIndex(DType::kFp4)], 0);
  EXPECT_FALSE(hw->scale_up.supports_in_network_reduction);
  // No comm_interference section: collectives take nothing from the compute beside them.
  EXPECT_EQ(hw->comm_interference.scale_up_ctas, 0);
  EXPECT_EQ(hw->comm_interference.scale_out_ctas, 0);
  EXPECT_EQ(hw->comm_interference.ep_dispatch_ctas, 0);
}

TEST(LoadHardwareProfileTest, CommInterferenceTakesBareOrSourcedCountsAndZero) {
  auto hw = ResolveHardwareProfile(TestData("user_comm_interference.json"));
  ASSERT_THAT(hw, IsOk());
  EXPECT_EQ(hw->comm_interference.scale_up_ctas, 32);
  EXPECT_EQ(hw->comm_interference.scale_out_ctas, 16);
  EXPECT_EQ(hw->comm_interference.ep_dispatch_ctas, 0);  // 0 = none, allowed
  EXPECT_EQ(hw->figure_sources.at("/comm_interference/scale_out_ctas"), "a test");
}

TEST(LoadHardwareProfileTest, UserProfileResolvesByPath) {
  EXPECT_THAT(ResolveHardwareProfile(TestData("user_minimal.json")), IsOk());
}

struct BadInput {
  const char* file;
  absl::StatusCode code;
  const char* pointer;  // or another substring the message must contain
  const char* problem;
};

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, NamesCodeFileAndField) {
  const BadInput& bad = GetParam();
  // Resolve = load + validate, so both per-field and cross-field rules surface here.
  auto hw = ResolveHardwareProfile(TestData(bad.file));
  EXPECT_THAT(hw, StatusIs(bad.code, AllOf(HasSubstr(bad.file), HasSubstr(bad.pointer),
                                           HasSubstr(bad.problem))));
}

INSTANTIATE_TEST_SUITE_P(
    Rules, BadInputTest,
    ::testing::Values(
        BadInput{
            "bad_unknown_key.json", absl::StatusCode::kInvalidArgument, "/gpu/hbm_bandwith_tbs",
            "unknown key 'hbm_bandwith_tbs' (did you mean 'hbm_bandwidth_tbs'?); accepted keys:"},
        BadInput{"bad_unknown_top_key.json", absl::StatusCode::kInvalidArgument, "/scale_upp",
                 "unknown key"},
        BadInput{"bad_unknown_figure_key.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/compute_units/sorce", "unknown key"},
        BadInput{"bad_type.json", absl::StatusCode::kInvalidArgument, "/gpu/compute_units",
                 "expected a number or {\"value\""},
        BadInput{"bad_non_integer_count.json", absl::StatusCode::kInvalidArgument,
                 "/scale_up/links_per_gpu", "expected an integer"},
        BadInput{"bad_non_positive.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/hbm_capacity_gb/value",
                 "must be in [0.001, 1e7] (a positive figure of a real part), got -1"},
        BadInput{"bad_hbm_capacity_both.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/hbm_capacity_gb", "give the HBM capacity once"},
        BadInput{"bad_hbm_capacity_missing.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/hbm_capacity_gib", "required field is missing"},
        BadInput{"bad_zero_count.json", absl::StatusCode::kInvalidArgument, "/node/gpus_per_node",
                 "must be in [1, 1e7], got 0"},
        BadInput{"bad_fraction.json", absl::StatusCode::kInvalidArgument,
                 "/scale_up/allreduce_efficiency", "must be a fraction in [0.001, 1], got 1.2"},
        BadInput{"bad_gemm_efficiency_fp8.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/gemm_efficiency_fp8/value", "must be a fraction in [0.001, 1], got 1.3"},
        BadInput{"bad_gemm_efficiency_fp8_zero.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/gemm_efficiency_fp8", "must be a fraction in [0.001, 1], got 0"},
        BadInput{"bad_p2p_efficiency.json", absl::StatusCode::kInvalidArgument,
                 "/scale_out/p2p_efficiency/value", "must be a fraction in [0.001, 1], got 1.5"},
        BadInput{"bad_scatter_add_rate_zero.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/scatter_add_gelems_per_s", "must be in [0.001, 1e7]"},
        BadInput{"bad_missing_field.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/hbm_bandwidth_tbs", "required field is missing"},
        BadInput{"bad_topology.json", absl::StatusCode::kInvalidArgument, "/scale_up/topology",
                 "unknown value 'torus'; accepted: switch, full_mesh"},
        BadInput{"bad_sustained_clock.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/sustained_clock_mhz", "must be <= the peak clock"},
        BadInput{"bad_no_bf16.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/matrix_flops_per_clock_per_cu/bf16", "must be > 0"},
        BadInput{"bad_per_link_bandwidth.json", absl::StatusCode::kInvalidArgument,
                 "/scale_up/per_link_bandwidth_gbs", "exceeds per_gpu_bandwidth_gbs"},
        BadInput{"bad_per_gpu_bandwidth.json", absl::StatusCode::kInvalidArgument,
                 "/scale_up/per_gpu_bandwidth_gbs", "exceeds links_per_gpu x"},
        BadInput{"bad_full_mesh_links.json", absl::StatusCode::kInvalidArgument,
                 "/scale_up/links_per_gpu", "links_per_gpu >= gpus_per_node - 1"},
        BadInput{"bad_xcd_split.json", absl::StatusCode::kInvalidArgument, "/gpu/num_xcds",
                 "not divisible by num_xcds 7"},
        BadInput{"bad_nvls_without_support.json", absl::StatusCode::kInvalidArgument,
                 "/scale_up/in_network_allreduce_busbw_gbs", "supports_in_network_reduction"},
        BadInput{"bad_comm_interference_negative.json", absl::StatusCode::kInvalidArgument,
                 "/comm_interference/scale_up_ctas", "must be in [0, 1e7], got -4"},
        BadInput{"bad_comm_interference_fractional.json", absl::StatusCode::kInvalidArgument,
                 "/comm_interference/scale_out_ctas", "expected an integer, got 2.5"},
        BadInput{"bad_comm_interference_too_many.json", absl::StatusCode::kInvalidArgument,
                 "/comm_interference/scale_up_ctas", "304 CTAs is not below compute_units 304"},
        BadInput{"bad_comm_interference_unknown_key.json", absl::StatusCode::kInvalidArgument,
                 "/comm_interference/scale_up_cta", "unknown key"},
        BadInput{"bad_comm_interference_type.json", absl::StatusCode::kInvalidArgument,
                 "/comm_interference/ep_dispatch_ctas", "expected a number or {\"value\""},
        BadInput{"bad_attention_kernel_unknown_key.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/attention_kernels/fa2/causal", "unknown key 'causal'"},
        BadInput{"bad_attention_kernel_fraction.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/attention_kernels/fa2/fwd_efficiency",
                 "must be a fraction in [0.001, 1], got 1.2"},
        BadInput{"bad_attention_kernel_missing_figure.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/attention_kernels/fa2/bwd_efficiency", "required field is missing"},
        BadInput{"bad_attention_kernels_without_default.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/attention_kernels", "needs attention_kernel_default"},
        BadInput{"bad_attention_kernel_repeats_default.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/attention_kernels/fa3", "is the default kernel"},
        BadInput{"bad_attention_kernel_pytorch_unknown.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/attention_kernel_pytorch",
                 "'fa9' is neither attention_kernel_default nor an entry of attention_kernels; "
                 "accepted: fa3, fa2"},
        BadInput{"bad_attention_kernel_pytorch_bias_unknown.json",
                 absl::StatusCode::kInvalidArgument, "/gpu/attention_kernel_pytorch_bias",
                 "'fa9' is neither attention_kernel_default nor an entry of attention_kernels; "
                 "accepted: fa3, fa2"},
        BadInput{"bad_attention_kernel_reserved_name.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/attention_kernel_default", "'flash' is reserved"},
        BadInput{"bad_attention_kernel_name.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/attention_kernels/FA 2", "'FA 2' is not a kernel name"},
        BadInput{"bad_attention_kernel_default_type.json", absl::StatusCode::kInvalidArgument,
                 "/gpu/attention_kernel_default/value", "expected a string"},
        BadInput{"bad_syntax.json", absl::StatusCode::kInvalidArgument, "invalid JSON near line 5",
                 "parse error"},
        BadInput{"does_not_exist.json", absl::StatusCode::kNotFound, "hw_profiles/does_not_exist",
                 "cannot open file"}),
    [](const ::testing::TestParamInfo<BadInput>& param_info) {
      std::string name = param_info.param.file;
      name = name.substr(0, name.find('.'));
      return name;
    });

TEST(ValidateHardwareProfileTest, ChecksProfilesBuiltInCode) {
  auto hw = LoadHardwareProfileFile(TestData("user_minimal.json"));
  ASSERT_THAT(hw, IsOk());
  hw->gpu.hbm_efficiency = 0;
  EXPECT_THAT(ValidateHardwareProfile(*hw, "in-code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("in-code: /gpu/hbm_efficiency"),
                             HasSubstr("must be a fraction in [0.001, 1], got 0"))));
  hw->gpu.hbm_efficiency = 0.8;
  // The optional fractions, each out of range alone.
  struct OptionalFraction {
    const char* pointer;
    std::optional<double>& (*field)(HardwareProfile&);
    double bad;
    const char* got;
  };
  const OptionalFraction optional_fractions[] = {
      {"/gpu/gemm_efficiency_fp8",
       [](HardwareProfile& h) -> std::optional<double>& { return h.gpu.gemm_efficiency_fp8; }, 1.5,
       "got 1.5"},
      {"/scale_out/p2p_efficiency",
       [](HardwareProfile& h) -> std::optional<double>& { return h.scale_out.p2p_efficiency; },
       -0.5, "got -0.5"},
      {"/scale_out/deepep_efficiency",
       [](HardwareProfile& h) -> std::optional<double>& { return h.scale_out.deepep_efficiency; },
       0, "got 0"},
      {"/scale_out/deepep_low_latency_efficiency",
       [](HardwareProfile& h) -> std::optional<double>& {
         return h.scale_out.deepep_low_latency_efficiency;
       },
       2, "got 2"},
  };
  for (const OptionalFraction& f : optional_fractions) {
    f.field(*hw) = f.bad;
    EXPECT_THAT(
        ValidateHardwareProfile(*hw, "in-code"),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 AllOf(HasSubstr(absl::StrCat("in-code: ", f.pointer)),
                       HasSubstr(absl::StrCat("must be a fraction in [0.001, 1], ", f.got)))));
    f.field(*hw).reset();
  }
  hw->gpu.hbm_capacity = Gibibytes(-2);
  EXPECT_THAT(ValidateHardwareProfile(*hw, "in-code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/gpu/hbm_capacity_gib"), HasSubstr("got -2"))));
  hw->gpu.hbm_capacity = Gigabytes(192);
  hw->comm_interference.ep_dispatch_ctas = -1;
  EXPECT_THAT(ValidateHardwareProfile(*hw, "in-code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("in-code: /comm_interference/ep_dispatch_ctas"),
                             HasSubstr("must be 0 (none) or in [0.001, 1e7], got -1"))));
  hw->comm_interference.ep_dispatch_ctas = 400;
  EXPECT_THAT(ValidateHardwareProfile(*hw, "in-code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/comm_interference/ep_dispatch_ctas"),
                             HasSubstr("not below compute_units 304"))));
}

TEST(ValidateHardwareProfileTest, ChecksAttentionKernelsBuiltInCode) {
  auto hw = LoadHardwareProfileFile(LibraryFile("h100-sxm"));
  ASSERT_THAT(hw, IsOk());
  GpuSpec& g = hw->gpu;
  ASSERT_EQ(g.attention_kernels.size(), 3u);
  ASSERT_EQ(g.attention_kernels[2].name, "fa2");
  g.attention_kernels[2].bwd_efficiency = 0;
  EXPECT_THAT(ValidateHardwareProfile(*hw, "in-code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("in-code: /gpu/attention_kernels/fa2/bwd_efficiency"),
                             HasSubstr("must be a fraction in [0.001, 1], got 0"))));
  g.attention_kernels[2].bwd_efficiency = 0.325;
  g.attention_kernels[2].name = "fa3";
  EXPECT_THAT(
      ValidateHardwareProfile(*hw, "in-code"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("/gpu/attention_kernels/fa3"), HasSubstr("'fa3' is named twice"))));
  g.attention_kernels[2].name = "fa2";
  g.attention_kernels[0].name = "auto";
  EXPECT_THAT(ValidateHardwareProfile(*hw, "in-code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/gpu/attention_kernel_default"),
                             HasSubstr("'auto' is reserved"))));
  g.attention_kernels[0].name = "fa3";
  g.attention_kernel_pytorch = "fa9";
  EXPECT_THAT(ValidateHardwareProfile(*hw, "in-code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/gpu/attention_kernel_pytorch"),
                             HasSubstr("accepted: fa3, fa1, fa2"))));
  g.attention_kernel_pytorch = "fa2";
  g.attention_kernel_pytorch_bias = "fa7";
  EXPECT_THAT(ValidateHardwareProfile(*hw, "in-code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/gpu/attention_kernel_pytorch_bias"),
                             HasSubstr("'fa7' is neither attention_kernel_default"))));
  g.attention_kernel_pytorch_bias.clear();
  g.attention_kernel_pytorch = "fa9";
  g.attention_kernels.clear();
  EXPECT_THAT(ValidateHardwareProfile(*hw, "in-code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("accepted: none (no kernel is named)")));
  g.attention_kernel_pytorch.clear();
  EXPECT_THAT(ValidateHardwareProfile(*hw, "in-code"), IsOk());
}

TEST(ResolveHardwareProfileTest, UnknownNameListsValidOnes) {
  EXPECT_THAT(ResolveHardwareProfile("mi999x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("unknown GPU 'mi999x'; valid: a100-sxm-40gb, a100-sxm-80gb, "
                                       "a6000, b200, gb200, h100-sxm, h200-sxm, h800-sxm, mi300x, "
                                       "mi325x, mi355x, v100-sxm2-16gb, v100-sxm2-32gb"))));
}

// Every alias names a profile of the library, and resolves to it whatever its case.
TEST(ResolveHardwareProfileTest, AliasesNameLibraryProfiles) {
  for (const GpuAlias& a : kGpuAliases) {
    auto hw = ResolveHardwareProfile(absl::AsciiStrToUpper(std::string(a.alias)));
    ASSERT_THAT(hw, IsOk()) << a.alias;
    EXPECT_EQ(hw->name, a.profile) << a.alias;
  }
  EXPECT_EQ(GpuAliasTarget("h100"), "h100-sxm");
  EXPECT_EQ(GpuAliasTarget("h100-sxm"), "");
}

TEST(ResolveHardwareProfileTest, NearMissSuggestsTheProfile) {
  EXPECT_THAT(ResolveHardwareProfile("h100-sx"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown GPU 'h100-sx' (did you mean 'h100-sxm'?); valid: ")));
}

TEST(ResolveHardwareProfileTest, NamesAreCaseInsensitive) {
  auto hw = ResolveHardwareProfile("MI300X");
  ASSERT_THAT(hw, IsOk());
  EXPECT_EQ(hw->name, "mi300x");
}

TEST(ResolveHardwareProfileTest, PathLikeValuesAreNotLibraryNames) {
  // Ends in .json: a path, so a missing file is kNotFound, not "unknown GPU".
  EXPECT_THAT(ResolveHardwareProfile("mi300x.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("mi300x.json: cannot open file")));
  EXPECT_THAT(ResolveHardwareProfile(LibraryFile("mi300x")), IsOk());
}

TEST(ResolveHardwareProfileTest, EnvironmentOverridesTheLibraryDir) {
  setenv("PROJECTOR_HW_PROFILES_DIR", TestData("library").c_str(), 1);
  EXPECT_EQ(HardwareLibraryDir(), TestData("library"));
  EXPECT_THAT(ListLibraryGpus(), ElementsAre("tiny-gpu"));
  EXPECT_THAT(ResolveHardwareProfile("tiny-gpu"), IsOk());
  EXPECT_THAT(ResolveHardwareProfile("mi300x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("unknown GPU 'mi300x'; valid: tiny-gpu"),
                             Not(HasSubstr("mi325x")))));
  unsetenv("PROJECTOR_HW_PROFILES_DIR");
  EXPECT_EQ(HardwareLibraryDir(), kLibraryDir);
}

}  // namespace
}  // namespace projector
