// System metrics of a running command, sampled every few seconds while `cairn run` waits for
// it: CPU and memory of the machine and of the command's process group, and per NVIDIA GPU
// its utilisation and memory. Names follow MLflow's system metrics (system/...), so MLflow's
// UI shows them alongside; the process-group ones are cairn's own.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "env/host_facts.h"

namespace cairn::capture {

// CPU time of the whole machine from the "cpu" line of /proc/stat, in clock ticks.
struct CpuTimes {
  int64_t busy = 0;
  int64_t total = 0;
};
std::optional<CpuTimes> ParseProcStat(std::string_view text);

// The fields of /proc/<pid>/stat that sampling needs.
struct ProcessStat {
  pid_t pid = 0;
  pid_t pgrp = 0;
  int64_t cpu_ticks = 0;  // utime + stime
  int64_t rss_pages = 0;
};
std::optional<ProcessStat> ParseProcPidStat(std::string_view text);

// Available memory of the machine (MemAvailable), in MiB.
int64_t ParseMemAvailable(std::string_view text);

struct GpuUsage {
  int index = 0;
  double utilization_percent = 0;
  double memory_used_mib = 0;
  double memory_total_mib = 0;
};
// Output of `nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total
// --format=csv,noheader,nounits` ("[N/A]" fields read as 0).
std::vector<GpuUsage> ParseNvidiaSmiUsage(std::string_view csv);

// Samples the machine and one process group; each Sample() covers the time since the last.
class SystemSampler {
 public:
  SystemSampler(env::HostProbe* probe, pid_t process_group);
  // The metrics at `timestamp` (ms) and `step`. The CPU percentages need a previous sample,
  // so the first call gives memory and GPU figures only.
  std::vector<core::Metric> Sample(int64_t timestamp, int64_t step);
  // Skips GPUs (a host whose facts show no NVIDIA driver: asking again costs a process spawn).
  void DisableGpus() { gpus_ = false; }

 private:
  env::HostProbe* probe_;
  pid_t group_;
  std::optional<CpuTimes> last_cpu_;
  int64_t last_group_ticks_ = -1;
  int64_t last_time_ms_ = 0;
  bool gpus_ = true;  // false once nvidia-smi is known to be missing or failing
};

}  // namespace cairn::capture
