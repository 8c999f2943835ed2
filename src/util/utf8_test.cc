#include "util/utf8.h"

#include <gtest/gtest.h>

namespace cairn {
namespace {

TEST(Utf8DecoderTest, JoinsCharactersSplitBetweenPieces) {
  Utf8Decoder d;
  const std::string text = "a\xc3\xbc b \xe2\x82\xac c \xf0\x9f\x98\x80";  // ü € 😀
  std::string out;
  for (char c : text) out += d.Feed(std::string_view(&c, 1));  // one byte at a time
  out += d.Finish();
  EXPECT_EQ(out, text);
}

TEST(Utf8DecoderTest, ReplacesBytesThatAreNotUtf8) {
  Utf8Decoder d;
  EXPECT_EQ(d.Feed("x\xff y \xc3("), "x\xef\xbf\xbd y \xef\xbf\xbd(");
  EXPECT_EQ(d.Feed("\xe2\x82"), "");  // held back
  EXPECT_EQ(d.Finish(), "\xef\xbf\xbd");  // never completed
  EXPECT_TRUE(IsValidUtf8(d.Feed("\xed\xa0\x80")));  // a surrogate is replaced
}

}  // namespace
}  // namespace cairn
