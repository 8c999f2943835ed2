#include "server/http_message.h"

#include <gtest/gtest.h>

namespace cairn::server {
namespace {

TEST(HttpMessageTest, PercentDecodingKeepsWhatIsNotAnEscape) {
  EXPECT_EQ(PercentDecode("/a%20b/%2Fc", false), "/a b//c");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("a+b", true), "a b");
  EXPECT_EQ(PercentDecode("100%", false), "100%");
  EXPECT_EQ(PercentDecode("%zz%4", false), "%zz%4");
  EXPECT_EQ(PercentDecode("%00x", false), std::string("\0x", 2));
  EXPECT_EQ(PercentDecode("%c3%A9", false), "\xc3\xa9");
}

TEST(HttpMessageTest, QueryStringsKeepRepeatsAndSkipEmptyFields) {
  QueryParams q;
  ParseQuery("run_ids=a&run_ids=b&&flag&x=1%2B1+2&=v", &q);
  EXPECT_EQ(q.count("run_ids"), 2u);
  EXPECT_EQ(q.find("flag")->second, "");
  EXPECT_EQ(q.find("x")->second, "1+1 2");
  EXPECT_EQ(q.find("")->second, "v");
  EXPECT_EQ(q.size(), 5u);
}

TEST(HttpMessageTest, HeaderNamesCompareWithoutCase) {
  HttpHeaders h;
  h.Add("Content-Type", "application/json");
  h.Add("content-type", "text/plain");
  EXPECT_EQ(h.Get("CONTENT-TYPE"), "application/json");
  EXPECT_EQ(h.Find("Origin"), nullptr);
  EXPECT_EQ(h.size(), 2u);
}

}  // namespace
}  // namespace cairn::server
