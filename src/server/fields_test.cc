#include "server/fields.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cairn::server {
namespace {

TEST(FieldsTest, DeeplyNestedBodyIsRejectedBeforeParsing) {
  std::string deep =
      "{\"experiment_id\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  auto parsed = ParseJsonObject(deep);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  // Brackets inside strings do not count.
  EXPECT_TRUE(ParseJsonObject("{\"a\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}").ok());
}

TEST(FieldsTest, WrongTypesNameTheFieldAndEchoAShortValue) {
  auto json =
      ParseJsonObject(R"({"experiment_id": [[1, 2]], "step": "abc", "run_id": 5, "big": [")" +
                      std::string(5000, 'x') + "\"]}");
  ASSERT_TRUE(json.ok());
  Fields f(*json);
  auto id = f.Str("experiment_id");
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("Invalid value [[1, 2]] for parameter 'experiment_id'"),
            std::string::npos)
      << id.status().message();
  EXPECT_NE(id.status().message().find("of type 'list'"), std::string::npos);
  auto step = f.Int("step");
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.status().message().find("'step'"), std::string::npos);
  EXPECT_FALSE(f.RunId().ok());
  // A long value is cut, so that an answer does not echo a request back.
  auto big = f.Str("big");
  ASSERT_FALSE(big.ok());
  EXPECT_LT(big.status().message().size(), 400u);
  EXPECT_NE(big.status().message().find("... for parameter 'big'"), std::string::npos);
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
  const std::string docs = " See the API docs for more information about request parameters.";
  EXPECT_EQ((*metrics)[1].RequiredDouble("value").status().message(),
            "Missing value for required parameter 'metrics[1].value'." + docs);
  auto dataset = f.Object("dataset");
  ASSERT_TRUE(dataset.ok() && dataset->has_value());
  EXPECT_EQ((*dataset)->Str("name").status().message(),
            "Invalid value 7 for parameter 'dataset.name' supplied. Hint: Value was of type "
            "'int'." +
                docs);
  // Values are shown as Python shows them, which is how MLflow's messages show them.
  auto tags = ParseJsonObject(R"({"tags": 5, "a": [1, "x", {"k": null}], "b": 0.5, "c": true})");
  ASSERT_TRUE(tags.ok());
  EXPECT_EQ(Fields(*tags).Objects("tags").status().message(),
            "Invalid value 5 for parameter 'tags' supplied. Hint: Value was of type 'int'." + docs);
  EXPECT_EQ(Fields(*tags).Str("a").status().message(),
            "Invalid value [1, 'x', {'k': None}] for parameter 'a' supplied. Hint: Value was of "
            "type 'list'." +
                docs);
  EXPECT_EQ(
      Fields(*tags).Str("b").status().message(),
      "Invalid value 0.5 for parameter 'b' supplied. Hint: Value was of type 'float'." + docs);
  EXPECT_EQ(
      Fields(*tags).Int("c").status().message(),
      "Invalid value True for parameter 'c' supplied. Hint: Value was of type 'bool'." + docs);
  auto list = ParseJsonObject(R"({"metrics": [{"key": "a"}, 5]})");
  EXPECT_EQ(Fields(*list).Objects("metrics").status().message(),
            "Invalid value 5 for parameter 'metrics[1]' supplied. Hint: Value was of type "
            "'int'." +
                docs);
  // Values from a query string are strings, shown bare.
  QueryParams q = {{"step", "foo"}};
  EXPECT_EQ(
      Fields(&q).Int("step").status().message(),
      "Invalid value foo for parameter 'step' supplied. Hint: Value was of type 'str'." + docs);
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
