#include "env/pep440.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace cairn::env {
namespace {

Version V(std::string_view s) {
  Result<Version> v = Version::Parse(s);
  EXPECT_TRUE(v.ok()) << s << ": " << v.status().ToString();
  return v.ok() ? *v : Version();
}

bool In(std::string_view spec, std::string_view version,
        std::optional<bool> pre = std::nullopt) {
  Result<SpecifierSet> s = SpecifierSet::Parse(spec);
  EXPECT_TRUE(s.ok()) << spec << ": " << s.status().ToString();
  return s.ok() && s->Contains(V(version), pre);
}

TEST(Pep440Test, NormalisesEverySpelling) {
  // The specification's normalisation examples.
  const std::pair<const char*, const char*> cases[] = {
      {"1.0", "1.0"},          {"v1.0", "1.0"},         {"  1.0\n", "1.0"},
      {"1.1RC1", "1.1rc1"},    {"1.0a", "1.0a0"},       {"1.0alpha1", "1.0a1"},
      {"1.0-a.1", "1.0a1"},    {"1.0beta2", "1.0b2"},   {"1.0c1", "1.0rc1"},
      {"1.0pre1", "1.0rc1"},   {"1.0preview1", "1.0rc1"}, {"1.0-1", "1.0.post1"},
      {"1.0post", "1.0.post0"}, {"1.0.rev1", "1.0.post1"}, {"1.0r2", "1.0.post2"},
      {"1.0-dev", "1.0.dev0"}, {"1.0_dev_2", "1.0.dev2"}, {"1!2.0", "1!2.0"},
      {"0!1.0", "1.0"},        {"1.0+Ubuntu-1", "1.0+ubuntu.1"}, {"1.0+abc_5.x", "1.0+abc.5.x"},
      {"01.002", "1.2"},       {"1.0a1.post2.dev3", "1.0a1.post2.dev3"}, {"1.0-post-2", "1.0.post2"}};
  for (const auto& [in, out] : cases) EXPECT_EQ(V(in).ToString(), out) << in;
  for (const char* bad : {"", "1.0.", "a1.0", "1.0+", "1.0+a..b", "1..0", "1.0-post-2-3", "1 .0"}) {
    EXPECT_FALSE(Version::Parse(bad).ok()) << bad;
  }
}

TEST(Pep440Test, TheSpecificationsOrder) {
  // The ordering example of the specification, shuffled and sorted back.
  const std::vector<std::string> ordered = {
      "1.dev0", "1.0.dev456", "1.0a1", "1.0a2.dev456", "1.0a12.dev456", "1.0a12",
      "1.0b1.dev456", "1.0b2", "1.0b2.post345.dev456", "1.0b2.post345", "1.0rc1.dev456",
      "1.0rc1", "1.0", "1.0+abc.5", "1.0+abc.7", "1.0+5", "1.0.post456.dev34", "1.0.post456",
      "1.0.15", "1.1.dev1", "1!0.1"};
  std::vector<std::string> shuffled = ordered;
  std::mt19937 rng(7);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::sort(shuffled.begin(), shuffled.end(),
            [](const std::string& a, const std::string& b) { return V(a) < V(b); });
  EXPECT_EQ(shuffled, ordered);
  EXPECT_EQ(V("1.0"), V("1.0.0.0"));
  EXPECT_LT(V("1.0+abc"), V("1.0+1"));  // a number sorts after a string
  EXPECT_TRUE(V("1.0rc1").is_prerelease());
  EXPECT_TRUE(V("1.0.dev1").is_prerelease());
  EXPECT_FALSE(V("1.0.post1").is_prerelease());
  EXPECT_EQ(V("1!2.0rc1.post1+x").BaseVersion().ToString(), "1!2.0");
  EXPECT_EQ(V("2.0+x.1").Public().ToString(), "2.0");
}

TEST(Pep440Test, CompatibleRelease) {
  EXPECT_TRUE(In("~=2.2", "2.2"));
  EXPECT_TRUE(In("~=2.2", "2.9"));
  EXPECT_FALSE(In("~=2.2", "3.0"));
  EXPECT_FALSE(In("~=2.2", "2.1"));
  EXPECT_TRUE(In("~=1.4.5", "1.4.9"));
  EXPECT_FALSE(In("~=1.4.5", "1.5.0"));
  EXPECT_TRUE(In("~=2.2.post3", "2.2.post3"));
  EXPECT_TRUE(In("~=2.2.post3", "2.5"));
  EXPECT_FALSE(In("~=2.2.post3", "2.2"));
  EXPECT_TRUE(In("~=1.4.5a4", "1.4.5a4"));  // names a pre-release: allowed
  EXPECT_TRUE(In("~=1.4.5a4", "1.4.7"));
  EXPECT_FALSE(In("~=1.4.5a4", "1.5"));
  EXPECT_FALSE(Specifier::Parse("~=1").ok());
}

TEST(Pep440Test, VersionMatching) {
  EXPECT_TRUE(In("==1.1", "1.1.0"));
  EXPECT_FALSE(In("==1.1", "1.1.post1"));
  EXPECT_TRUE(In("==1.1.*", "1.1.post1"));
  EXPECT_TRUE(In("==1.1.*", "1.1.0"));
  EXPECT_FALSE(In("==1.1.*", "1.2"));
  EXPECT_TRUE(In("==1.1.*", "1.1a1", true));
  EXPECT_TRUE(In("==1.1", "1.1+local"));   // no local in the specifier: ignored
  EXPECT_FALSE(In("==1.1+other", "1.1+local"));
  EXPECT_TRUE(In("==1.1+local", "1.1+local"));
  EXPECT_FALSE(In("!=1.1.*", "1.1.5"));
  EXPECT_TRUE(In("!=1.1", "1.1.post1"));
  EXPECT_TRUE(In("===1.0+Foo", "1.0+foo"));
  EXPECT_FALSE(Specifier::Parse(">=1.0.*").ok());
  EXPECT_FALSE(Specifier::Parse(">=1.0+local").ok());
  EXPECT_FALSE(Specifier::Parse("1.0").ok());
  EXPECT_FALSE(Specifier::Parse(">=").ok());
}

TEST(Pep440Test, ExclusiveComparisons) {
  EXPECT_TRUE(In(">1.7", "1.7.1"));
  EXPECT_FALSE(In(">1.7", "1.7.post2"));    // not 1.7's post-releases
  EXPECT_TRUE(In(">1.7.post2", "1.7.post3"));
  EXPECT_FALSE(In(">1.7", "1.7+local"));
  EXPECT_TRUE(In("<2.0", "1.9"));
  EXPECT_FALSE(In("<2.0", "2.0rc1", true));   // not 2.0's pre-releases
  EXPECT_TRUE(In("<2.0rc2", "2.0rc1"));       // unless it names one
  EXPECT_TRUE(In("<=2.0", "2.0+local"));
  EXPECT_TRUE(In(">=1.0,<2.0,!=1.5", "1.4"));
  EXPECT_FALSE(In(">=1.0,<2.0,!=1.5", "1.5"));
}

TEST(Pep440Test, PreReleasesOnlyWhenAskedOrNamed) {
  EXPECT_FALSE(In(">=1.0", "2.0rc1"));
  EXPECT_TRUE(In(">=1.0", "2.0rc1", true));
  EXPECT_TRUE(In(">=2.0rc1", "2.0rc1"));
  EXPECT_TRUE(In(">=2.0rc1", "3.0b1"));  // a set naming one accepts pre-releases at all
  EXPECT_FALSE(In("", "1.0.dev1"));
  EXPECT_TRUE(In("", "1.0.dev1", true));
  EXPECT_FALSE(In(">=0", "1.0a1", false));
}

TEST(Pep440Test, SetsPrintCanonically) {
  EXPECT_EQ(SpecifierSet::Parse(" <2 , >=1.0 ")->ToString(), "<2,>=1.0");
  EXPECT_EQ(SpecifierSet::Parse("")->ToString(), "");
  EXPECT_EQ(SpecifierSet::Parse(">=1")->And(*SpecifierSet::Parse("<2,>=1")).ToString(), "<2,>=1");
  EXPECT_FALSE(SpecifierSet::Parse(">=1,,<2").ok());
}

TEST(Pep440Test, Names) {
  EXPECT_EQ(NormalizeName("Friendly-Bard"), "friendly-bard");
  EXPECT_EQ(NormalizeName("FRIENDLY_BARD"), "friendly-bard");
  EXPECT_EQ(NormalizeName("friendly.bard"), "friendly-bard");
  EXPECT_EQ(NormalizeName("FrIeNdLy-._.-bArD"), "friendly-bard");
  EXPECT_TRUE(IsValidName("zope.interface"));
  EXPECT_FALSE(IsValidName("-leading"));
  EXPECT_FALSE(IsValidName("trailing."));
  EXPECT_FALSE(IsValidName("sp ace"));
}

}  // namespace
}  // namespace cairn::env
