#include "pipeline/tree_hash.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "fakes/fake_clock.h"
#include "fakes/pattern_bytes.h"
#include "fakes/temp_dir.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/hash.h"
#include "fakes/files.h"

namespace cairn::pipeline {
namespace {
using fakes::kShaAbc;
using fakes::kShaEmpty;

namespace fs = std::filesystem;


void Write(const std::string& path, std::string_view bytes, mode_t mode = 0644) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  CAIRN_CHECK(fd >= 0);
  CAIRN_CHECK(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  CAIRN_CHECK(::fchmod(fd, mode) == 0);
  ::close(fd);
}

void Symlink(const std::string& target, const std::string& link) {
  CAIRN_CHECK(::symlink(target.c_str(), link.c_str()) == 0);
}

TreeHash MustHash(const std::string& path, HashOptions options = {}) {
  Result<TreeHash> r = HashPath(path, options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : TreeHash{};
}

int64_t RealNowMillis() { return SystemClock()->NowMillis(); }

// --- Files and manifests -------------------------------------------------------------------

TEST(TreeHashTest, FileDigestIsSha256OfItsBytes) {
  fakes::TempDir dir;
  Write(dir / "abc.txt", "abc");
  Write(dir / "empty", "");
  TreeHash h = MustHash(dir / "abc.txt");
  EXPECT_EQ(h.digest, kShaAbc);
  EXPECT_FALSE(h.is_directory);
  ASSERT_EQ(h.files.size(), 1u);
  EXPECT_EQ(h.files[0], (FileEntry{"abc.txt", 3, 0100644, kShaAbc}));
  EXPECT_EQ(h.bytes, 3);
  EXPECT_EQ(h.files_read, 1);
  EXPECT_EQ(MustHash(dir / "empty").digest, kShaEmpty);
}

TEST(TreeHashTest, LargeFileDigestIsTheSameReadOrMapped) {
  fakes::TempDir dir;
  // Three full read buffers and a partial one.
  std::string bytes = fakes::PatternBytes((3 << 20) + 17, 1);
  Write(dir / "big.bin", bytes);
  std::string expected = Sha256Hex(bytes);
  EXPECT_EQ(MustHash(dir / "big.bin").digest, expected);
  EXPECT_EQ(MustHash(dir / "big.bin", {.read_method = ReadMethod::kMmap}).digest, expected);
  EXPECT_EQ(MustHash(dir.path(), {.read_method = ReadMethod::kMmap}).files[0].sha256, expected);
}

TEST(TreeHashTest, ManifestBytesOfASmallTreeAreExact) {
  fakes::TempDir dir;
  Write(dir / "a.txt", "abc");
  Write(dir / "bin/run", "#!/bin/sh\necho hi\n", 0755);
  Symlink("a.txt", dir / "link");
  Write(dir / "sub.d/x", "");
  Write(dir / "sub/y", "abc");
  fs::create_directories(dir / "empty/deeper");
  TreeHash h = MustHash(dir.path());
  // '.' sorts before '/' in byte order, so sub.d/x comes before sub/y.
  const std::string expected =
      "{\"cairn_manifest\":1,\"entries\":[\n"
      "{\"path\":\"a.txt\",\"size\":3,\"mode\":\"100644\",\"sha256\":"
      "\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"},\n"
      "{\"path\":\"bin/run\",\"size\":18,\"mode\":\"100755\",\"sha256\":"
      "\"299001868fb8c02fd431c336c6d058f5558c5dff5b5af5e6fe04b870a6a9cbba\"},\n"
      "{\"path\":\"link\",\"size\":5,\"mode\":\"120000\",\"sha256\":"
      "\"18b7cb099a9ea3f50ba899b5ba81e0d377a5f3b16f8f6eeb8b3e58cd4692b993\"},\n"
      "{\"path\":\"sub.d/x\",\"size\":0,\"mode\":\"100644\",\"sha256\":"
      "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"},\n"
      "{\"path\":\"sub/y\",\"size\":3,\"mode\":\"100644\",\"sha256\":"
      "\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"}\n"
      "]}\n";
  EXPECT_EQ(ManifestJson(h.files), expected);
  // `sha256sum` of the text above.
  EXPECT_EQ(h.digest, "955b56104dbd5ffc59205555dd52a473802b93a6c0ff62beb62e4b107c0ccaf2");
  EXPECT_TRUE(h.is_directory);
  EXPECT_EQ(h.bytes, 3 + 18 + 5 + 0 + 3);
  EXPECT_EQ(h.files_read, 4);
  Result<std::vector<FileEntry>> parsed = ParseManifestJson(expected);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, h.files);
}

// A caller that names the files its own way may skip the directory's digest: the files are
// the same, sorted the same.
TEST(TreeHashTest, ADirectoryNeedNotBeNamed) {
  fakes::TempDir dir;
  Write(dir / "b.txt", "abc");
  Write(dir / "a/c.txt", "");
  HashOptions unnamed;
  unnamed.name_directory = false;
  TreeHash named = MustHash(dir.path());
  TreeHash h = MustHash(dir.path(), unnamed);
  EXPECT_TRUE(h.digest.empty());
  EXPECT_FALSE(named.digest.empty());
  EXPECT_TRUE(h.is_directory);
  EXPECT_EQ(h.files, named.files);
  EXPECT_EQ(h.files[0].path, "a/c.txt");
  EXPECT_EQ(h.bytes, 3);
}

TEST(TreeHashTest, EmptyDirectoryHashesTheEmptyManifest) {
  fakes::TempDir dir;
  TreeHash h = MustHash(dir.path());
  EXPECT_TRUE(h.is_directory);
  EXPECT_TRUE(h.files.empty());
  EXPECT_EQ(h.bytes, 0);
  EXPECT_EQ(ManifestJson({}), "{\"cairn_manifest\":1,\"entries\":[\n]}\n");
  // printf '{"cairn_manifest":1,"entries":[\n]}\n' | sha256sum
  EXPECT_EQ(h.digest, "3c11909de097a30fdc9c746b23c7e06535798e39edc80af221cfb80748754c20");
  // Empty directories are not content.
  fs::create_directories(dir / "a/b");
  EXPECT_EQ(MustHash(dir.path()).digest, h.digest);
}

TEST(TreeHashTest, OnlyTheOwnerExecutableBitCounts) {
  fakes::TempDir dir;
  Write(dir / "tool", "x", 0644);
  std::string plain = MustHash(dir.path()).digest;
  ::chmod((dir / "tool").c_str(), 0611);  // group and others may execute: not recorded
  TreeHash h = MustHash(dir.path());
  EXPECT_EQ(h.files[0].mode, 0100644u);
  EXPECT_EQ(h.digest, plain);
  ::chmod((dir / "tool").c_str(), 0700);
  h = MustHash(dir.path());
  EXPECT_EQ(h.files[0].mode, 0100755u);
  EXPECT_NE(h.digest, plain);
}

TEST(TreeHashTest, SymlinksInsideATreeAreNotFollowed) {
  fakes::TempDir outside, dir;
  Write(outside / "data/big", "payload");
  Symlink(outside / "data", dir / "to_dir");
  Symlink("missing", dir / "dangling");
  TreeHash h = MustHash(dir.path());
  ASSERT_EQ(h.files.size(), 2u);
  EXPECT_EQ(h.files[0], (FileEntry{"dangling", 7, 0120000, Sha256Hex("missing")}));
  EXPECT_EQ(h.files[1].path, "to_dir");
  EXPECT_EQ(h.files[1].mode, 0120000u);
  EXPECT_EQ(h.files[1].sha256, Sha256Hex((outside / "data").string()));
  EXPECT_EQ(h.files_read, 0);
  // The target's content is not part of the tree; the link text is.
  Write(outside / "data/big", "other payload");
  EXPECT_EQ(MustHash(dir.path()).digest, h.digest);
  fs::remove(dir / "dangling");
  Symlink("missing2", dir / "dangling");
  EXPECT_NE(MustHash(dir.path()).digest, h.digest);
}

TEST(TreeHashTest, APathThatIsASymlinkIsFollowed) {
  fakes::TempDir dir;
  Write(dir / "data/f", "abc");
  Write(dir / "file", "abc");
  Symlink("data", dir / "data_link");
  Symlink("file", dir / "file_link");
  EXPECT_EQ(MustHash(dir / "data_link").digest, MustHash(dir / "data").digest);
  TreeHash f = MustHash(dir / "file_link");
  EXPECT_EQ(f.digest, kShaAbc);
  EXPECT_EQ(f.files[0].path, "file_link");
}

TEST(TreeHashTest, OneAndEightThreadsGiveTheSameResult) {
  fakes::TempDir dir;
  for (int i = 0; i < 150; ++i) {
    std::string rel =
        "d" + std::to_string(i % 7) + "/s" + std::to_string(i % 3) + "/f" + std::to_string(i);
    Write(dir / rel, fakes::PatternBytes(static_cast<size_t>(i) * 977 + (i % 10 == 0 ? 3 << 19 : 0), i),
          i % 4 == 0 ? 0755 : 0644);
  }
  TreeHash one = MustHash(dir.path(), {.threads = 1});
  TreeHash eight = MustHash(dir.path(), {.threads = 8});
  EXPECT_EQ(one.files.size(), 150u);
  EXPECT_EQ(one.digest, eight.digest);
  EXPECT_EQ(one.files, eight.files);
  EXPECT_EQ(one.bytes, eight.bytes);
  EXPECT_EQ(eight.files_read, 150);
}

TEST(TreeHashTest, ChangingAFileOrANameChangesTheDigest) {
  fakes::TempDir dir;
  Write(dir / "a/x", fakes::PatternBytes(5000, 1));
  Write(dir / "b", "abc");
  std::string before = MustHash(dir.path()).digest;
  std::string changed = fakes::PatternBytes(5000, 1);
  changed[4000] ^= 1;
  Write(dir / "a/x", changed);
  std::string after = MustHash(dir.path()).digest;
  EXPECT_NE(after, before);
  fs::rename(dir / "b", dir / "c");
  EXPECT_NE(MustHash(dir.path()).digest, after);
}

TEST(TreeHashTest, EscapedNamesRoundTrip) {
  fakes::TempDir dir;
  std::string odd = "q\"uote\\back\nline\x01tab\t\xc3\xa9";
  Write(dir / odd, "abc");
  TreeHash h = MustHash(dir.path());
  std::string manifest = ManifestJson(h.files);
  EXPECT_NE(manifest.find("\"q\\\"uote\\\\back\\nline\\u0001tab\\t\xc3\xa9\""), std::string::npos)
      << manifest;
  Result<std::vector<FileEntry>> parsed = ParseManifestJson(manifest);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, h.files);
}

// --- Errors --------------------------------------------------------------------------------

TEST(TreeHashTest, MissingPathIsNotFound) {
  fakes::TempDir dir;
  Result<TreeHash> r = HashPath(dir / "nope", {});
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("nope"), std::string::npos);
  Write(dir / "file", "x");
  EXPECT_EQ(HashPath(dir / "file/below", {}).status().code(), StatusCode::kNotFound);
  Symlink("nope", dir / "dangling");
  EXPECT_EQ(HashPath(dir / "dangling", {}).status().code(), StatusCode::kNotFound);
}

TEST(TreeHashTest, FifosAreRejectedWithTheirPath) {
  fakes::TempDir dir;
  Write(dir / "ok", "x");
  fs::create_directories(dir / "sub");
  ASSERT_EQ(::mkfifo((dir / "sub/pipe").c_str(), 0644), 0);
  Result<TreeHash> r = HashPath(dir.path(), {});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("sub/pipe is a fifo"), std::string::npos)
      << r.status().ToString();
  r = HashPath(dir / "sub/pipe", {});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(TreeHashTest, NamesThatAreNotUtf8AreRejected) {
  fakes::TempDir dir;
  Write(dir / "bad\xff", "x");
  Result<TreeHash> r = HashPath(dir.path(), {});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("UTF-8"), std::string::npos);
}

TEST(TreeHashTest, NegativeThreadCountIsRejected) {
  fakes::TempDir dir;
  EXPECT_EQ(HashPath(dir.path(), {.threads = -1}).status().code(), StatusCode::kInvalidArgument);
}

// --- The stat cache through HashPath ---------------------------------------------------------

TEST(TreeHashTest, StatCacheAnswersUnchangedFiles) {
  fakes::TempDir dir, state;
  for (int i = 0; i < 20; ++i) Write(dir / ("f" + std::to_string(i)), fakes::PatternBytes(1000 + i, i));
  Symlink("f1", dir / "link");
  // Ten seconds on: the files were written long enough ago not to be racy.
  fakes::FakeClock clock(RealNowMillis() + 10'000);
  auto cache = StatCache::Open(state / "cache", &clock);
  ASSERT_TRUE(cache.ok());
  HashOptions options{.threads = 4, .cache = cache->get()};
  TreeHash first = MustHash(dir.path(), options);
  EXPECT_EQ(first.files_read, 20);
  TreeHash second = MustHash(dir.path(), options);
  EXPECT_EQ(second.files_read, 0);
  EXPECT_EQ(second.digest, first.digest);
  EXPECT_EQ(second.files, first.files);
  // The same through a saved and reopened cache.
  ASSERT_TRUE((*cache)->Save().ok());
  auto reopened = StatCache::Open(state / "cache", &clock);
  ASSERT_TRUE(reopened.ok());
  TreeHash third = MustHash(dir.path(), {.cache = reopened->get()});
  EXPECT_EQ(third.files_read, 0);
  EXPECT_EQ(third.digest, first.digest);
}

TEST(TreeHashTest, StatCacheRereadsAFileChangedWithTheSameSize) {
  fakes::TempDir dir, state;
  Write(dir / "a", "abc");
  Write(dir / "b", "xyz");
  struct stat old_stat;
  ASSERT_EQ(::stat((dir / "a").c_str(), &old_stat), 0);
  fakes::FakeClock clock(RealNowMillis() + 10'000);
  auto cache = StatCache::Open(state / "cache", &clock);
  ASSERT_TRUE(cache.ok());
  HashOptions options{.cache = cache->get()};
  TreeHash first = MustHash(dir.path(), options);
  EXPECT_EQ(first.files_read, 2);
  // Same size, and the old mtime put back (as cp -p or tar would): only ctime differs now.
  Write(dir / "a", "abd");
  struct timespec times[2] = {old_stat.st_atim, old_stat.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir / "a").c_str(), times, 0), 0);
  TreeHash second = MustHash(dir.path(), options);
  EXPECT_EQ(second.files_read, 1);
  EXPECT_EQ(second.files[0].sha256, Sha256Hex("abd"));
  EXPECT_NE(second.digest, first.digest);
}

TEST(TreeHashTest, RacyFilesAreNotTrusted) {
  fakes::TempDir dir, state;
  // The clock says "now", taken before the write: the file is within the racy window.
  fakes::FakeClock clock(RealNowMillis());
  Write(dir / "a", "abc");
  auto cache = StatCache::Open(state / "cache", &clock);
  ASSERT_TRUE(cache.ok());
  HashOptions options{.cache = cache->get()};
  EXPECT_EQ(MustHash(dir.path(), options).files_read, 1);
  EXPECT_EQ(MustHash(dir.path(), options).files_read, 1);  // not recorded: still read
  EXPECT_EQ((*cache)->size(), 0u);
  // Three seconds on, the file is older than even the coarse window: read and recorded.
  clock.Advance(3'000);
  EXPECT_EQ(MustHash(dir.path(), options).files_read, 1);
  EXPECT_EQ(MustHash(dir.path(), options).files_read, 0);
}

// --- Chosen files ----------------------------------------------------------------------------

TEST(TreeHashTest, HashFilesHashesOnlyTheChosenFilesLikeATree) {
  fakes::TempDir dir;
  Write(dir / "a.txt", "abc");
  Write(dir / "sub/run.sh", "#!/bin/sh\n", 0755);
  Write(dir / "ignored.bin", "not chosen");
  Symlink("a.txt", dir / "link");
  Result<TreeHash> h = HashFiles(dir.path(), {"sub/run.sh", "a.txt", "link", "a.txt"}, {});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_TRUE(h->is_directory);
  ASSERT_EQ(h->files.size(), 3u);
  EXPECT_EQ(h->files[0], (FileEntry{"a.txt", 3, kModeFile, kShaAbc}));
  EXPECT_EQ(h->files[1], (FileEntry{"link", 5, kModeSymlink, Sha256Hex("a.txt")}));
  EXPECT_EQ(h->files[2].path, "sub/run.sh");
  EXPECT_EQ(h->files[2].mode, kModeExecutable);
  EXPECT_EQ(h->bytes, 3 + 5 + 10);
  EXPECT_EQ(h->digest, Sha256Hex(ManifestJson(h->files)));

  // The same files as a whole tree hash alike.
  fs::remove(dir / "ignored.bin");
  EXPECT_EQ(MustHash(dir.path()).digest, h->digest);
}

TEST(TreeHashTest, HashFilesLeavesOutWhatIsGoneAndDirectories) {
  fakes::TempDir dir;
  Write(dir / "kept", "abc");
  fs::create_directories(dir / "nested");
  Result<TreeHash> h = HashFiles(dir.path(), {"kept", "deleted", "nested", "deleted/below"}, {});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_EQ(h->files.size(), 1u);
  EXPECT_EQ(h->files[0].path, "kept");
}

TEST(TreeHashTest, HashFilesRefusesPathsThatLeaveTheRoot) {
  fakes::TempDir dir;
  fakes::TempDir outside;
  Write(outside / "secret", "abc");
  Write(dir / "a", "abc");
  Symlink(outside.path(), dir / "out");
  for (const char* bad : {"../secret", "/etc/passwd", "a/../a", "./a", "", "out/secret"}) {
    Result<TreeHash> h = HashFiles(dir.path(), {bad}, {});
    EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  // A link at the top is hashed as a link, never followed.
  Result<TreeHash> link = HashFiles(dir.path(), {"out"}, {});
  ASSERT_TRUE(link.ok());
  EXPECT_EQ(link->files[0].mode, kModeSymlink);
}

}  // namespace
}  // namespace cairn::pipeline
