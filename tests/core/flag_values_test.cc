#include "core/flag_values.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/given_flags.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::GivenFlags;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FlagValuesTest, GivenApartFromDefaultsAndLastValueCounts) {
  FlagValues flags = GivenFlags({{"tp", "2"}, {"tp", "8"}});
  flags.SetDefault("top", "10");
  EXPECT_TRUE(flags.Given("tp"));
  EXPECT_EQ(flags.Text("tp"), "8");
  EXPECT_THAT(flags.All("tp"), ElementsAre("2", "8"));
  EXPECT_FALSE(flags.Given("top"));
  EXPECT_TRUE(flags.HasValue("top"));
  EXPECT_EQ(flags.Text("top"), "10");
  EXPECT_EQ(flags.Text("pp"), "");
  EXPECT_TRUE(flags.All("pp").empty());
  EXPECT_THAT(flags.GivenNames(), ElementsAre("tp"));
}

TEST(FlagValuesTest, IntFlagReadsRangesFallbacksAndDefaults) {
  FlagValues flags = GivenFlags({{"tp", " 8"}, {"pp", "0"}, {"vpp", "x"}, {"cp", "5000"}});
  flags.SetDefault("top", "10");
  EXPECT_EQ(*IntFlag(flags, "tp"), 8);
  EXPECT_EQ(*IntFlag(flags, "top"), 10);
  EXPECT_EQ(*IntFlag(flags, "ep", {}, 4), 4);
  EXPECT_EQ(*IntFlag(flags, "pp", {.min = 0}), 0);
  EXPECT_THAT(IntFlag(flags, "ep"), StatusIs(absl::StatusCode::kInvalidArgument, "--ep: required"));
  EXPECT_THAT(IntFlag(flags, "pp"),
              StatusIs(absl::StatusCode::kInvalidArgument, "--pp: must be > 0, got 0"));
  EXPECT_THAT(
      IntFlag(flags, "vpp", {.shown = "v"}),
      StatusIs(absl::StatusCode::kInvalidArgument, "--v: 'x' is not an integer; expected e.g. 8"));
  EXPECT_THAT(IntFlag(flags, "cp", {.max = 4096, .beyond = " (beyond any run)"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--cp: must be <= 4096 (beyond any run), got 5000"));
}

TEST(FlagValuesTest, BoolFlagAcceptsTheUsualSpellingsAndNamesABadOne) {
  FlagValues flags = GivenFlags({{"fsdp", "true"}, {"deepep", "OFF"}, {"sp", "0"}, {"x", "maybe"}});
  flags.SetDefault("causal", "true");
  EXPECT_TRUE(*BoolFlag(flags, "fsdp"));
  EXPECT_FALSE(*BoolFlag(flags, "deepep", true));
  EXPECT_FALSE(*BoolFlag(flags, "sp", true));
  EXPECT_TRUE(*BoolFlag(flags, "causal"));
  EXPECT_TRUE(*BoolFlag(flags, "absent", true));
  EXPECT_THAT(BoolFlag(flags, "x"), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("--x: 'maybe' is not true or false")));
  std::optional<bool> unset;
  EXPECT_THAT(ReadBoolFlag(flags, "absent", unset), IsOk());
  EXPECT_FALSE(unset.has_value());
  EXPECT_THAT(ReadBoolFlag(flags, "fsdp", unset), IsOk());
  EXPECT_EQ(unset, true);
}

TEST(FlagValuesTest, NumbersAreDecimalAndFinite) {
  EXPECT_DOUBLE_EQ(*ParseNumber("2e3", "x"), 2000.0);
  for (const char* bad : {"1.5abc", "0x10", "inf", "nan", ""}) {
    EXPECT_THAT(ParseNumber(bad, "x"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not a number")))
        << bad;
  }
  EXPECT_THAT(*ParsePositiveList("1300, 1700", "clk"), ElementsAre(1300.0, 1700.0));
  EXPECT_THAT(ParsePositiveList("1300,-1", "clk"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'-1' is not a positive")));
}

TEST(FlagValuesTest, ListsAndNamedValues) {
  const FlagValues flags =
      GivenFlags({{"tp-values", "1,2, 8"}, {"pp-values", "1,9"}, {"r", "a,b"}});
  EXPECT_THAT(*IntListFlag(flags, "tp-values", 8), ElementsAre(1, 2, 8));
  EXPECT_THAT(IntListFlag(flags, "pp-values", 8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--pp-values: 9 is beyond any training run (at most 8)"));
  auto upper = [](const std::string& v) -> absl::StatusOr<char> {
    if (v == "a") return 'A';
    return absl::InvalidArgumentError("only a");
  };
  EXPECT_THAT(NameListFlag<char>(flags, "r", upper),
              StatusIs(absl::StatusCode::kInvalidArgument, "--r: only a"));
  EXPECT_EQ(*ParsedFlag<char>(GivenFlags({{"r", "a"}}), "r", upper), 'A');
  EXPECT_FALSE(ParsedFlag<char>(flags, "absent", upper)->has_value());
}

// nccl-tests sizes: KiB/MiB/GiB are powers of two, KB/MB/GB powers of ten.
TEST(FlagValuesTest, ByteSizes) {
  EXPECT_DOUBLE_EQ(*ParseByteSize("1GiB", "bytes"), 1073741824.0);
  EXPECT_DOUBLE_EQ(*ParseByteSize("64MB", "bytes"), 64e6);
  EXPECT_DOUBLE_EQ(*ParseByteSize("4096", "bytes"), 4096.0);
  EXPECT_THAT(ParseByteSize("1XB", "bytes"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                      HasSubstr("--bytes: '1XB' is not a size")));
}

}  // namespace
}  // namespace projector
