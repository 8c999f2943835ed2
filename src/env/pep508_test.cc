#include "env/pep508.h"

#include <gtest/gtest.h>

namespace cairn::env {
namespace {

Requirement R(std::string_view s) {
  Result<Requirement> r = Requirement::Parse(s);
  EXPECT_TRUE(r.ok()) << s << ": " << r.status().ToString();
  return r.ok() ? *r : Requirement();
}

bool Holds(std::string_view marker, const std::set<std::string>& extras = {},
           std::string_view python = "3.11.2") {
  Result<Marker> m = Marker::Parse(marker);
  EXPECT_TRUE(m.ok()) << marker << ": " << m.status().ToString();
  return m.ok() && m->Evaluate(MarkerEnvironment::LinuxCPython(python, "x86_64"), extras);
}

TEST(Pep508Test, TheSpecificationsExamples) {
  // The examples of the specification's grammar section.
  Requirement a = R("A");
  EXPECT_EQ(a.name, "A");
  EXPECT_TRUE(a.specifier.empty());
  EXPECT_EQ(R("A.B-C_D").name, "A.B-C_D");
  EXPECT_EQ(R("aa").name, "aa");
  Requirement name = R("name");
  EXPECT_FALSE(name.marker.has_value());
  EXPECT_EQ(R("name<=1").specifier.ToString(), "<=1");
  EXPECT_EQ(R("name>=3").specifier.ToString(), ">=3");
  EXPECT_EQ(R("name>=3,").specifier.ToString(), ">=3");
  EXPECT_EQ(R("name>=3,<2").specifier.ToString(), "<2,>=3");
  Requirement url = R("name@http://foo.com");
  EXPECT_EQ(url.url, "http://foo.com");
  Requirement full = R("name [fred,bar] @ http://foo.com ; python_version=='2.7'");
  EXPECT_EQ(full.extras, (std::set<std::string>{"bar", "fred"}));
  EXPECT_EQ(full.url, "http://foo.com");
  ASSERT_TRUE(full.marker.has_value());
  EXPECT_EQ(full.marker->ToString(), "python_version == \"2.7\"");
  Requirement quux = R("name[quux, strange];python_version<'2.7' and platform_version=='2'");
  EXPECT_EQ(quux.extras, (std::set<std::string>{"quux", "strange"}));
  EXPECT_EQ(quux.marker->ToString(),
            "python_version < \"2.7\" and platform_version == \"2\"");
  Requirement space = R("name; os_name=='a' or os_name=='b'");
  EXPECT_EQ(space.marker->ToString(), "os_name == \"a\" or os_name == \"b\"");
  Requirement nested = R("name; os_name=='a' and os_name=='b' or os_name=='c'");
  EXPECT_EQ(nested.marker->ToString(), "os_name == \"a\" and os_name == \"b\" or os_name == \"c\"");
  Requirement paren = R("name; os_name=='a' and (os_name=='b' or os_name=='c')");
  EXPECT_EQ(paren.marker->ToString(), "os_name == \"a\" and (os_name == \"b\" or os_name == \"c\")");
  Requirement parens_spec = R("name (>=1.0, <2)");
  EXPECT_EQ(parens_spec.specifier.ToString(), "<2,>=1.0");
}

TEST(Pep508Test, PrintsBackAndRejectsMistakes) {
  EXPECT_EQ(R("Requests[Socks] >= 2.31 ; sys_platform == 'linux'").ToString(),
            "Requests[socks]>=2.31; sys_platform == \"linux\"");
  for (const char* bad : {"", ">=1", "name>=", "name[", "name[a b]", "name; bogus == '1'",
                          "name; os_name ==", "name @", "name==1.0 extra", "name; 'a' == 'b'",
                          "name; (os_name == 'a'"}) {
    EXPECT_FALSE(Requirement::Parse(bad).ok()) << bad;
  }
  EXPECT_NE(Requirement::Parse("name>=").status().message().find("invalid requirement 'name>='"),
            std::string::npos);
}

TEST(Pep508Test, MarkersForLinuxCPython311) {
  EXPECT_TRUE(Holds("sys_platform == 'linux'"));
  EXPECT_FALSE(Holds("sys_platform == 'win32'"));
  EXPECT_TRUE(Holds("python_version >= '3.8'"));
  EXPECT_FALSE(Holds("python_version < '3.8'"));
  EXPECT_TRUE(Holds("python_version > '3.9'"));   // versions, not strings: 3.11 > 3.9
  EXPECT_TRUE(Holds("'3.8' <= python_version"));
  EXPECT_TRUE(Holds("python_full_version >= '3.11.1'"));
  EXPECT_FALSE(Holds("python_full_version >= '3.11.1'", {}, "3.11.0"));
  EXPECT_TRUE(Holds("platform_machine in 'x86_64 aarch64'"));
  EXPECT_TRUE(Holds("'linux' in sys_platform"));
  EXPECT_TRUE(Holds("platform_system != 'Windows' and implementation_name == 'cpython'"));
  EXPECT_TRUE(Holds("os.name == 'posix'"));  // the old spelling
  EXPECT_TRUE(Holds("python_version ~= '3.1'"));
}

TEST(Pep508Test, Extras) {
  EXPECT_FALSE(Holds("extra == 'gpu'"));
  EXPECT_TRUE(Holds("extra == 'gpu'", {"gpu"}));
  EXPECT_TRUE(Holds("extra == 'GPU_support'", {"gpu-support"}));  // names compare normalised
  EXPECT_TRUE(Holds("extra == 'b'", {"a", "b"}));
  EXPECT_FALSE(Holds("extra == 'win' and sys_platform == 'win32'", {"win"}));
}

}  // namespace
}  // namespace cairn::env
