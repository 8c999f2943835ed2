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

TEST(TreeManifestTest, TheCanonicalFormReadsAsAnyOtherDoes) {
  // Manifests as ManifestJson writes them take a faster road; they must read the same, and a
  // bad one in that form must be refused with the same words.
  const std::string a(64, 'a'), b(64, 'b');
  const std::vector<FileEntry> entries = {{"a.txt", 3, kModeFile, a},
                                          {"bin/run", 0, kModeExecutable, b},
                                          {"link", 5, kModeSymlink, a},
                                          {"q\"uote\\d\n", 12345678901, kModeFile, b},
                                          {"sub.d/x", 7, kModeFile, a}};
  for (size_t n = 0; n <= entries.size(); ++n) {
    const std::vector<FileEntry> some(entries.begin(), entries.begin() + n);
    Result<std::vector<FileEntry>> read = ParseManifestJson(ManifestJson(some));
    ASSERT_TRUE(read.ok()) << read.status().message();
    EXPECT_EQ(*read, some);
  }
  auto canonical = [](const std::vector<std::string>& lines) {
    std::string out = "{\"cairn_manifest\":1,\"entries\":[\n";
    for (size_t i = 0; i < lines.size(); ++i)
      out += lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
    return out + "]}\n";
  };
  auto line = [&](const std::string& path, const std::string& size = "1",
                  const std::string& mode = "100644",
                  const std::string& sha = std::string(64, 'a')) {
    return "{\"path\":\"" + path + "\",\"size\":" + size + ",\"mode\":\"" + mode +
           "\",\"sha256\":\"" + sha + "\"}";
  };
  EXPECT_TRUE(ParseManifestJson(canonical({line("a"), line("b/c")})).ok());
  // Paths that share a start without one holding the other.
  EXPECT_TRUE(ParseManifestJson(canonical({line("a"), line("a!"), line("ab/c"), line("b")})).ok());
  EXPECT_TRUE(ParseManifestJson(canonical({line("a!"), line("a/b"), line("a0")})).ok());
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {canonical({line("b"), line("a")}), "sorted"},
      {canonical({line("a"), line("a")}), "sorted"},
      {canonical({line("/abs")}), "is absolute"},
      {canonical({line("a/../b")}), "'..'"},
      {canonical({line("")}), "is empty"},
      {canonical({line("a"), line("a/b")}), "listed as a file"},
      {canonical({line("a"), line("a!"), line("a!b"), line("a-b"), line("a/b")}),
       "\"a/b\" is inside \"a\""},
      {canonical({line("d/e"), line("d/e.txt"), line("d/e/f/g")}), "\"d/e/f/g\" is inside \"d/e\""},
      {canonical({line("a", "-1")}), "\"size\" must be"},
      {canonical({line("a", "01")}), "not valid JSON"},
      {canonical({line("a", "1", "100600")}), "\"mode\" must be"},
      {canonical({line("a", "1", "100644", std::string(64, 'A'))}), "lowercase hex"},
      {canonical({line("a", "1", "100644", std::string(63, 'a'))}), "lowercase hex"},
      {canonical({line("a")}) + "x", "not valid JSON"},
      {"{\"cairn_manifest\":1,\"entries\":[\n" + line("a") + ",\n]}\n", "not valid JSON"},
  };
  for (const Case& c : cases) {
    Result<std::vector<FileEntry>> r = ParseManifestJson(c.text);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << r.status().message() << " for " << c.text;
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
