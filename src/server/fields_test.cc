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
  Fields f(*json);
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
  Fields f(*json);
  EXPECT_EQ(**f.Int("a"), 123);
  EXPECT_EQ(**f.Int("b"), 7);
  EXPECT_EQ(**f.Int("f"), 2);
  EXPECT_FALSE(f.Int("g").ok());
  EXPECT_TRUE(std::isnan(*f.RequiredDouble("c")));
  EXPECT_TRUE(std::isinf(*f.RequiredDouble("d")));
  EXPECT_EQ(*f.RequiredDouble("e"), 1.5);
  EXPECT_FALSE(f.RequiredDouble("missing").ok());
}

TEST(FieldsTest, NestedFieldsNameTheirPathInErrors) {
  auto json = ParseJsonObject(
      R"({"metrics": [{"key": "a", "value": 1}, {"key": "b"}], "dataset": {"name": 7}})");
  ASSERT_TRUE(json.ok());
  Fields f(*json);
  auto metrics = f.Objects("metrics");
  ASSERT_TRUE(metrics.ok());
  ASSERT_EQ(metrics->size(), 2u);
  EXPECT_EQ(*(*metrics)[0].RequiredDouble("value"), 1.0);
  EXPECT_EQ((*metrics)[1].RequiredDouble("value").status().message(),
            "Missing value for required parameter 'metrics[1].value'.");
  auto dataset = f.Object("dataset");
  ASSERT_TRUE(dataset.ok() && dataset->has_value());
  EXPECT_EQ((*dataset)->Str("name").status().message(),
            "Invalid value 7 for parameter 'dataset.name' supplied: expected a string");
  auto list = ParseJsonObject(R"({"metrics": [{"key": "a"}, 5]})");
  EXPECT_EQ(Fields(*list).Objects("metrics").status().message(),
            "Invalid value for parameter 'metrics[1]': expected an object");
  // Values from a query string are shown as JSON strings.
  QueryParams q = {{"max_results", "ten"}};
  EXPECT_EQ(Fields(&q).Int("max_results").status().message(),
            "Invalid value \"ten\" for parameter 'max_results' supplied: expected an integer");
}

TEST(FieldsTest, BodiesMustBeStrictJsonObjects) {
  EXPECT_TRUE(ParseJsonObject("").ok());
  EXPECT_TRUE(ParseJsonObject(" \n").ok());
  EXPECT_EQ(ParseJsonObject("[1]").status().message(), "The request body must be a JSON object");
  EXPECT_EQ(ParseJsonObject("{\"a\": 1,}").status().message(),
            "Malformed JSON in request body: it could not be parsed");
  EXPECT_EQ(ParseJsonObject("{\"a\": NaN}").status().message(),
            "Malformed JSON in request body: it could not be parsed");
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
