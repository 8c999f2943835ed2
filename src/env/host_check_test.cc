#include "env/host_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "util/file.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using State = HostFinding::State;

// A host as its recorded nvidia-smi outputs describe it (tests/data/host/<driver>).
HostFacts RecordedHost(const std::string& driver, GpuQuery query) {
  const fs::path dir = (fs::path(__FILE__).parent_path() / "../../tests/data/host" / driver);
  HostFacts host;
  host.glibc = "2.31";
  Result<std::string> csv = ReadFile(dir / "query-gpu.csv");
  EXPECT_TRUE(csv.ok()) << csv.status().ToString();
  Result<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv(*csv, query);
  EXPECT_TRUE(gpus.ok()) << gpus.status().ToString();
  host.gpus = *gpus;
  host.driver_version = ParseNvidiaDriverVersionFile(*ReadFile(dir / "driver-version"));
  host.cuda_driver_version = ParseNvidiaSmiCudaVersion(*ReadFile(dir / "nvidia-smi.txt"));
  return host;
}

TEST(HostCheckTest, CudaRulesForEachMajor) {
  EXPECT_EQ(MinimumDriverForCuda("11"), "450.80.02");
  EXPECT_EQ(MinimumDriverForCuda("12.4"), "525.60.13");
  EXPECT_EQ(MinimumDriverForCuda("13"), "580");
  EXPECT_EQ(MinimumDriverForCuda("10"), "");
  EXPECT_LT(CompareDottedVersions("450.80.01", "450.80.02"), 0);
  EXPECT_GT(CompareDottedVersions("525.105.17", "525.60.13"), 0);  // numbers, not text
  EXPECT_EQ(CompareDottedVersions("580", "580.0.0"), 0);
}

TEST(HostCheckTest, An470DriverFailsACuda12LockAndPassesCuda11) {
  const HostFacts host = RecordedHost("nvidia-470", GpuQuery::kWithoutComputeCap);
  ASSERT_EQ(host.gpus.size(), 2u);
  HostRequirements needs;
  needs.cuda = "12";
  needs.compute_capability = "7.0";
  auto findings = CheckHost(needs, host);
  ASSERT_TRUE(findings.ok()) << findings.status().ToString();
  ASSERT_EQ(findings->size(), 2u);
  EXPECT_EQ((*findings)[0].state, State::kViolated);
  EXPECT_THAT((*findings)[0].detail,
              HasSubstr("CUDA 12 builds need driver >= 525.60.13; this host has 470."));
  EXPECT_THAT((*findings)[0].have, HasSubstr("(supports CUDA 11.4)"));
  // 470 cannot tell compute capabilities: unknown, not a violation.
  EXPECT_EQ((*findings)[1].state, State::kUnknown);

  needs = {};
  needs.cuda = "11";
  findings = CheckHost(needs, host);
  ASSERT_TRUE(findings.ok());
  EXPECT_EQ((*findings)[0].state, State::kOk);
}

TEST(HostCheckTest, A535HostMeetsCuda12AndChecksComputeCapabilityAndDriverRange) {
  const HostFacts host = RecordedHost("nvidia-535", GpuQuery::kWithComputeCap);
  HostRequirements needs;
  needs.cuda = "12";
  needs.driver = ">=535,<560";
  needs.compute_capability = "8.0";
  needs.glibc = "2.28";
  auto findings = CheckHost(needs, host);
  ASSERT_TRUE(findings.ok()) << findings.status().ToString();
  for (const HostFinding& f : *findings) EXPECT_EQ(f.state, State::kOk) << f.requirement;

  needs.compute_capability = "9.0";  // Hopper builds on an A100
  needs.driver = ">=545";
  needs.glibc = "2.34";
  findings = CheckHost(needs, host);
  ASSERT_TRUE(findings.ok());
  EXPECT_EQ((*findings)[1].state, State::kViolated);
  EXPECT_EQ((*findings)[1].detail, "driver 535.104.05 is not >=545");
  EXPECT_EQ((*findings)[2].state, State::kViolated);
  EXPECT_THAT((*findings)[2].detail, HasSubstr("compute capability 8.0, below 9.0"));
  EXPECT_EQ((*findings)[3].state, State::kViolated);
  EXPECT_THAT((*findings)[3].detail, HasSubstr("this host has 2.31"));
}

TEST(HostCheckTest, AHostWithoutGpuViolatesGpuDemandsAndNothingElse) {
  HostFacts host;
  host.glibc = "2.36";
  host.gpu_note = "nvidia-smi not found";
  HostRequirements needs;
  auto none = CheckHost(needs, host);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  needs.cuda = "12";
  needs.compute_capability = "7.5";
  auto findings = CheckHost(needs, host);
  ASSERT_TRUE(findings.ok());
  EXPECT_EQ((*findings)[0].state, State::kViolated);
  EXPECT_EQ((*findings)[0].have, "no NVIDIA driver (nvidia-smi not found)");
  EXPECT_EQ((*findings)[1].state, State::kViolated);
}

TEST(HostCheckTest, DriverRanges) {
  EXPECT_TRUE(*DottedVersionInRange("535.104.05", ">=535"));
  EXPECT_TRUE(*DottedVersionInRange("535.104.05", "==535.*"));
  EXPECT_FALSE(*DottedVersionInRange("550.54.15", "==535.*"));
  EXPECT_TRUE(*DottedVersionInRange("550.54.15", ">=525, <560, !=550.40"));
  EXPECT_FALSE(*DottedVersionInRange("560", "<560"));
  EXPECT_TRUE(*DottedVersionInRange("535.104.05", "535.104.05"));
  EXPECT_EQ(DottedVersionInRange("535", ">=abc").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DottedVersionInRange("535", ">=1.*").status().code(), StatusCode::kInvalidArgument);
  HostRequirements bad;
  bad.cuda = "9";
  EXPECT_EQ(CheckHost(bad, HostFacts()).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cairn::env
