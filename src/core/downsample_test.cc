#include "core/downsample.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace cairn::core {
namespace {

using ::testing::ElementsAre;

TEST(DownsampleTest, ShortSeriesAreKeptWhole) {
  EXPECT_THAT(DownsampleMinMax({3, 1, 2}, 10), ElementsAre(0u, 1u, 2u));
  EXPECT_TRUE(DownsampleMinMax({}, 10).empty());
}

TEST(DownsampleTest, KeepsEndsAndEachRunsLowestAndHighestInOrder) {
  // Two runs of four inner points: [5, 9, 1, 4] and [6, 2, 8, 7].
  std::vector<double> v = {0, 5, 9, 1, 4, 6, 2, 8, 7, 3};
  EXPECT_THAT(DownsampleMinMax(v, 6), ElementsAre(0u, 2u, 3u, 6u, 7u, 9u));
}

TEST(DownsampleTest, AMillionPointsKeepTheirSpikes) {
  std::vector<double> v(1'000'000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<double>(i) / 5000.0);
  v[123'457] = 50;    // one spike up
  v[876'543] = -40;   // one down
  std::vector<size_t> kept = DownsampleMinMax(v, 2000);
  EXPECT_LE(kept.size(), 2000u);
  EXPECT_GE(kept.size(), 1990u);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  EXPECT_EQ(std::adjacent_find(kept.begin(), kept.end()), kept.end()) << "no index twice";
  EXPECT_NE(std::find(kept.begin(), kept.end(), 123'457u), kept.end());
  EXPECT_NE(std::find(kept.begin(), kept.end(), 876'543u), kept.end());
  EXPECT_EQ(kept.front(), 0u);
  EXPECT_EQ(kept.back(), v.size() - 1);
}

TEST(DownsampleTest, NanIsChosenOnlyWhenARunHoldsNothingElse) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Inner runs: [4, nan] and [nan, nan, nan].
  std::vector<double> v = {1, 4, nan, nan, nan, nan, 2};
  EXPECT_THAT(DownsampleMinMax(v, 6), ElementsAre(0u, 1u, 3u, 6u));
}

TEST(DownsampleTest, InfinitiesDoNotHideARunsFinitePeakAndTrough) {
  const double inf = std::numeric_limits<double>::infinity();
  // Inner runs: [5, inf, -1] and [-inf, inf, -inf, inf], which keeps its first point.
  std::vector<double> v = {0, 5, inf, -1, -inf, inf, -inf, inf, 3};
  EXPECT_THAT(DownsampleMinMax(v, 6), ElementsAre(0u, 1u, 3u, 4u, 8u));
}

}  // namespace
}  // namespace cairn::core
