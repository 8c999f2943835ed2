#include "env/install/wheel_archive.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fakes/wheels.h"
#include "util/hash.h"
#include "fakes/files.h"
#include "fakes/shell.h"

namespace cairn::env {
namespace {
using fakes::Listing;
using fakes::Slurp;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using fakes::BuildWheel;
using fakes::DistInfo;
using fakes::TestRecordHash;
using fakes::WheelSpec;
using fakes::WriteZip;
using ZipEntry = fakes::ZipEntry;

WheelSpec ArchiveDemoSpec() {
  WheelSpec s;
  s.files = {
      {"demo/__init__.py", "__version__ = \"1.0\"\n"},
      {"demo/cli.py", "def main():\n    print(\"hello\")\n"},
      {"demo-1.0.data/scripts/demo-script", "#!python\nprint('x')\n", 0755},
  };
  return s;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "cairn-wheel-archive-XXXXXX").string();
    CAIRN_CHECK(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

class WheelArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tmp_.path() / "wheels");
    fs::create_directories(tmp_.path() / "cache");
  }
  fs::path Wheels() const { return tmp_.path() / "wheels"; }
  fs::path Cache() const { return tmp_.path() / "cache"; }
  // Unpacking `spec` must fail and leave the cache directory empty (no dest, no temp dir).
  std::string ExpectRejected(const WheelSpec& spec) {
    fs::path whl = BuildWheel(Wheels(), spec);
    Result<UnpackedWheel> r = UnpackWheel(whl.string(), (Cache() / "demo").string());
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
    EXPECT_TRUE(Listing(Cache()).empty());
    return r.status().message();
  }

  TempDir tmp_;
};

TEST_F(WheelArchiveTest, UnpacksAndVerifies) {
  fs::path whl = BuildWheel(Wheels(), ArchiveDemoSpec());
  fs::path dest = Cache() / "demo-1.0";
  Result<UnpackedWheel> r = UnpackWheel(whl.string(), dest.string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->dir, dest.string());
  EXPECT_EQ(r->dist_info, "demo-1.0.dist-info");
  EXPECT_EQ(r->data_dir, "demo-1.0.data");
  EXPECT_TRUE(r->has_data_dir);
  EXPECT_TRUE(r->root_is_purelib);
  EXPECT_EQ(r->wheel_version, "1.0");
  EXPECT_TRUE(r->warnings.empty());
  EXPECT_EQ(r->file_count, 6u);  // 3 files + METADATA, WHEEL, RECORD
  EXPECT_EQ(r->record.size(), 6u);
  uint64_t bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(dest)) {
    if (e.is_regular_file()) bytes += e.file_size();
  }
  EXPECT_EQ(r->bytes, bytes);
  EXPECT_EQ(Slurp(dest / "demo/__init__.py"), "__version__ = \"1.0\"\n");
  struct stat st;
  ASSERT_EQ(stat((dest / "demo-1.0.data/scripts/demo-script").c_str(), &st), 0);
  EXPECT_NE(st.st_mode & 0100, 0u) << "the execute bit of the archived script is kept";
  ASSERT_EQ(stat((dest / "demo/cli.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0111, 0u);
  // Only the published directory remains: no temporary directory beside it.
  EXPECT_EQ(Listing(Cache()), std::vector<std::string>{"demo-1.0"});

  Result<UnpackedWheel> again = LoadUnpackedWheel(dest.string());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->dist_info, r->dist_info);
  EXPECT_EQ(again->file_count, r->file_count);
  EXPECT_EQ(again->bytes, r->bytes);
  EXPECT_EQ(again->record.size(), r->record.size());
}

TEST_F(WheelArchiveTest, DestinationThatExistsIsRefused) {
  fs::path whl = BuildWheel(Wheels(), ArchiveDemoSpec());
  fs::create_directories(Cache() / "demo");
  Result<UnpackedWheel> r = UnpackWheel(whl.string(), (Cache() / "demo").string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
}

TEST_F(WheelArchiveTest, TamperedFileFailsAndLeavesNoDestination) {
  WheelSpec s = ArchiveDemoSpec();
  s.tamper["demo/cli.py"] = "def main():\n    print(\"HELLO\")\n";  // same size, other bytes
  std::string m = ExpectRejected(s);
  EXPECT_THAT(m, HasSubstr("demo/cli.py"));
  EXPECT_THAT(m, HasSubstr("digest"));
}

TEST_F(WheelArchiveTest, SizeMismatchFails) {
  WheelSpec s = ArchiveDemoSpec();
  s.tamper["demo/cli.py"] = "def main():\n    print(\"hello, and much more\")\n";
  EXPECT_THAT(ExpectRejected(s), HasSubstr("larger than"));
}

TEST_F(WheelArchiveTest, FileMissingFromRecordFails) {
  WheelSpec s = ArchiveDemoSpec();
  s.unrecorded.insert("demo/cli.py");
  EXPECT_THAT(ExpectRejected(s), HasSubstr("demo/cli.py is not listed in RECORD"));
}

TEST_F(WheelArchiveTest, RecordedFileMissingFromArchiveFails) {
  WheelSpec s = ArchiveDemoSpec();
  s.extra_record_rows.push_back("demo/gone.py," + TestRecordHash("x") + ",1");
  EXPECT_THAT(ExpectRejected(s), HasSubstr("demo/gone.py, which the wheel lacks"));
}

TEST_F(WheelArchiveTest, RecordRowWithoutHashFails) {
  WheelSpec s = ArchiveDemoSpec();
  s.unrecorded.insert("demo/cli.py");
  s.extra_record_rows.push_back("demo/cli.py,,");
  EXPECT_THAT(ExpectRejected(s), HasSubstr("no hash for demo/cli.py"));
}

TEST_F(WheelArchiveTest, WeakHashFails) {
  WheelSpec s = ArchiveDemoSpec();
  s.unrecorded.insert("demo/cli.py");
  s.extra_record_rows.push_back("demo/cli.py,md5=AAAA,31");
  EXPECT_THAT(ExpectRejected(s), HasSubstr("weaker than sha256"));
}

TEST_F(WheelArchiveTest, PathTraversalIsRejected) {
  // libarchive reads a backslash as a separator, so "..\\evil" is "../evil" and refused too.
  for (const char* name : {"../evil", "/abs/evil", "demo/../../evil", "..\\evil"}) {
    SCOPED_TRACE(name);
    WheelSpec s = ArchiveDemoSpec();
    s.raw.push_back({name, "pwned\n"});
    EXPECT_THAT(ExpectRejected(s), HasSubstr("unsafe member name"));
    EXPECT_FALSE(fs::exists(tmp_.path() / "evil"));
    EXPECT_FALSE(fs::exists("/abs/evil"));
    fs::remove_all(Wheels());
    fs::create_directories(Wheels());
  }
}

TEST_F(WheelArchiveTest, SymlinkEntryIsRejected) {
  WheelSpec s = ArchiveDemoSpec();
  s.raw.push_back({"demo/link", "", 0777, ZipEntry::Kind::kSymlink, "/etc/passwd"});
  EXPECT_THAT(ExpectRejected(s), HasSubstr("symbolic link"));
}

TEST_F(WheelArchiveTest, DuplicateNamesAreRejected) {
  WheelSpec s = ArchiveDemoSpec();
  s.raw.push_back({"demo/cli.py", "def main():\n    print(\"hello\")\n"});
  EXPECT_THAT(ExpectRejected(s), HasSubstr("duplicate member demo/cli.py"));
}

TEST_F(WheelArchiveTest, WheelVersion2IsRejected) {
  WheelSpec s = ArchiveDemoSpec();
  s.wheel_version = "2.0";
  EXPECT_THAT(ExpectRejected(s), HasSubstr("Wheel-Version 2.0 is not supported"));
}

TEST_F(WheelArchiveTest, WheelVersion19Warns) {
  WheelSpec s = ArchiveDemoSpec();
  s.wheel_version = "1.9";
  fs::path whl = BuildWheel(Wheels(), s);
  Result<UnpackedWheel> r = UnpackWheel(whl.string(), (Cache() / "demo").string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_THAT(r->warnings[0], HasSubstr("1.9"));
}

TEST_F(WheelArchiveTest, MissingOrDoubleDistInfoIsRejected) {
  WheelSpec s = ArchiveDemoSpec();
  s.raw.push_back({"other-2.0.dist-info/METADATA", "Name: other\n"});
  EXPECT_THAT(ExpectRejected(s), HasSubstr("several .dist-info directories"));

  fs::path whl = Wheels() / "plain.whl";
  WriteZip(whl, {{"demo/__init__.py", ""}});
  Result<UnpackedWheel> r = UnpackWheel(whl.string(), (Cache() / "plain").string());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("no .dist-info"));
}

TEST_F(WheelArchiveTest, NotAZipIsRejected) {
  fs::path bogus = Wheels() / "bogus-1.0-py3-none-any.whl";
  std::ofstream(bogus) << "this is not a zip file";
  Result<UnpackedWheel> r = UnpackWheel(bogus.string(), (Cache() / "x").string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(bogus.string()));
  Result<UnpackedWheel> missing =
      UnpackWheel((Wheels() / "nope.whl").string(), (Cache() / "y").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST_F(WheelArchiveTest, ConcurrentUnpacksOfOneWheelBothSucceed) {
  fs::path whl = BuildWheel(Wheels(), ArchiveDemoSpec());
  fs::path dest = Cache() / "demo-1.0";
  std::vector<Result<UnpackedWheel>> results(4, Status(StatusCode::kInternal, "not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = UnpackWheel(whl.string(), dest.string()); });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& r : results) {
    // A thread that starts after another published gets AlreadyExists (its precondition);
    // the ones that raced all succeed.
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists) << r.status().ToString();
      continue;
    }
    EXPECT_EQ(r->dist_info, "demo-1.0.dist-info");
    EXPECT_EQ(r->file_count, 6u);
  }
  EXPECT_EQ(Listing(Cache()), std::vector<std::string>{"demo-1.0"});
}

TEST_F(WheelArchiveTest, ReadsSingleMembersWithoutUnpacking) {
  fs::path whl = BuildWheel(Wheels(), ArchiveDemoSpec());
  Result<std::string> init = ReadWheelMember(whl.string(), "demo/__init__.py");
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  EXPECT_EQ(*init, "__version__ = \"1.0\"\n");
  Result<std::string> meta = ReadWheelMetadata(whl.string());
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_THAT(*meta, HasSubstr("Name: demo\n"));
  EXPECT_EQ(ReadWheelMember(whl.string(), "demo/missing.py").status().code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(Listing(Cache()).empty());
}

TEST(WheelRecordTest, ParsesQuotedFieldsAndCrlf) {
  Result<std::vector<RecordEntry>> r = ParseRecord(
      "a/b.py,sha256=abc,12\r\n\"a/with,comma.py\",sha256=def,3\r\n\"q\"\"uote\",,\r\nx/"
      "RECORD,,\r\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].path, "a/b.py");
  EXPECT_EQ((*r)[0].size, 12);
  EXPECT_EQ((*r)[1].path, "a/with,comma.py");
  EXPECT_EQ((*r)[2].path, "q\"uote");
  EXPECT_EQ((*r)[3].hash, "");
  EXPECT_EQ((*r)[3].size, -1);
  Result<std::vector<RecordEntry>> again = ParseRecord(FormatRecord(*r));
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 4u);
  EXPECT_EQ((*again)[1].path, "a/with,comma.py");
  EXPECT_EQ((*again)[2].path, "q\"uote");

  EXPECT_FALSE(ParseRecord("a,b\n").ok());
  EXPECT_FALSE(ParseRecord("a,sha256=x,notanumber\n").ok());
  EXPECT_FALSE(ParseRecord("a,,\na,,\n").ok());
}

TEST(WheelRecordTest, HashFormMatchesIndependentComputation) {
  EXPECT_EQ(RecordSha256("hello\n"), TestRecordHash("hello\n"));
  EXPECT_EQ(RecordSha256FromHex(Sha256Hex("hello\n")), TestRecordHash("hello\n"));
  // A known value (pip's REQUESTED file: the empty string).
  EXPECT_EQ(RecordSha256(""), "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
}

TEST(WheelRecordTest, SafeRelativePaths) {
  EXPECT_TRUE(IsSafeRelativePath("a/b.py"));
  EXPECT_FALSE(IsSafeRelativePath(""));
  EXPECT_FALSE(IsSafeRelativePath("/a"));
  EXPECT_FALSE(IsSafeRelativePath("a/../b"));
  EXPECT_FALSE(IsSafeRelativePath(".."));
  EXPECT_FALSE(IsSafeRelativePath("a//b"));
  EXPECT_FALSE(IsSafeRelativePath("./a"));
  EXPECT_FALSE(IsSafeRelativePath("a\\b"));
}

}  // namespace
}  // namespace cairn::env
