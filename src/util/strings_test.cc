#include "util/strings.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cairn {
namespace {

TEST(StringsTest, ShortestNumberReadsBackTheSame) {
  EXPECT_EQ(ShortestNumber(0.1), "0.1");
  EXPECT_EQ(ShortestNumber(1.0 / 7), "0.14285714285714285");
  EXPECT_EQ(ShortestNumber(2.0), "2");
  EXPECT_EQ(ShortestNumber(1e-05), "1e-05");
  EXPECT_EQ(ShortestNumber(-0.5), "-0.5");
  EXPECT_EQ(ShortestNumber(std::nan("")), "nan");
  EXPECT_EQ(ShortestNumber(-HUGE_VAL), "-inf");
}

TEST(StringsTest, TrimRemovesAsciiWhitespaceOnly) {
  EXPECT_EQ(Trim(" \t\r\n\f\va b\n"), "a b");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim("   "), "");
  // A no-break space (U+00A0) is not ASCII whitespace.
  EXPECT_EQ(Trim("\xc2\xa0x "), "\xc2\xa0x");
}

TEST(StringsTest, CaseFoldingIsAscii) {
  EXPECT_EQ(AsciiLower("Torch-CUDA_12.X"), "torch-cuda_12.x");
  EXPECT_EQ(AsciiLower("\xc3\x89t\xc3\xa9"), "\xc3\x89t\xc3\xa9");  // É stays as it is
  EXPECT_EQ(AsciiLower('Q'), 'q');
  EXPECT_EQ(AsciiLower('['), '[');
  EXPECT_TRUE(EqualsIgnoreCase("Content-Type", "content-TYPE"));
  EXPECT_FALSE(EqualsIgnoreCase("abc", "abcd"));
  EXPECT_FALSE(EqualsIgnoreCase("abc", "abd"));
  EXPECT_TRUE(StartsWithIgnoreCase("HTTPS://x", "https:"));
  EXPECT_FALSE(StartsWithIgnoreCase("http", "https:"));
}

TEST(StringsTest, SplitKeepsEmptyPieces) {
  EXPECT_EQ(Split("a,,b,", ','), (std::vector<std::string_view>{"a", "", "b", ""}));
  EXPECT_EQ(Split("", ','), (std::vector<std::string_view>{""}));
  EXPECT_EQ(Split("abc", ','), (std::vector<std::string_view>{"abc"}));
}

TEST(StringsTest, PrintableTextBlanksControlCharacters) {
  EXPECT_EQ(PrintableText("a\nb\tc\x1b[31md\xc2\x9b"), "a b c [31md ");
  EXPECT_EQ(PrintableText("caf\xc3\xa9 \xc2\xa0"), "caf\xc3\xa9 \xc2\xa0");  // not controls
}

}  // namespace
}  // namespace cairn
