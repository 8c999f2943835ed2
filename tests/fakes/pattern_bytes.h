// Test data: deterministic bytes of any length, not all equal, so that a shifted, truncated or
// reordered read shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cairn::fakes {

// `n` bytes from a linear congruential sequence started by `seed`: the same seed gives the
// same bytes, another seed other bytes.
inline std::string PatternBytes(size_t n, unsigned seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

}  // namespace cairn::fakes
