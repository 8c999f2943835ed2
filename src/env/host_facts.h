// Host facts: what a run's results may depend on beyond its code and packages. The operating
// system and distribution, kernel, glibc, CPU (model, cores, flags), memory and hostname, and
// per NVIDIA GPU its name, UUID, memory, compute capability, driver version and the highest
// CUDA version that driver supports. A host without NVIDIA tools or driver has no GPUs: that
// is a fact ("no GPU"), not an error.
//
// Collecting reads /etc/os-release, uname(2), gnu_get_libc_version(3), /proc/cpuinfo,
// /proc/meminfo, /proc/driver/nvidia/version and the output of `nvidia-smi`. The parsers are
// separate functions so that tests feed them recorded outputs of real drivers, and every read
// goes through a `HostProbe` so that collection itself is tested against a fake host.
//
// Collection never fails: a fact that cannot be read stays empty (or 0). Host facts describe
// a run; a missing one must not stop the run from being recorded.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model.h"
#include "util/status.h"

namespace cairn::env {

struct GpuInfo {
  int index = 0;
  std::string name;                // "NVIDIA A100-SXM4-80GB"
  std::string uuid;                // "GPU-…"
  int64_t memory_total_mib = 0;    // 0 when the driver does not report it
  std::string compute_capability;  // "8.0"; empty when the driver does not report it
  std::string driver_version;      // "535.104.05"
};

struct HostFacts {
  std::string os;  // "linux"
  // PRETTY_NAME of /etc/os-release, e.g. "Debian GNU/Linux 12 (bookworm)"
  std::string distribution;
  std::string distribution_id;       // ID, e.g. "debian"
  std::string distribution_version;  // VERSION_ID, e.g. "12"
  std::string kernel;                // uname release, e.g. "6.1.0-18-amd64"
  std::string machine;               // uname machine, e.g. "x86_64"
  std::string glibc;                 // "2.36"
  std::string hostname;
  std::string cpu_model;
  int cpu_cores = 0;  // logical CPUs online
  std::vector<std::string> cpu_flags;
  int64_t memory_total_mib = 0;
  // GPUs; empty on a host without an NVIDIA driver.
  std::vector<GpuInfo> gpus;
  std::string driver_version;       // NVIDIA kernel module version; empty without a driver
  std::string cuda_driver_version;  // highest CUDA the driver supports, e.g. "12.2"; empty without
  // Why `gpus` is empty ("nvidia-smi not found", a timeout, nvidia-smi's own error text): "no
  // GPU" on a CPU host and "no GPU" because the driver is broken are different facts. Empty
  // when GPUs were found.
  std::string gpu_note;
};

// ---------------------------------------------------------------------------------------------
// Parsers. Pure functions over recorded text; none of them touches the host.

// Reads /etc/os-release (os-release(5)): KEY=value lines whose value is unquoted, "double
// quoted" (with backslash escapes) or 'single quoted'; comments and malformed lines are
// skipped. Sets distribution (PRETTY_NAME, else NAME and VERSION), distribution_id (ID) and
// distribution_version (VERSION_ID); fields the text does not give are left as they were.
void ParseOsRelease(std::string_view text, HostFacts* facts);

// Reads /proc/cpuinfo. cpu_model is x86's "model name". aarch64 has none, so it is the core
// named from "CPU implementer" and "CPU part" ("ARM Neoverse-V2"); for a part not in cairn's
// small table it is "Hardware" when given, else the raw ids ("Ampere part 0xac3"). cpu_flags
// is x86's "flags" or aarch64's "Features". cpu_cores becomes the number of "processor"
// entries unless the caller already set it (e.g. from sysconf), because /proc/cpuinfo lists
// every CPU while fewer may be usable. Fields the text does not give are left as they were.
void ParseCpuInfo(std::string_view text, HostFacts* facts);

// MemTotal of /proc/meminfo in MiB (rounded down); 0 when the text has no MemTotal.
int64_t ParseMemInfo(std::string_view text);

// The two forms of the GPU query. Drivers before ~510 (the 470 series, still the last for
// Kepler GPUs) reject the `compute_cap` field, so the collector retries without it.
enum class GpuQuery {
  kWithComputeCap,     // index,name,uuid,memory.total,compute_cap,driver_version
  kWithoutComputeCap,  // index,name,uuid,memory.total,driver_version
};

// The nvidia-smi argv that produces `query`'s CSV (noheader, nounits).
std::vector<std::string> NvidiaSmiQueryArgv(GpuQuery query);

// Parses the CSV that NvidiaSmiQueryArgv(query) prints: one line per GPU, fields separated by
// ", ", an optional trailing newline (LF or CRLF). Values nvidia-smi cannot give ("[N/A]",
// "[Not Supported]", any "[…]") become empty strings or 0. Empty text is no GPUs. Returns
// InvalidArgument naming the line when a line has too few fields or a non-numeric index or
// memory: that is not the output of this query (for example the 470 driver's error text).
Result<std::vector<GpuInfo>> ParseNvidiaSmiCsv(std::string_view csv, GpuQuery query);

// The highest CUDA version the driver supports, from the header of plain `nvidia-smi` output:
// "CUDA Version: 12.2", or "CUDA UMD Version: 13.3" since the 610 drivers. Empty when absent.
std::string ParseNvidiaSmiCudaVersion(std::string_view text);

// The kernel module version from /proc/driver/nvidia/version, whose first line is
// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 …" or, for the open
// modules, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build …".
// Empty when the text has no such line.
std::string ParseNvidiaDriverVersionFile(std::string_view text);

// ---------------------------------------------------------------------------------------------
// Collection.

struct CommandOutput {
  int exit_code = 0;         // 128 + the signal when a signal ended it, as a shell reports it
  std::string output;        // standard output
  std::string error_output;  // standard error
};

struct UnameInfo {
  std::string sysname;  // "Linux"
  std::string release;  // "6.1.0-18-amd64"
  std::string machine;  // "x86_64"
};

// Everything CollectHostFacts reads from the host, behind one interface so that tests run it
// against recorded files. Implementations must be safe to call from several threads.
class HostProbe {
 public:
  virtual ~HostProbe() = default;

  // The whole content of a file. NotFound when it does not exist.
  virtual Result<std::string> ReadFile(const std::string& path) = 0;
  // Runs argv (argv[0] looked up on PATH) and returns how it ended and what it printed.
  // NotFound when the command does not exist; Unavailable when it did not end within `timeout`
  // (it is then killed with its whole process group). A non-zero exit is not an error here:
  // the caller reads exit_code.
  virtual Result<CommandOutput> RunCommand(std::span<const std::string> argv,
                                           std::chrono::milliseconds timeout) = 0;
  // Names of the entries of a directory (for /proc). Unimplemented unless a probe needs it.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) {
    return Unimplemented("listing " + path);
  }
  virtual Result<UnameInfo> Uname() = 0;
  // The glibc version, e.g. "2.36"; Unimplemented on a C library that is not glibc.
  virtual Result<std::string> GlibcVersion() = 0;
  virtual Result<std::string> Hostname() = 0;
};

// The probe of the machine this process runs on. Never null; lives as long as the program.
HostProbe* RealHostProbe();

// How long one nvidia-smi call may take. It answers in well under a second on a healthy host,
// but can block for minutes on a broken driver or a GPU that fell off the bus.
inline constexpr std::chrono::milliseconds kNvidiaSmiTimeout{10'000};

// Reads every fact `probe` can give. Never fails: what cannot be read stays empty. Runs
// nvidia-smi at most three times (query, query without compute_cap on old drivers, header),
// each bounded by kNvidiaSmiTimeout; a missing nvidia-smi means no GPUs.
HostFacts CollectHostFacts(HostProbe& probe);

// ---------------------------------------------------------------------------------------------
// Output.

// "no GPU", a name ("NVIDIA L4"), a count and a name ("8 x NVIDIA H100 80GB HBM3"), or such
// groups joined by ", " on a host with mixed GPUs, in order of first appearance.
std::string GpuSummary(const HostFacts& facts);

// The facts as one JSON object (the host facts blob of a run). Every field is present; "gpus"
// is an array (empty without GPUs) and "gpu" is GpuSummary, so "no GPU" is explicit.
std::string HostFactsJson(const HostFacts& facts);

// Reads what HostFactsJson wrote (a run's host.json, or facts recorded on another machine).
// Missing fields stay empty; InvalidArgument when the text is not a JSON object or a field has
// the wrong type.
Result<HostFacts> ParseHostFactsJson(std::string_view json);

// The facts two hosts are compared by (`cairn runs diff-env`, `cairn env diff`), under their
// host.json names: os, distribution, kernel, glibc, cpu_model, cpu_cores, memory_total_mib,
// driver_version, cuda_driver_version, gpu_count and, per GPU, gpus[N].name,
// gpus[N].memory_total_mib and gpus[N].compute_capability. Not the hostname, GPU UUIDs or CPU
// flags: the same environment on another machine of the same kind is the same environment.
// Numbers that are unknown (0) are "".
std::vector<std::pair<std::string, std::string>> ComparedHostFacts(const HostFacts& facts);

// The facts as the TOML table `table` (`cairn env snapshot` writes "tool.cairn.host-facts"):
// host.json's fields under the same names, the GPUs as an array of tables `table`.gpus.
std::string HostFactsToml(const HostFacts& facts, std::string_view table);

// MLflow rejects longer tag values; cairn keeps tag values below it.
inline constexpr size_t kMaxTagValueLength = 5000;

// The key facts as `cairn.host.*` and `cairn.gpu.*` run tags: os, distribution, kernel,
// machine, glibc, cpu, cpu_cores, memory_mib, hostname; gpu count, name (GpuSummary, so "no
// GPU" on a CPU host), driver, cuda and compute_capability (distinct values joined by ",").
// Facts that are unknown are left out rather than tagged with an empty value, except
// cairn.gpu.count and cairn.gpu.name, which are always present. Values longer than MLflow
// allows are cut (at a UTF-8 boundary, ending in "...") to fewer than kMaxTagValueLength bytes.
std::vector<core::Tag> HostFactTags(const HostFacts& facts);

}  // namespace cairn::env
