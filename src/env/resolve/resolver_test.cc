#include "env/resolve/resolver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace cairn::env {
namespace {

using ::testing::HasSubstr;

// Packages in memory: project → versions, each with its dependencies.
struct FakeRelease {
  std::string version;
  std::vector<std::string> requires_dist = {};
  std::string requires_python = {};
  int rank = 0;  // -1: no wheel for the target
};

class FakeProvider : public CandidateProvider {
 public:
  explicit FakeProvider(std::map<std::string, std::vector<FakeRelease>> index)
      : index_(std::move(index)) {}
  Result<std::vector<Candidate>> Candidates(const std::string& project) override {
    ++listed_[project];
    std::vector<Candidate> out;
    for (const FakeRelease& r : index_[project]) {
      Candidate c;
      c.project = project;
      c.version = *Version::Parse(r.version);
      c.filename = project + "-" + r.version + (r.rank < 0 ? "-cp311-cp311-win_amd64.whl"
                                                           : "-py3-none-any.whl");
      c.path = "/wheels/" + c.filename;
      c.rank = r.rank;
      out.push_back(c);
    }
    return out;
  }
  Result<CoreMetadata> Metadata(const Candidate& c) override {
    ++metadata_reads_;
    for (const FakeRelease& r : index_[c.project]) {
      if (*Version::Parse(r.version) == c.version) {
        CoreMetadata m;
        m.name = c.project;
        m.version = r.version;
        m.requires_dist = r.requires_dist;
        m.requires_python = r.requires_python;
        return m;
      }
    }
    return NotFound("no metadata");
  }
  std::map<std::string, int> listed_;
  int metadata_reads_ = 0;

 private:
  std::map<std::string, std::vector<FakeRelease>> index_;
};

Result<std::vector<ResolvedPackage>> ResolveAll(FakeProvider& provider,
                                                const std::vector<std::string>& requirements,
                                                bool pre = false) {
  ResolveOptions options;
  for (const std::string& r : requirements) options.requirements.push_back(*Requirement::Parse(r));
  options.markers = MarkerEnvironment::LinuxCPython("3.11.2", "x86_64");
  options.python = *Version::Parse("3.11.2");
  options.prereleases = pre;
  return Resolve(options, provider);
}

std::map<std::string, std::string> Versions(const std::vector<ResolvedPackage>& packages) {
  std::map<std::string, std::string> out;
  for (const ResolvedPackage& p : packages) out[p.candidate.project] = p.candidate.version.ToString();
  return out;
}

FakeProvider Backtracking() {
  return FakeProvider({
      {"alpha", {{"1.0", {"beta<1.5"}}, {"2.0", {"beta<2"}}}},
      {"beta", {{"1.0", {}}, {"1.5", {}}, {"2.0", {}}, {"2.1", {}}}},
      {"gamma", {{"1.0", {"beta>=1.5,<2"}}, {"2.0", {"beta>=2"}}}},
  });
}

TEST(ResolverTest, StepsBackToTheChoiceThatCausedTheConflict) {
  FakeProvider provider = Backtracking();
  auto got = ResolveAll(provider, {"alpha", "gamma"});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(Versions(*got), (std::map<std::string, std::string>{
                                {"alpha", "2.0"}, {"beta", "1.5"}, {"gamma", "1.0"}}));
  EXPECT_TRUE((*got)[0].requested);                  // alpha
  EXPECT_FALSE((*got)[1].requested);                 // beta
  EXPECT_EQ((*got)[0].dependencies, std::vector<std::string>{"beta"});
  for (const auto& [project, times] : provider.listed_) EXPECT_EQ(times, 1) << project;
}

TEST(ResolverTest, ExplainsAConflictAsChainsOfRequirements) {
  FakeProvider provider({
      {"app", {{"1.0", {"x", "y"}}}},
      {"x", {{"1.0", {"z==1"}}}},
      {"y", {{"1.0", {"z==2"}}}},
      {"z", {{"1.0", {}}, {"2.0", {}}}},
  });
  auto got = ResolveAll(provider, {"app"});
  ASSERT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  const std::string& why = got.status().message();
  EXPECT_THAT(why, HasSubstr("no version of z fits all of these requirements"));
  EXPECT_THAT(why, HasSubstr("z==1: required by x 1.0, required by app 1.0, required by app "
                             "(top level)"));
  EXPECT_THAT(why, HasSubstr("z==2: required by y 1.0, required by app 1.0"));
}

TEST(ResolverTest, ExtrasMarkersPythonAndPlatform) {
  FakeProvider provider({
      {"delta", {{"1.0", {"epsilon>=1; extra == 'fast'", "win-only; sys_platform == 'win32'",
                          "backport; python_version < '3.8'"}}}},
      {"epsilon", {{"1.0", {}}, {"1.1", {}}}},
      {"eta", {{"1.0", {}}, {"2.0", {}, ">=3.12"}}},
      {"iota", {{"1.0", {}}, {"2.0", {}, "", -1}}},
  });
  auto plain = ResolveAll(provider, {"delta", "eta", "iota"});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(Versions(*plain), (std::map<std::string, std::string>{
                                  {"delta", "1.0"}, {"eta", "1.0"}, {"iota", "1.0"}}));
  auto fast = ResolveAll(provider, {"delta[fast]"});
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  EXPECT_EQ(Versions(*fast), (std::map<std::string, std::string>{{"delta", "1.0"},
                                                                 {"epsilon", "1.1"}}));
  EXPECT_EQ((*fast)[0].dependencies, std::vector<std::string>{"epsilon"});
  auto none = ResolveAll(provider, {"iota==2.0"});
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("2.0 has no wheel for this platform"));
  auto old_python = ResolveAll(provider, {"eta>=2"});
  ASSERT_FALSE(old_python.ok());
  EXPECT_THAT(old_python.status().message(), HasSubstr("needs Python >=3.12"));
}

TEST(ResolverTest, PreReleasesOnlyWhenAllowedOrNamed) {
  FakeProvider provider({{"theta", {{"1.0", {}}, {"1.1", {}}, {"2.0rc1", {}}}},
                         {"only-pre", {{"0.1b1", {}}}}});
  EXPECT_EQ(Versions(*ResolveAll(provider, {"theta"}))["theta"], "1.1");
  EXPECT_EQ(Versions(*ResolveAll(provider, {"theta"}, true))["theta"], "2.0rc1");
  EXPECT_EQ(Versions(*ResolveAll(provider, {"theta>=2.0rc1"}))["theta"], "2.0rc1");
  EXPECT_EQ(Versions(*ResolveAll(provider, {"only-pre"}))["only-pre"], "0.1b1");
}

TEST(ResolverTest, DirectUrlsAreRefusedAndUnknownProjectsExplained) {
  FakeProvider provider({});
  EXPECT_EQ(ResolveAll(provider, {"x @ https://example.com/x.whl"}).status().code(),
            StatusCode::kInvalidArgument);
  auto missing = ResolveAll(provider, {"nothing-here"});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("no wheel of nothing-here in the sources"));
}

TEST(ResolverTest, ManyVersionsDoNotExplodeTheSearch) {
  // a needs b==N for its version N; b only has its newest version working with c; the search
  // must not try every a × b pair.
  std::map<std::string, std::vector<FakeRelease>> index;
  for (int i = 1; i <= 60; ++i) {
    index["a"].push_back({"1." + std::to_string(i), {"b==1." + std::to_string(i)}});
    index["b"].push_back({"1." + std::to_string(i), {i == 1 ? "c>=1" : "c>=2"}});
  }
  index["c"] = {{"1.0", {}}};
  FakeProvider provider(index);
  auto got = ResolveAll(provider, {"a"});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(Versions(*got)["a"], "1.1");
  EXPECT_LT(provider.metadata_reads_, 400);
}

}  // namespace
}  // namespace cairn::env
