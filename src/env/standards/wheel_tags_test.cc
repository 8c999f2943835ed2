#include "env/standards/wheel_tags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

namespace cairn::env {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> TagStrings(const std::vector<WheelTag>& tags) {
  std::vector<std::string> out;
  for (const WheelTag& tag : tags) out.push_back(tag.ToString());
  return out;
}

WheelFileName MustParse(std::string_view file_name) {
  Result<WheelFileName> wheel = WheelFileName::Parse(file_name);
  EXPECT_TRUE(wheel.ok()) << file_name << ": " << wheel.status().ToString();
  return wheel.ok() ? wheel.value() : WheelFileName{};
}

TargetPlatform Glibc(int python_minor, int glibc_minor, std::string arch = "x86_64") {
  TargetPlatform t;
  t.python_minor = python_minor;
  t.libc_minor = glibc_minor;
  t.arch = std::move(arch);
  if (python_minor < 8) t.abiflags = "m";
  return t;
}

TargetPlatform Musl(int python_minor, int musl_minor, std::string arch = "x86_64") {
  TargetPlatform t = Glibc(python_minor, 0, std::move(arch));
  t.libc = "musl";
  t.libc_major = 1;
  t.libc_minor = musl_minor;
  return t;
}

int IndexOf(const std::vector<std::string>& list, const std::string& item) {
  auto it = std::find(list.begin(), list.end(), item);
  return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

// ---------------------------------------------------------------------------------------------
// File names.

TEST(WheelFileNameTest, ParsesSpecExampleWithBuildTag) {
  WheelFileName wheel = MustParse("distribution-1.0-1-py27-none-any.whl");
  EXPECT_EQ(wheel.name, "distribution");
  EXPECT_EQ(wheel.version, "1.0");
  EXPECT_EQ(wheel.build_tag, "1");
  EXPECT_THAT(TagStrings(wheel.tags), ElementsAre("py27-none-any"));
}

TEST(WheelFileNameTest, ParsesNumpyWithTwoPlatformTags) {
  WheelFileName wheel =
      MustParse("numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
  EXPECT_EQ(wheel.name, "numpy");
  EXPECT_EQ(wheel.version, "1.26.4");
  EXPECT_EQ(wheel.build_tag, "");
  EXPECT_THAT(TagStrings(wheel.tags),
              ElementsAre("cp311-cp311-manylinux_2_17_x86_64", "cp311-cp311-manylinux2014_x86_64"));
}

TEST(WheelFileNameTest, KeepsLocalVersionLabel) {
  WheelFileName wheel = MustParse("torch-2.1.0+cu121-cp311-cp311-linux_x86_64.whl");
  EXPECT_EQ(wheel.name, "torch");
  EXPECT_EQ(wheel.version, "2.1.0+cu121");
  EXPECT_EQ(wheel.build_tag, "");
  EXPECT_THAT(TagStrings(wheel.tags), ElementsAre("cp311-cp311-linux_x86_64"));
}

TEST(WheelFileNameTest, ExpandsEveryCompressedPartInFileOrder) {
  WheelFileName wheel = MustParse(
      "cryptography-42.0.5-cp310.cp311-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
  EXPECT_THAT(TagStrings(wheel.tags),
              ElementsAre("cp310-abi3-manylinux_2_17_x86_64", "cp310-abi3-manylinux2014_x86_64",
                          "cp311-abi3-manylinux_2_17_x86_64", "cp311-abi3-manylinux2014_x86_64"));
}

TEST(WheelFileNameTest, ParsesPureWheelForTwoMajors) {
  WheelFileName wheel = MustParse("six-1.16.0-py2.py3-none-any.whl");
  EXPECT_THAT(TagStrings(wheel.tags), ElementsAre("py2-none-any", "py3-none-any"));
}

TEST(WheelFileNameTest, LowercasesTagsAndDropsDuplicates) {
  WheelFileName wheel = MustParse("Foo-1.0-PY3.py3-NONE-Any.whl");
  EXPECT_THAT(TagStrings(wheel.tags), ElementsAre("py3-none-any"));
  EXPECT_EQ(wheel.name, "Foo");  // the name is kept as written
}

TEST(WheelFileNameTest, NormalizesNameAsPep503) {
  EXPECT_EQ(MustParse("typing_extensions-4.9.0-py3-none-any.whl").NormalizedName(),
            "typing-extensions");
  // Older wheels kept '.' and uppercase letters; consumers must accept them.
  EXPECT_EQ(MustParse("Zope.Interface-6.1-cp311-cp311-linux_x86_64.whl").NormalizedName(),
            "zope-interface");
  EXPECT_EQ(MustParse("a_._b-1.0-py3-none-any.whl").NormalizedName(), "a-b");
}

TEST(WheelFileNameTest, AcceptsNonAsciiNameAndLegacyVersionForms) {
  WheelFileName wheel = MustParse("caf\xc3\xa9-v1.0-py3-none-any.whl");
  EXPECT_EQ(wheel.name, "caf\xc3\xa9");
  EXPECT_EQ(wheel.version, "v1.0");
  EXPECT_EQ(MustParse("pkg-1!2.0.post1-py3-none-any.whl").version, "1!2.0.post1");
}

TEST(WheelFileNameTest, RejectsNamesThatAreNotWheels) {
  struct Case {
    std::string file_name;
    std::string error;
  };
  const Case cases[] = {
      {"numpy-1.26.4.tar.gz", "does not end in \".whl\""},
      {"", "does not end in \".whl\""},
      {"numpy-1.26.4-py3-none-any.WHL", "does not end in \".whl\""},
      {".whl", "has 1 '-'-separated parts"},
      {"numpy-1.26.4-py3-none.whl", "has 4 '-'-separated parts"},
      {"a-1.0-1-x-py3-none-any.whl", "has 7 '-'-separated parts"},
      {"numpy--1.0-py3-none-any.whl", "empty part"},
      {"-1.0-py3-none-any.whl", "empty part"},
      {"num py-1.0-py3-none-any.whl", "distribution name \"num py\""},
      {"numpy-abc-py3-none-any.whl", "version \"abc\""},
      {"numpy-1.0~rc1-py3-none-any.whl", "version \"1.0~rc1\""},
      {"numpy-1.0-x1-py3-none-any.whl", "build tag \"x1\""},
      {"numpy-1.0-3py-none-any.whl", "python tag \"3py\" starts with a digit"},
      {"numpy-1.0-py3..py2-none-any.whl", "empty python tag"},
      {"numpy-1.0-py3-none.-any.whl", "empty abi tag"},
      {"numpy-1.0-py3-none-any$.whl", "platform tag \"any$\""},
      {"dist/numpy-1.0-py3-none-any.whl", "path or URL"},
  };
  for (const Case& c : cases) {
    Result<WheelFileName> wheel = WheelFileName::Parse(c.file_name);
    ASSERT_FALSE(wheel.ok()) << c.file_name;
    EXPECT_EQ(wheel.status().code(), StatusCode::kInvalidArgument) << c.file_name;
    EXPECT_THAT(wheel.status().message(), HasSubstr(c.error)) << c.file_name;
    EXPECT_THAT(wheel.status().message(), HasSubstr("\"" + c.file_name + "\"")) << c.file_name;
  }
}

TEST(WheelFileNameTest, RejectsTagSetThatExpandsTooFar) {
  // 11 x 11 x 11 = 1331 tags, over kMaxWheelTags.
  std::string python, abi, platform;
  for (int i = 0; i < 11; ++i) {
    std::string sep = i == 0 ? "" : ".";
    python += sep + "cp3" + std::to_string(i);
    abi += sep + "cp3" + std::to_string(i);
    platform += sep + "p" + std::to_string(i);
  }
  Result<WheelFileName> wheel =
      WheelFileName::Parse("x-1.0-" + python + "-" + abi + "-" + platform + ".whl");
  ASSERT_FALSE(wheel.ok());
  EXPECT_THAT(wheel.status().message(), HasSubstr("more than 1024 tags"));
}

TEST(ParseTagSetTest, ExpandsTagLinesOfWheelMetadata) {
  Result<std::vector<WheelTag>> tags = ParseTagSet("py2.py3-none-any");
  ASSERT_TRUE(tags.ok()) << tags.status().ToString();
  EXPECT_THAT(TagStrings(*tags), ElementsAre("py2-none-any", "py3-none-any"));
  EXPECT_EQ((*tags)[0], (WheelTag{"py2", "none", "any"}));

  EXPECT_FALSE(ParseTagSet("py3-none").ok());
  EXPECT_FALSE(ParseTagSet("py3-none-any-extra").ok());
  EXPECT_FALSE(ParseTagSet("").ok());
}

// ---------------------------------------------------------------------------------------------
// Build tags.

TEST(CompareBuildTagsTest, OrdersAsTheSpecSays) {
  EXPECT_EQ(CompareBuildTags("", ""), std::strong_ordering::equal);
  EXPECT_EQ(CompareBuildTags("", "0"), std::strong_ordering::less);  // none sorts first
  EXPECT_EQ(CompareBuildTags("1", ""), std::strong_ordering::greater);
  EXPECT_EQ(CompareBuildTags("1", "2"), std::strong_ordering::less);
  EXPECT_EQ(CompareBuildTags("2", "10"), std::strong_ordering::less);  // as numbers, not text
  EXPECT_EQ(CompareBuildTags("010", "10"), std::strong_ordering::equal);
  EXPECT_EQ(CompareBuildTags("1", "1a"), std::strong_ordering::less);  // then the rest as text
  EXPECT_EQ(CompareBuildTags("1b", "1a"), std::strong_ordering::greater);
  EXPECT_EQ(CompareBuildTags("2a", "10"), std::strong_ordering::less);
  // Longer than any integer type: still compared as a number.
  EXPECT_EQ(CompareBuildTags("123456789012345678901234567890", "99999999999999999999"),
            std::strong_ordering::greater);
}

TEST(CompareBuildTagsTest, PicksTheNewerBuildOfTwoWheels) {
  WheelFileName first = MustParse("distribution-1.0-1-py27-none-any.whl");
  WheelFileName rebuilt = MustParse("distribution-1.0-12_el8-py27-none-any.whl");
  EXPECT_EQ(rebuilt.build_tag, "12_el8");
  EXPECT_EQ(CompareBuildTags(first.build_tag, rebuilt.build_tag), std::strong_ordering::less);
}

// ---------------------------------------------------------------------------------------------
// Targets.

TEST(TargetPlatformTest, DefaultIsCPython311OnGlibc236) {
  TargetPlatform target;
  EXPECT_TRUE(target.Validate().ok());
  EXPECT_EQ(target.ToString(), "cp311-manylinux_2_36_x86_64");
}

TEST(TargetPlatformTest, TextFormReadsBackToTheSameTarget) {
  const std::string texts[] = {
      "cp311-manylinux_2_36_x86_64",  "cp38-manylinux_2_17_aarch64",
      "cp313t-manylinux_2_39_x86_64", "cp37m-manylinux_2_5_i686",
      "cp312-musllinux_1_2_aarch64",  "cp310-manylinux_2_31_ppc64le",
      "pp310-manylinux_2_35_x86_64",  "pp310-pypy310_pp73-manylinux_2_35_x86_64",
  };
  for (const std::string& text : texts) {
    Result<TargetPlatform> target = TargetPlatform::FromString(text);
    ASSERT_TRUE(target.ok()) << text << ": " << target.status().ToString();
    EXPECT_EQ(target->ToString(), text);
    Result<TargetPlatform> again = TargetPlatform::FromString(target->ToString());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *target);
  }
}

TEST(TargetPlatformTest, FromStringReadsEachField) {
  Result<TargetPlatform> t = TargetPlatform::FromString("cp313t-manylinux_2_17_aarch64");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->implementation, "cp");
  EXPECT_EQ(t->python_major, 3);
  EXPECT_EQ(t->python_minor, 13);
  EXPECT_EQ(t->abiflags, "t");
  EXPECT_EQ(t->libc, "glibc");
  EXPECT_EQ(t->libc_major, 2);
  EXPECT_EQ(t->libc_minor, 17);
  EXPECT_EQ(t->arch, "aarch64");
  EXPECT_EQ(t->interpreter_abi, "");

  Result<TargetPlatform> musl = TargetPlatform::FromString("cp312-musllinux_1_2_x86_64");
  ASSERT_TRUE(musl.ok());
  EXPECT_EQ(musl->libc, "musl");
  EXPECT_EQ(musl->libc_major, 1);
  EXPECT_EQ(musl->libc_minor, 2);
  EXPECT_EQ(musl->arch, "x86_64");

  Result<TargetPlatform> pypy =
      TargetPlatform::FromString("pp310-pypy310_pp73-manylinux_2_35_x86_64");
  ASSERT_TRUE(pypy.ok());
  EXPECT_EQ(pypy->implementation, "pp");
  EXPECT_EQ(pypy->python_minor, 10);
  EXPECT_EQ(pypy->interpreter_abi, "pypy310_pp73");
}

TEST(TargetPlatformTest, FromStringRejectsOtherText) {
  const std::string texts[] = {
      "",
      "cp311",
      "cp311-manylinux2014_x86_64",         // legacy alias: not the canonical form
      "cp311-win_amd64",                    // not Linux
      "cp311-linux_x86_64",                 // no libc version
      "cp3-manylinux_2_17_x86_64",          // no minor version
      "cp305-manylinux_2_17_x86_64",        // leading zero
      "cp311-manylinux_02_17_x86_64",       // leading zero
      "cp311-cp311-manylinux_2_17_x86_64",  // CPython's ABI is derived
      "jy27-manylinux_2_17_x86_64",         // implementation
      "CP311-manylinux_2_17_x86_64",        // uppercase
      "cp311-manylinux_2_17_X86_64",        // uppercase arch
      "cp311-manylinux_2_17_",              // no arch
      "cp311x2-manylinux_2_17_x86_64",      // abiflags are letters
      "cp311-a-b-manylinux_2_17_x86_64",    // too many parts
  };
  for (const std::string& text : texts) {
    Result<TargetPlatform> target = TargetPlatform::FromString(text);
    EXPECT_FALSE(target.ok()) << text << " -> " << (target.ok() ? target->ToString() : "");
    if (!target.ok()) {
      EXPECT_EQ(target.status().code(), StatusCode::kInvalidArgument) << text;
    }
  }
}

TEST(TargetPlatformTest, ValidateNamesTheBadField) {
  TargetPlatform t;
  t.implementation = "jy";
  EXPECT_THAT(t.Validate().message(), HasSubstr("implementation"));
  t = TargetPlatform{};
  t.python_major = 2;
  EXPECT_THAT(t.Validate().message(), HasSubstr("Python 2.11"));
  t = TargetPlatform{};
  t.arch = "x86-64";
  EXPECT_THAT(t.Validate().message(), HasSubstr("arch"));
  t = TargetPlatform{};
  t.libc = "bionic";
  EXPECT_THAT(t.Validate().message(), HasSubstr("libc"));
  t = TargetPlatform{};
  t.interpreter_abi = "cp311";
  EXPECT_THAT(t.Validate().message(), HasSubstr("interpreter_abi"));
  EXPECT_TRUE(CompatibleTags(t).empty());
  EXPECT_TRUE(PlatformTags(t).empty());
}

TEST(TargetPlatformTest, FromHostFactsTakesWhatHostFactsRecords) {
  Result<TargetPlatform> t = TargetPlatform::FromHostFacts("3.11.2", "x86_64", "2.36");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, TargetPlatform{});

  t = TargetPlatform::FromHostFacts("3.13.0rc1", "aarch64", "2.31");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ToString(), "cp313-manylinux_2_31_aarch64");

  t = TargetPlatform::FromHostFacts("3.12", "i586", "2.20-2014.11");  // Linaro-style suffix
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ToString(), "cp312-manylinux_2_20_i686");

  t = TargetPlatform::FromHostFacts("3.10.4", "arm64", "2.35", "pypy");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ToString(), "pp310-manylinux_2_35_aarch64");

  t = TargetPlatform::FromHostFacts("3.7.17", "x86_64", "2.17", "cpython");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ToString(), "cp37m-manylinux_2_17_x86_64");
}

TEST(TargetPlatformTest, FromHostFactsRejectsWhatItCannotRead) {
  Result<TargetPlatform> t = TargetPlatform::FromHostFacts("3.12.1", "x86_64", "");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(t.status().message(), HasSubstr("glibc"));

  t = TargetPlatform::FromHostFacts("3", "x86_64", "2.36");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("Python version \"3\""));

  EXPECT_FALSE(TargetPlatform::FromHostFacts("3.12", "x86_64", "musl").ok());
  EXPECT_FALSE(TargetPlatform::FromHostFacts("3.12", "", "2.36").ok());
  EXPECT_FALSE(TargetPlatform::FromHostFacts("3.12", "x86_64", "2.36", "jython").ok());
}

#if defined(__GLIBC__)
TEST(TargetPlatformTest, HostDescribesThisMachine) {
  Result<TargetPlatform> host = TargetPlatform::Host("3.12.3");
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  Result<TargetPlatform> expected =
      TargetPlatform::FromHostFacts("3.12", host->arch, gnu_get_libc_version());
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(*host, *expected);
  EXPECT_EQ(host->libc, "glibc");
  EXPECT_EQ(host->python_minor, 12);
  EXPECT_FALSE(host->arch.empty());
}
#endif

// ---------------------------------------------------------------------------------------------
// Platform tags.

TEST(PlatformTagsTest, GlibcX86ListsEveryManylinuxDownTo25ThenLinux) {
  std::vector<std::string> p = PlatformTags(Glibc(11, 36));
  ASSERT_EQ(p.size(), 32u + 3u + 1u);  // 2.36 .. 2.5, three legacy aliases, linux_x86_64
  EXPECT_EQ(p.front(), "manylinux_2_36_x86_64");
  EXPECT_EQ(p[1], "manylinux_2_35_x86_64");
  EXPECT_EQ(p.back(), "linux_x86_64");
  int m17 = IndexOf(p, "manylinux_2_17_x86_64");
  ASSERT_GE(m17, 0);
  EXPECT_EQ(p[m17 + 1], "manylinux2014_x86_64");
  EXPECT_EQ(p[IndexOf(p, "manylinux_2_12_x86_64") + 1], "manylinux2010_x86_64");
  EXPECT_EQ(p[IndexOf(p, "manylinux_2_5_x86_64") + 1], "manylinux1_x86_64");
  EXPECT_EQ(IndexOf(p, "manylinux_2_4_x86_64"), -1);
  EXPECT_EQ(IndexOf(p, "manylinux_2_37_x86_64"), -1);
}

TEST(PlatformTagsTest, OtherArchitecturesStartAt217) {
  std::vector<std::string> p = PlatformTags(Glibc(11, 28, "aarch64"));
  EXPECT_THAT(
      p, ElementsAre("manylinux_2_28_aarch64", "manylinux_2_27_aarch64", "manylinux_2_26_aarch64",
                     "manylinux_2_25_aarch64", "manylinux_2_24_aarch64", "manylinux_2_23_aarch64",
                     "manylinux_2_22_aarch64", "manylinux_2_21_aarch64", "manylinux_2_20_aarch64",
                     "manylinux_2_19_aarch64", "manylinux_2_18_aarch64", "manylinux_2_17_aarch64",
                     "manylinux2014_aarch64", "linux_aarch64"));
  // No manylinux for an architecture manylinux does not define, or for a glibc below 2.5.
  EXPECT_THAT(PlatformTags(Glibc(11, 36, "armv6l")), ElementsAre("linux_armv6l"));
  EXPECT_THAT(PlatformTags(Glibc(11, 4)), ElementsAre("linux_x86_64"));
}

TEST(PlatformTagsTest, MuslListsMusllinuxDownToMinorZero) {
  EXPECT_THAT(PlatformTags(Musl(12, 2)), ElementsAre("musllinux_1_2_x86_64", "musllinux_1_1_x86_64",
                                                     "musllinux_1_0_x86_64", "linux_x86_64"));
}

TEST(PlatformTagsTest, ANewGlibcMajorKeepsTheWhole2Series) {
  TargetPlatform t = Glibc(11, 1);
  t.libc_major = 3;
  std::vector<std::string> p = PlatformTags(t);
  ASSERT_GE(p.size(), 3u);
  EXPECT_EQ(p[0], "manylinux_3_1_x86_64");
  EXPECT_EQ(p[1], "manylinux_3_0_x86_64");
  EXPECT_EQ(p[2], "manylinux_2_50_x86_64");
  EXPECT_GE(IndexOf(p, "manylinux1_x86_64"), 0);
}

TEST(PlatformTagsTest, EveryManylinuxTagIsWithinTheTargetsGlibc) {
  for (const std::string& platform : PlatformTags(Glibc(11, 28))) {
    if (platform == "linux_x86_64") continue;
    std::optional<std::pair<int, int>> floor = ManylinuxFloor(platform);
    ASSERT_TRUE(floor.has_value()) << platform;
    EXPECT_LE(*floor, std::make_pair(2, 28)) << platform;
  }
}

// ---------------------------------------------------------------------------------------------
// Compatible tags.

TEST(CompatibleTagsTest, CPythonOrderFollowsSysTags) {
  std::vector<std::string> tags = TagStrings(CompatibleTags(Glibc(11, 36)));
  const size_t platforms = 36;
  // cp311 ABI, abi3, none (36 each); abi3 of cp310..cp32 (9 x 36); py311, py3, py310..py30 on
  // each platform (13 x 36); then cp311-none-any and the 13 py*-none-any.
  ASSERT_EQ(tags.size(), platforms * (3 + 9 + 13) + 1 + 13);
  EXPECT_EQ(tags[0], "cp311-cp311-manylinux_2_36_x86_64");
  EXPECT_EQ(tags[platforms - 1], "cp311-cp311-linux_x86_64");
  EXPECT_EQ(tags[platforms], "cp311-abi3-manylinux_2_36_x86_64");
  EXPECT_EQ(tags[2 * platforms], "cp311-none-manylinux_2_36_x86_64");
  EXPECT_EQ(tags[3 * platforms], "cp310-abi3-manylinux_2_36_x86_64");
  EXPECT_EQ(tags[12 * platforms - 1], "cp32-abi3-linux_x86_64");
  EXPECT_EQ(tags[12 * platforms], "py311-none-manylinux_2_36_x86_64");
  EXPECT_EQ(tags[13 * platforms], "py3-none-manylinux_2_36_x86_64");
  EXPECT_EQ(tags[14 * platforms], "py310-none-manylinux_2_36_x86_64");
  std::vector<std::string> tail(tags.end() - 14, tags.end());
  EXPECT_THAT(tail, ElementsAre("cp311-none-any", "py311-none-any", "py3-none-any",
                                "py310-none-any", "py39-none-any", "py38-none-any", "py37-none-any",
                                "py36-none-any", "py35-none-any", "py34-none-any", "py33-none-any",
                                "py32-none-any", "py31-none-any", "py30-none-any"));
  EXPECT_EQ(IndexOf(tags, "cp31-abi3-linux_x86_64"), -1);  // abi3 begins with 3.2
  EXPECT_EQ(std::set<std::string>(tags.begin(), tags.end()).size(), tags.size());
}

TEST(CompatibleTagsTest, FreeThreadedBuildUsesAbi3tNotAbi3) {
  TargetPlatform t = Glibc(13, 39);
  t.abiflags = "t";
  std::vector<std::string> tags = TagStrings(CompatibleTags(t));
  EXPECT_EQ(tags[0], "cp313-cp313t-manylinux_2_39_x86_64");
  EXPECT_GE(IndexOf(tags, "cp313-abi3t-manylinux_2_17_x86_64"), 0);
  EXPECT_GE(IndexOf(tags, "cp39-abi3t-manylinux_2_17_x86_64"), 0);
  EXPECT_GE(IndexOf(tags, "cp313-none-manylinux_2_17_x86_64"), 0);
  for (const std::string& tag : tags) {
    EXPECT_THAT(tag, ::testing::Not(HasSubstr("-abi3-"))) << tag;
    EXPECT_THAT(tag, ::testing::Not(HasSubstr("-cp313-"))) << tag;
  }
}

TEST(CompatibleTagsTest, DebugBuildAlsoTakesReleaseAbi) {
  TargetPlatform t = Glibc(11, 36);
  t.abiflags = "d";
  std::vector<std::string> tags = TagStrings(CompatibleTags(t));
  EXPECT_EQ(tags[0], "cp311-cp311d-manylinux_2_36_x86_64");
  EXPECT_EQ(tags[36], "cp311-cp311-manylinux_2_36_x86_64");
  EXPECT_EQ(tags[72], "cp311-abi3-manylinux_2_36_x86_64");
}

TEST(CompatibleTagsTest, PyPyUsesItsOwnAbiAndNoCPythonTags) {
  Result<TargetPlatform> t = TargetPlatform::FromString("pp310-pypy310_pp73-manylinux_2_35_x86_64");
  ASSERT_TRUE(t.ok());
  std::vector<std::string> tags = TagStrings(CompatibleTags(*t));
  EXPECT_EQ(tags[0], "pp310-pypy310_pp73-manylinux_2_35_x86_64");
  EXPECT_EQ(tags[35], "pp310-none-manylinux_2_35_x86_64");
  int pp3_any = IndexOf(tags, "pp3-none-any");
  ASSERT_GE(pp3_any, 0);
  EXPECT_EQ(tags[pp3_any + 1], "py310-none-any");
  for (const std::string& tag : tags) {
    EXPECT_FALSE(tag.starts_with("cp")) << tag;
    EXPECT_THAT(tag, ::testing::Not(HasSubstr("abi3"))) << tag;
  }
  // Without its ABI tag a PyPy target takes no compiled wheel for it.
  t->interpreter_abi.clear();
  EXPECT_EQ(CompatibleTags(*t)[0].ToString(), "pp310-none-manylinux_2_35_x86_64");
}

// ---------------------------------------------------------------------------------------------
// Ranking wheels.

TEST(TagRankerTest, RankIsThePositionInCompatibleTags) {
  TargetPlatform target = Glibc(12, 31, "aarch64");
  std::vector<WheelTag> tags = CompatibleTags(target);
  TagRanker ranker(target);
  ASSERT_EQ(ranker.size(), tags.size());
  for (size_t i = 0; i < tags.size(); ++i) {
    ASSERT_EQ(ranker.Rank(tags[i]), static_cast<int>(i)) << tags[i].ToString();
  }
}

TEST(TagRankerTest, CPythonWheelBeatsAbi3BeatsPure) {
  TagRanker ranker(Glibc(11, 36));
  std::optional<int> numpy = ranker.Rank(
      MustParse("numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"));
  std::optional<int> abi3 = ranker.Rank(
      MustParse("numpy-1.26.4-cp38-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"));
  std::optional<int> pure = ranker.Rank(MustParse("numpy-1.26.4-py3-none-any.whl"));
  ASSERT_TRUE(numpy && abi3 && pure);
  EXPECT_LT(*numpy, *abi3);
  EXPECT_LT(*abi3, *pure);
  // The wheel ranks by its best tag: manylinux_2_17 is preferred over its alias manylinux2014.
  EXPECT_EQ(numpy, ranker.Rank(WheelTag{"cp311", "cp311", "manylinux_2_17_x86_64"}));
  // A wheel for a newer glibc ranks before one for an older glibc on the same target.
  EXPECT_LT(*ranker.Rank(MustParse("x-1.0-cp311-cp311-manylinux_2_28_x86_64.whl")), *numpy);
  // A locally built linux_ wheel is accepted, after the manylinux ones.
  std::optional<int> torch =
      ranker.Rank(MustParse("torch-2.1.0+cu121-cp311-cp311-linux_x86_64.whl"));
  ASSERT_TRUE(torch);
  EXPECT_GT(*torch, *numpy);
  EXPECT_LT(*torch, *abi3);
}

TEST(TagRankerTest, Abi3WheelRunsOnNewerMinorsOnly) {
  WheelFileName cp38_abi3 = MustParse("cryptography-42.0.5-cp38-abi3-manylinux_2_28_x86_64.whl");
  EXPECT_TRUE(TagRanker(Glibc(8, 36)).Rank(cp38_abi3).has_value());
  EXPECT_TRUE(TagRanker(Glibc(11, 36)).Rank(cp38_abi3).has_value());
  EXPECT_TRUE(TagRanker(Glibc(13, 36)).Rank(cp38_abi3).has_value());
  EXPECT_FALSE(TagRanker(Glibc(7, 36)).Rank(cp38_abi3).has_value());

  WheelFileName cp312_abi3 = MustParse("x-1.0-cp312-abi3-manylinux_2_17_x86_64.whl");
  EXPECT_FALSE(TagRanker(Glibc(11, 36)).Rank(cp312_abi3).has_value());
  EXPECT_TRUE(TagRanker(Glibc(12, 36)).Rank(cp312_abi3).has_value());

  // On its own minor, an abi3 wheel ranks below a wheel built for that minor's ABI.
  TagRanker r312(Glibc(12, 36));
  EXPECT_LT(*r312.Rank(MustParse("x-1.0-cp312-cp312-manylinux_2_17_x86_64.whl")),
            *r312.Rank(cp312_abi3));
  // The free-threaded build cannot load abi3 extensions.
  TargetPlatform threaded = Glibc(13, 36);
  threaded.abiflags = "t";
  EXPECT_FALSE(TagRanker(threaded).Rank(cp38_abi3).has_value());
}

TEST(TagRankerTest, ManylinuxNeedsTheGlibcItNames) {
  WheelFileName wheel = MustParse("pyarrow-15.0.0-cp311-cp311-manylinux_2_28_x86_64.whl");
  EXPECT_FALSE(TagRanker(Glibc(11, 17)).Rank(wheel).has_value());
  EXPECT_TRUE(TagRanker(Glibc(11, 28)).Rank(wheel).has_value());
  EXPECT_TRUE(TagRanker(Glibc(11, 36)).Rank(wheel).has_value());
  // The legacy names are the glibc they stand for.
  WheelFileName legacy = MustParse("x-1.0-cp311-cp311-manylinux2014_x86_64.whl");
  EXPECT_FALSE(TagRanker(Glibc(11, 16)).Rank(legacy).has_value());
  EXPECT_TRUE(TagRanker(Glibc(11, 17)).Rank(legacy).has_value());
}

TEST(TagRankerTest, LibcAndArchitectureMustMatch) {
  WheelFileName musl = MustParse("numpy-1.26.4-cp311-cp311-musllinux_1_1_x86_64.whl");
  EXPECT_FALSE(TagRanker(Glibc(11, 36)).Rank(musl).has_value());
  EXPECT_TRUE(TagRanker(Musl(11, 2)).Rank(musl).has_value());
  EXPECT_FALSE(TagRanker(Musl(11, 0)).Rank(musl).has_value());  // needs musl 1.1
  WheelFileName glibc = MustParse("numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl");
  EXPECT_FALSE(TagRanker(Musl(11, 2)).Rank(glibc).has_value());

  WheelFileName arm =
      MustParse("numpy-1.26.4-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl");
  EXPECT_FALSE(TagRanker(Glibc(11, 36)).Rank(arm).has_value());
  EXPECT_TRUE(TagRanker(Glibc(11, 36, "aarch64")).Rank(arm).has_value());
  EXPECT_FALSE(TagRanker(Glibc(11, 36, "aarch64")).Rank(glibc).has_value());
}

TEST(TagRankerTest, RejectsOtherInterpretersAndOperatingSystems) {
  TagRanker ranker(Glibc(11, 36));
  EXPECT_FALSE(ranker.Rank(MustParse("distribution-1.0-1-py27-none-any.whl")).has_value());
  EXPECT_FALSE(ranker.Rank(MustParse("x-1.0-cp310-cp310-manylinux_2_17_x86_64.whl")).has_value());
  EXPECT_FALSE(ranker.Rank(MustParse("x-1.0-cp311-cp311-win_amd64.whl")).has_value());
  EXPECT_FALSE(ranker.Rank(MustParse("x-1.0-cp311-cp311-macosx_11_0_arm64.whl")).has_value());
  EXPECT_FALSE(ranker.Rank(MustParse("x-1.0-py4-none-any.whl")).has_value());
  EXPECT_FALSE(ranker.Rank(WheelFileName{}).has_value());  // no tags at all
  // py2.py3 is accepted through its py3 tag; an older pure tag too, after it.
  std::optional<int> six = ranker.Rank(MustParse("six-1.16.0-py2.py3-none-any.whl"));
  std::optional<int> old = ranker.Rank(MustParse("x-1.0-py36-none-any.whl"));
  ASSERT_TRUE(six && old);
  EXPECT_LT(*six, *old);
}

// ---------------------------------------------------------------------------------------------
// Floors.

TEST(ManylinuxFloorTest, ReadsEveryManylinuxForm) {
  using P = std::pair<int, int>;
  EXPECT_EQ(ManylinuxFloor("manylinux1_x86_64"), P(2, 5));
  EXPECT_EQ(ManylinuxFloor("manylinux2010_i686"), P(2, 12));
  EXPECT_EQ(ManylinuxFloor("manylinux2014_aarch64"), P(2, 17));
  EXPECT_EQ(ManylinuxFloor("manylinux_2_28_x86_64"), P(2, 28));
  EXPECT_EQ(ManylinuxFloor("manylinux_2_17_ppc64le"), P(2, 17));
  EXPECT_EQ(ManylinuxFloor("any"), std::nullopt);
  EXPECT_EQ(ManylinuxFloor("linux_x86_64"), std::nullopt);
  EXPECT_EQ(ManylinuxFloor("musllinux_1_2_x86_64"), std::nullopt);
  EXPECT_EQ(ManylinuxFloor("win_amd64"), std::nullopt);
  EXPECT_EQ(ManylinuxFloor("manylinux_2_x86_64"), std::nullopt);
  EXPECT_EQ(ManylinuxFloor("manylinux_2_17_"), std::nullopt);
  EXPECT_EQ(ManylinuxFloor("manylinux1_"), std::nullopt);
  EXPECT_EQ(ManylinuxFloor("manylinux2015_x86_64"), std::nullopt);
}

TEST(MusllinuxFloorTest, ReadsMusllinuxOnly) {
  using P = std::pair<int, int>;
  EXPECT_EQ(MusllinuxFloor("musllinux_1_2_x86_64"), P(1, 2));
  EXPECT_EQ(MusllinuxFloor("musllinux_1_1_aarch64"), P(1, 1));
  EXPECT_EQ(MusllinuxFloor("manylinux_2_17_x86_64"), std::nullopt);
  EXPECT_EQ(MusllinuxFloor("musllinux_1_x86_64"), std::nullopt);
  EXPECT_EQ(MusllinuxFloor("any"), std::nullopt);
}

}  // namespace
}  // namespace cairn::env
