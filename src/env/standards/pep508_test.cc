#include "env/standards/pep508.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace cairn::env {
namespace {

using ::testing::HasSubstr;

Requirement R(std::string_view s) {
  Result<Requirement> r = Requirement::Parse(s);
  EXPECT_TRUE(r.ok()) << s << ": " << r.status().ToString();
  return r.ok() ? *r : Requirement();
}

Marker M(std::string_view s) {
  Result<Marker> m = Marker::Parse(s);
  EXPECT_TRUE(m.ok()) << s << ": " << m.status().ToString();
  return m.ok() ? *m : Marker();
}

MarkerEnvironment Linux(std::string_view python = "3.11.2") {
  return MarkerEnvironment::LinuxCPython(python, "x86_64");
}

bool HoldsIn(std::string_view marker, const MarkerEnvironment& env,
             const std::set<std::string>& extras = {}) {
  Result<Marker> m = Marker::Parse(marker);
  EXPECT_TRUE(m.ok()) << marker << ": " << m.status().ToString();
  return m.ok() && m->Evaluate(env, extras);
}

// On CPython `python` for Linux x86_64.
bool Holds(std::string_view marker, const std::set<std::string>& extras = {},
           std::string_view python = "3.11.2") {
  return HoldsIn(marker, Linux(python), extras);
}

MarkerEnvironment WithOsName(const std::string& os_name) {
  MarkerEnvironment env = Linux();
  env.values["os_name"] = os_name;
  return env;
}

std::string ReqError(std::string_view text) {
  Result<Requirement> r = Requirement::Parse(text);
  EXPECT_FALSE(r.ok()) << "'" << text << "' parsed as " << r->ToString();
  return r.ok() ? "" : r.status().message();
}

std::string MarkerError(std::string_view text) {
  Result<Marker> m = Marker::Parse(text);
  EXPECT_FALSE(m.ok()) << "'" << text << "' parsed as " << m->ToString();
  return m.ok() ? "" : m.status().message();
}

// ---------------------------------------------------------------------------------------------
// Requirements.

TEST(RequirementTest, ParsesTheTestStringsOfTheSpecificationsGrammar) {
  for (const char* name : {"A", "A.B-C_D", "aa", "name"}) {
    const Requirement r = R(name);
    EXPECT_EQ(r.name, name);
    EXPECT_TRUE(r.extras.empty());
    EXPECT_TRUE(r.specifier.empty());
    EXPECT_EQ(r.url, "");
    EXPECT_FALSE(r.marker.has_value());
  }
  EXPECT_EQ(R("name<=1").specifier.ToString(), "<=1");
  EXPECT_EQ(R("name>=3").specifier.ToString(), ">=3");
  EXPECT_EQ(R("name>=3,").specifier.ToString(), ">=3");  // the trailing comma of 2024
  EXPECT_EQ(R("name>=3,<2").specifier.ToString(), "<2,>=3");

  const Requirement url = R("name@http://foo.com");
  EXPECT_EQ(url.name, "name");
  EXPECT_EQ(url.url, "http://foo.com");
  EXPECT_TRUE(url.specifier.empty());

  const Requirement full = R("name [fred,bar] @ http://foo.com ; python_version=='2.7'");
  EXPECT_EQ(full.extras, (std::set<std::string>{"bar", "fred"}));
  EXPECT_EQ(full.url, "http://foo.com");
  ASSERT_TRUE(full.marker.has_value());
  EXPECT_EQ(full.marker->ToString(), "python_version == \"2.7\"");
  EXPECT_FALSE(full.marker->Evaluate(Linux()));
  EXPECT_TRUE(full.marker->Evaluate(Linux("2.7.18")));

  const Requirement quux = R("name[quux, strange];python_version<'2.7' and platform_version=='2'");
  EXPECT_EQ(quux.extras, (std::set<std::string>{"quux", "strange"}));
  ASSERT_TRUE(quux.marker.has_value());
  EXPECT_EQ(quux.marker->ToString(), "python_version < \"2.7\" and platform_version == \"2\"");

  const Requirement either = R("name; os_name=='a' or os_name=='b'");
  ASSERT_TRUE(either.marker.has_value());
  EXPECT_TRUE(either.marker->Evaluate(WithOsName("a")));
  EXPECT_TRUE(either.marker->Evaluate(WithOsName("b")));
  EXPECT_FALSE(either.marker->Evaluate(WithOsName("c")));

  // "Should parse as (a and b) or c": true for c alone.
  const Marker and_or = *R("name; os_name=='a' and os_name=='b' or os_name=='c'").marker;
  EXPECT_TRUE(and_or.Evaluate(WithOsName("c")));
  EXPECT_FALSE(and_or.Evaluate(WithOsName("a")));
  // "Overriding precedence -> a and (b or c)": never true for one os_name.
  const Marker and_paren = *R("name; os_name=='a' and (os_name=='b' or os_name=='c')").marker;
  EXPECT_FALSE(and_paren.Evaluate(WithOsName("c")));
  EXPECT_FALSE(and_paren.Evaluate(WithOsName("a")));
  // "should parse as a or (b and c)": true for a alone.
  const Marker or_and = *R("name; os_name=='a' or os_name=='b' and os_name=='c'").marker;
  EXPECT_TRUE(or_and.Evaluate(WithOsName("a")));
  EXPECT_FALSE(or_and.Evaluate(WithOsName("c")));
  // "Overriding precedence -> (a or b) and c": never true for one os_name.
  const Marker paren_and = *R("name; (os_name=='a' or os_name=='b') and os_name=='c'").marker;
  EXPECT_FALSE(paren_and.Evaluate(WithOsName("a")));
  EXPECT_FALSE(paren_and.Evaluate(WithOsName("c")));
}

TEST(RequirementTest, ParsesTheSpecificationsExamples) {
  const Requirement requests =
      R("requests [security,tests] >= 2.8.1, == 2.8.* ; python_version < \"2.7\"");
  EXPECT_EQ(requests.name, "requests");
  EXPECT_EQ(requests.extras, (std::set<std::string>{"security", "tests"}));
  EXPECT_EQ(requests.specifier.ToString(), "==2.8.*,>=2.8.1");
  EXPECT_TRUE(requests.specifier.Contains(*Version::Parse("2.8.5")));
  EXPECT_FALSE(requests.specifier.Contains(*Version::Parse("2.9")));
  ASSERT_TRUE(requests.marker.has_value());
  EXPECT_FALSE(requests.marker->Evaluate(Linux()));

  const Requirement pip = R(
      "pip @ https://github.com/pypa/pip/archive/1.3.1.zip#sha1=da9234ee9982d4bbb3c72346a6de940a148"
      "ea686");
  EXPECT_EQ(pip.url,
            "https://github.com/pypa/pip/archive/1.3.1.zip#sha1=da9234ee9982d4bbb3c72346a6de940a148"
            "ea686");
  EXPECT_FALSE(pip.marker.has_value());

  const Requirement argparse = R("argparse;python_version<\"2.7\"");
  EXPECT_EQ(argparse.name, "argparse");
  EXPECT_TRUE(argparse.marker.has_value());

  // The direct references of the version specifiers page.
  for (const char* url :
       {"file:///localbuilds/pip-1.3.1.zip", "file:///localbuilds/pip-1.3.1-py33-none-any.whl",
        "git+https://github.com/pypa/pip.git@7921be1537eac1e97bc40179a57f0349c2aee67d",
        "git+https://github.com/pypa/pip.git@1.3.1#7921be1537eac1e97bc40179a57f0349c2aee67d"}) {
    EXPECT_EQ(R(std::string("pip @ ") + url).url, url);
  }
}

TEST(RequirementTest, AcceptsTheGrammarsOptionalParts) {
  // The version specifier in parentheses (PEP 345 style), whitespace and tabs everywhere.
  EXPECT_EQ(R("name (>=1.0, <2)").specifier.ToString(), "<2,>=1.0");
  EXPECT_EQ(R("name(>=1.0)").specifier.ToString(), ">=1.0");
  EXPECT_EQ(R("name ( >= 1.0 , )").specifier.ToString(), ">=1.0");
  EXPECT_TRUE(R("name ()").specifier.empty());
  const Requirement spaced = R(" \tname \t[ a , B_c ]\t>= 1.0 \t, < 2 \t;\tos_name == 'posix' \t");
  EXPECT_EQ(spaced.name, "name");
  EXPECT_EQ(spaced.extras, (std::set<std::string>{"a", "b-c"}));
  EXPECT_EQ(spaced.specifier.ToString(), "<2,>=1.0");
  EXPECT_EQ(spaced.marker->ToString(), "os_name == \"posix\"");
  // Empty extras, extras normalised, the name kept as written.
  EXPECT_TRUE(R("name[]").extras.empty());
  const Requirement zope = R("Zope.Interface[Foo_Bar,foo-bar,TESTS]==5.*");
  EXPECT_EQ(zope.name, "Zope.Interface");
  EXPECT_EQ(zope.extras, (std::set<std::string>{"foo-bar", "tests"}));
  // Every operator, a "v" prefix, a local label with ==, arbitrary equality.
  EXPECT_EQ(R("name~=1.4.2,!=1.4.5,>1,<3,<=2.9,>=1.4").specifier.specifiers().size(), 6u);
  EXPECT_EQ(R("name==v1.0+Ubuntu-1").specifier.ToString(), "==1.0+ubuntu.1");
  EXPECT_EQ(R("name===1.0-weird;os_name=='posix'").specifier.ToString(), "===1.0-weird");
  EXPECT_EQ(R("name (===foo)").specifier.ToString(), "===foo") << "')' ends '==='";
  // A URL runs to the next whitespace; a ";" touching it is part of it.
  const Requirement touching = R("name @ http://x.org/a.whl;os_name=='a'");
  EXPECT_EQ(touching.url, "http://x.org/a.whl;os_name=='a'");
  EXPECT_FALSE(touching.marker.has_value());
  const Requirement marked = R("name @ http://x.org/a.whl\t; os_name=='a'  ");
  EXPECT_EQ(marked.url, "http://x.org/a.whl");
  ASSERT_TRUE(marked.marker.has_value());
  EXPECT_EQ(R("name[x]@ http://x.org/a.whl ").url, "http://x.org/a.whl");
}

TEST(RequirementTest, ErrorsNameTheTextWhatIsWrongAndWhere) {
  EXPECT_EQ(ReqError("foo>="),
            "invalid requirement 'foo>=': expected a version after '>=' at "
            "position 5");
  const std::pair<const char*, const char*> cases[] = {
      {"", "expected a project name at position 0"},
      {">=1", "expected a project name at position 0"},
      {"name-", "'name-' must start and end with a letter or digit at position 0"},
      {"_name", "'_name' must start and end with a letter or digit at position 0"},
      {"name[", "expected an extra name at position 5"},
      {"name[a", "expected ']' at position 6 to close the '[' at position 4"},
      {"name[a b]", "expected ',' or ']' in the extras at position 7"},
      {"name[a,]", "expected an extra name at position 7"},
      {"name[a.]", "'a.' must start and end with a letter or digit at position 5"},
      {"name>=1.0 extra",
       "expected ',', ';' or the end after the version specifier at position 10"},
      {"name # comment", "expected a version specifier, '@', ';' or the end at position 5"},
      {"name[a]extra", "expected a version specifier, '@', ';' or the end at position 7"},
      {"name==1.0\n", "expected ',', ';' or the end after the version specifier at position 9"},
      {"name (>=1.0", "expected ')' at position 11 to close the '(' at position 5"},
      {"name>=1.0,,<2", "expected a version operator after ',' at position 10"},
      {"name>=1.0 <2", "expected ',', ';' or the end after the version specifier at position 10"},
      {"name=1.0", "expected a version specifier, '@', ';' or the end at position 4"},
      {"name>=1.0+local", "only == and != may name a local version at position 4"},
      {"name>=1.*", "a '.*' prefix match is allowed only after == and != at position 4"},
      {"name~=1", "~= needs at least two release numbers (~=2.2, not ~=2) at position 4"},
      {"name==1.0x", "invalid version '1.0x'"},
      {"name===", "expected a version after '===' at position 7"},
      {"name @", "expected a URL after '@' at position 6"},
      {"name @ http://x.org/a.whl extra", "expected ';' and a marker after the URL at position 26"},
      {"name @ http://x.org/a.whl; os_name=='a'",
       "expected ';' and a marker after the URL at "
       "position 27"},
      {"name>=1 @ http://x.org", "expected ',', ';' or the end after the version specifier"},
      {"name;", "expected a marker variable or a quoted string at position 5"},
      {"name; bogus == '1'", "unknown marker variable 'bogus' at position 6"},
      {"name; os_name ==", "expected a marker variable or a quoted string at position 16"},
      {"name; (os_name == 'a'", "expected ')' at position 21 to close the '(' at position 6"},
  };
  for (const auto& [text, why] : cases) {
    const std::string message = ReqError(text);
    EXPECT_THAT(message, HasSubstr("invalid requirement '" + std::string(text) + "': ")) << text;
    EXPECT_THAT(message, HasSubstr(why)) << text;
  }
}

TEST(RequirementTest, PrintsCanonicallyAndRoundTrips) {
  EXPECT_EQ(R("Requests[Socks] >= 2.31 ; sys_platform == 'linux'").ToString(),
            "Requests[socks]>=2.31; sys_platform == \"linux\"");
  EXPECT_EQ(R("name [fred,bar] @ http://foo.com ; python_version=='2.7'").ToString(),
            "name[bar,fred] @ http://foo.com ; python_version == \"2.7\"");
  EXPECT_EQ(R("name (>=1.0, <2)").ToString(), "name<2,>=1.0");
  EXPECT_EQ(R("name@http://foo.com").ToString(), "name @ http://foo.com");
  EXPECT_EQ(R("A").ToString(), "A");
  EXPECT_EQ(R("name[b,a]").ToString(), "name[a,b]");
  for (const char* text :
       {"requests [security,tests] >= 2.8.1, == 2.8.* ; python_version < \"2.7\"",
        "name[quux, strange];python_version<'2.7' and platform_version=='2'",
        "pip @ file:///localbuilds/pip-1.3.1.zip ; os_name == 'posix' or extra == 'X'",
        "torch>=2.1,!=2.1.1; (sys_platform == 'linux' or sys_platform == 'darwin') and "
        "platform_machine in 'x86_64 aarch64'",
        "x===Weird-Version"}) {
    const Requirement once = R(text);
    const Requirement twice = R(once.ToString());
    EXPECT_EQ(twice.ToString(), once.ToString()) << text;
    EXPECT_EQ(twice.name, once.name);
    EXPECT_EQ(twice.extras, once.extras);
    EXPECT_EQ(twice.specifier, once.specifier);
    EXPECT_EQ(twice.url, once.url);
    EXPECT_EQ(twice.marker.has_value(), once.marker.has_value());
  }
}

// ---------------------------------------------------------------------------------------------
// Markers: evaluation.

TEST(MarkerTest, VersionVariablesCompareAsVersions) {
  EXPECT_TRUE(Holds("python_version > '3.9'"));  // as strings "3.11" < "3.9"
  EXPECT_TRUE(Holds("python_version >= '3.8'"));
  EXPECT_FALSE(Holds("python_version < '3.8'"));
  EXPECT_TRUE(Holds("'3.8' <= python_version"));  // the variable on the right
  EXPECT_FALSE(Holds("'3.12' <= python_version"));
  EXPECT_TRUE(Holds("python_version == '3.11'"));
  EXPECT_TRUE(Holds("python_version == '3.11.0'"));  // zero padding
  EXPECT_TRUE(Holds("python_version == '3.*'"));
  EXPECT_FALSE(Holds("python_version != '3.11.*'"));
  EXPECT_TRUE(Holds("python_version ~= '3.1'"));
  EXPECT_TRUE(Holds("python_full_version >= '3.11.1'"));
  EXPECT_FALSE(Holds("python_full_version >= '3.11.1'", {}, "3.11.0"));
  EXPECT_TRUE(Holds("python_full_version ~= '3.11.0'"));
  EXPECT_FALSE(Holds("python_full_version ~= '3.10.0'"));
  EXPECT_TRUE(Holds("implementation_version == '3.11.2'"));
  EXPECT_TRUE(Holds("python_full_version === '3.11.2'"));
  EXPECT_FALSE(Holds("python_full_version === '3.11.2.0'"));  // === compares text
  // A pre-release interpreter: marker comparisons accept pre-releases.
  EXPECT_FALSE(Holds("python_full_version >= '3.13'", {}, "3.13.0rc1"));
  EXPECT_TRUE(Holds("python_full_version >= '3.13.0rc1'", {}, "3.13.0rc1"));
  // Nor is it below 3.13: "<V" leaves out V's own pre-releases (pypa/packaging agrees).
  EXPECT_FALSE(Holds("python_full_version < '3.13'", {}, "3.13.0rc1"));
  EXPECT_TRUE(Holds("python_full_version < '3.13.0rc2'", {}, "3.13.0rc1"));
  EXPECT_TRUE(Holds("python_version >= '3.13'", {}, "3.13.0rc1"));
  // "in" is a substring test even on version variables.
  EXPECT_TRUE(Holds("python_version in '2.7 3.11'"));
  EXPECT_TRUE(Holds("python_version not in '3.1'"));
  EXPECT_TRUE(Holds("'3.1' in python_version"));
}

TEST(MarkerTest, OtherComparisonsAreOnStrings) {
  EXPECT_TRUE(Holds("sys_platform == 'linux'"));
  EXPECT_FALSE(Holds("sys_platform == 'Linux'"));  // case matters
  EXPECT_FALSE(Holds("sys_platform == 'win32'"));
  EXPECT_TRUE(Holds("platform_system != 'Windows'"));
  EXPECT_TRUE(Holds("platform_machine in 'x86_64 aarch64'"));
  EXPECT_TRUE(Holds("'x86' in platform_machine"));
  EXPECT_TRUE(Holds("'arm' not in platform_machine"));
  EXPECT_TRUE(
      Holds("implementation_name == 'cpython' and platform_python_implementation == "
            "'CPython'"));
  EXPECT_TRUE(Holds("os_name == 'posix'"));
  // No order between strings: < and > are false, <= and >= are ==.
  EXPECT_FALSE(Holds("os_name < 'z'"));
  EXPECT_FALSE(Holds("os_name > 'a'"));
  EXPECT_TRUE(Holds("os_name <= 'posix'"));
  EXPECT_TRUE(Holds("os_name >= 'posix'"));
  EXPECT_FALSE(Holds("os_name >= 'a'"));
  // Version-like strings in string variables are not versions.
  MarkerEnvironment env = Linux();
  env.values["platform_machine"] = "1.10";
  EXPECT_FALSE(HoldsIn("platform_machine > '1.9'", env));
  EXPECT_FALSE(HoldsIn("platform_machine == '1.10.0'", env));
}

TEST(MarkerTest, PlatformReleaseIsAVersionOnlyWhenItParsesAsOne) {
  MarkerEnvironment env = Linux();
  env.values["platform_release"] = "5.15.0-91-generic";
  EXPECT_FALSE(HoldsIn("platform_release >= '5.0'", env));
  EXPECT_FALSE(HoldsIn("platform_release < '5.0'", env));
  EXPECT_TRUE(HoldsIn("platform_release == '5.15.0-91-generic'", env));
  EXPECT_TRUE(HoldsIn("'generic' in platform_release", env));
  env.values["platform_release"] = "6.1.0";
  EXPECT_TRUE(HoldsIn("platform_release >= '5.4'", env));
  EXPECT_FALSE(HoldsIn("platform_release < '5.4'", env));
}

TEST(MarkerTest, MissingValuesAndUntaggedPythonBuilds) {
  const MarkerEnvironment empty;
  EXPECT_TRUE(HoldsIn("python_version < '1'", empty));  // versions default to "0"
  EXPECT_TRUE(HoldsIn("platform_release == '0'", empty));
  EXPECT_TRUE(HoldsIn("os_name == ''", empty));  // other variables to ""
  EXPECT_FALSE(HoldsIn("sys_platform == 'linux'", empty));
  // Python built from an untagged checkout reports "3.14.0+".
  MarkerEnvironment env = Linux();
  env.values["python_full_version"] = "3.14.0+";
  EXPECT_TRUE(HoldsIn("python_full_version >= '3.14'", env));
  EXPECT_FALSE(HoldsIn("python_full_version < '3.14'", env));
}

TEST(MarkerTest, OldVariableSpellings) {
  EXPECT_TRUE(Holds("os.name == 'posix'"));
  EXPECT_TRUE(Holds("sys.platform == 'linux'"));
  EXPECT_TRUE(Holds("platform.machine == 'x86_64'"));
  EXPECT_TRUE(Holds("python_implementation == 'CPython'"));
  EXPECT_TRUE(Holds("platform.python_implementation == 'CPython'"));
  EXPECT_EQ(M("os.name == 'posix' and platform.version == '1'").ToString(),
            "os_name == \"posix\" and platform_version == \"1\"");
  EXPECT_EQ(M("python_implementation == 'PyPy'").ToString(),
            "platform_python_implementation == \"PyPy\"");
}

TEST(MarkerTest, ExtraTakesEachRequestedExtraInTurn) {
  EXPECT_FALSE(Holds("extra == 'gpu'"));
  EXPECT_TRUE(Holds("extra == 'gpu'", {"gpu"}));
  EXPECT_TRUE(Holds("extra == 'gpu'", {"GPU"}));
  EXPECT_TRUE(Holds("'gpu' == extra", {"gpu"}));
  EXPECT_TRUE(Holds("extra == 'GPU_Support'", {"gpu.support"}));  // names compare normalised
  EXPECT_TRUE(Holds("extra == 'b'", {"a", "b"}));
  EXPECT_FALSE(Holds("extra == 'c'", {"a", "b"}));
  EXPECT_TRUE(Holds("extra == ''"));  // with no extras `extra` is empty
  EXPECT_TRUE(Holds("extra != 'gpu'"));
  EXPECT_FALSE(Holds("extra != 'gpu'", {"gpu"}));
  EXPECT_TRUE(Holds("extra != 'gpu'", {"gpu", "cpu"}));  // holds for "cpu"
  EXPECT_FALSE(Holds("extra == 'win' and sys_platform == 'win32'", {"win"}));
  EXPECT_TRUE(Holds("extra == 'a' and extra != 'b'", {"a", "b"}));
  // The marker never mentions `extra`: extras change nothing.
  EXPECT_TRUE(Holds("sys_platform == 'linux'", {"gpu"}));
}

TEST(MarkerTest, SetVariablesOfLockFiles) {
  EXPECT_TRUE(Holds("'gpu' in extras", {"GPU"}));
  EXPECT_FALSE(Holds("'gpu' in extras"));
  EXPECT_TRUE(Holds("'gpu' not in extras", {"cpu"}));
  EXPECT_TRUE(Holds("'gpu' in extras and 'cpu' in extras", {"gpu", "cpu"}));
  MarkerEnvironment env = Linux();
  env.dependency_groups = {"Test_Suite"};
  EXPECT_TRUE(HoldsIn("'test-suite' in dependency_groups", env));
  EXPECT_FALSE(HoldsIn("'docs' in dependency_groups", env));
}

TEST(MarkerTest, AlwaysHoldsWhenEmpty) {
  const Marker none;
  EXPECT_TRUE(none.Evaluate(Linux()));
  EXPECT_TRUE(none.Evaluate(MarkerEnvironment{}, {"x"}));
  EXPECT_EQ(none.ToString(), "");
}

// ---------------------------------------------------------------------------------------------
// Markers: text.

TEST(MarkerTest, PrintsCanonically) {
  const std::pair<const char*, const char*> cases[] = {
      {"python_version<'3.8'", "python_version < \"3.8\""},
      {"'3.8' <= python_version", "\"3.8\" <= python_version"},
      {"os_name not  in\t'x'", "os_name not in \"x\""},
      {"extra == 'GPU_Support'", "extra == \"gpu-support\""},
      {"platform_version == 'a \"b\" c'", "platform_version == 'a \"b\" c'"},
      {"((os_name == 'a'))", "os_name == \"a\""},
      {"os_name=='a' and (os_name=='b' and os_name=='c')",
       "os_name == \"a\" and os_name == \"b\" and os_name == \"c\""},
      {"(os_name=='a' or os_name=='b') or os_name=='c'",
       "os_name == \"a\" or os_name == \"b\" or os_name == \"c\""},
      {"os_name=='a' or (os_name=='b' and os_name=='c')",
       "os_name == \"a\" or os_name == \"b\" and os_name == \"c\""},
      {"(os_name=='a' and os_name=='b') or os_name=='c'",
       "os_name == \"a\" and os_name == \"b\" or os_name == \"c\""},
      {"(os_name=='a' or os_name=='b') and os_name=='c'",
       "(os_name == \"a\" or os_name == \"b\") and os_name == \"c\""},
      {"os_name=='a'and(os_name=='b'or os_name=='c')",
       "os_name == \"a\" and (os_name == \"b\" or os_name == \"c\")"},
      {"'gpu' in extras", "\"gpu\" in extras"},
      {"python_version in'3.8 3.9'", "python_version in \"3.8 3.9\""},
  };
  for (const auto& [in, out] : cases) {
    EXPECT_EQ(M(in).ToString(), out) << in;
    EXPECT_EQ(M(M(in).ToString()).ToString(), out) << "re-parsed " << in;
  }
  EXPECT_TRUE(M("os_name == 'a'") == M("os_name==\"a\""));
}

TEST(MarkerTest, RejectsWhatCannotBeEvaluated) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "expected a marker variable or a quoted string at position 0"},
      {"os_name", "expected a marker operator"},
      {"os_name = 'a'", "expected a marker operator"},
      {"bogus == '1'", "unknown marker variable 'bogus' at position 0"},
      {"'a' == 'b'", "not two strings at position 0"},
      {"os_name == python_version", "not two variables at position 0"},
      {"os_name == 'a", "unterminated string at position 11"},
      {"os_name == 'a\\'b'", "backslash escapes are not part of marker strings at position 13"},
      {"os_name == 'a')", "unexpected ')' without a matching '(' at position 14"},
      {"(os_name == 'a'", "expected ')' at position 15 to close the '(' at position 0"},
      {"os_name == 'a' xor os_name == 'b'", "expected 'and', 'or' or the end at position 15"},
      {"os_name=='a'andos_name=='b'", "expected 'and', 'or' or the end at position 12"},
      {"os_name == 'a' and", "expected a marker variable or a quoted string at position 18"},
      {"os_name not'in' 'x'", "expected 'in' after 'not' at position 11"},
      {"os_name not 'x'", "expected 'in' after 'not'"},
      {"os_name ~= 'x'", "'~=' compares versions, and 'os_name' does not hold a version"},
      {"'x' === sys_platform", "'===' compares versions"},
      {"python_version ~= 'surprise'", "'surprise' is not a version for '~=' at position 18"},
      {"python_version ~= '3'", "'3' is not a version for '~='"},
      {"'x' == extras", "'extras' is a set: write \"name\" in extras at position 0"},
      {"extras in 'x'", "'extras' is a set"},
      {"dependency_groups == 'x'", "'dependency_groups' is a set"},
      {"os_name == 'a'\n", "expected 'and', 'or' or the end at position 14"},
  };
  for (const auto& [text, why] : cases) {
    const std::string message = MarkerError(text);
    EXPECT_THAT(message, HasSubstr("invalid marker '" + std::string(text) + "': ")) << text;
    EXPECT_THAT(message, HasSubstr(why)) << text;
  }
  // Inside a requirement, positions count from the start of the requirement.
  EXPECT_THAT(ReqError("name; os_name ~= 'x'"),
              HasSubstr("'~=' compares versions, and 'os_name' does not hold a version at "
                        "position 14"));
}

TEST(MarkerTest, RefusesParenthesesNestedTooDeeply) {
  auto nested = [](int depth) {
    return std::string(depth, '(') + "os_name == 'posix'" + std::string(depth, ')');
  };
  EXPECT_TRUE(HoldsIn(nested(64), Linux()));
  EXPECT_THAT(MarkerError(nested(65)), HasSubstr("parentheses nested too deeply at position 64"));
  EXPECT_FALSE(Marker::Parse(std::string(100000, '(')).ok());  // no stack overflow
}

// ---------------------------------------------------------------------------------------------

TEST(MarkerEnvironmentTest, LinuxCPythonFillsEveryVariable) {
  const MarkerEnvironment env = MarkerEnvironment::LinuxCPython("3.13.0rc1", "aarch64");
  const std::map<std::string, std::string> want = {{"os_name", "posix"},
                                                   {"sys_platform", "linux"},
                                                   {"platform_machine", "aarch64"},
                                                   {"platform_python_implementation", "CPython"},
                                                   {"platform_release", ""},
                                                   {"platform_system", "Linux"},
                                                   {"platform_version", ""},
                                                   {"python_version", "3.13"},
                                                   {"python_full_version", "3.13.0rc1"},
                                                   {"implementation_name", "cpython"},
                                                   {"implementation_version", "3.13.0rc1"}};
  EXPECT_EQ(env.values, want);
  EXPECT_EQ(MarkerEnvironment::LinuxCPython("3.10.12", "x86_64").values.at("python_version"),
            "3.10");
  EXPECT_EQ(MarkerEnvironment::LinuxCPython("3.11", "x86_64").values.at("python_version"), "3.11");
}

}  // namespace
}  // namespace cairn::env
