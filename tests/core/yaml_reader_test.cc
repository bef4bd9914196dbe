#include "core/yaml_reader.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

// Plain scalars take the YAML 1.2 core schema's types; quoted ones stay strings.
TEST(YamlReaderTest, ScalarsBecomeJsonTypes) {
  const absl::StatusOr<nlohmann::json> doc = ParseYamlText(
      "count: 8\nrate: 2.5\non: true\noff: false\nnone: ~\nname: ring\nquoted: \"8\"\n"
      "list: [1, two, 3.0]\nnested: {a: {b: 1}}\n",
      "t.yaml");
  ASSERT_THAT(doc, IsOk());
  EXPECT_EQ((*doc)["count"], 8);
  EXPECT_TRUE((*doc)["count"].is_number_integer());
  EXPECT_DOUBLE_EQ((*doc)["rate"].get<double>(), 2.5);
  EXPECT_EQ((*doc)["on"], true);
  EXPECT_EQ((*doc)["off"], false);
  EXPECT_TRUE((*doc)["none"].is_null());
  EXPECT_EQ((*doc)["name"], "ring");
  EXPECT_EQ((*doc)["quoted"], "8");
  EXPECT_EQ((*doc)["list"], nlohmann::json::parse(R"([1, "two", 3.0])"));
  EXPECT_EQ((*doc)["nested"]["a"]["b"], 1);
}

TEST(YamlReaderTest, SyntaxErrorNamesOriginLineAndColumn) {
  EXPECT_THAT(ParseYamlText("a: [1, 2\nb: 3\n", "bad.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad.yaml:")));
}

TEST(YamlReaderTest, RecognisesYamlPaths) {
  EXPECT_TRUE(IsYamlPath("net.yml"));
  EXPECT_TRUE(IsYamlPath("dir/NET.YAML"));
  EXPECT_FALSE(IsYamlPath("net.json"));
}

TEST(YamlReaderTest, MissingFileIsNotFound) {
  EXPECT_THAT(ReadYamlFile("/nonexistent/x.yaml"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/x.yaml")));
}

}  // namespace
}  // namespace projector
