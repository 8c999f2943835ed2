#include "env/standards/core_metadata.h"

#include <gtest/gtest.h>

namespace cairn::env {
namespace {

TEST(CoreMetadataTest, ReadsTheFieldsTheResolverNeeds) {
  CoreMetadata m = ParseCoreMetadata(
      "\xEF\xBB\xBFMetadata-Version: 2.1\r\n"
      "Name: Demo.Pkg\r\n"
      "Version: 1.0.post1\r\n"
      "Requires-Python: >=3.8,\r\n"
      "  <4\r\n"
      "requires-dist: idna>=2.5\r\n"
      "Requires-Dist: pysocks!=1.5.7,>=1.5.6; extra == \"socks\"\r\n"
      "Provides-Extra: socks\r\n"
      "\r\n"
      "Requires-Dist: not-a-header (this is the description)\r\n");
  EXPECT_EQ(m.name, "Demo.Pkg");
  EXPECT_EQ(m.version, "1.0.post1");
  EXPECT_EQ(m.requires_python, ">=3.8, <4");
  EXPECT_EQ(m.requires_dist,
            (std::vector<std::string>{"idna>=2.5",
                                      "pysocks!=1.5.7,>=1.5.6; extra == \"socks\""}));
  EXPECT_EQ(m.provides_extra, std::vector<std::string>{"socks"});
}

TEST(CoreMetadataTest, FirstNameWinsAndEmptyTextGivesNothing) {
  CoreMetadata m = ParseCoreMetadata("Name: a\nName: b\nno colon here\nVersion: 2\n");
  EXPECT_EQ(m.name, "a");
  EXPECT_EQ(m.version, "2");
  EXPECT_TRUE(ParseCoreMetadata("").name.empty());
}

}  // namespace
}  // namespace cairn::env
