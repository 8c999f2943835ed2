#include "pipeline/tree_hash.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "fakes/fake_clock.h"
#include "fakes/temp_dir.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/hash.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;

constexpr char kShaEmpty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kShaAbc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

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

// Deterministic bytes of any length (not all equal, so a shifted read would show).
std::string Pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
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
  std::string bytes = Pattern((3 << 20) + 17, 1);
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
    Write(dir / rel, Pattern(static_cast<size_t>(i) * 977 + (i % 10 == 0 ? 3 << 19 : 0), i),
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
  Write(dir / "a/x", Pattern(5000, 1));
  Write(dir / "b", "abc");
  std::string before = MustHash(dir.path()).digest;
  std::string changed = Pattern(5000, 1);
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

TEST(TreeHashTest, ParseManifestRejectsMalformedManifests) {
  const std::string sha(64, 'a');
  auto manifest = [&](const std::string& entries) {
    return "{\"cairn_manifest\":1,\"entries\":[" + entries + "]}";
  };
  auto entry = [&](const std::string& path, const std::string& extra = "") {
    return "{\"path\":\"" + path + "\",\"size\":1,\"mode\":\"100644\",\"sha256\":\"" + sha + "\"" +
           extra + "}";
  };
  ASSERT_TRUE(ParseManifestJson(manifest(entry("a") + "," + entry("b/c"))).ok());
  // Whitespace is free; the content is not.
  ASSERT_TRUE(ParseManifestJson(" { \"entries\" : [ ] , \"cairn_manifest\" : 1 } ").ok());
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"not json", "not valid JSON"},
      {"[]", "not a JSON object"},
      {"{\"cairn_manifest\":2,\"entries\":[]}", "must be 1"},
      {"{\"cairn_manifest\":1}", "\"entries\" must be an array"},
      {"{\"cairn_manifest\":1,\"entries\":[],\"x\":1}", "unknown field \"x\""},
      {manifest(entry("b") + "," + entry("a")), "sorted"},
      {manifest(entry("a") + "," + entry("a")), "sorted"},
      {manifest(entry("/abs")), "is absolute"},
      {manifest(entry("a/../b")), "'..'"},
      {manifest(entry("./a")), "'.'"},
      {manifest(entry("a//b")), "empty component"},
      {manifest(entry("a/")), "empty component"},
      {manifest(entry("")), "is empty"},
      {manifest(entry("a", ",\"owner\":1")), "unknown field \"owner\""},
      {manifest(entry("a") + "," + entry("a/b")), "listed as a file"},
      {manifest("{\"path\":\"a\",\"size\":-1,\"mode\":\"100644\",\"sha256\":\"" + sha + "\"}"),
       "\"size\" must be"},
      {manifest("{\"path\":\"a\",\"size\":1.5,\"mode\":\"100644\",\"sha256\":\"" + sha + "\"}"),
       "\"size\" must be"},
      {manifest("{\"path\":\"a\",\"size\":18446744073709551615,\"mode\":\"100644\","
                "\"sha256\":\"" +
                sha + "\"}"),
       "\"size\" must be"},
      {manifest("{\"path\":\"a\",\"size\":1,\"mode\":\"100600\",\"sha256\":\"" + sha + "\"}"),
       "\"mode\" must be"},
      {manifest("{\"path\":\"a\",\"size\":1,\"mode\":33188,\"sha256\":\"" + sha + "\"}"),
       "\"mode\" must be"},
      {manifest("{\"path\":\"a\",\"size\":1,\"mode\":\"100644\",\"sha256\":\"" +
                std::string(64, 'A') + "\"}"),
       "lowercase hex"},
      {manifest("{\"path\":1,\"size\":1,\"mode\":\"100644\",\"sha256\":\"" + sha + "\"}"),
       "\"path\" must be a string"},
      {manifest("{\"path\":\"a\",\"size\":1,\"mode\":\"100644\",\"sha256\":\"" + sha +
                "\",\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}"),
       "nests deeper"},
  };
  for (const Case& c : cases) {
    Result<std::vector<FileEntry>> r = ParseManifestJson(c.text);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text.substr(0, 200);
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << r.status().message() << " for " << c.text.substr(0, 200);
  }
}

// --- The stat cache through HashPath ---------------------------------------------------------

TEST(TreeHashTest, StatCacheAnswersUnchangedFiles) {
  fakes::TempDir dir, state;
  for (int i = 0; i < 20; ++i) Write(dir / ("f" + std::to_string(i)), Pattern(1000 + i, i));
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

// --- The stat cache itself --------------------------------------------------------------------

struct stat FakeStat(uint64_t ino, int64_t size, int64_t mtime_nanos, int64_t ctime_nanos) {
  struct stat st {};
  st.st_dev = 42;
  st.st_ino = ino;
  st.st_size = size;
  st.st_mtim = {static_cast<time_t>(mtime_nanos / 1'000'000'000), mtime_nanos % 1'000'000'000};
  st.st_ctim = {static_cast<time_t>(ctime_nanos / 1'000'000'000), ctime_nanos % 1'000'000'000};
  return st;
}

constexpr int64_t kNow = 1'800'000'000'000;  // ms since the epoch
constexpr int64_t kNowNanos = kNow * 1'000'000;
constexpr int64_t kOld = kNowNanos - 3'600'000'000'123;  // an hour ago, fine-grained

TEST(StatCacheTest, AnEntryAnswersOnlyTheExactStat) {
  fakes::TempDir state;
  fakes::FakeClock clock(kNow);
  auto cache = StatCache::Open(state / "cache", &clock);
  ASSERT_TRUE(cache.ok());
  StatCache& c = **cache;
  struct stat st = FakeStat(7, 3, kOld, kOld);
  EXPECT_EQ(c.Lookup(st), std::nullopt);
  c.Update(st, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(st), kShaAbc);
  struct stat other = st;
  other.st_size = 4;
  EXPECT_EQ(c.Lookup(other), std::nullopt);
  other = st;
  other.st_mtim.tv_nsec += 1;
  EXPECT_EQ(c.Lookup(other), std::nullopt);
  other = st;
  other.st_ctim.tv_sec += 1;
  EXPECT_EQ(c.Lookup(other), std::nullopt);
  other = st;
  other.st_ino = 8;
  EXPECT_EQ(c.Lookup(other), std::nullopt);
  other = st;
  other.st_dev = 43;
  EXPECT_EQ(c.Lookup(other), std::nullopt);
  // A new hash for the same inode replaces the old one.
  struct stat rewritten = FakeStat(7, 3, kOld + 5, kOld + 5);
  c.Update(rewritten, kShaEmpty, kNowNanos);
  EXPECT_EQ(c.Lookup(rewritten), kShaEmpty);
  EXPECT_EQ(c.Lookup(st), std::nullopt);
  EXPECT_EQ(c.size(), 1u);
}

TEST(StatCacheTest, RacyStatsAreNeitherRecordedNorAnswered) {
  fakes::TempDir state;
  fakes::FakeClock clock(kNow);
  auto cache = StatCache::Open(state / "cache", &clock);
  ASSERT_TRUE(cache.ok());
  StatCache& c = **cache;
  // Fine timestamps (non-zero nanoseconds): a 100 ms window.
  struct stat recent = FakeStat(1, 3, kNowNanos - 50'000'001, kNowNanos - 50'000'001);
  c.Update(recent, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(recent), std::nullopt);
  struct stat settled = FakeStat(2, 3, kNowNanos - 150'000'001, kNowNanos - 150'000'001);
  c.Update(settled, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(settled), kShaAbc);
  // An old mtime does not help when the inode changed recently (touch -d, tar, cp -p).
  struct stat restored = FakeStat(3, 3, kOld, kNowNanos - 1'000'001);
  c.Update(restored, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(restored), std::nullopt);
  // Whole-second timestamps: the filesystem may be that coarse, so a 2 s window.
  struct stat coarse = FakeStat(4, 3, kNowNanos - 1'000'000'000, kNowNanos - 1'000'000'000);
  c.Update(coarse, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(coarse), std::nullopt);
  struct stat coarse_old = FakeStat(5, 3, kNowNanos - 3'000'000'000, kNowNanos - 3'000'000'000);
  c.Update(coarse_old, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(coarse_old), kShaAbc);
  // The window is measured from when the stat was taken, not from when Update is called: a
  // stat taken at the file's write, then a long read, is still racy.
  struct stat slow = FakeStat(6, 3, kNowNanos - 10'000'000'000, kNowNanos - 10'000'000'000);
  c.Update(slow, kShaAbc, kNowNanos - 10'000'000'000);
  EXPECT_EQ(c.Lookup(slow), std::nullopt);
  EXPECT_EQ(c.size(), 2u);
}

TEST(StatCacheTest, SaveAndOpenRoundTrip) {
  fakes::TempDir state;
  fakes::FakeClock clock(kNow);
  std::string path = state / "sub/dir/cache";
  {
    auto cache = StatCache::Open(path, &clock);
    ASSERT_TRUE(cache.ok());
    EXPECT_EQ((*cache)->size(), 0u);
    for (uint64_t i = 0; i < 1000; ++i) {
      (*cache)->Update(FakeStat(i, static_cast<int64_t>(i), kOld - static_cast<int64_t>(i), kOld),
                       Sha256Hex(std::to_string(i)), kNowNanos);
    }
    ASSERT_TRUE((*cache)->Save().ok());
  }
  auto cache = StatCache::Open(path, &clock);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->size(), 1000u);
  for (uint64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ((*cache)->Lookup(
                  FakeStat(i, static_cast<int64_t>(i), kOld - static_cast<int64_t>(i), kOld)),
              Sha256Hex(std::to_string(i)));
  }
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& e : fs::directory_iterator(state / "sub/dir")) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(StatCacheTest, ACorruptFileIsAnEmptyCache) {
  fakes::TempDir state;
  fakes::FakeClock clock(kNow);
  std::string path = state / "cache";
  {
    auto cache = StatCache::Open(path, &clock);
    ASSERT_TRUE(cache.ok());
    (*cache)->Update(FakeStat(1, 3, kOld, kOld), kShaAbc, kNowNanos);
    ASSERT_TRUE((*cache)->Save().ok());
  }
  Result<std::string> good = ReadFile(path);
  ASSERT_TRUE(good.ok());
  std::string flipped = *good;
  flipped[30] ^= 1;  // inside the record: only the checksum can tell
  std::string truncated = good->substr(0, good->size() - 1);
  std::string longer = *good + "x";
  for (const std::string& bytes :
       {std::string("garbage"), std::string(), flipped, truncated, longer, Pattern(100, 1)}) {
    ASSERT_TRUE(WriteFileAtomic(path, bytes).ok());
    auto cache = StatCache::Open(path, &clock);
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    EXPECT_EQ((*cache)->size(), 0u);
    EXPECT_EQ((*cache)->Lookup(FakeStat(1, 3, kOld, kOld)), std::nullopt);
  }
  ASSERT_TRUE(WriteFileAtomic(path, *good).ok());
  auto cache = StatCache::Open(path, &clock);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->Lookup(FakeStat(1, 3, kOld, kOld)), kShaAbc);
  // A path that exists but cannot be read as a file is an error, not an empty cache.
  EXPECT_FALSE(StatCache::Open(state.path(), &clock).ok());
}

TEST(StatCacheTest, SaveDropsUnusedEntriesPastTheBound) {
  fakes::TempDir state;
  fakes::FakeClock clock(kNow);
  std::string path = state / "cache";
  {
    auto cache = StatCache::Open(path, &clock);
    ASSERT_TRUE(cache.ok());
    for (uint64_t i = 0; i < 10; ++i) {
      (*cache)->Update(FakeStat(i, 1, kOld, kOld), kShaAbc, kNowNanos);
    }
    ASSERT_TRUE((*cache)->Save().ok());
  }
  auto cache = StatCache::Open(path, &clock);
  ASSERT_TRUE(cache.ok());
  (*cache)->TEST_SetMaxEntries(5);
  EXPECT_EQ((*cache)->Lookup(FakeStat(0, 1, kOld, kOld)), kShaAbc);
  EXPECT_EQ((*cache)->Lookup(FakeStat(1, 1, kOld, kOld)), kShaAbc);
  (*cache)->Update(FakeStat(100, 1, kOld, kOld), kShaAbc, kNowNanos);
  ASSERT_TRUE((*cache)->Save().ok());
  EXPECT_EQ((*cache)->size(), 3u);
  auto reopened = StatCache::Open(path, &clock);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->size(), 3u);
  EXPECT_EQ((*reopened)->Lookup(FakeStat(1, 1, kOld, kOld)), kShaAbc);
  EXPECT_EQ((*reopened)->Lookup(FakeStat(2, 1, kOld, kOld)), std::nullopt);
  EXPECT_EQ((*reopened)->Lookup(FakeStat(100, 1, kOld, kOld)), kShaAbc);
}

}  // namespace
}  // namespace cairn::pipeline
