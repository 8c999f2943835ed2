#include "capture/system_metrics.h"
#include "fakes/fake_host_probe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

namespace cairn::capture {

using env::CommandOutput;
using env::UnameInfo;
namespace {

TEST(SystemMetricsTest, ParsesProcStatAndPidStat) {
  auto cpu = ParseProcStat("cpu  100 5 50 800 45 0 0 0 0 0\ncpu0 1 2 3 4\n");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_EQ(cpu->total, 1000);
  EXPECT_EQ(cpu->busy, 155);  // idle and iowait are not busy
  EXPECT_FALSE(ParseProcStat("intr 1 2 3").has_value());

  // A command name with spaces and a parenthesis must not shift the fields.
  auto st = ParseProcPidStat(
      "4242 (my (odd) prog) S 1 4240 4240 0 -1 4194560 100 0 0 0 70 30 0 0 20 0 3 0 12345 "
      "104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->pgrp, 4240);
  EXPECT_EQ(st->cpu_ticks, 100);
  EXPECT_EQ(st->rss_pages, 2560);
  EXPECT_EQ(ParseMemAvailable("MemTotal: 2048000 kB\nMemAvailable:  1024000 kB\n"), 1000);
}

TEST(SystemMetricsTest, ParsesNvidiaSmiUsage) {
  auto gpus = ParseNvidiaSmiUsage("0, 87, 30512, 81920\n1, [N/A], 0, 81920\n");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].index, 0);
  EXPECT_DOUBLE_EQ(gpus[0].utilization_percent, 87);
  EXPECT_DOUBLE_EQ(gpus[0].memory_used_mib, 30512);
  EXPECT_DOUBLE_EQ(gpus[1].utilization_percent, 0);
  EXPECT_EQ(gpus[1].index, 1);
}

std::map<std::string, double> ByName(const std::vector<core::Metric>& metrics) {
  std::map<std::string, double> out;
  for (const core::Metric& m : metrics) out[m.key] = m.value;
  return out;
}

std::string PidStat(int pid, int pgrp, long ticks, long rss) {
  return std::to_string(pid) + " (p) S 1 " + std::to_string(pgrp) + " " + std::to_string(pgrp) +
         " 0 -1 0 0 0 0 0 " + std::to_string(ticks) + " 0 0 0 20 0 1 0 1 1 " +
         std::to_string(rss) + " 0";
}

TEST(SystemMetricsTest, SamplerMeasuresTheProcessGroupAndGpus) {
  fakes::FakeHostProbe probe;
  probe.dirs["/proc"] = {"1", "500", "501", "self", "acpi"};
  probe.files["/proc/meminfo"] = "MemTotal: 4096000 kB\nMemAvailable: 1024000 kB\n";
  probe.files["/proc/stat"] = "cpu  0 0 0 1000 0 0 0 0\n";
  probe.files["/proc/1/stat"] = PidStat(1, 1, 999, 1000);  // another group: not counted
  probe.files["/proc/500/stat"] = PidStat(500, 500, 0, 256);
  probe.files["/proc/501/stat"] = PidStat(501, 500, 0, 256);
  probe.commands["*"] = {0, "0, 50, 1024, 4096\n", Status()};
  SystemSampler sampler(&probe, 500);

  auto first = ByName(sampler.Sample(10'000, 0));
  EXPECT_EQ(first.count("system/cpu_utilization_percentage"), 0u);  // needs two samples
  EXPECT_DOUBLE_EQ(first["system/system_memory_usage_megabytes"], 3000);
  EXPECT_DOUBLE_EQ(first["system/system_memory_usage_percentage"], 75);
  const double page_mib = static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
  EXPECT_DOUBLE_EQ(first["system/process_memory_rss_megabytes"], 512 * page_mib);
  EXPECT_DOUBLE_EQ(first["system/gpu_0_utilization_percentage"], 50);
  EXPECT_DOUBLE_EQ(first["system/gpu_0_memory_usage_percentage"], 25);

  // Two seconds later the group used one core for one second (ticks per second of CPU).
  const long hz = sysconf(_SC_CLK_TCK);
  probe.files["/proc/stat"] = "cpu  300 0 100 1600 0 0 0 0\n";
  probe.files["/proc/500/stat"] = PidStat(500, 500, hz / 2, 256);
  probe.files["/proc/501/stat"] = PidStat(501, 500, hz / 2, 256);
  auto second = ByName(sampler.Sample(12'000, 1));
  EXPECT_DOUBLE_EQ(second["system/cpu_utilization_percentage"], 40);  // 400 of 1000 ticks
  EXPECT_NEAR(second["system/process_cpu_percentage"], 50, 1);
}

TEST(SystemMetricsTest, WithoutNvidiaSmiTheSamplerStopsAsking) {
  fakes::FakeHostProbe probe;
  probe.dirs["/proc"] = {"1", "500", "501", "self", "acpi"};
  probe.files["/proc/meminfo"] = "MemTotal: 1024 kB\nMemAvailable: 512 kB\n";
  SystemSampler sampler(&probe, 500);
  auto metrics = ByName(sampler.Sample(1, 0));
  sampler.Sample(2, 1);
  EXPECT_EQ(probe.ran.size(), 1u);
  for (const auto& [name, value] : metrics) EXPECT_EQ(name.find("gpu"), std::string::npos);
}

}  // namespace
}  // namespace cairn::capture
