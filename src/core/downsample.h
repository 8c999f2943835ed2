// Thinning a metric's series for a chart: a line through the chosen points keeps the peaks
// and troughs of the whole series, so that a 1,000,000-point history is drawn from a few
// thousand points without hiding a spike.
#pragma once

#include <cstddef>
#include <vector>

namespace cairn::core {

// Indexes (ascending) of at most `max_points` of `values`, which are in x order: all of them
// when there are no more than `max_points`; else the first and the last, and, in each of
// (max_points - 2) / 2 runs of consecutive points, the lowest and the highest finite value, in
// x order. NaN and the infinities, which a chart cannot place, are chosen only when a run holds
// nothing else (its first point then). `max_points` below 4 counts as 4.
std::vector<size_t> DownsampleMinMax(const std::vector<double>& values, size_t max_points);

}  // namespace cairn::core
