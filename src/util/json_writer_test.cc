#include "util/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace cairn {
namespace {

TEST(JsonWriterTest, WritesNestedValuesWithSeparators) {
  JsonWriter w;
  w.BeginObject().Key("a").Int(-5).Key("b").BeginArray().String("x").Bool(true).Null().EndArray();
  w.Key("c").BeginObject().EndObject().EndObject();
  EXPECT_EQ(w.str(), R"({"a":-5,"b":["x",true,null],"c":{}})");
}

TEST(JsonWriterTest, DoublesFollowMlflowWireRules) {
  JsonWriter w;
  w.BeginArray().Double(0.5).Double(2).Double(std::nan("")).Double(INFINITY).Double(-INFINITY);
  w.Double(1e300).EndArray();
  EXPECT_EQ(w.str(), R"([0.5,2.0,"NaN","Infinity","-Infinity",1e+300])");
}

TEST(JsonWriterTest, EscapesStrings) {
  std::string out;
  AppendJsonString(&out, std::string("q\"b\\n\n\x01t\t", 9));
  EXPECT_EQ(out, R"("q\"b\\n\n\u0001t\t")");
}

TEST(JsonWriterTest, InvalidUtf8BecomesReplacementCharacters) {
  std::string out;
  AppendJsonString(&out, "caf\xc3\xa9 \xff\xfe ok \xe2\x82");
  EXPECT_EQ(out, "\"caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd ok \xef\xbf\xbd\xef\xbf\xbd\"");
}

TEST(JsonWriterTest, Int64ExtremesAreNumbers) {
  JsonWriter w;
  w.BeginArray().Int(std::numeric_limits<int64_t>::max()).Int(INT64_MIN).EndArray();
  EXPECT_EQ(w.str(), "[9223372036854775807,-9223372036854775808]");
}

}  // namespace
}  // namespace cairn
