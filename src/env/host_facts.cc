#include "env/host_facts.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "util/file.h"
#include "util/json_writer.h"
#include "util/process.h"
#include "util/strings.h"
#include "util/toml_writer.h"

namespace cairn::env {
namespace {

constexpr std::string_view kSpaces = " \t\r\n";

// Splits on '\n'; a trailing '\r' (CRLF text) is dropped from each line.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

std::vector<std::string> SplitWhitespace(std::string_view s) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < s.size()) {
    size_t begin = s.find_first_not_of(kSpaces, i);
    if (begin == std::string_view::npos) break;
    size_t end = s.find_first_of(kSpaces, begin);
    if (end == std::string_view::npos) end = s.size();
    words.emplace_back(s.substr(begin, end - begin));
    i = end;
  }
  return words;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

// "535.104.05", "12.2": digits and dots, starting with a digit, with at least one dot.
bool LooksLikeVersion(std::string_view s) {
  if (s.empty() || s[0] < '0' || s[0] > '9' || s.find('.') == std::string_view::npos) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

// The value of one os-release line after '=', unquoted as a shell would; nullopt when a quote
// is not closed.
std::optional<std::string> UnquoteOsReleaseValue(std::string_view raw) {
  if (raw.empty()) return std::string();
  if (raw[0] == '\'') {
    size_t close = raw.find('\'', 1);
    if (close == std::string_view::npos) return std::nullopt;
    return std::string(raw.substr(1, close - 1));
  }
  if (raw[0] != '"') return std::string(raw);
  std::string out;
  for (size_t i = 1; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '"') return out;
    // os-release(5): within double quotes, \" \\ \$ and \` stand for the character.
    if (c == '\\' && i + 1 < raw.size() && std::strchr("\"\\$`", raw[i + 1]) != nullptr) {
      c = raw[++i];
    }
    out += c;
  }
  return std::nullopt;
}

// The vendor of an aarch64 "CPU implementer" id, or the id itself.
std::string ArmVendor(std::string_view implementer) {
  static const std::map<std::string, std::string_view, std::less<>> kVendors = {
      {"0x41", "ARM"},       {"0x42", "Broadcom"}, {"0x43", "Cavium"},
      {"0x48", "HiSilicon"}, {"0x4e", "NVIDIA"},   {"0x50", "APM"},
      {"0x51", "Qualcomm"},  {"0x61", "Apple"},    {"0xc0", "Ampere"},
  };
  std::string id = AsciiLower(implementer);
  auto it = kVendors.find(id);
  return it != kVendors.end() ? std::string(it->second) : "implementer " + id;
}

// A few Arm cores that GPU hosts and clusters run, from Linux's
// arch/arm64/include/asm/cputype.h: aarch64 /proc/cpuinfo names no model, and "ARM
// Neoverse-V2" says more than "0xd4f". Empty for other parts.
std::string KnownArmCore(std::string_view implementer, std::string_view part) {
  static const std::map<std::string, std::string_view, std::less<>> kArmParts = {
      {"0xd03", "Cortex-A53"},  {"0xd07", "Cortex-A57"},  {"0xd08", "Cortex-A72"},
      {"0xd0b", "Cortex-A76"},  {"0xd0c", "Neoverse-N1"}, {"0xd40", "Neoverse-V1"},
      {"0xd49", "Neoverse-N2"}, {"0xd4f", "Neoverse-V2"},
  };
  if (AsciiLower(implementer) != "0x41") return {};
  auto it = kArmParts.find(AsciiLower(part));
  return it != kArmParts.end() ? "ARM " + std::string(it->second) : std::string();
}

// nvidia-smi prints "[N/A]", "[Not Supported]", "[Unknown Error]" and the like for values it
// cannot give.
bool IsUnavailable(std::string_view field) {
  return field.size() >= 2 && field.front() == '[' && field.back() == ']';
}

std::string FirstLine(std::string_view text, size_t max_length) {
  for (std::string_view line : Lines(text)) {
    line = Trim(line);
    if (!line.empty()) return std::string(line.substr(0, max_length));
  }
  return {};
}

// Cuts a tag value to fewer than kMaxTagValueLength bytes without splitting a UTF-8 sequence.
std::string FitTagValue(std::string value) {
  if (value.size() < kMaxTagValueLength) return value;
  constexpr std::string_view kEllipsis = "...";
  size_t cut = kMaxTagValueLength - 1 - kEllipsis.size();
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  value.resize(cut);
  value += kEllipsis;
  return value;
}

}  // namespace

void ParseOsRelease(std::string_view text, HostFacts* facts) {
  std::map<std::string, std::string, std::less<>> values;
  for (std::string_view line : Lines(text)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == 0 || eq == std::string_view::npos) continue;
    std::optional<std::string> value = UnquoteOsReleaseValue(Trim(line.substr(eq + 1)));
    if (!value) continue;
    values[std::string(Trim(line.substr(0, eq)))] = std::move(*value);
  }
  auto get = [&](std::string_view key) -> std::string {
    auto it = values.find(key);
    return it == values.end() ? std::string() : it->second;
  };
  std::string pretty = get("PRETTY_NAME");
  if (pretty.empty()) {
    // PRETTY_NAME is optional; NAME plus VERSION is what it would say.
    pretty = get("NAME");
    std::string version = get("VERSION");
    if (!pretty.empty() && !version.empty()) pretty += " " + version;
  }
  if (!pretty.empty()) facts->distribution = std::move(pretty);
  if (std::string id = get("ID"); !id.empty()) facts->distribution_id = std::move(id);
  if (std::string v = get("VERSION_ID"); !v.empty()) facts->distribution_version = std::move(v);
}

void ParseCpuInfo(std::string_view text, HostFacts* facts) {
  int processors = 0;
  std::string model_name, hardware, implementer, part;
  std::optional<std::vector<std::string>> flags;
  for (std::string_view line : Lines(text)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = Trim(line.substr(0, colon));
    std::string_view value = Trim(line.substr(colon + 1));
    // Only the first processor's entry counts: they agree on a homogeneous host, and on a
    // big.LITTLE one the first is as good a name as any.
    if (key == "processor") {
      ++processors;
    } else if (key == "model name") {
      if (model_name.empty()) model_name = value;
    } else if (key == "Hardware") {
      if (hardware.empty()) hardware = value;
    } else if (key == "CPU implementer") {
      if (implementer.empty()) implementer = value;
    } else if (key == "CPU part") {
      if (part.empty()) part = value;
    } else if (key == "flags" || key == "Features") {
      if (!flags) flags = SplitWhitespace(value);
    }
  }
  // A named core beats the SoC string, which downstream kernels fill loosely (every
  // Raspberry Pi says BCM2835); for an unnamed part the SoC says more than the raw ids.
  std::string arm_core = KnownArmCore(implementer, part);
  if (!model_name.empty()) {
    facts->cpu_model = std::move(model_name);
  } else if (!arm_core.empty()) {
    facts->cpu_model = std::move(arm_core);
  } else if (!hardware.empty()) {
    facts->cpu_model = std::move(hardware);
  } else if (!implementer.empty() && !part.empty()) {
    facts->cpu_model = ArmVendor(implementer) + " part " + AsciiLower(part);
  }
  if (flags) facts->cpu_flags = std::move(*flags);
  if (facts->cpu_cores == 0) facts->cpu_cores = processors;
}

int64_t ParseMemInfo(std::string_view text) {
  for (std::string_view line : Lines(text)) {
    if (!line.starts_with("MemTotal:")) continue;
    std::string_view value = Trim(line.substr(std::strlen("MemTotal:")));
    int64_t unit = 1;
    if (value.ends_with("kB")) {
      value = Trim(value.substr(0, value.size() - 2));
      unit = 1024;
    }
    std::optional<int64_t> amount = ParseInt(value);
    if (!amount || *amount < 0) return 0;
    return *amount * unit / (1024 * 1024);
  }
  return 0;
}

std::vector<std::string> NvidiaSmiQueryArgv(GpuQuery query) {
  std::string fields = query == GpuQuery::kWithComputeCap
                           ? "index,name,uuid,memory.total,compute_cap,driver_version"
                           : "index,name,uuid,memory.total,driver_version";
  return {"nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader,nounits"};
}

Result<std::vector<GpuInfo>> ParseNvidiaSmiCsv(std::string_view csv, GpuQuery query) {
  const bool with_cc = query == GpuQuery::kWithComputeCap;
  const size_t expected = with_cc ? 6 : 5;
  std::vector<GpuInfo> gpus;
  int line_number = 0;
  for (std::string_view line : Lines(csv)) {
    ++line_number;
    if (Trim(line).empty()) continue;
    std::vector<std::string_view> fields;
    // nvidia-smi does not quote: a GPU name with a comma would break this, and none has one.
    for (size_t start = 0;;) {
      size_t comma = line.find(',', start);
      fields.push_back(Trim(line.substr(start, comma - start)));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    auto error = [&](std::string_view what) {
      return InvalidArgument("nvidia-smi output line " + std::to_string(line_number) + ": " +
                             std::string(what) + ": \"" + std::string(line.substr(0, 200)) + "\"");
    };
    if (fields.size() != expected) {
      return error("expected " + std::to_string(expected) + " comma-separated fields, got " +
                   std::to_string(fields.size()));
    }
    auto text = [](std::string_view field) {
      return IsUnavailable(field) ? std::string() : std::string(field);
    };
    GpuInfo gpu;
    std::optional<int64_t> index = ParseInt(fields[0]);
    if (!index || *index < 0 || *index > INT_MAX) return error("the GPU index is not a number");
    gpu.index = static_cast<int>(*index);
    gpu.name = text(fields[1]);
    gpu.uuid = text(fields[2]);
    std::string_view memory = fields[3];
    if (!IsUnavailable(memory)) {
      // Without `nounits` the value carries its unit.
      if (memory.ends_with("MiB")) memory = Trim(memory.substr(0, memory.size() - 3));
      std::optional<int64_t> mib = ParseInt(memory);
      if (!mib || *mib < 0) return error("memory.total is not a number of MiB");
      gpu.memory_total_mib = *mib;
    }
    if (with_cc) gpu.compute_capability = text(fields[4]);
    gpu.driver_version = text(fields[expected - 1]);
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::string ParseNvidiaSmiCudaVersion(std::string_view text) {
  // 610 and later drivers print "CUDA UMD Version"; earlier ones "CUDA Version".
  for (std::string_view label : {"CUDA UMD Version:", "CUDA Version:"}) {
    size_t at = text.find(label);
    if (at == std::string_view::npos) continue;
    std::string_view rest = text.substr(at + label.size());
    rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
    size_t end = rest.find_first_not_of("0123456789.");
    std::string_view version = rest.substr(0, end);
    if (LooksLikeVersion(version)) return std::string(version);
  }
  return {};
}

std::string ParseNvidiaDriverVersionFile(std::string_view text) {
  constexpr std::string_view kPrefix = "NVRM version:";
  for (std::string_view line : Lines(text)) {
    if (!line.starts_with(kPrefix)) continue;
    // The words before the version vary ("x86_64 Kernel Module", "Open Kernel Module for
    // aarch64"), so take the first word shaped like a version.
    for (const std::string& word : SplitWhitespace(line.substr(kPrefix.size()))) {
      if (LooksLikeVersion(word)) return word;
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// The real probe.

namespace {

// More output than any probe command prints; the rest is read and dropped so that the command
// is not blocked on a full pipe.
constexpr size_t kMaxCommandOutput = 4 << 20;

class RealProbe final : public HostProbe {
 public:
  Result<std::string> ReadFile(const std::string& path) override { return cairn::ReadFile(path); }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      names.push_back(entry.path().filename().string());
    }
    if (ec) return NotFound("cannot list " + path + ": " + ec.message());
    return names;
  }

  Result<CommandOutput> RunCommand(std::span<const std::string> argv,
                                   std::chrono::milliseconds timeout) override {
    SpawnOptions options;
    options.argv.assign(argv.begin(), argv.end());
    // Numbers and messages in the C locale, whatever the user's: parsers expect "8.0".
    options.env = {{"LC_ALL", "C"}};
    CaptureLimits limits;
    limits.timeout = timeout;
    limits.max_output = limits.max_error_output = kMaxCommandOutput;
    CAIRN_ASSIGN_OR_RETURN(CapturedRun run, RunAndCapture(std::move(options), limits));
    if (run.timed_out) {
      return Unavailable(argv[0] + " did not finish within " + std::to_string(timeout.count()) +
                         " ms and was killed");
    }
    CommandOutput result;
    result.output = std::move(run.output);
    result.error_output = std::move(run.error_output);
    result.exit_code = run.exit.ShellCode();
    return result;
  }

  Result<UnameInfo> Uname() override {
    struct utsname u;
    if (uname(&u) != 0) return Internal(std::string("uname: ") + std::strerror(errno));
    return UnameInfo{u.sysname, u.release, u.machine};
  }

  Result<std::string> GlibcVersion() override {
#ifdef __GLIBC__
    return std::string(gnu_get_libc_version());
#else
    return Unimplemented("the C library is not glibc");
#endif
  }

  Result<std::string> Hostname() override {
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) != 0) {
      return Internal(std::string("gethostname: ") + std::strerror(errno));
    }
    return std::string(name);
  }
};

bool RejectedComputeCap(const CommandOutput& out) {
  return out.exit_code != 0 && (out.output.find("compute_cap") != std::string::npos ||
                                out.error_output.find("compute_cap") != std::string::npos);
}

void CollectGpus(HostProbe& probe, HostFacts* facts) {
  if (Result<std::string> version = probe.ReadFile("/proc/driver/nvidia/version"); version.ok()) {
    facts->driver_version = ParseNvidiaDriverVersionFile(*version);
  }
  GpuQuery query = GpuQuery::kWithComputeCap;
  Result<CommandOutput> run = probe.RunCommand(NvidiaSmiQueryArgv(query), kNvidiaSmiTimeout);
  if (run.ok() && RejectedComputeCap(*run)) {
    query = GpuQuery::kWithoutComputeCap;
    run = probe.RunCommand(NvidiaSmiQueryArgv(query), kNvidiaSmiTimeout);
  }
  if (!run.ok()) {
    facts->gpu_note = run.status().code() == StatusCode::kNotFound
                          ? "nvidia-smi not found"
                          : "nvidia-smi failed: " + run.status().message();
    return;
  }
  if (run->exit_code != 0) {
    // nvidia-smi prints its errors ("No devices were found", "couldn't communicate with the
    // NVIDIA driver") on standard output.
    std::string why = FirstLine(run->output, 300);
    if (why.empty()) why = FirstLine(run->error_output, 300);
    facts->gpu_note = "nvidia-smi exited with code " + std::to_string(run->exit_code) +
                      (why.empty() ? "" : ": " + why);
    return;
  }
  Result<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv(run->output, query);
  if (!gpus.ok()) {
    facts->gpu_note = "cannot read nvidia-smi output: " + gpus.status().message();
    return;
  }
  facts->gpus = std::move(*gpus);
  if (facts->gpus.empty()) {
    facts->gpu_note = "nvidia-smi lists no GPUs";
    return;
  }
  // Inside a container /proc/driver/nvidia may be hidden while nvidia-smi works.
  if (facts->driver_version.empty()) facts->driver_version = facts->gpus.front().driver_version;
  // The highest CUDA version the driver supports is only in the header of the plain output.
  const std::vector<std::string> plain = {"nvidia-smi"};
  Result<CommandOutput> header = probe.RunCommand(plain, kNvidiaSmiTimeout);
  if (header.ok() && header->exit_code == 0) {
    facts->cuda_driver_version = ParseNvidiaSmiCudaVersion(header->output);
  }
}

}  // namespace

HostProbe* RealHostProbe() {
  static RealProbe probe;  // stateless, so safe to share between threads
  return &probe;
}

HostFacts CollectHostFacts(HostProbe& probe) {
  HostFacts facts;
  if (Result<UnameInfo> u = probe.Uname(); u.ok()) {
    facts.os = AsciiLower(u->sysname);
    facts.kernel = u->release;
    facts.machine = u->machine;
  }
  if (Result<std::string> glibc = probe.GlibcVersion(); glibc.ok()) facts.glibc = *glibc;
  if (Result<std::string> host = probe.Hostname(); host.ok()) facts.hostname = *host;
  // os-release(5): /etc/os-release, else /usr/lib/os-release.
  for (const char* path : {"/etc/os-release", "/usr/lib/os-release"}) {
    Result<std::string> text = probe.ReadFile(path);
    if (!text.ok()) continue;
    ParseOsRelease(*text, &facts);
    break;
  }
  if (Result<std::string> text = probe.ReadFile("/proc/cpuinfo"); text.ok()) {
    ParseCpuInfo(*text, &facts);
  }
  if (Result<std::string> text = probe.ReadFile("/proc/meminfo"); text.ok()) {
    facts.memory_total_mib = ParseMemInfo(*text);
  }
  CollectGpus(probe, &facts);
  return facts;
}

std::string GpuSummary(const HostFacts& facts) {
  if (facts.gpus.empty()) return "no GPU";
  std::vector<std::pair<std::string, int>> groups;
  for (const GpuInfo& gpu : facts.gpus) {
    std::string name = gpu.name.empty() ? "unnamed GPU" : gpu.name;
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == name; });
    if (it == groups.end()) {
      groups.emplace_back(std::move(name), 1);
    } else {
      ++it->second;
    }
  }
  std::string out;
  for (const auto& [name, count] : groups) {
    if (!out.empty()) out += ", ";
    if (count > 1) out += std::to_string(count) + " x ";
    out += name;
  }
  return out;
}

std::string HostFactsJson(const HostFacts& facts) {
  JsonWriter w;
  w.BeginObject();
  w.Key("os").String(facts.os);
  w.Key("distribution").String(facts.distribution);
  w.Key("distribution_id").String(facts.distribution_id);
  w.Key("distribution_version").String(facts.distribution_version);
  w.Key("kernel").String(facts.kernel);
  w.Key("machine").String(facts.machine);
  w.Key("glibc").String(facts.glibc);
  w.Key("hostname").String(facts.hostname);
  w.Key("cpu_model").String(facts.cpu_model);
  w.Key("cpu_cores").Int(facts.cpu_cores);
  w.Key("cpu_flags").BeginArray();
  for (const std::string& flag : facts.cpu_flags) w.String(flag);
  w.EndArray();
  w.Key("memory_total_mib").Int(facts.memory_total_mib);
  w.Key("gpu").String(GpuSummary(facts));
  w.Key("gpu_count").Int(static_cast<int64_t>(facts.gpus.size()));
  w.Key("gpu_note").String(facts.gpu_note);
  w.Key("driver_version").String(facts.driver_version);
  w.Key("cuda_driver_version").String(facts.cuda_driver_version);
  w.Key("gpus").BeginArray();
  for (const GpuInfo& gpu : facts.gpus) {
    w.BeginObject();
    w.Key("index").Int(gpu.index);
    w.Key("name").String(gpu.name);
    w.Key("uuid").String(gpu.uuid);
    w.Key("memory_total_mib").Int(gpu.memory_total_mib);
    w.Key("compute_capability").String(gpu.compute_capability);
    w.Key("driver_version").String(gpu.driver_version);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

Result<HostFacts> ParseHostFactsJson(std::string_view text) {
  using nlohmann::json;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("host facts are not a JSON object");
  std::string bad;
  auto str = [&bad](const json& o, const char* key, std::string* out) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return;
    if (it->is_string()) {
      *out = it->get<std::string>();
    } else if (bad.empty()) {
      bad = key;
    }
  };
  auto num = [&bad](const json& o, const char* key, auto* out) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return;
    if (it->is_number_integer()) {
      *out = it->get<std::remove_pointer_t<decltype(out)>>();
    } else if (bad.empty()) {
      bad = key;
    }
  };
  HostFacts f;
  str(j, "os", &f.os);
  str(j, "distribution", &f.distribution);
  str(j, "distribution_id", &f.distribution_id);
  str(j, "distribution_version", &f.distribution_version);
  str(j, "kernel", &f.kernel);
  str(j, "machine", &f.machine);
  str(j, "glibc", &f.glibc);
  str(j, "hostname", &f.hostname);
  str(j, "cpu_model", &f.cpu_model);
  num(j, "cpu_cores", &f.cpu_cores);
  num(j, "memory_total_mib", &f.memory_total_mib);
  str(j, "gpu_note", &f.gpu_note);
  str(j, "driver_version", &f.driver_version);
  str(j, "cuda_driver_version", &f.cuda_driver_version);
  if (auto flags = j.find("cpu_flags"); flags != j.end() && flags->is_array()) {
    for (const json& flag : *flags) {
      if (flag.is_string()) f.cpu_flags.push_back(flag.get<std::string>());
    }
  }
  if (auto gpus = j.find("gpus"); gpus != j.end() && gpus->is_array()) {
    for (const json& g : *gpus) {
      if (!g.is_object()) return InvalidArgument("host facts: gpus must hold objects");
      GpuInfo gpu;
      num(g, "index", &gpu.index);
      str(g, "name", &gpu.name);
      str(g, "uuid", &gpu.uuid);
      num(g, "memory_total_mib", &gpu.memory_total_mib);
      str(g, "compute_capability", &gpu.compute_capability);
      str(g, "driver_version", &gpu.driver_version);
      f.gpus.push_back(std::move(gpu));
    }
  }
  if (!bad.empty()) return InvalidArgument("host facts: \"" + bad + "\" has the wrong type");
  return f;
}

std::vector<std::pair<std::string, std::string>> ComparedHostFacts(const HostFacts& facts) {
  auto number = [](int64_t n) { return n > 0 ? std::to_string(n) : std::string(); };
  std::vector<std::pair<std::string, std::string>> out = {
      {"os", facts.os},
      {"distribution", facts.distribution},
      {"kernel", facts.kernel},
      {"glibc", facts.glibc},
      {"cpu_model", facts.cpu_model},
      {"cpu_cores", number(facts.cpu_cores)},
      {"memory_total_mib", number(facts.memory_total_mib)},
      {"driver_version", facts.driver_version},
      {"cuda_driver_version", facts.cuda_driver_version},
      {"gpu_count", std::to_string(facts.gpus.size())},
  };
  for (size_t i = 0; i < facts.gpus.size(); ++i) {
    const GpuInfo& gpu = facts.gpus[i];
    const std::string prefix = "gpus[" + std::to_string(i) + "].";
    out.push_back({prefix + "name", gpu.name});
    out.push_back({prefix + "memory_total_mib", number(gpu.memory_total_mib)});
    out.push_back({prefix + "compute_capability", gpu.compute_capability});
  }
  return out;
}

std::string HostFactsToml(const HostFacts& facts, std::string_view table) {
  namespace tw = toml_writer;
  std::string out = "[" + std::string(table) + "]\n";
  tw::Str(&out, "os", facts.os);
  tw::Str(&out, "distribution", facts.distribution);
  tw::Str(&out, "distribution_id", facts.distribution_id);
  tw::Str(&out, "distribution_version", facts.distribution_version);
  tw::Str(&out, "kernel", facts.kernel);
  tw::Str(&out, "machine", facts.machine);
  tw::Str(&out, "glibc", facts.glibc);
  tw::Str(&out, "hostname", facts.hostname);
  tw::Str(&out, "cpu_model", facts.cpu_model);
  tw::Int(&out, "cpu_cores", facts.cpu_cores);
  tw::StrArray(&out, "cpu_flags", facts.cpu_flags);
  tw::Int(&out, "memory_total_mib", facts.memory_total_mib);
  tw::Str(&out, "gpu", GpuSummary(facts));
  tw::Str(&out, "gpu_note", facts.gpu_note);
  tw::Str(&out, "driver_version", facts.driver_version);
  tw::Str(&out, "cuda_driver_version", facts.cuda_driver_version);
  for (const GpuInfo& gpu : facts.gpus) {
    out += "\n[[" + std::string(table) + ".gpus]]\n";
    tw::Int(&out, "index", gpu.index);
    tw::Str(&out, "name", gpu.name);
    tw::Str(&out, "uuid", gpu.uuid);
    tw::Int(&out, "memory_total_mib", gpu.memory_total_mib);
    tw::Str(&out, "compute_capability", gpu.compute_capability);
    tw::Str(&out, "driver_version", gpu.driver_version);
  }
  return out;
}

std::vector<core::Tag> HostFactTags(const HostFacts& facts) {
  std::vector<core::Tag> tags;
  auto add = [&](std::string key, std::string value) {
    if (!value.empty()) tags.push_back({std::move(key), FitTagValue(std::move(value))});
  };
  add("cairn.host.os", facts.os);
  add("cairn.host.distribution", facts.distribution);
  add("cairn.host.kernel", facts.kernel);
  add("cairn.host.machine", facts.machine);
  add("cairn.host.glibc", facts.glibc);
  add("cairn.host.cpu", facts.cpu_model);
  if (facts.cpu_cores > 0) add("cairn.host.cpu_cores", std::to_string(facts.cpu_cores));
  if (facts.memory_total_mib > 0) {
    add("cairn.host.memory_mib", std::to_string(facts.memory_total_mib));
  }
  add("cairn.host.hostname", facts.hostname);
  add("cairn.gpu.count", std::to_string(facts.gpus.size()));
  add("cairn.gpu.name", GpuSummary(facts));
  add("cairn.gpu.driver", facts.driver_version);
  add("cairn.gpu.cuda", facts.cuda_driver_version);
  std::string capabilities;
  std::vector<std::string_view> seen;
  for (const GpuInfo& gpu : facts.gpus) {
    if (gpu.compute_capability.empty()) continue;
    if (std::find(seen.begin(), seen.end(), gpu.compute_capability) != seen.end()) continue;
    seen.push_back(gpu.compute_capability);
    if (!capabilities.empty()) capabilities += ",";
    capabilities += gpu.compute_capability;
  }
  add("cairn.gpu.compute_capability", std::move(capabilities));
  return tags;
}

}  // namespace cairn::env
