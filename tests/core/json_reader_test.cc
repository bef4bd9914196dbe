#include "core/json_reader.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

nlohmann::json Parse(const char* text) { return *ParseJsonText(text, "t.json"); }

TEST(JsonObjectTest, ReadsTypedFields) {
  auto j = Parse(R"({"a": 3, "b": 2.5, "c": true, "d": "x"})");
  auto obj = JsonObject::Make(j, "t.json", "");
  ASSERT_THAT(obj, IsOk());
  EXPECT_EQ(*obj->Int("a"), 3);
  EXPECT_DOUBLE_EQ(*obj->Number("b"), 2.5);
  EXPECT_TRUE(*obj->Bool("c"));
  EXPECT_EQ(*obj->String("d"), "x");
  EXPECT_THAT(obj->CheckNoUnknownKeys(), IsOk());
}

TEST(JsonObjectTest, IntegerBeyondInt64IsNamedNotWrapped) {
  auto j = Parse(R"({"a": 18446744073709551615, "b": 9223372036854775807})");
  auto obj = JsonObject::Make(j, "t.json", "");
  ASSERT_THAT(obj, IsOk());
  EXPECT_THAT(obj->Int("a"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("t.json: /a"),
                             HasSubstr("integer 18446744073709551615 is beyond int64"))));
  EXPECT_EQ(*obj->Int("b"), 9223372036854775807);
}

TEST(JsonObjectTest, WrongTypeNamesFileAndPointer) {
  auto j = Parse(R"({"outer": {"n": "eight"}})");
  auto obj = JsonObject::Make(j, "t.json", "");
  auto inner = obj->Object("outer");
  ASSERT_THAT(inner, IsOk());
  EXPECT_THAT(inner->Int("n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("t.json"), HasSubstr("/outer/n"), HasSubstr("integer"))));
}

TEST(JsonObjectTest, UnknownKeyListsAccepted) {
  auto j = Parse(R"({"layers": 3, "hiden": 4})");
  auto obj = JsonObject::Make(j, "t.json", "");
  ASSERT_THAT(obj->Int("layers"), IsOk());
  obj->Accept("hidden");
  EXPECT_THAT(obj->CheckNoUnknownKeys(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/hiden"), HasSubstr("unknown key"),
                             HasSubstr("accepted keys: hidden, layers"))));
}

TEST(JsonObjectTest, MissingRequiredField) {
  auto j = Parse(R"({})");
  auto obj = JsonObject::Make(j, "t.json", "");
  EXPECT_THAT(obj->Int("layers"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           AllOf(HasSubstr("/layers"), HasSubstr("missing"))));
}

TEST(JsonObjectTest, NonPositiveRejected) {
  auto j = Parse(R"({"n": 0, "x": -1.5})");
  auto obj = JsonObject::Make(j, "t.json", "");
  EXPECT_THAT(obj->PositiveInt("n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be > 0, got 0")));
  EXPECT_THAT(obj->PositiveNumber("x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be > 0")));
}

TEST(JsonObjectTest, EnumListsAcceptedValues) {
  auto j = Parse(R"({"mlp": "relu"})");
  auto obj = JsonObject::Make(j, "t.json", "");
  EXPECT_THAT(obj->Enum("mlp", {"swiglu", "gelu"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("accepted: swiglu, gelu")));
}

TEST(JsonObjectTest, NotAnObject) {
  auto j = Parse(R"([1, 2])");
  EXPECT_THAT(JsonObject::Make(j, "t.json", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected an object")));
}

TEST(ReadJsonFileTest, MissingFileIsNotFound) {
  EXPECT_THAT(ReadJsonFile("/nonexistent/x.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/x.json")));
}

TEST(ParseJsonTextTest, SyntaxErrorNamesOrigin) {
  EXPECT_THAT(ParseJsonText("{\"a\": }", "cases.jsonl:3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cases.jsonl:3")));
}

TEST(ParseJsonTextTest, NumberBeyondADoubleIsAnErrorNotAnException) {
  EXPECT_THAT(ParseJsonText("{\"num_layers\": 1e999}", "m.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("m.json: invalid JSON"), HasSubstr("1e999"),
                             HasSubstr("numbers must fit a double"))));
  EXPECT_THAT(ParseJsonText("[-1e400]", "m.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1e400")));
  EXPECT_THAT(ParseJsonText("{\"x\": 1.7e308}", "m.json"), IsOk());
}

TEST(ParseJsonTextTest, KeyGivenTwiceInOneObjectIsAnError) {
  EXPECT_THAT(ParseJsonText("{\"parallel\": {\"tp\": 2, \"tp\": 4}}", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("s.json"), HasSubstr("key 'tp' appears twice"))));
  // The same key in two different objects, or in sibling objects of an array, is fine.
  EXPECT_THAT(ParseJsonText("{\"a\": {\"tp\": 1}, \"b\": {\"tp\": 2}, \"tp\": 3}", "s.json"),
              IsOk());
  EXPECT_THAT(ParseJsonText("[{\"id\": 1}, {\"id\": 2}]", "s.json"), IsOk());
  // Nested objects do not hide a duplicate of the outer one.
  EXPECT_THAT(ParseJsonText("{\"a\": 1, \"b\": {\"c\": 2}, \"a\": 3}", "s.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("key 'a' appears twice")));
}

TEST(ReadJsonFileTest, DirectoryIsNamedAsSuch) {
  EXPECT_THAT(ReadJsonFile("/tmp"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/tmp: is a directory")));
}

}  // namespace
}  // namespace projector
