// A fresh directory under the system's temporary directory for one test, removed with
// everything in it when the TempDir goes.
#pragma once

#include <filesystem>
#include <string>

namespace cairn::fakes {

class TempDir {
 public:
  // `prefix` names the directory ("cairn-<prefix>-XXXXXX") so that a leftover tells its test.
  explicit TempDir(const std::string& prefix = "test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

}  // namespace cairn::fakes
