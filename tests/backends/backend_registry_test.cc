#include "backends/backend_registry.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/compute_hardware.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

TEST(BackendRegistryTest, EveryNameMakesABackendWithThatName) {
  const HardwareProfile hw = testing::compute::Mi300xLike();
  for (const GemmBackendInfo& info : GemmBackends()) {
    absl::StatusOr<std::unique_ptr<GemmBackend>> b = MakeGemmBackend(info.name, hw);
    ASSERT_THAT(b, IsOk()) << info.name;
    EXPECT_EQ((*b)->name(), info.name);
    EXPECT_FALSE(info.description.empty());
  }
  for (const AttentionBackendInfo& info : AttentionBackends()) {
    absl::StatusOr<std::unique_ptr<AttentionBackend>> b = MakeAttentionBackend(info.name, hw);
    ASSERT_THAT(b, IsOk()) << info.name;
    EXPECT_EQ((*b)->name(), info.name);
  }
  for (const MemoryBackendInfo& info : MemoryBackends()) {
    absl::StatusOr<std::unique_ptr<MemoryBackend>> b = MakeMemoryBackend(info.name, hw);
    ASSERT_THAT(b, IsOk()) << info.name;
    EXPECT_EQ((*b)->name(), info.name);
  }
  for (const CollectiveBackendInfo& info : CollectiveBackends()) {
    absl::StatusOr<std::unique_ptr<CollectiveBackend>> b = MakeCollectiveBackend(info.name, hw);
    ASSERT_THAT(b, IsOk()) << info.name;
    EXPECT_EQ((*b)->name(), info.name);
  }
}

TEST(BackendRegistryTest, UnknownNamesListTheValidOnes) {
  const HardwareProfile hw = testing::compute::H100Like();
  EXPECT_THAT(MakeGemmBackend("x", hw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown GEMM backend 'x'; valid: tile, roofline")));
  EXPECT_THAT(MakeAttentionBackend("flash9", hw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown attention backend 'flash9'; valid: tile, roofline")));
  EXPECT_THAT(MakeMemoryBackend("tile", hw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown memory backend 'tile'; valid: roofline")));
  EXPECT_THAT(MakeCollectiveBackend("", hw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown collective backend ''; valid: hierarchical")));
}

TEST(BackendRegistryTest, DefaultSelectionBuildsAllFourFamilies) {
  absl::StatusOr<BackendSet> set = MakeBackendSet(BackendSelection{}, testing::compute::H100Like());
  ASSERT_THAT(set, IsOk());
  EXPECT_EQ(set->gemm->name(), "tile");
  EXPECT_EQ(set->attention->name(), "tile");
  EXPECT_EQ(set->memory->name(), "roofline");
  EXPECT_EQ(set->collective->name(), "hierarchical");
  // The defaults are the first rows of their tables.
  EXPECT_EQ(GemmBackends().front().name, BackendSelection{}.gemm);
  EXPECT_EQ(AttentionBackends().front().name, BackendSelection{}.attention);
}

TEST(BackendRegistryTest, BadSelectionNamesTheFamily) {
  BackendSelection selection;
  selection.attention = "nope";
  EXPECT_THAT(MakeBackendSet(selection, testing::compute::H100Like()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("attention backend 'nope'")));
}

TEST(BackendRegistryTest, DescribeBackendsListsEveryFamilyAndName) {
  const std::string text = DescribeBackends();
  for (const char* family : {"GEMM backends:", "attention backends:", "memory backends:",
                             "collective backends:"}) {
    EXPECT_THAT(text, HasSubstr(family));
  }
  for (const GemmBackendInfo& info : GemmBackends()) EXPECT_THAT(text, HasSubstr(std::string(info.name)));
  for (const CollectiveBackendInfo& info : CollectiveBackends()) {
    EXPECT_THAT(text, HasSubstr(std::string(info.name)));
  }
  EXPECT_THAT(text, HasSubstr("(default)"));
}

}  // namespace
}  // namespace projector
