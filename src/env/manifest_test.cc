#include "env/manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cairn::env {
namespace {

using ::testing::HasSubstr;

TEST(ManifestTest, ReadsTheEnvironmentSection) {
  Result<EnvironmentSpec> spec = ParseEnvironmentSpec(R"(
pipeline: {name: ignored-here}
environment:
  python: "3.11"
  requirements:
    - numpy>=1.24
    - torch==2.1.*; sys_platform == "linux"
  sources:
    - find-links: wheels
    - index: http://127.0.0.1:8000/simple/
  platforms: [cp311-manylinux_2_17_x86_64]
  prereleases: true
  host:
    cuda: "12"
    driver: ">=535"
    compute-capability: "7.5"
  base: ../base/pylock.toml
)",
                                                      "cairn.yaml", "/proj");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->python, "3.11");
  EXPECT_EQ(spec->requirements,
            (std::vector<std::string>{"numpy>=1.24", "torch==2.1.*; sys_platform == \"linux\""}));
  ASSERT_EQ(spec->sources.size(), 2u);
  EXPECT_EQ(spec->sources[0].ToString(), "find-links:wheels");
  EXPECT_EQ(spec->Resolve(spec->sources[0].location), "/proj/wheels");
  EXPECT_EQ(spec->sources[1].kind, PackageSourceSpec::Kind::kIndex);
  EXPECT_EQ(spec->platforms, std::vector<std::string>{"cp311-manylinux_2_17_x86_64"});
  EXPECT_TRUE(spec->prereleases);
  EXPECT_EQ(spec->host.cuda, "12");
  EXPECT_EQ(spec->host.driver, ">=535");
  EXPECT_EQ(spec->host.compute_capability, "7.5");
  EXPECT_EQ(spec->Resolve(spec->base), "/base/pylock.toml");
}

TEST(ManifestTest, InputsHashChangesWithEveryInputAndOnlyThen) {
  EnvironmentSpec a;
  a.python = "3.11";
  a.requirements = {"x"};
  EnvironmentSpec b = a;
  b.dir = "/elsewhere";  // where the project sits is not an input
  EXPECT_EQ(a.InputsHash(), b.InputsHash());
  b.requirements = {"x", "y"};
  EXPECT_NE(a.InputsHash(), b.InputsHash());
  b = a;
  b.host.driver = ">=535";
  EXPECT_NE(a.InputsHash(), b.InputsHash());
  b = a;
  b.requirements = {"x y"};  // not the same as two inputs "x" and "y"
  EnvironmentSpec c = a;
  c.requirements = {"x", "y"};
  EXPECT_NE(b.InputsHash(), c.InputsHash());
}

TEST(ManifestTest, MistakesAreNamed) {
  auto error = [](const std::string& yaml) {
    return ParseEnvironmentSpec(yaml, "cairn.yaml", "/p").status();
  };
  EXPECT_EQ(error("other: 1\n").code(), StatusCode::kNotFound);
  EXPECT_THAT(error("environment:\n  requirments: [x]\n").message(),
              HasSubstr("environment.requirments is not a known key"));
  EXPECT_THAT(error("environment:\n  sources:\n    - pypi: x\n").message(),
              HasSubstr("environment.sources[0].pypi is not a known key"));
  EXPECT_THAT(error("environment:\n  sources:\n    - index: ftp://x\n").message(),
              HasSubstr("must be an http://, https:// or file:// URL"));
  EXPECT_THAT(error("environment:\n  prereleases: maybe\n").message(),
              HasSubstr("prereleases must be true or false"));
  EXPECT_THAT(error("environment: [\n").message(), HasSubstr("not valid YAML at line"));
  EXPECT_THAT(error("environment:\n  requirements: {a: b}\n").message(),
              HasSubstr("requirements must be a list"));
}

}  // namespace
}  // namespace cairn::env
