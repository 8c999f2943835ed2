#include "core/downsample.h"

#include <algorithm>
#include <cmath>

namespace cairn::core {

std::vector<size_t> DownsampleMinMax(const std::vector<double>& values, size_t max_points) {
  const size_t n = values.size();
  max_points = std::max<size_t>(max_points, 4);
  std::vector<size_t> out;
  if (n <= max_points) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i) out[i] = i;
    return out;
  }
  // The points between the first and the last, split into runs of (nearly) equal length.
  const size_t inner = n - 2;
  const size_t runs = (max_points - 2) / 2;
  out.reserve(2 + 2 * runs);
  out.push_back(0);
  for (size_t r = 0; r < runs; ++r) {
    const size_t begin = 1 + inner * r / runs;
    const size_t end = 1 + inner * (r + 1) / runs;
    if (begin == end) continue;
    size_t lo = begin;
    size_t hi = begin;
    for (size_t i = begin; i < end; ++i) {
      const double v = values[i];
      if (!std::isfinite(v)) continue;
      if (!std::isfinite(values[lo]) || v < values[lo]) lo = i;
      if (!std::isfinite(values[hi]) || v > values[hi]) hi = i;
    }
    out.push_back(std::min(lo, hi));
    if (lo != hi) out.push_back(std::max(lo, hi));
  }
  out.push_back(n - 1);
  return out;
}

}  // namespace cairn::core
