#include "util/json_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cairn {
namespace {

JsonDocument MustParse(std::string_view text) {
  Result<JsonDocument> doc = JsonDocument::Parse(text, 32);
  EXPECT_TRUE(doc.ok()) << text << ": " << doc.status().ToString();
  return std::move(doc).value();
}

bool Parses(std::string_view text) { return JsonDocument::Parse(text, 32).ok(); }

TEST(JsonReaderTest, AcceptsOnlyRfc8259) {
  for (std::string_view good :
       {"{}", "[]", " \t\r\n{ \"a\" : [ 1 , -2.5e+3 , true , false , null ] } \n", "0", "-0",
        "\"\"", "1E5", "0.5", "[[[]]]", "\"\\u00e9\\ud83d\\ude00\"", "\"caf\xc3\xa9\"",
        "\xef\xbb\xbf{}"}) {
    EXPECT_TRUE(Parses(good)) << good;
  }
  for (std::string_view bad :
       {"", " ", "{", "}", "[1,]", "{\"a\":1,}", "{a:1}", "{'a':1}", "01", "1.", ".5", "+1",
        "-", "1e", "0x10", "NaN", "Infinity", "tru", "nul", "[1 2]", "{\"a\" 1}", "{} {}",
        "\"unterminated", "\"bad \\x escape\"", "\"\\u12\"", "\"\\ud83d\"", "\"\\ude00\"",
        "\"\\ud83d\\u0041\"", "\"tab\tinside\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xc0\xaf\"",
        "1e400", "[1]x", "{}\xef\xbb\xbf"}) {
    EXPECT_FALSE(Parses(bad)) << bad;
  }
}

TEST(JsonReaderTest, NestingIsBounded) {
  JsonDocument::Error error = JsonDocument::Error::kNone;
  EXPECT_TRUE(JsonDocument::Parse("[[[1]]]", 3, &error).ok());
  EXPECT_EQ(error, JsonDocument::Error::kNone);
  EXPECT_FALSE(JsonDocument::Parse("[[[[1]]]]", 3, &error).ok());
  EXPECT_EQ(error, JsonDocument::Error::kTooDeep);
  // Far past the bound, without exhausting the stack.
  std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_FALSE(JsonDocument::Parse(deep, 32, &error).ok());
  EXPECT_EQ(error, JsonDocument::Error::kTooDeep);
  EXPECT_FALSE(JsonDocument::Parse("[1,", 32, &error).ok());
  EXPECT_EQ(error, JsonDocument::Error::kSyntax);
}

TEST(JsonReaderTest, ReadsValues) {
  JsonDocument doc = MustParse(
      R"({"s": "a\"b\\c\/\n\u00e9", "i": -42, "big": 9223372036854775808, "d": 2.5,
          "e": 1e-400, "t": true, "n": null, "arr": [1, "x", {"k": []}], "o": {"k": "v"}})");
  JsonValue root = doc.root();
  ASSERT_TRUE(root.is_object());
  EXPECT_EQ(root.size(), 9u);
  EXPECT_EQ(root.Find("s").str(), "a\"b\\c/\n\xc3\xa9");
  EXPECT_TRUE(root.Find("i").is_int());
  EXPECT_EQ(root.Find("i").int_value(), -42);
  EXPECT_EQ(root.Find("i").number(), -42.0);
  // Past int64: a double, as JavaScript reads it.
  EXPECT_FALSE(root.Find("big").is_int());
  EXPECT_EQ(root.Find("big").number(), 9223372036854775808.0);
  EXPECT_EQ(root.Find("d").number(), 2.5);
  EXPECT_EQ(root.Find("e").number(), 0.0);
  EXPECT_TRUE(root.Find("t").bool_value());
  EXPECT_TRUE(root.Find("n").exists());
  EXPECT_TRUE(root.Find("n").is_null());
  EXPECT_FALSE(root.Find("missing").exists());
  EXPECT_FALSE(root.Find("s").Find("anything").exists());

  JsonValue arr = root.Find("arr");
  ASSERT_EQ(arr.size(), 3u);
  std::vector<std::string> types;
  for (JsonValue e : arr) types.emplace_back(e.TypeName());
  EXPECT_EQ(types, (std::vector<std::string>{"number", "string", "object"}));
  EXPECT_EQ(root.Find("o").Find("k").str(), "v");

  // An object's members walk as their values, in order.
  std::vector<std::string> values;
  for (JsonValue v : root.Find("o")) values.emplace_back(v.str());
  EXPECT_EQ(values, std::vector<std::string>{"v"});
  // Scalars and empty containers have nothing to walk.
  int count = 0;
  for (JsonValue v : root.Find("i")) count += v.exists() ? 1 : 0;
  JsonDocument empty = MustParse("[]");
  for (JsonValue v : empty.root()) count += v.exists() ? 1 : 0;
  EXPECT_EQ(count, 0);
}

TEST(JsonReaderTest, RepeatedNamesReadAsTheLast) {
  JsonDocument doc = MustParse(R"({"a": 1, "b": [1, 2], "a": "second"})");
  EXPECT_EQ(doc.root().Find("a").str(), "second");
  EXPECT_EQ(doc.root().Find("b").size(), 2u);
}

TEST(JsonReaderTest, DumpShowsScalarsAsJson) {
  JsonDocument doc = MustParse(
      R"(["q\"\u0001\t", 5, -0.5, 2.0, 1e22, true, null, [1], {"a": 1}])");
  std::vector<std::string> shown;
  for (JsonValue v : doc.root()) shown.push_back(v.Dump());
  EXPECT_EQ(shown, (std::vector<std::string>{"\"q\\\"\\u0001\\t\"", "5", "-0.5", "2.0", "1e+22",
                                             "true", "null", "array", "object"}));
}

}  // namespace
TEST(JsonReaderTest, SerializeWritesCompactJsonOfAnyValue) {
  auto doc = JsonDocument::Parse(R"({"a": [1, 2.5, "x\"y"], "b": {"c": null, "d": true}})", 8);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->root().Serialize(), R"({"a":[1,2.5,"x\"y"],"b":{"c":null,"d":true}})");
  auto keys = doc->root().begin();
  EXPECT_EQ(keys.key(), "a");
  ++keys;
  EXPECT_EQ(keys.key(), "b");
  EXPECT_EQ((*doc->root().Find("a").begin()).Serialize(), "1");
}

}  // namespace cairn
