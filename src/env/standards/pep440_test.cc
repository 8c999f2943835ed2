#include "env/standards/pep440.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace cairn::env {
namespace {

using ::testing::HasSubstr;

Version V(std::string_view s) {
  Result<Version> v = Version::Parse(s);
  EXPECT_TRUE(v.ok()) << s << ": " << v.status().ToString();
  return v.ok() ? *v : Version();
}

Specifier S(std::string_view s) {
  Result<Specifier> spec = Specifier::Parse(s);
  EXPECT_TRUE(spec.ok()) << s << ": " << spec.status().ToString();
  return spec.ok() ? *spec : Specifier();
}

SpecifierSet Set(std::string_view s) {
  Result<SpecifierSet> set = SpecifierSet::Parse(s);
  EXPECT_TRUE(set.ok()) << s << ": " << set.status().ToString();
  return set.ok() ? *set : SpecifierSet();
}

// Whether `version` satisfies the set `spec`, with pre-releases accepted as `pre` says.
bool In(std::string_view spec, std::string_view version, std::optional<bool> pre = std::nullopt) {
  return Set(spec).Contains(V(version), pre);
}

// The operator's own rule, pre-releases allowed: what the specification's tables show.
bool Matches(std::string_view spec, std::string_view version) { return In(spec, version, true); }

std::string Err(std::string_view version) {
  Result<Version> v = Version::Parse(version);
  EXPECT_FALSE(v.ok()) << version << " parsed as " << v->ToString();
  return v.ok() ? "" : v.status().message();
}

// A spread of versions around 1.x and 2.x for checks that compare two formulations.
std::vector<Version> Grid() {
  std::vector<Version> out;
  for (const char* s : {"0.9",     "1",        "1.0",       "1.0.0",          "1.0.dev1",
                        "1.0a1",   "1.0rc1",   "1.0+local", "1.0.post1",      "1.0.post1+l",
                        "1.1",     "1.1.dev0", "1.1a1",     "1.1.5",          "1.4",
                        "1.4.4",   "1.4.5a3",  "1.4.5a4",   "1.4.5a4.post1",  "1.4.5",
                        "1.4.5.1", "1.4.9",    "1.5",       "1.5.0a1",        "2",
                        "2.1",     "2.2",      "2.2.post3", "2.2.post3.dev1", "2.2.post4",
                        "2.2.0",   "2.2.1",    "2.3",       "2.9.9",          "3.0.dev0",
                        "3.0a1",   "3.0",      "1!1.0",     "1!2.2",          "2.2+x.1"}) {
    out.push_back(V(s));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Versions: parsing and normal form.

TEST(VersionTest, NormalisesEverySpellingTheSpecificationAllows) {
  const std::pair<const char*, const char*> cases[] = {
      // Case, integers, separators and alternative spellings (the "Normalization" section).
      {"1.1RC1", "1.1rc1"},
      {"00", "0"},
      {"09000", "9000"},
      {"1.0+foo0100", "1.0+foo0100"},
      {"1.1.a1", "1.1a1"},
      {"1.1-a1", "1.1a1"},
      {"1.0a.1", "1.0a1"},
      {"1.1alpha1", "1.1a1"},
      {"1.1beta2", "1.1b2"},
      {"1.1c3", "1.1rc3"},
      {"1.0pre1", "1.0rc1"},
      {"1.0preview1", "1.0rc1"},
      {"1.2a", "1.2a0"},
      {"1.2-post2", "1.2.post2"},
      {"1.2post2", "1.2.post2"},
      {"1.2.post-2", "1.2.post2"},
      {"1.0-r4", "1.0.post4"},
      {"1.0.rev3", "1.0.post3"},
      {"1.2.post", "1.2.post0"},
      {"1.0-1", "1.0.post1"},
      {"1.2-dev2", "1.2.dev2"},
      {"1.2dev2", "1.2.dev2"},
      {"1.2.dev", "1.2.dev0"},
      {"1.0_dev_2", "1.0.dev2"},
      {"1.0+ubuntu-1", "1.0+ubuntu.1"},
      {"1.0+abc_5.x", "1.0+abc.5.x"},
      {"1.0+Ubuntu.01", "1.0+ubuntu.1"},
      {"v1.0", "1.0"},
      {"V1.0", "1.0"},
      {"1.0\n", "1.0"},
      {" \t\n\r\f\v1.0 \t", "1.0"},
      // Epochs: 0 is implicit and not printed.
      {"1!2.0", "1!2.0"},
      {"0!1.0", "1.0"},
      // Every segment at once, in every spelling.
      {"V1!2.0.0-Preview-3_Rev_4-DEV-5+Local_Build", "1!2.0.0rc3.post4.dev5+local.build"},
      {"1.0a1.post2.dev3", "1.0a1.post2.dev3"},
      {"1.0rc1-1", "1.0rc1.post1"},
      {"1-1", "1.post1"},
      // What the specification's expression accepts once a separator is spent: "1.0a-" has an
      // optional separator after the label and no number.
      {"1.0a-", "1.0a0"},
      {"1.0a..post", "1.0a0.post0"},
      {"1.0-dev-1", "1.0.dev1"},
      {"1.0.9223372036854775807", "1.0.9223372036854775807"},
  };
  for (const auto& [in, out] : cases) {
    EXPECT_EQ(V(in).ToString(), out) << in;
    EXPECT_EQ(V(V(in).ToString()).ToString(), out) << "normal form of " << in << " re-parses";
  }
}

TEST(VersionTest, RejectsWhatIsNotAVersion) {
  for (const char* bad : {"",
                          "   ",
                          "french toast",
                          "1.0-",
                          "1.0.",
                          "1..0",
                          ".1",
                          "v",
                          "vv1.0",
                          "1!",
                          "!1.0",
                          "1!2!3",
                          "1.0+",
                          "1.0+a..b",
                          "1.0+-a",
                          "1.0+a-",
                          "1.0+ü",
                          "1 .0",
                          "1.0 a1",
                          "1.0a1a2",
                          "1.0a1-",
                          "1.0.post1.post2",
                          "1.0.dev1.post1",
                          "1.0.dev1a1",
                          "1.0-post-2-3",
                          "a1.0",
                          "1.0x",
                          "1,0",
                          "1.0\n1"}) {
    EXPECT_FALSE(Version::Parse(bad).ok()) << "'" << bad << "'";
  }
}

TEST(VersionTest, ErrorsNameTheTextAndThePosition) {
  EXPECT_EQ(Err("1.0x"), "invalid version '1.0x': unexpected 'x' at position 3");
  EXPECT_EQ(Err("  1.0+a..b"),
            "invalid version '  1.0+a..b': unexpected '.' at position 8; expected a letter or "
            "digit in the local label");
  EXPECT_EQ(Err("1.0-"), "invalid version '1.0-': unexpected '-' at position 3");
  EXPECT_EQ(Err(""), "invalid version '': it is empty");
  EXPECT_EQ(Err("1!"),
            "invalid version '1!': expected the release number after the epoch at the end");
  EXPECT_THAT(Err("1.0.9223372036854775808"),
              HasSubstr("the number '9223372036854775808' at position 4 is too large"));
}

// ---------------------------------------------------------------------------------------------
// Versions: order.

TEST(VersionTest, SortsTheSpecificationsExampleInItsOrder) {
  // "The following example covers many of the possible combinations", then an epoch.
  const std::vector<std::string> ordered = {"1.dev0",
                                            "1.0.dev456",
                                            "1.0a1",
                                            "1.0a2.dev456",
                                            "1.0a12.dev456",
                                            "1.0a12",
                                            "1.0b1.dev456",
                                            "1.0b2",
                                            "1.0b2.post345.dev456",
                                            "1.0b2.post345",
                                            "1.0rc1.dev456",
                                            "1.0rc1",
                                            "1.0",
                                            "1.0+abc.5",
                                            "1.0+abc.7",
                                            "1.0+5",
                                            "1.0.post456.dev34",
                                            "1.0.post456",
                                            "1.0.15",
                                            "1.1.dev1",
                                            "1!0.1"};
  for (size_t i = 0; i + 1 < ordered.size(); ++i) {
    EXPECT_LT(V(ordered[i]), V(ordered[i + 1])) << ordered[i] << " < " << ordered[i + 1];
    EXPECT_GT(V(ordered[i + 1]), V(ordered[i]));
    EXPECT_LT(V(ordered[i]).Compare(V(ordered[i + 1])), 0);
  }
  std::vector<std::string> shuffled = ordered;
  std::mt19937 rng(7);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::sort(shuffled.begin(), shuffled.end(),
            [](const std::string& a, const std::string& b) { return V(a) < V(b); });
  EXPECT_EQ(shuffled, ordered);
}

TEST(VersionTest, EpochsDateBasedReleasesAndZeroPadding) {
  // The "Version epochs" example: date-based versions, then semantic ones in epoch 1.
  const char* epochs[] = {"2013.10", "2014.04", "1!1.0", "1!1.1", "1!2.0"};
  for (size_t i = 0; i + 1 < std::size(epochs); ++i) EXPECT_LT(V(epochs[i]), V(epochs[i + 1]));
  // Numbers compare as numbers.
  EXPECT_LT(V("0.9.2"), V("0.9.10"));
  EXPECT_LT(V("1.0a2"), V("1.0a12"));
  // X.Y and X.Y.0 are the same release.
  EXPECT_EQ(V("1.0"), V("1.0.0"));
  EXPECT_EQ(V("1"), V("1.0.0.0"));
  EXPECT_EQ(V("1.0rc1"), V("1.0.0c1"));
  EXPECT_EQ(V("1.0.post0"), V("1.0-0"));
  EXPECT_NE(V("1.0"), V("1.0.post0"));
  EXPECT_NE(V("1.0"), V("1.0.dev0"));
  EXPECT_LT(V("1.0.0.1"), V("1.0.1"));
}

TEST(VersionTest, LocalLabelsComparePartByPart) {
  EXPECT_LT(V("1.0"), V("1.0+anything"));
  EXPECT_LT(V("1.0+abc"), V("1.0+abc.1"));  // more parts after an equal start
  EXPECT_LT(V("1.0+abc.1"), V("1.0+abd"));  // words as text
  EXPECT_LT(V("1.0+abd"), V("1.0+1"));      // a number after any word
  EXPECT_LT(V("1.0+9"), V("1.0+10"));       // numbers as numbers
  EXPECT_EQ(V("1.0+ABC"), V("1.0+abc"));    // case-insensitive
  EXPECT_EQ(V("1.0+01"), V("1.0+1"));       // integers normalised
  EXPECT_EQ(V("1.0+ubuntu-1"), V("1.0+ubuntu.1"));
  // Numbers too long for 64 bits still compare exactly.
  EXPECT_LT(V("1.0+99999999999999999999998"), V("1.0+99999999999999999999999"));
  EXPECT_LT(V("1.0+99999999999999999999999"), V("1.0+100000000000000000000000"));
  // A local label never lifts a version past the next public one.
  EXPECT_LT(V("1.0+zzz"), V("1.0.post0.dev0"));
}

TEST(VersionTest, ReportsItsParts) {
  const Version v = V("2!1.2.0rc3.post4.dev5+Local-7");
  EXPECT_EQ(v.epoch(), 2);
  EXPECT_EQ(v.release(), (std::vector<int64_t>{1, 2, 0}));
  ASSERT_TRUE(v.pre().has_value());
  EXPECT_EQ(v.pre()->kind, Version::PreKind::kCandidate);
  EXPECT_EQ(v.pre()->number, 3);
  EXPECT_EQ(v.post(), 4);
  EXPECT_EQ(v.dev(), 5);
  EXPECT_EQ(v.local(), "local.7");
  EXPECT_TRUE(v.is_prerelease());
  EXPECT_TRUE(v.is_postrelease());
  EXPECT_TRUE(v.is_devrelease());
  EXPECT_TRUE(v.has_local());
  EXPECT_EQ(v.Public().ToString(), "2!1.2.0rc3.post4.dev5");
  EXPECT_EQ(v.BaseVersion().ToString(), "2!1.2.0");

  EXPECT_TRUE(V("1.0.dev1").is_prerelease());  // dev releases count as pre-releases
  EXPECT_TRUE(V("1.0a1").is_prerelease());
  EXPECT_FALSE(V("1.0a1").is_devrelease());
  EXPECT_FALSE(V("1.0.post1").is_prerelease());
  EXPECT_TRUE(V("1.0.post1").is_postrelease());
  EXPECT_FALSE(V("1.0+local").is_prerelease());
  EXPECT_EQ(V("1.0").local(), "");
  EXPECT_FALSE(V("1.0").pre().has_value());
  EXPECT_EQ(Version().ToString(), "0");
  EXPECT_EQ(Version(), V("0.0"));
}

// ---------------------------------------------------------------------------------------------
// Specifiers: each operator's rules, with the specification's own examples.

TEST(SpecifierTest, CompatibleReleaseIsAtLeastAndSamePrefix) {
  // "~= 2.2" is ">= 2.2, == 2.*".
  EXPECT_TRUE(Matches("~=2.2", "2.2"));
  EXPECT_TRUE(Matches("~=2.2", "2.9.9"));
  EXPECT_FALSE(Matches("~=2.2", "2.1"));
  EXPECT_FALSE(Matches("~=2.2", "3.0"));
  // "~= 1.4.5" is ">= 1.4.5, == 1.4.*".
  EXPECT_TRUE(Matches("~=1.4.5", "1.4.9"));
  EXPECT_FALSE(Matches("~=1.4.5", "1.5.0"));
  EXPECT_FALSE(Matches("~=1.4.5", "1.4.4"));
  // A suffix is ignored for the prefix: "~= 2.2.post3" is ">= 2.2.post3, == 2.*".
  EXPECT_TRUE(Matches("~=2.2.post3", "2.2.post3"));
  EXPECT_TRUE(Matches("~=2.2.post3", "2.5"));
  EXPECT_FALSE(Matches("~=2.2.post3", "2.2"));
  EXPECT_FALSE(Matches("~=2.2.post3", "3.0"));
  // "~= 1.4.5a4" is ">= 1.4.5a4, == 1.4.*".
  EXPECT_TRUE(In("~=1.4.5a4", "1.4.5a4"));  // names a pre-release, so accepts them
  EXPECT_TRUE(In("~=1.4.5a4", "1.4.7"));
  EXPECT_FALSE(In("~=1.4.5a4", "1.4.5a3"));
  EXPECT_FALSE(In("~=1.4.5a4", "1.5"));
  // Trailing zeros narrow it: "~= 2.2.0" is ">= 2.2.0, == 2.2.*".
  EXPECT_TRUE(Matches("~=2.2.0", "2.2.9"));
  EXPECT_FALSE(Matches("~=2.2.0", "2.3"));
  EXPECT_TRUE(Matches("~=1.4.5.0", "1.4.5.7"));
  EXPECT_FALSE(Matches("~=1.4.5.0", "1.4.6"));
  // The "Examples" section.
  EXPECT_TRUE(Matches("~=3.1", "3.1"));
  EXPECT_TRUE(Matches("~=3.1", "3.99"));
  EXPECT_FALSE(Matches("~=3.1", "4.0"));
  EXPECT_TRUE(Matches("~=3.1.2", "3.1.2"));
  EXPECT_FALSE(Matches("~=3.1.2", "3.2.0"));
  EXPECT_TRUE(In("~=3.1a1", "3.1a1"));
  EXPECT_TRUE(In("~=3.1a1", "3.5"));
  EXPECT_FALSE(In("~=3.1a1", "4.0"));
  EXPECT_TRUE(In("~=3.1.0, != 3.1.3", "3.1.2"));
  EXPECT_FALSE(In("~=3.1.0, != 3.1.3", "3.1.3"));
  EXPECT_FALSE(In("~=3.1.0, != 3.1.3", "3.2.0"));
  // Epochs must agree; a local label of the candidate is ignored.
  EXPECT_TRUE(Matches("~=1!2.2", "1!2.3"));
  EXPECT_FALSE(Matches("~=1!2.2", "2.3"));
  EXPECT_FALSE(Matches("~=2.2", "1!2.3"));
  EXPECT_TRUE(Matches("~=2.2", "2.2+local"));

  // Exactly the pair of clauses it stands for, over a spread of versions.
  const std::pair<const char*, const char*> equivalent[] = {{"~=2.2", ">=2.2,==2.*"},
                                                            {"~=1.4.5", ">=1.4.5,==1.4.*"},
                                                            {"~=2.2.post3", ">=2.2.post3,==2.*"},
                                                            {"~=1.4.5a4", ">=1.4.5a4,==1.4.*"},
                                                            {"~=2.2.0", ">=2.2.0,==2.2.*"},
                                                            {"~=1.4.5.0", ">=1.4.5.0,==1.4.5.*"}};
  for (const auto& [compatible, pair] : equivalent) {
    for (const Version& v : Grid()) {
      EXPECT_EQ(Set(compatible).Contains(v, true), Set(pair).Contains(v, true))
          << compatible << " vs " << pair << " on " << v.ToString();
    }
  }
}

TEST(SpecifierTest, VersionMatchingIsStrictUnlessAPrefix) {
  // Given 1.1.post1.
  EXPECT_FALSE(Matches("==1.1", "1.1.post1"));
  EXPECT_TRUE(Matches("==1.1.post1", "1.1.post1"));
  EXPECT_TRUE(Matches("==1.1.*", "1.1.post1"));
  // Given 1.1a1: the pre-release has an implied "." before it.
  EXPECT_FALSE(Matches("==1.1", "1.1a1"));
  EXPECT_TRUE(Matches("==1.1a1", "1.1a1"));
  EXPECT_TRUE(In("==1.1.*", "1.1a1", true));  // "if pre-releases are requested"
  EXPECT_FALSE(In("==1.1.*", "1.1a1"));
  // Given 1.1.
  EXPECT_TRUE(Matches("==1.1", "1.1"));
  EXPECT_TRUE(Matches("==1.1.0", "1.1"));
  EXPECT_FALSE(Matches("==1.1.dev1", "1.1"));
  EXPECT_FALSE(Matches("==1.1a1", "1.1"));
  EXPECT_FALSE(Matches("==1.1.post1", "1.1"));
  EXPECT_TRUE(Matches("==1.1.*", "1.1"));
  // Prefixes: trailing release numbers, zero-padded, and nothing else.
  EXPECT_TRUE(Matches("==1.1.*", "1.1.7.3"));
  EXPECT_TRUE(Matches("==1.1.0.*", "1.1"));
  EXPECT_FALSE(Matches("==1.1.*", "1.10"));
  EXPECT_FALSE(Matches("==1.1.*", "1.2"));
  EXPECT_FALSE(Matches("==1.1.*", "1!1.1"));
  EXPECT_TRUE(Matches("==1!1.*", "1!1.5"));
  EXPECT_FALSE(Matches("==1!1.*", "1.5"));
  EXPECT_TRUE(Matches("==1.*", "1.0.dev1"));
  // A prefix into the pre- or post-release segment compares whole segments.
  EXPECT_TRUE(Matches("==1.1a1.*", "1.1a1"));
  EXPECT_TRUE(Matches("==1.1a1.*", "1.1a1.post2"));
  EXPECT_TRUE(Matches("==1.1a1.*", "1.1.0a1.dev3"));
  EXPECT_FALSE(Matches("==1.1a1.*", "1.1a10"));
  EXPECT_FALSE(Matches("==1.1a1.*", "1.1.1a1"));
  EXPECT_FALSE(Matches("==1.1a1.*", "1.1"));
  EXPECT_TRUE(Matches("==1.1.post1.*", "1.1.post1.dev2"));
  EXPECT_FALSE(Matches("==1.1.post1.*", "1.1.post10"));
  EXPECT_FALSE(Matches("==1.1.post1.*", "1.1a1.post1"));
  // Local labels: ignored unless the clause names one, then compared exactly (normalised).
  EXPECT_TRUE(Matches("==1.1", "1.1+ubuntu.1"));
  EXPECT_TRUE(Matches("==1.1.*", "1.1+ubuntu.1"));
  EXPECT_TRUE(Matches("==1.1+ubuntu.1", "1.1+ubuntu.1"));
  EXPECT_TRUE(Matches("==1.1+Ubuntu-1", "1.1.0+ubuntu.1"));
  EXPECT_FALSE(Matches("==1.1+ubuntu.1", "1.1"));
  EXPECT_FALSE(Matches("==1.1+ubuntu.1", "1.1+ubuntu.2"));
}

TEST(SpecifierTest, VersionExclusionInvertsMatching) {
  // Given 1.1.post1.
  EXPECT_TRUE(Matches("!=1.1", "1.1.post1"));
  EXPECT_FALSE(Matches("!=1.1.post1", "1.1.post1"));
  EXPECT_FALSE(Matches("!=1.1.*", "1.1.post1"));
  EXPECT_FALSE(Matches("!=1.1", "1.1.0+local"));
  EXPECT_TRUE(Matches("!=1.1+a", "1.1+b"));
  EXPECT_TRUE(Matches("!=1.1.*", "1.2"));
  for (const Version& v : Grid()) {
    for (const char* version : {"1.0", "1.1.*", "2.2+x.1", "1.4.5a4", "2.*"}) {
      const std::string is = std::string("==") + version;
      const std::string is_not = std::string("!=") + version;
      EXPECT_NE(S(is).Contains(v), S(is_not).Contains(v)) << version << " on " << v.ToString();
    }
  }
}

TEST(SpecifierTest, InclusiveOrderedComparisons) {
  EXPECT_TRUE(Matches(">=1.0", "1.0"));
  EXPECT_TRUE(Matches(">=1.0", "1.0.0+local"));
  EXPECT_TRUE(Matches(">=1.0", "1.0.post1"));
  EXPECT_FALSE(Matches(">=1.0", "1.0.dev1"));
  EXPECT_FALSE(Matches(">=1.0", "1.0rc1"));
  EXPECT_TRUE(Matches(">=1.0rc1", "1.0rc1.post1"));
  EXPECT_TRUE(Matches("<=2.0", "2.0"));
  EXPECT_TRUE(Matches("<=2.0", "2.0+local"));  // the candidate's label is ignored
  EXPECT_TRUE(Matches("<=2.0", "2.0rc1"));
  EXPECT_FALSE(Matches("<=2.0", "2.0.post1"));
  EXPECT_TRUE(Matches("<=2", "2.0.0"));
  EXPECT_FALSE(Matches(">=1!0.1", "2.0"));
}

TEST(SpecifierTest, ExclusiveOrderedComparisonsLeaveOutTheVersionsFamily) {
  // ">1.7 will allow 1.7.1 but not 1.7.0.post1"; ">1.7.post2 will allow 1.7.1 and 1.7.0.post3
  // but not 1.7.0".
  EXPECT_TRUE(Matches(">1.7", "1.7.1"));
  EXPECT_FALSE(Matches(">1.7", "1.7.0.post1"));
  EXPECT_FALSE(Matches(">1.7", "1.7"));
  EXPECT_TRUE(Matches(">1.7.post2", "1.7.1"));
  EXPECT_TRUE(Matches(">1.7.post2", "1.7.0.post3"));
  EXPECT_FALSE(Matches(">1.7.post2", "1.7.0"));
  EXPECT_FALSE(Matches(">1.7.post2", "1.7.post2"));
  // ">V MUST NOT match a local version of the specified version."
  EXPECT_FALSE(Matches(">1.7", "1.7+local"));
  EXPECT_FALSE(Matches(">1.7", "1.7.post1+local"));
  EXPECT_FALSE(Matches(">1.7.post2", "1.7.post2+local"));
  EXPECT_TRUE(Matches(">1.7", "1.7.1+local"));
  // The family is that of V itself: 1.7.post1 is a post-release of 1.7, not of 1.7rc1.
  EXPECT_TRUE(Matches(">1.7rc1", "1.7"));
  EXPECT_TRUE(Matches(">1.7rc1", "1.7.post1"));
  EXPECT_FALSE(Matches(">1.7rc1", "1.7rc1.post1"));
  EXPECT_FALSE(Matches(">1.7rc1", "1.7rc1+local"));
  EXPECT_TRUE(Matches(">1.7rc1", "1.7rc2"));
  EXPECT_FALSE(Matches(">1.0.dev1", "1.0.dev1+local"));
  EXPECT_TRUE(Matches(">1.0.dev1", "1.0.dev2"));
  EXPECT_TRUE(Matches(">1.0.dev1", "1.0.post1"));

  // "<V MUST NOT allow a pre-release of the specified version unless the specified version is
  // itself a pre-release."
  EXPECT_TRUE(Matches("<2.0", "1.9"));
  EXPECT_TRUE(Matches("<2.0", "1.9.post1+local"));
  EXPECT_FALSE(Matches("<2.0", "2.0rc1"));
  EXPECT_FALSE(Matches("<2.0", "2.0a1"));
  EXPECT_FALSE(Matches("<2.0", "2.0.dev1"));
  EXPECT_FALSE(Matches("<2.0", "2.0.0.dev0"));
  EXPECT_FALSE(Matches("<2.0", "2.0"));
  EXPECT_TRUE(Matches("<2.0", "1.9rc1"));  // a pre-release of another version
  EXPECT_TRUE(Matches("<2.0rc1", "2.0b1"));
  EXPECT_TRUE(Matches("<2.0rc1", "2.0.dev5"));
  EXPECT_FALSE(Matches("<2.0rc1", "2.0rc1"));
  EXPECT_FALSE(Matches("<2.0rc1", "2.0rc1+local"));
  // The pre-releases of 1.0.post1 are its dev releases; 1.0rc1 is a pre-release of 1.0.
  EXPECT_TRUE(Matches("<1.0.post1", "1.0"));
  EXPECT_TRUE(Matches("<1.0.post1", "1.0rc1"));
  EXPECT_TRUE(Matches("<1.0.post1", "1.0+local"));
  EXPECT_FALSE(Matches("<1.0.post1", "1.0.post1.dev0"));
  EXPECT_FALSE(Matches("<1.0.post1", "1.0.post1"));
  // Zero padding applies.
  EXPECT_FALSE(Matches("<2", "2.0.0rc1"));
  EXPECT_FALSE(Matches(">2", "2.0.0.post1"));
}

TEST(SpecifierTest, ArbitraryEqualityComparesText) {
  // "===1.0 ... would not match for a version 1.0+downstream1".
  EXPECT_TRUE(S("===1.0").Contains(V("1.0")));
  EXPECT_FALSE(S("===1.0").Contains(V("1.0+downstream1")));
  EXPECT_FALSE(S("===1.0").Contains(V("1.0.0")));     // no zero padding
  EXPECT_TRUE(S("===1.0RC1").Contains(V("1.0rc1")));  // ASCII letters without case
  EXPECT_FALSE(S("===foobar").Contains(V("1.0")));
  EXPECT_FALSE(S("===1.0.*").Contains(V("1.0.1")));  // no prefix matching
  EXPECT_EQ(S("=== foobar").ToString(), "===foobar");
  EXPECT_EQ(S("===FooBar").ToString(), "===FooBar");  // kept as written
  EXPECT_TRUE(In("===1.0a1", "1.0a1"));               // names a pre-release
  EXPECT_FALSE(In("===1.0a1", "1.0a1", false));
}

TEST(SpecifierTest, RejectsClausesTheSpecificationForbids) {
  const std::pair<const char*, const char*> cases[] = {
      {"1.0", "expected an operator"},
      {"", "it is empty"},
      {"=1.0", "expected an operator"},
      {">=", "expected a version after '>='"},
      {"===", "expected a version after '==='"},
      {"~=1", "~= needs at least two release numbers"},
      {"~=1.0.*", "a '.*' prefix match is allowed only after == and !="},
      {">=1.0.*", "a '.*' prefix match is allowed only after == and !="},
      {"==1.0.dev1.*", "cannot follow a dev release"},
      {"==1.0+foo1.*", "cannot follow a local label"},
      {">=1.0+local", "only == and != may name a local version"},
      {"~=1.0+local", "only == and != may name a local version"},
      {"<1.0+local", "only == and != may name a local version"},
      {"==1.0 .*", "unexpected ' ' in the version"},
      {"==1. 0", "unexpected ' ' in the version"},
      {">=1.0x", "invalid version '1.0x'"},
      {"===a b", "unexpected ' ' in the version"},
      {"==1.*.*", "invalid version '1.*'"},
  };
  for (const auto& [text, why] : cases) {
    Result<Specifier> s = Specifier::Parse(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_THAT(s.status().message(), HasSubstr(why)) << text;
    EXPECT_THAT(s.status().message(), HasSubstr("invalid version specifier")) << text;
  }
  // Whitespace after the operator and around the clause is fine.
  EXPECT_EQ(S("  >=  v1.0RC1 ").ToString(), ">=1.0rc1");
  EXPECT_EQ(S("== 1.1.*").ToString(), "==1.1.*");
  EXPECT_EQ(S("!=1.0+Ubuntu-1").ToString(), "!=1.0+ubuntu.1");
  EXPECT_EQ(S("~=2.2.0").ToString(), "~=2.2.0");  // trailing zeros matter for ~=, kept
  EXPECT_EQ(S("<2").op(), SpecOp::kLess);
  EXPECT_EQ(S("<=2").op(), SpecOp::kLessEqual);
  EXPECT_EQ(S("===2").op(), SpecOp::kArbitrary);
  EXPECT_TRUE(S("==2.*").is_prefix_match());
  EXPECT_EQ(S("==2.*").version().ToString(), "2");
}

// ---------------------------------------------------------------------------------------------
// Sets: pre-release policy, parsing, canonical text, intersection.

TEST(SpecifierSetTest, PreReleasesOnlyWhenAskedForOrNamed) {
  // Excluded by default, including dev releases; post-releases get no special treatment.
  EXPECT_FALSE(In(">=1.0", "2.0rc1"));
  EXPECT_FALSE(In(">=1.0", "1.1.dev1"));
  EXPECT_TRUE(In(">=1.0", "1.0.post1"));
  EXPECT_TRUE(In(">=1.0", "2.0rc1", true));
  EXPECT_FALSE(In(">=1.0", "2.0rc1", false));
  // A clause naming a pre-release lets the whole set accept pre-releases.
  EXPECT_TRUE(In(">=2.0rc1", "2.0rc1"));
  EXPECT_TRUE(In(">=2.0rc1", "3.0b1"));
  EXPECT_TRUE(In(">=1.0,<2.0rc1", "1.5a1"));
  EXPECT_TRUE(In("==1.0.dev3", "1.0.dev3"));
  EXPECT_TRUE(In("<=2.0a1", "1.0b1"));
  EXPECT_TRUE(In(">1.0a1", "1.0a2"));
  // ...but not "!=" (excluding a pre-release says nothing about wanting them), nor a
  // release-only prefix.
  EXPECT_FALSE(In("!=2.0rc1", "3.0a1"));
  EXPECT_TRUE(In("!=2.0rc1", "3.0a1", true));
  EXPECT_FALSE(In("==2.*", "2.1a1"));
  // An explicit false wins over a named pre-release.
  EXPECT_FALSE(In(">=2.0rc1", "2.0rc1", false));
  EXPECT_TRUE(In(">=2.0rc1", "2.0", false));
  // The empty set admits every final version, and pre-releases only when asked for.
  EXPECT_TRUE(In("", "0.0.1"));
  EXPECT_TRUE(In("", "1!99.post3+local"));
  EXPECT_FALSE(In("", "1.0.dev1"));
  EXPECT_TRUE(In("", "1.0.dev1", true));
  EXPECT_TRUE(Set(">=1,<2rc1").names_prerelease());
  EXPECT_FALSE(Set(">=1,!=2rc1").names_prerelease());
}

TEST(SpecifierSetTest, EveryClauseMustHold) {
  EXPECT_TRUE(In(">=1.0,<2.0,!=1.5", "1.4"));
  EXPECT_FALSE(In(">=1.0,<2.0,!=1.5", "1.5"));
  EXPECT_FALSE(In(">=1.0,<2.0,!=1.5", "2.0"));
  EXPECT_FALSE(In(">=1.0,<2.0,!=1.5", "0.9"));
  // The specification's introductory example shows the syntax; it holds nothing, since
  // ~=0.9 stops below 1.0 while >=1.0 starts there.
  for (const char* v : {"0.9.5", "1.0", "1.2", "1.3.5", "2.0"}) {
    EXPECT_FALSE(In("~= 0.9, >= 1.0, != 1.3.4.*, < 2.0", v)) << v;
  }
  const char* example = "~= 1.1, >= 1.2, != 1.3.4.*, < 2.0";
  EXPECT_TRUE(In(example, "1.2"));
  EXPECT_FALSE(In(example, "1.3.4.1"));
  EXPECT_TRUE(In(example, "1.3.5"));
  EXPECT_FALSE(In(example, "1.1.5"));
  EXPECT_FALSE(In(example, "2.0"));
  EXPECT_FALSE(In(">=2,<1", "1.5"));  // unsatisfiable sets hold nothing
}

TEST(SpecifierSetTest, PrintsCanonically) {
  EXPECT_EQ(Set(" <2 , >=1.0 ").ToString(), "<2,>=1.0");
  EXPECT_EQ(Set(">=1.0,<2").ToString(), Set("<2, >=1.0").ToString());
  EXPECT_EQ(Set(">= 1.0RC1, >=1.0rc1, >=v1.0c1").ToString(), ">=1.0rc1");  // one clause
  EXPECT_EQ(Set("~=1.2,===weird,==1.*,!=1.5.*").ToString(), "!=1.5.*,==1.*,===weird,~=1.2");
  EXPECT_EQ(Set("").ToString(), "");
  EXPECT_EQ(Set(" \t").ToString(), "");
  EXPECT_TRUE(Set("").empty());
  EXPECT_FALSE(Set(">=1").empty());
  EXPECT_EQ(Set(">=3,").ToString(), ">=3");  // one trailing comma, as PEP 508 allows
  EXPECT_EQ(Set(">=1,<2,>=1").specifiers().size(), 2u);
  // The canonical text parses back to the same set.
  for (const char* text : {"~=1.4.5a4, !=1.4.7", "==1.*,!=1.0.post1", "<3,>1!0.5"}) {
    EXPECT_EQ(Set(Set(text).ToString()).ToString(), Set(text).ToString()) << text;
  }
  EXPECT_EQ(Set("<2,>=1.0"), Set(">=1.0, <2").And(Set(">=1.0")));
  EXPECT_NE(Set("<2,>=1"), Set(">=1"));
}

TEST(SpecifierSetTest, RejectsMalformedLists) {
  for (const char* bad : {">=1,,<2", ",>=1", ",", ">=1,,", ">=1 <2", ">=1;", "foo", ">=1,bar"}) {
    Result<SpecifierSet> s = SpecifierSet::Parse(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_THAT(s.status().message(),
                HasSubstr("invalid version specifier set '" + std::string(bad) + "'"));
  }
  EXPECT_THAT(SpecifierSet::Parse(">=1,,<2").status().message(),
              HasSubstr("expected a clause at position 4"));
  EXPECT_THAT(SpecifierSet::Parse(">=1,~=2").status().message(),
              HasSubstr("~= needs at least two release numbers"));
}

TEST(SpecifierSetTest, AndIsTheIntersection) {
  const SpecifierSet a = Set(">=1.0,!=1.4.5");
  const SpecifierSet b = Set("<2.0,~=1.4");
  const SpecifierSet both = a.And(b);
  EXPECT_EQ(both.ToString(), "!=1.4.5,<2.0,>=1.0,~=1.4");
  for (const Version& v : Grid()) {
    EXPECT_EQ(both.Contains(v, true), a.Contains(v, true) && b.Contains(v, true)) << v.ToString();
    EXPECT_EQ(both.Contains(v, false), a.Contains(v, false) && b.Contains(v, false))
        << v.ToString();
  }
  EXPECT_EQ(a.And(SpecifierSet()).ToString(), a.ToString());
  EXPECT_EQ(SpecifierSet().And(a).ToString(), a.ToString());
  EXPECT_EQ(a.And(a).ToString(), a.ToString());
  EXPECT_EQ(a.And(b).ToString(), b.And(a).ToString());
  // A pre-release named on either side admits pre-releases in the combination.
  EXPECT_TRUE(Set(">=1.0").And(Set("<2.0b1")).Contains(V("1.5rc1")));
  EXPECT_TRUE(SpecifierSet::Of({S("<2"), S(">=1"), S("<2")}) == Set(">=1,<2"));
}

// ---------------------------------------------------------------------------------------------
// Names.

TEST(NameTest, NormalisesPerPep503) {
  // The "Name normalization" page's examples all become "friendly-bard".
  for (const char* name : {"friendly-bard", "Friendly-Bard", "FRIENDLY-BARD", "friendly.bard",
                           "friendly_bard", "friendly--bard", "FrIeNdLy-._.-bArD"}) {
    EXPECT_EQ(NormalizeName(name), "friendly-bard") << name;
  }
  EXPECT_EQ(NormalizeName("Zope.Interface"), "zope-interface");
  EXPECT_EQ(NormalizeName("a__b..c--d"), "a-b-c-d");
  EXPECT_EQ(NormalizeName("numpy"), "numpy");
  EXPECT_EQ(NormalizeName("Foo-_.-Bar"), "foo-bar");
  EXPECT_EQ(NormalizeName("PyYAML"), "pyyaml");
}

TEST(NameTest, ValidNamesStartAndEndWithALetterOrDigit) {
  for (const char* good : {"A", "aa", "A.B-C_D", "zope.interface", "x1", "1x", "a-_.-b"}) {
    EXPECT_TRUE(IsValidName(good)) << good;
  }
  for (const char* bad :
       {"", "-leading", "trailing.", "_x", "x_", "sp ace", "na!me", "ünï", "a\n"}) {
    EXPECT_FALSE(IsValidName(bad)) << bad;
  }
}

}  // namespace
}  // namespace cairn::env
