// Small file helpers and well-known digests the tests share.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fakes/pattern_bytes.h"

namespace cairn::fakes {

// SHA-256 of "" and of "abc".
inline constexpr char kShaEmpty[] =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
inline constexpr char kShaAbc[] =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

inline constexpr char kSystemPython[] = "/usr/bin/python3";

inline void WriteAll(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The names in `dir`, sorted.
inline std::vector<std::string> Listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Bytes that look like a wheel (a zip's magic) and are not all alike.
inline std::string WheelLikeBlob(size_t size, unsigned seed = 12345) {
  return "PK\x03\x04" + PatternBytes(size > 4 ? size - 4 : 0, seed);
}

}  // namespace cairn::fakes
