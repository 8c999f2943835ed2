#include "util/hash.h"

#include <gtest/gtest.h>

namespace cairn {
namespace {

TEST(HashTest, Sha256OfKnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256Hasher h;
  h.Update("a");
  h.Update("bc");
  EXPECT_EQ(h.HexDigest(), Sha256Hex("abc"));
}

TEST(HashTest, Base64RoundTripsAndRejectsGarbage) {
  std::string out;
  EXPECT_EQ(Base64Encode("{\"offset\": 1}"), "eyJvZmZzZXQiOiAxfQ==");
  ASSERT_TRUE(Base64Decode("eyJvZmZzZXQiOiAxfQ==", &out));
  EXPECT_EQ(out, "{\"offset\": 1}");
  EXPECT_FALSE(Base64Decode("abc", &out));
  EXPECT_FALSE(Base64Decode("!!!!", &out));
  EXPECT_FALSE(Base64Decode("====", &out));
  EXPECT_FALSE(Base64Decode("a===", &out));
}

TEST(HashTest, RandomHexHasRequestedLength) {
  std::string a = RandomHex(16), b = RandomHex(16);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("x")));
  EXPECT_FALSE(IsSha256Hex("XYZ"));
}

TEST(HashTest, Sha256HexIsSixtyFourLowercaseHexDigits) {
  EXPECT_TRUE(IsSha256Hex(std::string(64, '0')));
  EXPECT_TRUE(IsSha256Hex("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
  EXPECT_FALSE(IsSha256Hex(std::string(63, 'a')));
  EXPECT_FALSE(IsSha256Hex(std::string(65, 'a')));
  EXPECT_FALSE(IsSha256Hex(""));
  // Each character just outside the two ranges, at every position.
  for (char bad : {'/', ':', '`', 'g', 'A', 'F', '\0', '\xff', ' '}) {
    for (size_t at = 0; at < 64; ++at) {
      std::string s(64, 'a');
      s[at] = bad;
      EXPECT_FALSE(IsSha256Hex(s)) << "char " << static_cast<int>(bad) << " at " << at;
    }
  }
}

}  // namespace
}  // namespace cairn
