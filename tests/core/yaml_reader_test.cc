#include "core/yaml_reader.h"

#include <optional>
#include <utility>

#include "core/json_reader.h"

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

// Field errors of a YAML file say where the field sits, as its syntax errors do: each value's
// map key (or list item) by JSON pointer, 1-based; a missing field takes its enclosing object's.
TEST(YamlReaderTest, FieldErrorsNameLineAndColumn) {
  ASSERT_THAT(ParseYamlText("model: m\ntraining:\n  seq_len: -5\n  list: [4, 8]\n"
                            "\"a/b\": 1\n",
                            "pos.yaml"),
              IsOk());
  EXPECT_EQ(YamlPositionOf("pos.yaml", "/training/seq_len"), std::make_pair(3, 3));
  EXPECT_EQ(YamlPositionOf("pos.yaml", "/training/list/1"), std::make_pair(4, 13));
  EXPECT_EQ(YamlPositionOf("pos.yaml", "/a~1b"), std::make_pair(5, 1));
  EXPECT_EQ(YamlPositionOf("pos.yaml", "/training/micro_batch"), std::make_pair(2, 1));
  EXPECT_EQ(YamlPositionOf("pos.yaml", "/nothing"), std::nullopt);
  EXPECT_EQ(YamlPositionOf("other.yaml", "/model"), std::nullopt);
  EXPECT_THAT(JsonFieldError("pos.yaml", "/training/seq_len", "must be > 0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pos.yaml:3:3: /training/seq_len: must be > 0")));
  // A JSON file's messages are as before.
  EXPECT_THAT(JsonFieldError("run.json", "/training/seq_len", "must be > 0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("run.json: /training/seq_len: must be > 0")));
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
