#include "server/range.h"

#include <gtest/gtest.h>

namespace cairn::server {
namespace {

using Kind = RangeDecision::Kind;

void ExpectPartial(std::string_view header, int64_t size, int64_t first, int64_t length) {
  RangeDecision d = DecideRange(header, size);
  EXPECT_EQ(d.kind, Kind::kPartial) << header;
  EXPECT_EQ(d.first, first) << header;
  EXPECT_EQ(d.length, length) << header;
}

void ExpectWhole(std::string_view header, int64_t size) {
  RangeDecision d = DecideRange(header, size);
  EXPECT_EQ(d.kind, Kind::kWhole) << header;
  EXPECT_EQ(d.first, 0) << header;
  EXPECT_EQ(d.length, size) << header;
}

TEST(RangeTest, ServesOneRangeClampedToTheRepresentation) {
  ExpectPartial("bytes=0-99", 1000, 0, 100);
  ExpectPartial("bytes=3-5", 16, 3, 3);
  ExpectPartial("bytes=0-1000000", 452, 0, 452);  // past the end: up to the end
  ExpectPartial("bytes=10-", 16, 10, 6);
  ExpectPartial("bytes=-4", 16, 12, 4);
  ExpectPartial("bytes=-100", 16, 0, 16);
  ExpectPartial("Bytes= 2-2 ", 16, 2, 1);
  ExpectPartial("bytes=15-15", 16, 15, 1);
  ExpectPartial("bytes=0-99999999999999999999999", 16, 0, 16);  // saturates, no overflow
  EXPECT_EQ(DecideRange("bytes=0-1000000", 452).ContentRange(452), "bytes 0-451/452");
}

TEST(RangeTest, AStartPastTheEndIsUnsatisfiable) {
  for (std::string_view h : {"bytes=16-", "bytes=16-20", "bytes=-0", "bytes=99999999999999999999-"}) {
    RangeDecision d = DecideRange(h, 16);
    EXPECT_EQ(d.kind, Kind::kUnsatisfiable) << h;
    EXPECT_EQ(d.length, 0) << h;
    EXPECT_EQ(d.ContentRange(16), "bytes */16") << h;
  }
}

TEST(RangeTest, IgnoresWhatItDoesNotServe) {
  ExpectWhole("", 16);
  ExpectWhole("bytes=5-3", 16);          // inverted
  ExpectWhole("bytes=0-1,4-5", 16);      // several ranges
  ExpectWhole("bytes=0-1,0-1,0-1", 16);
  ExpectWhole("items=0-1", 16);          // another unit
  ExpectWhole("bytes=", 16);
  ExpectWhole("bytes=-", 16);
  ExpectWhole("bytes=a-b", 16);
  ExpectWhole("bytes=1-2x", 16);
  ExpectWhole("bytes=+1-2", 16);
  ExpectWhole("bytes=--1", 16);
  ExpectWhole("bytes=0-1", 0);           // an empty representation comes whole
  std::string many = "bytes=0-0";
  for (int i = 0; i < 1000; ++i) many += ",0-0";
  ExpectWhole(many, 16);
}

TEST(RangeTest, EmptyListElementsAreSkipped) { ExpectPartial("bytes=, 1-2 ,", 16, 1, 2); }

}  // namespace
}  // namespace cairn::server
