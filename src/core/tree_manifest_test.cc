#include "core/tree_manifest.h"

#include <gtest/gtest.h>

#include <string>

namespace cairn::core {
namespace {

TEST(TreeManifestTest, ParseRejectsMalformedManifests) {
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

TEST(TreeManifestTest, DiffListsAddedRemovedAndChangedFilesInPathOrder) {
  const std::string a(64, 'a'), b(64, 'b');
  std::vector<FileEntry> from = {{"keep", 1, kModeFile, a},
                                 {"mode", 1, kModeFile, a},
                                 {"old", 2, kModeFile, a},
                                 {"x/edit", 3, kModeFile, a}};
  std::vector<FileEntry> to = {{"keep", 1, kModeFile, a},
                               {"mode", 1, kModeExecutable, a},
                               {"new", 5, kModeFile, b},
                               {"x/edit", 4, kModeFile, b},
                               {"z", 1, kModeFile, a}};
  ManifestDiff d = DiffManifests(from, to);
  ASSERT_EQ(d.added.size(), 2u);
  EXPECT_EQ(d.added[0].path, "new");
  EXPECT_EQ(d.added[1].path, "z");
  ASSERT_EQ(d.removed.size(), 1u);
  EXPECT_EQ(d.removed[0].path, "old");
  ASSERT_EQ(d.changed.size(), 2u);
  EXPECT_EQ(d.changed[0].second.path, "mode");
  EXPECT_EQ(d.changed[1].first.size, 3);
  EXPECT_EQ(d.changed[1].second.size, 4);
  EXPECT_TRUE(DiffManifests(to, to).empty());
}

}  // namespace
}  // namespace cairn::core
