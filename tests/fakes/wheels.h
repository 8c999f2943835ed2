// Wheels built for tests, with libarchive's writer: a distribution's files plus METADATA,
// WHEEL, RECORD (hashes computed independently of the code under test) and entry points, and
// ways to make them wrong on purpose.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace cairn::fakes {

struct ZipEntry {
  enum class Kind { kFile, kDirectory, kSymlink };
  std::string name;
  std::string content;
  unsigned perm = 0644;
  Kind kind = Kind::kFile;
  std::string symlink = {};  // the target, for kSymlink
};

// Writes a zip of `entries`, in order; fails the current test when libarchive refuses.
void WriteZip(const std::filesystem::path& path, const std::vector<ZipEntry>& entries);

// RECORD's hash form ("sha256=" and unpadded urlsafe base64), computed apart from env/.
std::string TestRecordHash(const std::string& content);

struct WheelSpec {
  std::string name = "demo";
  std::string version = "1.0";
  std::vector<ZipEntry> files;  // besides METADATA, WHEEL, RECORD (and entry_points.txt)
  std::string wheel_version = "1.0";
  bool purelib = true;
  std::string entry_points;
  std::set<std::string> unrecorded;            // left out of RECORD
  std::map<std::string, std::string> tamper;   // archived instead of the recorded content
  std::vector<std::string> extra_record_rows;  // appended to RECORD verbatim
  std::vector<ZipEntry> raw;                   // archived as they are, not recorded
};

// "<name>-<version>.dist-info"
std::string DistInfo(const WheelSpec& spec);

// Writes <name>-<version>-py3-none-any.whl into `dir` and returns its path.
std::filesystem::path BuildWheel(const std::filesystem::path& dir, const WheelSpec& spec);

}  // namespace cairn::fakes
