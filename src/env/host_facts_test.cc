#include "env/host_facts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "fakes/fake_host_probe.h"
#include "util/file.h"
#include "util/utf8.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

// tests/data/host, found from this file's path (CMake compiles sources by absolute path), or
// by walking up from the working directory when __FILE__ is relative.
fs::path DataDir() {
  fs::path from_source = fs::path(__FILE__).parent_path() / "../../tests/data/host";
  if (fs::is_directory(from_source)) return from_source.lexically_normal();
  for (fs::path dir = fs::current_path(); !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_directory(dir / "tests/data/host")) return dir / "tests/data/host";
    if (dir == dir.parent_path()) break;
  }
  return from_source;
}

std::string Recorded(const std::string& name) {
  Result<std::string> text = ReadFile(DataDir() / name);
  EXPECT_TRUE(text.ok()) << "missing recorded output " << name << ": " << text.status().ToString();
  return text.ok() ? *text : std::string();
}

using fakes::FakeHostProbe;

const std::string kQueryWithCc =
    FakeHostProbe::Join(NvidiaSmiQueryArgv(GpuQuery::kWithComputeCap));
const std::string kQueryWithoutCc =
    FakeHostProbe::Join(NvidiaSmiQueryArgv(GpuQuery::kWithoutComputeCap));

// A Ubuntu 22.04 Xeon host with 2 TiB and the given driver's recorded outputs.
FakeHostProbe HostWithDriver(const std::string& driver_dir) {
  FakeHostProbe probe;
  probe.files = {
      {"/etc/os-release", Recorded("os-release-ubuntu-22.04")},
      {"/proc/cpuinfo", Recorded("cpuinfo-x86_64")},
      {"/proc/meminfo", Recorded("meminfo")},
  };
  if (!driver_dir.empty()) {
    probe.files["/proc/driver/nvidia/version"] = Recorded(driver_dir + "/driver-version");
    probe.commands["nvidia-smi"] = {0, Recorded(driver_dir + "/nvidia-smi.txt"), Status()};
  }
  return probe;
}

std::map<std::string, std::string> TagMap(const std::vector<core::Tag>& tags) {
  std::map<std::string, std::string> out;
  for (const core::Tag& t : tags) {
    EXPECT_TRUE(out.emplace(t.key, t.value).second) << "duplicate tag " << t.key;
  }
  return out;
}

// --- parsers ----------------------------------------------------------------------------------

TEST(HostFactsTest, ParsesRecordedOsRelease) {
  HostFacts facts;
  ParseOsRelease(Recorded("os-release-ubuntu-22.04"), &facts);
  EXPECT_EQ(facts.distribution, "Ubuntu 22.04.4 LTS");
  EXPECT_EQ(facts.distribution_id, "ubuntu");  // unquoted in the file
  EXPECT_EQ(facts.distribution_version, "22.04");
}

TEST(HostFactsTest, OsReleaseUnquotesLikeAShellAndFallsBackToNameAndVersion) {
  HostFacts facts;
  ParseOsRelease(
      "# comment\n"
      "NAME='Alpine Linux'\r\n"
      "ID=alpine\n"
      "VERSION_ID=3.19.1\n"
      "VERSION=\"v3.19 \\\"edge\\\" \\\\ \\$HOME\"\n"
      "garbage line without equals\n"
      "BROKEN=\"never closed\n",
      &facts);
  EXPECT_EQ(facts.distribution, "Alpine Linux v3.19 \"edge\" \\ $HOME");
  EXPECT_EQ(facts.distribution_id, "alpine");
  EXPECT_EQ(facts.distribution_version, "3.19.1");

  HostFacts empty;
  ParseOsRelease("", &empty);
  EXPECT_EQ(empty.distribution, "");
  EXPECT_EQ(empty.distribution_id, "");
}

TEST(HostFactsTest, ParsesX86CpuInfo) {
  HostFacts facts;
  ParseCpuInfo(Recorded("cpuinfo-x86_64"), &facts);
  EXPECT_EQ(facts.cpu_model, "Intel(R) Xeon(R) Platinum 8480C");
  EXPECT_EQ(facts.cpu_cores, 2);  // "processor" entries, not the "cpu cores: 56" field
  ASSERT_EQ(facts.cpu_flags.size(), 170u);
  EXPECT_EQ(facts.cpu_flags.front(), "fpu");
  EXPECT_EQ(facts.cpu_flags.back(), "arch_capabilities");
  // "flags", not the "vmx flags" line that follows it.
  EXPECT_NE(std::find(facts.cpu_flags.begin(), facts.cpu_flags.end(), "amx_tile"),
            facts.cpu_flags.end());
  EXPECT_EQ(std::find(facts.cpu_flags.begin(), facts.cpu_flags.end(), "preemption_timer"),
            facts.cpu_flags.end());
}

TEST(HostFactsTest, ParsesAarch64CpuInfoWithoutModelName) {
  HostFacts facts;
  ParseCpuInfo(Recorded("cpuinfo-aarch64"), &facts);
  EXPECT_EQ(facts.cpu_model, "ARM Neoverse-V2");
  EXPECT_EQ(facts.cpu_cores, 2);
  ASSERT_FALSE(facts.cpu_flags.empty());
  EXPECT_EQ(facts.cpu_flags.front(), "fp");
  EXPECT_NE(std::find(facts.cpu_flags.begin(), facts.cpu_flags.end(), "sve2"),
            facts.cpu_flags.end());

  // A part cairn does not name: the SoC when the kernel gives one, else the raw ids.
  HostFacts with_hardware;
  ParseCpuInfo("processor\t: 0\nCPU implementer\t: 0xc0\nCPU part\t: 0xAC3\nHardware\t: X1\n",
               &with_hardware);
  EXPECT_EQ(with_hardware.cpu_model, "X1");
  HostFacts raw;
  ParseCpuInfo("processor\t: 0\nCPU implementer\t: 0xc0\nCPU part\t: 0xAC3\n", &raw);
  EXPECT_EQ(raw.cpu_model, "Ampere part 0xac3");
}

TEST(HostFactsTest, CpuInfoKeepsCoresTheCallerSet) {
  HostFacts facts;
  facts.cpu_cores = 16;
  ParseCpuInfo(Recorded("cpuinfo-x86_64"), &facts);
  EXPECT_EQ(facts.cpu_cores, 16);
  EXPECT_EQ(facts.cpu_model, "Intel(R) Xeon(R) Platinum 8480C");
}

TEST(HostFactsTest, ParsesMemInfoInMib) {
  EXPECT_EQ(ParseMemInfo(Recorded("meminfo")), 2063857);                            // 2113389588 kB
  EXPECT_EQ(ParseMemInfo("MemFree: 1 kB\nMemTotal:        16318452 kB\n"), 15935);  // rounded down
  EXPECT_EQ(ParseMemInfo("MemFree: 1 kB\n"), 0);
  EXPECT_EQ(ParseMemInfo("MemTotal: lots kB\n"), 0);
}

TEST(HostFactsTest, ParsesNvidiaSmiCsvOf535WithTwoGpus) {
  auto gpus = ParseNvidiaSmiCsv(Recorded("nvidia-535/query-gpu.csv"), GpuQuery::kWithComputeCap);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  const GpuInfo& first = (*gpus)[0];
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(first.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(first.uuid, "GPU-4b9e2d6a-0c1f-3a8b-7d5e-91f2a3c4b5d6");
  EXPECT_EQ(first.memory_total_mib, 81920);
  EXPECT_EQ(first.compute_capability, "8.0");
  EXPECT_EQ(first.driver_version, "535.104.05");
  EXPECT_EQ((*gpus)[1].index, 1);
  EXPECT_EQ((*gpus)[1].uuid, "GPU-c71d8e20-5a3b-4f96-b0e4-6d2a1f8c9e37");
}

TEST(HostFactsTest, ParsesNvidiaSmiCsvOf550WithFourGpus) {
  auto gpus =
      ParseNvidiaSmiCsv(Recorded("nvidia-550-open/query-gpu.csv"), GpuQuery::kWithComputeCap);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*gpus)[i].index, i);
    EXPECT_EQ((*gpus)[i].name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ((*gpus)[i].memory_total_mib, 81559);
    EXPECT_EQ((*gpus)[i].compute_capability, "9.0");
    EXPECT_EQ((*gpus)[i].driver_version, "550.54.15");
  }
  EXPECT_EQ((*gpus)[3].uuid, "GPU-59c0e3a7-1f84-d26b-9a3e-c7f05b1d2e68");
}

TEST(HostFactsTest, ParsesNvidiaSmiCsvOf470WithoutComputeCap) {
  auto gpus = ParseNvidiaSmiCsv(Recorded("nvidia-470/query-gpu.csv"), GpuQuery::kWithoutComputeCap);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[1].index, 1);
  EXPECT_EQ((*gpus)[1].name, "Tesla K80");
  EXPECT_EQ((*gpus)[1].memory_total_mib, 11441);
  EXPECT_EQ((*gpus)[1].compute_capability, "");
  EXPECT_EQ((*gpus)[1].driver_version, "470.182.03");
}

TEST(HostFactsTest, NvidiaSmiCsvToleratesNotAvailableSpacingAndLineEnds) {
  // [N/A] memory (as on GB10), [Not Supported] compute capability, no spaces after commas,
  // CRLF, a blank line and no trailing newline.
  auto gpus = ParseNvidiaSmiCsv(
      "0, NVIDIA GB10, GPU-11111111-2222-3333-4444-555555555555, [N/A], 12.1, 580.95.05\r\n"
      "\n"
      "1,Tesla T4,[N/A],15360 MiB,[Not Supported],580.95.05",
      GpuQuery::kWithComputeCap);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].name, "NVIDIA GB10");
  EXPECT_EQ((*gpus)[0].memory_total_mib, 0);
  EXPECT_EQ((*gpus)[0].compute_capability, "12.1");
  EXPECT_EQ((*gpus)[0].driver_version, "580.95.05");
  EXPECT_EQ((*gpus)[1].name, "Tesla T4");
  EXPECT_EQ((*gpus)[1].uuid, "");
  EXPECT_EQ((*gpus)[1].memory_total_mib, 15360);
  EXPECT_EQ((*gpus)[1].compute_capability, "");

  auto none = ParseNvidiaSmiCsv("", GpuQuery::kWithComputeCap);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(HostFactsTest, NvidiaSmiCsvRejectsTextThatIsNotThatQuery) {
  // The 470 driver's refusal is not a GPU list.
  auto refused = ParseNvidiaSmiCsv(Recorded("nvidia-470/query-gpu-compute-cap.txt"),
                                   GpuQuery::kWithComputeCap);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("line 1"), std::string::npos);
  EXPECT_NE(refused.status().message().find("compute_cap"), std::string::npos);
  // Each form read as the other.
  EXPECT_FALSE(
      ParseNvidiaSmiCsv(Recorded("nvidia-535/query-gpu.csv"), GpuQuery::kWithoutComputeCap).ok());
  EXPECT_FALSE(
      ParseNvidiaSmiCsv(Recorded("nvidia-470/query-gpu.csv"), GpuQuery::kWithComputeCap).ok());
  EXPECT_FALSE(ParseNvidiaSmiCsv("x, A, GPU-1, 1, 8.0, 535.1\n", GpuQuery::kWithComputeCap).ok());
  EXPECT_FALSE(
      ParseNvidiaSmiCsv(Recorded("no-gpu/nvidia-smi-no-driver.txt"), GpuQuery::kWithComputeCap)
          .ok());
}

TEST(HostFactsTest, ParsesCudaVersionFromNvidiaSmiHeader) {
  EXPECT_EQ(ParseNvidiaSmiCudaVersion(Recorded("nvidia-470/nvidia-smi.txt")), "11.4");
  EXPECT_EQ(ParseNvidiaSmiCudaVersion(Recorded("nvidia-535/nvidia-smi.txt")), "12.2");
  EXPECT_EQ(ParseNvidiaSmiCudaVersion(Recorded("nvidia-550-open/nvidia-smi.txt")), "12.4");
  // The 610 drivers renamed the field.
  EXPECT_EQ(ParseNvidiaSmiCudaVersion("| NVIDIA-SMI 610.43.02              KMD Version: 610.43.02"
                                      "     CUDA UMD Version: 13.3     |\n"),
            "13.3");
  EXPECT_EQ(ParseNvidiaSmiCudaVersion(Recorded("no-gpu/nvidia-smi-no-driver.txt")), "");
  EXPECT_EQ(ParseNvidiaSmiCudaVersion("CUDA Version: N/A"), "");
}

TEST(HostFactsTest, ParsesDriverVersionFileOfProprietaryAndOpenModules) {
  EXPECT_EQ(ParseNvidiaDriverVersionFile(Recorded("nvidia-470/driver-version")), "470.182.03");
  EXPECT_EQ(ParseNvidiaDriverVersionFile(Recorded("nvidia-535/driver-version")), "535.104.05");
  EXPECT_EQ(ParseNvidiaDriverVersionFile(Recorded("nvidia-550-open/driver-version")), "550.54.15");
  EXPECT_EQ(ParseNvidiaDriverVersionFile(
                "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  565.57.01  Release "
                "Build  (dvs-builder@U16-A24-9-2)  Thu Oct 10 12:15:00 UTC 2024\n"),
            "565.57.01");
  EXPECT_EQ(ParseNvidiaDriverVersionFile("GCC version:  gcc version 12.3.0\n"), "");
  EXPECT_EQ(ParseNvidiaDriverVersionFile(""), "");
}

// --- collection -------------------------------------------------------------------------------

TEST(HostFactsTest, CollectsEveryFactFromAHostWith535Driver) {
  FakeHostProbe probe = HostWithDriver("nvidia-535");
  probe.commands[kQueryWithCc] = {0, Recorded("nvidia-535/query-gpu.csv"), Status()};
  HostFacts facts = CollectHostFacts(probe);

  EXPECT_EQ(facts.os, "linux");
  EXPECT_EQ(facts.kernel, "5.15.0-105-generic");
  EXPECT_EQ(facts.machine, "x86_64");
  EXPECT_EQ(facts.glibc, "2.35");
  EXPECT_EQ(facts.hostname, "dgx-07");
  EXPECT_EQ(facts.distribution, "Ubuntu 22.04.4 LTS");
  EXPECT_EQ(facts.cpu_model, "Intel(R) Xeon(R) Platinum 8480C");
  EXPECT_EQ(facts.cpu_cores, 2);
  EXPECT_EQ(facts.memory_total_mib, 2063857);
  ASSERT_EQ(facts.gpus.size(), 2u);
  EXPECT_EQ(facts.gpus[1].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(facts.driver_version, "535.104.05");
  EXPECT_EQ(facts.cuda_driver_version, "12.2");
  EXPECT_EQ(facts.gpu_note, "");

  EXPECT_EQ(probe.ran, (std::vector<std::string>{kQueryWithCc, "nvidia-smi"}));
  for (auto timeout : probe.timeouts) EXPECT_EQ(timeout, kNvidiaSmiTimeout);
}

TEST(HostFactsTest, JsonReadsBackWhatItWrote) {
  FakeHostProbe probe = HostWithDriver("nvidia-535");
  probe.commands[kQueryWithCc] = {0, Recorded("nvidia-535/query-gpu.csv"), Status()};
  const HostFacts facts = CollectHostFacts(probe);
  Result<HostFacts> back = ParseHostFactsJson(HostFactsJson(facts));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(HostFactsJson(*back), HostFactsJson(facts));
  ASSERT_EQ(back->gpus.size(), 2u);
  EXPECT_EQ(back->gpus[0].compute_capability, "8.0");
  EXPECT_EQ(back->driver_version, "535.104.05");
  EXPECT_EQ(ParseHostFactsJson("[1]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseHostFactsJson(R"({"glibc": 2})").status().code(), StatusCode::kInvalidArgument);
}

TEST(HostFactsTest, CollectFallsBackWithoutComputeCapOn470Driver) {
  FakeHostProbe probe = HostWithDriver("nvidia-470");
  probe.commands[kQueryWithCc] = {2, Recorded("nvidia-470/query-gpu-compute-cap.txt"), Status()};
  probe.commands[kQueryWithoutCc] = {0, Recorded("nvidia-470/query-gpu.csv"), Status()};
  HostFacts facts = CollectHostFacts(probe);

  EXPECT_EQ(probe.ran, (std::vector<std::string>{kQueryWithCc, kQueryWithoutCc, "nvidia-smi"}));
  ASSERT_EQ(facts.gpus.size(), 2u);
  EXPECT_EQ(facts.gpus[0].name, "Tesla K80");
  EXPECT_EQ(facts.gpus[0].memory_total_mib, 11441);
  EXPECT_EQ(facts.gpus[0].compute_capability, "");
  EXPECT_EQ(facts.driver_version, "470.182.03");
  EXPECT_EQ(facts.cuda_driver_version, "11.4");
  EXPECT_EQ(facts.gpu_note, "");

  auto tags = TagMap(HostFactTags(facts));
  EXPECT_EQ(tags["cairn.gpu.count"], "2");
  EXPECT_EQ(tags["cairn.gpu.name"], "2 x Tesla K80");
  EXPECT_EQ(tags["cairn.gpu.driver"], "470.182.03");
  EXPECT_EQ(tags.count("cairn.gpu.compute_capability"), 0u);  // unknown, so not tagged
}

TEST(HostFactsTest, CollectReadsOpenKernelModuleHostWith550Driver) {
  FakeHostProbe probe = HostWithDriver("nvidia-550-open");
  probe.commands[kQueryWithCc] = {0, Recorded("nvidia-550-open/query-gpu.csv"), Status()};
  HostFacts facts = CollectHostFacts(probe);
  EXPECT_EQ(facts.gpus.size(), 4u);
  EXPECT_EQ(facts.driver_version, "550.54.15");
  EXPECT_EQ(facts.cuda_driver_version, "12.4");
  EXPECT_EQ(GpuSummary(facts), "4 x NVIDIA H100 80GB HBM3");
}

TEST(HostFactsTest, CollectWithoutNvidiaSmiYieldsNoGpu) {
  FakeHostProbe probe = HostWithDriver("");  // no driver file, nvidia-smi not on PATH
  HostFacts facts = CollectHostFacts(probe);

  EXPECT_TRUE(facts.gpus.empty());
  EXPECT_EQ(facts.driver_version, "");
  EXPECT_EQ(facts.cuda_driver_version, "");
  EXPECT_EQ(facts.gpu_note, "nvidia-smi not found");
  EXPECT_EQ(probe.ran, std::vector<std::string>{kQueryWithCc});   // no retry, no header call
  EXPECT_EQ(facts.cpu_model, "Intel(R) Xeon(R) Platinum 8480C");  // the rest is still there

  auto tags = TagMap(HostFactTags(facts));
  EXPECT_EQ(tags["cairn.gpu.name"], "no GPU");
  EXPECT_EQ(tags["cairn.gpu.count"], "0");
  EXPECT_EQ(tags.count("cairn.gpu.driver"), 0u);
  EXPECT_EQ(tags.count("cairn.gpu.cuda"), 0u);

  std::string json = HostFactsJson(facts);
  EXPECT_NE(json.find(R"("gpus":[])"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("gpu":"no GPU")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("gpu_note":"nvidia-smi not found")"), std::string::npos) << json;
}

TEST(HostFactsTest, CollectRecordsWhyABrokenDriverGivesNoGpu) {
  FakeHostProbe probe = HostWithDriver("");
  probe.commands[kQueryWithCc] = {9, Recorded("no-gpu/nvidia-smi-no-driver.txt"), Status()};
  HostFacts facts = CollectHostFacts(probe);
  EXPECT_TRUE(facts.gpus.empty());
  EXPECT_EQ(facts.gpu_note,
            "nvidia-smi exited with code 9: NVIDIA-SMI has failed because it couldn't "
            "communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is "
            "installed and running.");
  EXPECT_EQ(probe.ran, std::vector<std::string>{kQueryWithCc});

  FakeHostProbe no_devices = HostWithDriver("nvidia-535");
  no_devices.commands[kQueryWithCc] = {6, Recorded("no-gpu/nvidia-smi-no-devices.txt"), Status()};
  HostFacts facts2 = CollectHostFacts(no_devices);
  EXPECT_TRUE(facts2.gpus.empty());
  EXPECT_EQ(facts2.gpu_note, "nvidia-smi exited with code 6: No devices were found");
  EXPECT_EQ(facts2.driver_version, "535.104.05");  // the kernel module is loaded
  EXPECT_EQ(TagMap(HostFactTags(facts2))["cairn.gpu.name"], "no GPU");
}

TEST(HostFactsTest, CollectSurvivesAHostWhereNothingCanBeRead) {
  FakeHostProbe probe;
  probe.uname = Internal("uname failed");
  probe.glibc = Unimplemented("the C library is not glibc");
  probe.hostname = Internal("gethostname failed");
  probe.commands[kQueryWithCc] = {0, "", Unavailable("nvidia-smi did not finish within 10000 ms")};
  HostFacts facts = CollectHostFacts(probe);

  EXPECT_EQ(facts.os, "");
  EXPECT_EQ(facts.glibc, "");
  EXPECT_EQ(facts.cpu_cores, 0);
  EXPECT_EQ(facts.memory_total_mib, 0);
  EXPECT_TRUE(facts.gpus.empty());
  EXPECT_EQ(facts.gpu_note, "nvidia-smi failed: nvidia-smi did not finish within 10000 ms");
  // A hung nvidia-smi is not asked again.
  EXPECT_EQ(probe.ran, std::vector<std::string>{kQueryWithCc});

  auto tags = TagMap(HostFactTags(facts));
  EXPECT_EQ(tags.size(), 2u);  // only the GPU count and name, which are always there
  EXPECT_EQ(tags["cairn.gpu.name"], "no GPU");
}

TEST(HostFactsTest, CollectFallsBackToOtherOsReleaseAndToNvidiaSmiDriverVersion) {
  FakeHostProbe probe = HostWithDriver("nvidia-535");
  probe.files.erase("/etc/os-release");
  probe.files["/usr/lib/os-release"] = Recorded("os-release-ubuntu-22.04");
  probe.files.erase("/proc/driver/nvidia/version");  // hidden, as in some containers
  probe.commands[kQueryWithCc] = {0, Recorded("nvidia-535/query-gpu.csv"), Status()};
  HostFacts facts = CollectHostFacts(probe);
  EXPECT_EQ(facts.distribution, "Ubuntu 22.04.4 LTS");
  EXPECT_EQ(facts.driver_version, "535.104.05");
}

// --- output -----------------------------------------------------------------------------------

TEST(HostFactsTest, TagsNameTheKeyFacts) {
  FakeHostProbe probe = HostWithDriver("nvidia-535");
  probe.commands[kQueryWithCc] = {0, Recorded("nvidia-535/query-gpu.csv"), Status()};
  auto tags = TagMap(HostFactTags(CollectHostFacts(probe)));
  EXPECT_EQ(tags, (std::map<std::string, std::string>{
                      {"cairn.host.os", "linux"},
                      {"cairn.host.distribution", "Ubuntu 22.04.4 LTS"},
                      {"cairn.host.kernel", "5.15.0-105-generic"},
                      {"cairn.host.machine", "x86_64"},
                      {"cairn.host.glibc", "2.35"},
                      {"cairn.host.cpu", "Intel(R) Xeon(R) Platinum 8480C"},
                      {"cairn.host.cpu_cores", "2"},
                      {"cairn.host.memory_mib", "2063857"},
                      {"cairn.host.hostname", "dgx-07"},
                      {"cairn.gpu.count", "2"},
                      {"cairn.gpu.name", "2 x NVIDIA A100-SXM4-80GB"},
                      {"cairn.gpu.driver", "535.104.05"},
                      {"cairn.gpu.cuda", "12.2"},
                      {"cairn.gpu.compute_capability", "8.0"},
                  }));
}

TEST(HostFactsTest, GpuSummaryGroupsMixedGpusInOrder) {
  HostFacts facts;
  facts.gpus = {{0, "NVIDIA RTX A6000", "", 0, "8.6", ""},
                {1, "NVIDIA GeForce RTX 4090", "", 0, "8.9", ""},
                {2, "NVIDIA RTX A6000", "", 0, "8.6", ""},
                {3, "", "", 0, "", ""}};
  EXPECT_EQ(GpuSummary(facts), "2 x NVIDIA RTX A6000, NVIDIA GeForce RTX 4090, unnamed GPU");
  EXPECT_EQ(TagMap(HostFactTags(facts))["cairn.gpu.compute_capability"], "8.6,8.9");
}

TEST(HostFactsTest, TagValuesStayBelowMlflowLimit) {
  HostFacts facts;
  facts.hostname = "h";
  for (int i = 0; i < 3000; ++i) facts.hostname += "\xC3\xA9";  // "é", two bytes each
  for (int i = 0; i < 500; ++i) {
    facts.gpus.push_back({i, "GPU model " + std::to_string(i), "", 0, "", ""});
  }
  for (const core::Tag& tag : HostFactTags(facts)) {
    EXPECT_LT(tag.value.size(), kMaxTagValueLength) << tag.key;
    EXPECT_TRUE(IsValidUtf8(tag.value)) << tag.key;
  }
  auto tags = TagMap(HostFactTags(facts));
  EXPECT_TRUE(tags["cairn.host.hostname"].ends_with("\xC3\xA9..."));
  EXPECT_TRUE(tags["cairn.gpu.name"].starts_with("GPU model 0, GPU model 1, "));
  EXPECT_EQ(tags["cairn.gpu.count"], "500");
}

TEST(HostFactsTest, JsonHoldsEveryField) {
  HostFacts facts;
  facts.os = "linux";
  facts.distribution = "Debian GNU/Linux 12 (bookworm)";
  facts.distribution_id = "debian";
  facts.distribution_version = "12";
  facts.kernel = "6.1.0-18-amd64";
  facts.machine = "x86_64";
  facts.glibc = "2.36";
  facts.hostname = "gpu\"1";
  facts.cpu_model = "AMD EPYC 7763 64-Core Processor";
  facts.cpu_cores = 128;
  facts.cpu_flags = {"avx2", "sse4_2"};
  facts.memory_total_mib = 515703;
  facts.gpus = {{0, "NVIDIA L4", "GPU-1", 23034, "8.9", "550.54.15"}};
  facts.driver_version = "550.54.15";
  facts.cuda_driver_version = "12.4";
  EXPECT_EQ(HostFactsJson(facts),
            R"j({"os":"linux","distribution":"Debian GNU/Linux 12 (bookworm)",)j"
            R"j("distribution_id":"debian","distribution_version":"12",)j"
            R"j("kernel":"6.1.0-18-amd64","machine":"x86_64","glibc":"2.36",)j"
            R"j("hostname":"gpu\"1","cpu_model":"AMD EPYC 7763 64-Core Processor",)j"
            R"j("cpu_cores":128,"cpu_flags":["avx2","sse4_2"],"memory_total_mib":515703,)j"
            R"j("gpu":"NVIDIA L4","gpu_count":1,"gpu_note":"","driver_version":"550.54.15",)j"
            R"j("cuda_driver_version":"12.4","gpus":[{"index":0,"name":"NVIDIA L4",)j"
            R"j("uuid":"GPU-1","memory_total_mib":23034,"compute_capability":"8.9",)j"
            R"j("driver_version":"550.54.15"}]})j");
}

// --- the real probe ---------------------------------------------------------------------------

TEST(HostFactsTest, RealProbeRunsCommandsAndCapturesBothStreams) {
  const std::vector<std::string> argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  auto out = RealHostProbe()->RunCommand(argv, std::chrono::seconds(10));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_EQ(out->output, "out\n");
  EXPECT_EQ(out->error_output, "err\n");

  const std::vector<std::string> missing = {"cairn-no-such-nvidia-smi"};
  EXPECT_EQ(RealHostProbe()->RunCommand(missing, std::chrono::seconds(10)).status().code(),
            StatusCode::kNotFound);
}

TEST(HostFactsTest, RealProbeKillsACommandThatHangs) {
  // A child that keeps the pipes open and a parent that never ends: the group is killed.
  const std::vector<std::string> argv = {"sh", "-c", "sleep 30 & sleep 30"};
  auto start = std::chrono::steady_clock::now();
  auto out = RealHostProbe()->RunCommand(argv, std::chrono::milliseconds(200));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(out.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(out.status().message().find("did not finish within 200 ms"), std::string::npos);
  EXPECT_LT(took, std::chrono::seconds(5));

  // Closing its output does not make a command done either.
  const std::vector<std::string> quiet = {"sh", "-c", "exec >&- 2>&-; sleep 30"};
  start = std::chrono::steady_clock::now();
  out = RealHostProbe()->RunCommand(quiet, std::chrono::milliseconds(200));
  EXPECT_EQ(out.status().code(), StatusCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace cairn::env
