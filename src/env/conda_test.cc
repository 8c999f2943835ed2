#include "env/conda.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "util/hash.h"

namespace cairn::env {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

TEST(CondaTest, ReadsAnExplicitSpec) {
  Result<std::vector<CondaPackage>> got = ParseCondaExplicit(
      "# This file may be used to create an environment using:\n"
      "# platform: linux-64\n"
      "@EXPLICIT\n"
      "https://conda.anaconda.org/conda-forge/linux-64/_libgcc_mutex-0.1-conda_forge.tar.bz2"
      "#d7c89558ba9fa0495403155b64376d81\n"
      "https://repo.anaconda.com/pkgs/main/linux-64/ca-certificates-2024.3.11-h06a4308_0.conda"
      "#sha256:" + std::string(64, 'a') + "\n"
      "file:///opt/channel/noarch/tzdata-2024a-h0c530f3_0.conda\n",
      "env.txt");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].name, "_libgcc_mutex");
  EXPECT_EQ((*got)[0].version, "0.1");
  EXPECT_EQ((*got)[0].build, "conda_forge");
  EXPECT_EQ((*got)[0].channel, "conda-forge");
  EXPECT_EQ((*got)[0].md5, "d7c89558ba9fa0495403155b64376d81");
  EXPECT_EQ((*got)[1].name, "ca-certificates");
  EXPECT_EQ((*got)[1].version, "2024.3.11");
  EXPECT_EQ((*got)[1].channel, "pkgs/main");
  EXPECT_EQ((*got)[1].sha256, std::string(64, 'a'));
  EXPECT_EQ((*got)[2].channel, "/opt/channel");
}

TEST(CondaTest, MistakesNameTheLine) {
  EXPECT_THAT(ParseCondaExplicit("https://x/linux-64/a-1-0.conda\n", "e.txt").status().message(),
              HasSubstr("e.txt line 1: expected @EXPLICIT"));
  EXPECT_THAT(ParseCondaExplicit("@EXPLICIT\nnumpy=1.26\n", "e.txt").status().message(),
              HasSubstr("e.txt line 2: expected a package URL"));
  EXPECT_THAT(ParseCondaExplicit("@EXPLICIT\nhttps://x/linux-64/a-1-0.conda#123\n", "e.txt")
                  .status()
                  .message(),
              HasSubstr("#<md5> or #sha256"));
  EXPECT_THAT(ParseCondaExplicit("# only comments\n", "e.txt").status().message(),
              HasSubstr("no @EXPLICIT line"));
}

TEST(CondaTest, ReadsCondaMetaRecords) {
  const fs::path prefix = fs::temp_directory_path() / ("cairn-conda-" + RandomHex(6));
  fs::create_directories(prefix / "conda-meta");
  std::ofstream(prefix / "conda-meta" / "zlib-1.2.13-h5eee18b_0.json")
      << R"({"name": "zlib", "version": "1.2.13", "build": "h5eee18b_0",
             "channel": "https://repo.anaconda.com/pkgs/main/linux-64",
             "url": "https://repo.anaconda.com/pkgs/main/linux-64/zlib-1.2.13-h5eee18b_0.conda",
             "md5": "333e31fee8eae8cf26d9d2d8c4a1e02f", "files": ["lib/libz.so"]})";
  std::ofstream(prefix / "conda-meta" / "history") << "==> 2024-01-01 <==\n";
  Result<std::vector<CondaPackage>> got = ReadCondaMeta(prefix.string());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].name, "zlib");
  EXPECT_EQ((*got)[0].channel, "pkgs/main");
  EXPECT_EQ((*got)[0].md5, "333e31fee8eae8cf26d9d2d8c4a1e02f");
  EXPECT_EQ(ReadCondaMeta((prefix / "nope").string()).status().code(), StatusCode::kNotFound);
  EXPECT_THAT(CondaTomlTables(*got), HasSubstr("[[tool.cairn.conda]]\nname = \"zlib\"\n"));
  fs::remove_all(prefix);
}

}  // namespace
}  // namespace cairn::env
