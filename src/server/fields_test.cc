#include "server/fields.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cairn::server {
namespace {

TEST(FieldsTest, DeeplyNestedBodyIsRejectedBeforeParsing) {
  std::string deep = "{\"experiment_id\": " + std::string(200000, '[') + std::string(200000, ']') +
                     "}";
  auto parsed = ParseJsonObject(deep);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  // Brackets inside strings do not count.
  EXPECT_TRUE(ParseJsonObject("{\"a\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}").ok());
}

TEST(FieldsTest, WrongTypesNameTheFieldWithoutEchoingContainers) {
  auto json = ParseJsonObject(R"({"experiment_id": [[1, 2]], "step": "abc", "run_id": 5})");
  ASSERT_TRUE(json.ok());
  Fields f(&*json, "");
  auto id = f.Str("experiment_id");
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("'experiment_id'"), std::string::npos);
  EXPECT_NE(id.status().message().find("of type array"), std::string::npos);
  auto step = f.Int("step");
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.status().message().find("'step'"), std::string::npos);
  EXPECT_FALSE(f.RunId().ok());
}

TEST(FieldsTest, NumbersFollowProtobufJson) {
  auto json = ParseJsonObject(
      R"({"a": "123", "b": 7, "c": "NaN", "d": "-Infinity", "e": 1.5, "f": 2.0, "g": 2.5})");
  Fields f(&*json, "");
  EXPECT_EQ(**f.Int("a"), 123);
  EXPECT_EQ(**f.Int("b"), 7);
  EXPECT_EQ(**f.Int("f"), 2);
  EXPECT_FALSE(f.Int("g").ok());
  EXPECT_TRUE(std::isnan(*f.RequiredDouble("c")));
  EXPECT_TRUE(std::isinf(*f.RequiredDouble("d")));
  EXPECT_EQ(*f.RequiredDouble("e"), 1.5);
  EXPECT_FALSE(f.RequiredDouble("missing").ok());
}

TEST(FieldsTest, QueryStringRepeatedKeysAndRunIdAliases) {
  QueryParams q = {{"run_ids", "a"}, {"run_ids", "b"}, {"run_uuid", "r1"}, {"max_results", "x"}};
  Fields f(&q);
  EXPECT_EQ(f.StrList("run_ids")->size(), 2u);
  EXPECT_EQ(*f.RunId(), "r1");
  EXPECT_FALSE(f.Int("max_results").ok());
}

}  // namespace
}  // namespace cairn::server
