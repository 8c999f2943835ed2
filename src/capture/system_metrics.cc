#include "capture/system_metrics.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "util/strings.h"

namespace cairn::capture {

using env::CommandOutput;
using env::HostProbe;
using env::ParseMemInfo;
namespace {

constexpr std::chrono::milliseconds kNvidiaSmiUsageTimeout{5000};

double Number(std::string_view f) {
  std::string s(f);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return end == s.c_str() ? 0 : v;  // "[N/A]" and the like
}

core::Metric M(std::string key, double value, int64_t timestamp, int64_t step) {
  return core::Metric{std::move(key), value, timestamp, step};
}

}  // namespace

std::optional<CpuTimes> ParseProcStat(std::string_view text) {
  size_t eol = text.find('\n');
  std::string_view line = text.substr(0, eol);
  if (!line.starts_with("cpu ")) return std::nullopt;
  std::istringstream in{std::string(line.substr(4))};
  // user nice system idle iowait irq softirq steal (guest time is already in user).
  int64_t v[8] = {};
  int n = 0;
  while (n < 8 && (in >> v[n])) ++n;
  if (n < 4) return std::nullopt;
  CpuTimes t;
  for (int i = 0; i < n; ++i) t.total += v[i];
  t.busy = t.total - v[3] - (n > 4 ? v[4] : 0);
  return t;
}

std::optional<ProcessStat> ParseProcPidStat(std::string_view text) {
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses; the last ')' ends it.
  size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  ProcessStat st;
  st.pid = static_cast<pid_t>(std::atoll(std::string(text.substr(0, text.find(' '))).c_str()));
  std::istringstream in{std::string(text.substr(close + 1))};
  std::vector<std::string> f;
  std::string w;
  while (in >> w) f.push_back(w);
  // f[0] is field 3 (state): utime is field 14, stime 15, rss 24.
  if (f.size() < 22) return std::nullopt;
  st.pgrp = static_cast<pid_t>(std::atoll(f[2].c_str()));
  st.cpu_ticks = std::atoll(f[11].c_str()) + std::atoll(f[12].c_str());
  st.rss_pages = std::atoll(f[21].c_str());
  return st;
}

int64_t ParseMemAvailable(std::string_view text) {
  size_t at = text.find("MemAvailable:");
  if (at == std::string_view::npos) return 0;
  return std::atoll(std::string(text.substr(at + 13, 32)).c_str()) / 1024;
}

std::vector<GpuUsage> ParseNvidiaSmiUsage(std::string_view csv) {
  std::vector<GpuUsage> out;
  for (std::string_view line : Split(csv, '\n')) {
    std::vector<std::string_view> f = Split(line, ',');
    for (std::string_view& field : f) field = Trim(field);
    if (f.size() != 4 || f[0].empty()) continue;
    out.push_back({static_cast<int>(Number(f[0])), Number(f[1]), Number(f[2]), Number(f[3])});
  }
  return out;
}

SystemSampler::SystemSampler(HostProbe* probe, pid_t process_group)
    : probe_(probe), group_(process_group) {}

std::vector<core::Metric> SystemSampler::Sample(int64_t timestamp, int64_t step) {
  std::vector<core::Metric> out;
  // The machine's CPU.
  if (Result<std::string> stat = probe_->ReadFile("/proc/stat"); stat.ok()) {
    std::optional<CpuTimes> cpu = ParseProcStat(*stat);
    if (cpu && last_cpu_ && cpu->total > last_cpu_->total) {
      out.push_back(M("system/cpu_utilization_percentage",
                      100.0 * static_cast<double>(cpu->busy - last_cpu_->busy) /
                          static_cast<double>(cpu->total - last_cpu_->total),
                      timestamp, step));
    }
    last_cpu_ = cpu;
  }
  // Memory of the machine.
  if (Result<std::string> mem = probe_->ReadFile("/proc/meminfo"); mem.ok()) {
    const int64_t total = ParseMemInfo(*mem);
    const int64_t available = ParseMemAvailable(*mem);
    if (total > 0) {
      out.push_back(M("system/system_memory_usage_megabytes",
                      static_cast<double>(total - available), timestamp, step));
      out.push_back(M("system/system_memory_usage_percentage",
                      100.0 * static_cast<double>(total - available) / static_cast<double>(total),
                      timestamp, step));
    }
  }
  // The command's process group: CPU (100 = one core busy) and resident memory.
  if (Result<std::vector<std::string>> pids = probe_->ListDir("/proc"); pids.ok()) {
    int64_t ticks = 0, pages = 0;
    bool any = false;
    for (const std::string& name : *pids) {
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      Result<std::string> text = probe_->ReadFile("/proc/" + name + "/stat");
      if (!text.ok()) continue;  // ended meanwhile
      std::optional<ProcessStat> st = ParseProcPidStat(*text);
      if (!st || st->pgrp != group_) continue;
      any = true;
      ticks += st->cpu_ticks;
      pages += st->rss_pages;
    }
    if (any) {
      static const double kPageMib = static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
      static const double kTicksPerSecond = static_cast<double>(sysconf(_SC_CLK_TCK));
      out.push_back(M("system/process_memory_rss_megabytes",
                      static_cast<double>(pages) * kPageMib, timestamp, step));
      if (last_group_ticks_ >= 0 && timestamp > last_time_ms_ && ticks >= last_group_ticks_) {
        const double seconds = static_cast<double>(timestamp - last_time_ms_) / 1000.0;
        out.push_back(M("system/process_cpu_percentage",
                        100.0 * static_cast<double>(ticks - last_group_ticks_) /
                            kTicksPerSecond / seconds,
                        timestamp, step));
      }
      last_group_ticks_ = ticks;
    }
  }
  last_time_ms_ = timestamp;
  // GPUs, while nvidia-smi answers.
  if (gpus_) {
    const std::vector<std::string> argv = {
        "nvidia-smi", "--query-gpu=index,utilization.gpu,memory.used,memory.total",
        "--format=csv,noheader,nounits"};
    Result<CommandOutput> r = probe_->RunCommand(argv, kNvidiaSmiUsageTimeout);
    if (!r.ok() || r->exit_code != 0) {
      gpus_ = false;
    } else {
      for (const GpuUsage& g : ParseNvidiaSmiUsage(r->output)) {
        const std::string p = "system/gpu_" + std::to_string(g.index) + "_";
        out.push_back(M(p + "utilization_percentage", g.utilization_percent, timestamp, step));
        out.push_back(M(p + "memory_usage_megabytes", g.memory_used_mib, timestamp, step));
        if (g.memory_total_mib > 0) {
          out.push_back(M(p + "memory_usage_percentage",
                          100.0 * g.memory_used_mib / g.memory_total_mib, timestamp, step));
        }
      }
    }
  }
  return out;
}

}  // namespace cairn::capture
