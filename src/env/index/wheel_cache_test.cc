#include "env/index/wheel_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "fakes/http_test_server.h"
#include "fakes/pattern_bytes.h"
#include "fakes/scoped_env.h"
#include "fakes/shell.h"
#include "fakes/temp_dir.h"
#include "util/hash.h"
#include "fakes/files.h"

namespace cairn::env {
namespace {
using fakes::WheelLikeBlob;
using fakes::WriteAll;

using fakes::ScopedEnv;

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// Every regular file under `root`, relative to it.
std::vector<std::string> FilesUnder(const fs::path& root) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file()) files.push_back(fs::relative(it->path(), root).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class WheelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.http().Get("/files/demo-1.0-py3-none-any.whl",
                       [this](const httplib::Request&, httplib::Response& res) {
                         res.set_content(wheel_, "application/octet-stream");
                       });
    server_.http().Get("/files/tampered.whl",
                       [this](const httplib::Request&, httplib::Response& res) {
                         std::string bytes = wheel_;
                         bytes[bytes.size() / 2] ^= 1;  // same size, other hash
                         res.set_content(bytes, "application/octet-stream");
                       });
    server_.Start();
  }

  std::string WheelUrl() const { return server_.Url("/files/demo-1.0-py3-none-any.whl"); }
  int64_t WheelSize() const { return static_cast<int64_t>(wheel_.size()); }
  std::string WhatOf() const { return "demo 1.0 (demo-1.0-py3-none-any.whl)"; }

  fakes::TempDir dir_;
  const fs::path root_ = dir_.path() / "cache";
  const std::string wheel_ = WheelLikeBlob(200 * 1024 + 3, 7);
  const std::string sha_ = Sha256Hex(wheel_);
  fakes::HttpTestServer server_;  // last: stopped before the state its handlers use goes away
};

TEST_F(WheelCacheTest, LaysOutFilesByHash) {
  WheelCache cache(root_.string());
  EXPECT_EQ(cache.root(), root_.string());
  const std::string sha = std::string(64, 'a');
  EXPECT_EQ(cache.UnpackedDir(sha), (root_ / "unpacked" / "aa" / sha).string());
  EXPECT_FALSE(cache.Find(sha).has_value());
  EXPECT_FALSE(fs::exists(root_));  // looking creates nothing
}

TEST_F(WheelCacheTest, FetchFromAPathCopiesVerifiesAndFinds) {
  const fs::path local = dir_.path() / "demo-1.0-py3-none-any.whl";
  WriteAll(local, wheel_);
  WheelCache cache(root_.string());
  Result<std::string> got = cache.Fetch(sha_, WheelSize(), "", local.string(), WhatOf());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (root_ / "wheels" / sha_.substr(0, 2) / (sha_ + ".whl")).string());
  EXPECT_EQ(fakes::Slurp(*got), wheel_);
  EXPECT_EQ(cache.Find(sha_, WheelSize()), *got);
  EXPECT_EQ(cache.Find(sha_), *got);
  // Upper-case hex names the same wheel.
  std::string upper = sha_;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(cache.Find(upper), *got);
  EXPECT_EQ(FilesUnder(root_),
            std::vector<std::string>{"wheels/" + sha_.substr(0, 2) + "/" + sha_ + ".whl"});
}

TEST_F(WheelCacheTest, FetchFromAUrlDownloadsOnceThenHits) {
  WheelCache cache(root_.string());
  int64_t last_progress = -1;
  Result<std::string> first = cache.Fetch(sha_, WheelSize(), WheelUrl(), "", WhatOf(), {},
                                          [&](int64_t n, int64_t) { last_progress = n; });
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(fakes::Slurp(*first), wheel_);
  EXPECT_EQ(last_progress, WheelSize());
  Result<std::string> second = cache.Fetch(sha_, WheelSize(), WheelUrl(), "", WhatOf());
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, *first);
  EXPECT_EQ(server_.Count("/files/demo-1.0-py3-none-any.whl"), 1);
  // Another cache object over the same root (another process) hits too.
  Result<std::string> third = WheelCache(root_.string()).Fetch(sha_, -1, WheelUrl(), "", WhatOf());
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(server_.Count("/files/demo-1.0-py3-none-any.whl"), 1);
}

TEST_F(WheelCacheTest, FetchFromAFileUrl) {
  const fs::path local = dir_.path() / "demo-1.0-py3-none-any.whl";
  WriteAll(local, wheel_);
  WheelCache cache(root_.string());
  Result<std::string> got =
      cache.Fetch(sha_, WheelSize(), "file://" + local.string(), "", WhatOf());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(fakes::Slurp(*got), wheel_);
}

TEST_F(WheelCacheTest, SizeMismatchIsRejectedAndNothingIsKept) {
  WheelCache cache(root_.string());
  Result<std::string> got = cache.Fetch(sha_, WheelSize() + 1, WheelUrl(), "", WhatOf());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  const std::string& m = got.status().message();
  EXPECT_THAT(m, HasSubstr(WhatOf()));
  EXPECT_THAT(m, HasSubstr(WheelUrl()));
  EXPECT_THAT(m, HasSubstr(std::to_string(WheelSize() + 1) + " bytes"));
  EXPECT_THAT(m, HasSubstr(std::to_string(WheelSize()) + " bytes"));
  EXPECT_TRUE(FilesUnder(root_).empty());
  EXPECT_FALSE(cache.Find(sha_).has_value());
}

TEST_F(WheelCacheTest, HashMismatchNamesThePackageAndKeepsNothing) {
  WheelCache cache(root_.string());
  std::string url = server_.Url("/files/tampered.whl");
  url.insert(url.find("127."), "me:s3cret@");
  Result<std::string> got = cache.Fetch(sha_, WheelSize(), url, "", WhatOf());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  const std::string& m = got.status().message();
  EXPECT_THAT(m, HasSubstr(WhatOf()));
  EXPECT_THAT(m, HasSubstr("expected sha256 " + sha_));
  std::string tampered = wheel_;
  tampered[tampered.size() / 2] ^= 1;
  EXPECT_THAT(m, HasSubstr("got sha256 " + Sha256Hex(tampered)));
  EXPECT_THAT(m, HasSubstr(server_.Url("/files/tampered.whl")));
  EXPECT_THAT(m, Not(HasSubstr("s3cret")));
  EXPECT_TRUE(FilesUnder(root_).empty());

  // The same from a local file.
  const fs::path local = dir_.path() / "tampered.whl";
  WriteAll(local, tampered);
  Result<std::string> from_path = cache.Fetch(sha_, -1, "", local.string(), WhatOf());
  ASSERT_FALSE(from_path.ok());
  EXPECT_EQ(from_path.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(from_path.status().message(), HasSubstr(local.string()));
  EXPECT_TRUE(FilesUnder(root_).empty());
}

TEST_F(WheelCacheTest, FindRemovesAFileOfTheWrongSize) {
  WheelCache cache(root_.string());
  ASSERT_TRUE(cache.Fetch(sha_, WheelSize(), WheelUrl(), "", WhatOf()).ok());
  EXPECT_FALSE(cache.Find(sha_, WheelSize() - 1).has_value());
  EXPECT_TRUE(FilesUnder(root_).empty());
  // Fetch then repairs the cache.
  Result<std::string> again = cache.Fetch(sha_, WheelSize(), WheelUrl(), "", WhatOf());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(fakes::Slurp(*again), wheel_);
  EXPECT_EQ(server_.Count("/files/demo-1.0-py3-none-any.whl"), 2);
}

TEST_F(WheelCacheTest, SourceErrorsCarryWhatWasFetched) {
  WheelCache cache(root_.string());
  Result<std::string> missing =
      cache.Fetch(sha_, WheelSize(), server_.Url("/files/nothing.whl"), "", WhatOf());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(WhatOf()));
  EXPECT_THAT(missing.status().message(), HasSubstr("/files/nothing.whl"));

  Result<std::string> no_file =
      cache.Fetch(sha_, WheelSize(), "", (dir_.path() / "none.whl").string(), WhatOf());
  ASSERT_FALSE(no_file.ok());
  EXPECT_EQ(no_file.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(no_file.status().message(), HasSubstr(WhatOf()));
  EXPECT_TRUE(FilesUnder(root_).empty());
}

TEST_F(WheelCacheTest, RejectsABadHashOrNoSource) {
  WheelCache cache(root_.string());
  Result<std::string> bad = cache.Fetch("abc", -1, WheelUrl(), "", WhatOf());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr(WhatOf()));
  Result<std::string> none = cache.Fetch(sha_, -1, "", "", WhatOf());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server_.Count("/files/demo-1.0-py3-none-any.whl"), 0);
}

TEST_F(WheelCacheTest, ConcurrentFetchesOfOneHashAgree) {
  const fs::path local = dir_.path() / "demo-1.0-py3-none-any.whl";
  WriteAll(local, wheel_);
  for (const bool from_url : {true, false}) {
    SCOPED_TRACE(from_url ? "from a URL" : "from a path");
    fs::remove_all(root_);
    std::vector<std::optional<Result<std::string>>> results(4);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < results.size(); ++i) {
      threads.emplace_back([&, i] {
        WheelCache cache(root_.string());  // as separate processes would
        results[i] = cache.Fetch(sha_, WheelSize(), from_url ? WheelUrl() : "",
                                 from_url ? "" : local.string(), WhatOf());
      });
    }
    for (std::thread& t : threads) t.join();
    for (const auto& r : results) {
      ASSERT_TRUE(r->ok()) << r->status().ToString();
      EXPECT_EQ(**r, **results[0]);
    }
    EXPECT_EQ(fakes::Slurp(**results[0]), wheel_);
    EXPECT_EQ(FilesUnder(root_),
              std::vector<std::string>{"wheels/" + sha_.substr(0, 2) + "/" + sha_ + ".whl"});
  }
}

TEST_F(WheelCacheTest, AddLocalHashesAndStores) {
  const fs::path local = dir_.path() / "demo-1.0-py3-none-any.whl";
  WriteAll(local, wheel_);
  WheelCache cache(root_.string());
  Result<std::tuple<std::string, int64_t, std::string>> added = cache.AddLocal(local.string());
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  const auto& [sha, size, path] = *added;
  EXPECT_EQ(sha, sha_);
  EXPECT_EQ(size, WheelSize());
  EXPECT_EQ(cache.Find(sha_, WheelSize()), path);
  EXPECT_EQ(fakes::Slurp(path), wheel_);
  ASSERT_TRUE(cache.AddLocal(local.string()).ok());  // again: the same single file
  EXPECT_EQ(FilesUnder(root_),
            std::vector<std::string>{"wheels/" + sha_.substr(0, 2) + "/" + sha_ + ".whl"});
  // A later Fetch of that hash needs no source at all.
  EXPECT_TRUE(cache.Fetch(sha_, WheelSize(), WheelUrl(), "", WhatOf()).ok());
  EXPECT_EQ(server_.Count("/files/demo-1.0-py3-none-any.whl"), 0);

  Result<std::tuple<std::string, int64_t, std::string>> missing =
      cache.AddLocal((dir_.path() / "none.whl").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(DefaultCacheRootTest, PrefersCairnThenXdgThenHome) {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv cairn("CAIRN_CACHE_DIR", "/data/cairn-cache");
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(DefaultCacheRoot(), "/data/cairn-cache");
  }
  {
    ScopedEnv cairn("CAIRN_CACHE_DIR", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(DefaultCacheRoot(), "/xdg/cairn");
  }
  {
    ScopedEnv cairn("CAIRN_CACHE_DIR", "");
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/ignored");
    EXPECT_EQ(DefaultCacheRoot(), "/home/someone/.cache/cairn");
  }
}

}  // namespace
}  // namespace cairn::env
