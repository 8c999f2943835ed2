#include "env/python_env.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "env/standards/core_metadata.h"
#include "env/standards/pep440.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/strings.h"
#include "util/toml_writer.h"
#include "util/utf8.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using toml_writer::AppendKey;
using toml_writer::AppendString;
using toml_writer::Bool;
using toml_writer::Int;
using toml_writer::Str;
using toml_writer::StrArray;
using toml_writer::StrIfSet;

// ---------------------------------------------------------------------------------------------
// Probing the interpreter.

// Precedes the report on its own line, so that whatever sitecustomize or a .pth file prints
// to stdout cannot be mistaken for it.
constexpr std::string_view kReportMarker = "cairn-python-env: ";

// Runs inside the interpreter. Standard library only (`packaging` is not there), no f-strings,
// so that an old interpreter gets far enough to report its version instead of a SyntaxError.
// The wheel tags follow packaging.tags: the ABI from EXT_SUFFIX/SOABI (_generic_abi), the
// platform from sysconfig.get_platform() and, on glibc Linux, the manylinux_2_N tag of the
// running glibc.
constexpr char kProbeScript[] = R"PY(
import json, os, sys, sysconfig

def text(s):
    # JSON carries Unicode: undecodable path bytes become U+FFFD, not lone surrogates.
    return os.fsencode(s).decode("utf-8", "replace") if s else ""

def is_utf8(s):
    try:
        os.fsencode(s).decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False

v = sys.version_info
version = "%d.%d.%d" % (v[0], v[1], v[2])
if v[3] != "final":
    version += {"alpha": "a", "beta": "b", "candidate": "rc"}.get(v[3], "") + str(v[4])
impl = sys.implementation.name
abbr = {"cpython": "cp", "pypy": "pp", "ironpython": "ip", "jython": "jy"}.get(impl, impl)

soabi = sysconfig.get_config_var("SOABI") or ""
ext_suffix = sysconfig.get_config_var("EXT_SUFFIX") or ""
parts = ext_suffix.split(".")
fields = (parts[1] if len(parts) >= 3 else soabi).split("-")
if fields[0] == "cpython" and len(fields) > 1:
    abi = "cp" + fields[1]
elif fields[0].startswith("cp"):
    abi = fields[0]
elif fields[0].startswith("pypy"):
    abi = "-".join(fields[:2])
elif fields[0].startswith("graalpy"):
    abi = "-".join(fields[:3])
else:
    abi = "-".join(fields)
abi = abi.replace(".", "_").replace("-", "_")

plat = sysconfig.get_platform().replace("-", "_").replace(".", "_").replace(" ", "_")
if sys.maxsize <= 2 ** 32:
    plat = {"linux_x86_64": "linux_i686", "linux_aarch64": "linux_armv8l"}.get(plat, plat)
platform_tags = []
if plat.startswith("linux_"):
    arch = plat[len("linux_"):]
    try:
        glibc = (os.confstr("CS_GNU_LIBC_VERSION") or "").split()
    except (AttributeError, ValueError, OSError):
        glibc = []
    manylinux_archs = ("x86_64", "i686", "aarch64", "ppc64", "ppc64le", "s390x", "riscv64",
                       "loongarch64")
    if len(glibc) == 2 and glibc[0] == "glibc" and arch in manylinux_archs:
        mm = glibc[1].split(".")
        if len(mm) >= 2 and mm[0].isdigit() and mm[1].isdigit():
            platform_tags.append("manylinux_%s_%s_%s" % (mm[0], mm[1], arch))
platform_tags.append(plat)

path_dirs = []
for i, p in enumerate(sys.path):
    if i == 0 and p == "":
        continue  # -c's working directory; the real command puts its script's directory here
    p = os.path.abspath(p or os.curdir)
    if is_utf8(p) and os.path.isdir(p) and p not in path_dirs:
        path_dirs.append(p)

base_prefix = getattr(sys, "real_prefix", None) or getattr(sys, "base_prefix", sys.prefix)
report = {
    "executable": text(sys.executable),
    "real_executable": text(os.path.realpath(sys.executable)) if sys.executable else "",
    "version": version,
    "implementation": impl,
    "sys_platform": sys.platform,
    "platform": sysconfig.get_platform(),
    "soabi": soabi,
    "ext_suffix": ext_suffix,
    "python_tag": "%s%d%d" % (abbr, v[0], v[1]),
    "abi_tag": abi,
    "platform_tags": platform_tags,
    "prefix": text(sys.prefix),
    "base_prefix": text(base_prefix),
    "in_venv": sys.prefix != base_prefix,
    "path_dirs": path_dirs,
}
sys.stdout.write("\ncairn-python-env: " + json.dumps(report, sort_keys=True) + "\n")
sys.stdout.flush()
)PY";

// The probe prints a few KiB; anything near this is not the probe talking.
constexpr size_t kMaxProbeOutput = 16 << 20;
// Only the start of stderr goes into error messages.
constexpr size_t kMaxErrorText = 2000;

std::string ErrorText(std::string_view err) {
  std::string t(Trim(err.substr(0, kMaxErrorText)));
  return t.empty() ? "no error output" : t;
}

// The JSON after the last marker line, or empty.
std::string_view FindReport(std::string_view out) {
  std::string needle = "\n" + std::string(kReportMarker);
  size_t at = out.rfind(needle);
  if (at == std::string_view::npos) return {};
  std::string_view rest = out.substr(at + needle.size());
  return rest.substr(0, rest.find('\n'));
}

Status GetString(const json& j, const char* key, bool required, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (!required) return Status::Ok();
    return InvalidArgument(std::string("interpreter report has no \"") + key + "\"");
  }
  if (!it->is_string()) {
    return InvalidArgument(std::string("interpreter report: \"") + key + "\" is not a string");
  }
  *out = it->get<std::string>();
  return Status::Ok();
}

Status GetStringArray(const json& j, const char* key, bool required,
                      std::vector<std::string>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (!required) return Status::Ok();
    return InvalidArgument(std::string("interpreter report has no \"") + key + "\"");
  }
  if (!it->is_array()) {
    return InvalidArgument(std::string("interpreter report: \"") + key + "\" is not an array");
  }
  out->clear();
  for (const json& e : *it) {
    if (!e.is_string()) {
      return InvalidArgument(std::string("interpreter report: \"") + key +
                             "\" holds a value that is not a string");
    }
    out->push_back(e.get<std::string>());
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Reading installed distributions.

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "{name}-{version}.dist-info" or "{name}-{version}[-pyX.Y].egg-info" without the suffix.
// Both installers escape '-' inside the name as '_', so the first '-' ends the name.
void ParseFolderStem(std::string_view stem, std::string* name, std::string* version) {
  size_t dash = stem.find('-');
  *name = std::string(stem.substr(0, dash));
  if (dash == std::string_view::npos) return;
  std::string_view rest = stem.substr(dash + 1);
  *version = std::string(rest.substr(0, rest.find('-')));
}

// The number of rows of a CSV file (RFC 4180 quoting, so a quoted path may hold a newline).
int64_t CountCsvRows(std::string_view csv) {
  int64_t rows = 0;
  bool in_quotes = false;
  bool row_has_content = false;
  for (char c : csv) {
    if (c == '"') {
      in_quotes = !in_quotes;  // an escaped "" toggles twice
      row_has_content = true;
    } else if (c == '\n' && !in_quotes) {
      if (row_has_content) ++rows;
      row_has_content = false;
    } else if (c != '\r') {
      row_has_content = true;
    }
  }
  if (row_has_content) ++rows;
  return rows;
}

// PEP 610. Returns nullopt and sets *error when the file is not a direct URL record.
std::optional<DirectUrl> ParseDirectUrl(std::string_view text, std::string* error) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "direct_url.json is not a JSON object";
    return std::nullopt;
  }
  auto str = [](const json& obj, const char* key) -> std::string {
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  DirectUrl d;
  d.url = str(j, "url");
  if (d.url.empty()) {
    *error = "direct_url.json has no \"url\"";
    return std::nullopt;
  }
  d.subdirectory = str(j, "subdirectory");
  auto vcs = j.find("vcs_info");
  auto dir = j.find("dir_info");
  auto archive = j.find("archive_info");
  if (vcs != j.end() && vcs->is_object()) {
    d.kind = DirectUrl::Kind::kVcs;
    d.vcs = str(*vcs, "vcs");
    d.commit_id = str(*vcs, "commit_id");
    d.requested_revision = str(*vcs, "requested_revision");
  } else if (dir != j.end() && dir->is_object()) {
    d.kind = DirectUrl::Kind::kDirectory;
    auto editable = dir->find("editable");
    d.editable = editable != dir->end() && editable->is_boolean() && editable->get<bool>();
  } else if (archive != j.end() && archive->is_object()) {
    d.kind = DirectUrl::Kind::kArchive;
    auto hashes = archive->find("hashes");
    if (hashes != archive->end() && hashes->is_object()) {
      for (const auto& [algorithm, digest] : hashes->items()) {
        if (digest.is_string()) d.archive_hashes[AsciiLower(algorithm)] = AsciiLower(digest.get<std::string>());
      }
    }
    // The older single "hash": "<algorithm>=<hex>" form, when "hashes" does not give it.
    std::string legacy = str(*archive, "hash");
    size_t eq = legacy.find('=');
    if (eq != std::string::npos && eq > 0) {
      d.archive_hashes.emplace(AsciiLower(legacy.substr(0, eq)), AsciiLower(legacy.substr(eq + 1)));
    }
  } else {
    *error = "direct_url.json has none of vcs_info, dir_info and archive_info";
    return std::nullopt;
  }
  return d;
}

// The content of `path`, "" when it does not exist, an error when it cannot be read.
Result<std::string> ReadOptionalFile(const fs::path& path) {
  Result<std::string> r = ReadFile(path);
  if (!r.ok() && r.status().code() == StatusCode::kNotFound) return std::string();
  return r;
}

enum class MetadataKind { kDistInfo, kEggInfoDir, kEggInfoFile };

// Reads one .dist-info / .egg-info. nullopt when it names no distribution at all.
Result<std::optional<InstalledDistribution>> ReadDistribution(const fs::path& location,
                                                              MetadataKind kind) {
  std::string filename = location.filename().string();
  std::string_view stem = filename;
  stem.remove_suffix(kind == MetadataKind::kDistInfo ? 10 : 9);  // ".dist-info" / ".egg-info"

  InstalledDistribution d;
  d.location = location.string();
  d.egg_info = kind != MetadataKind::kDistInfo;

  fs::path metadata_path = kind == MetadataKind::kDistInfo     ? location / "METADATA"
                           : kind == MetadataKind::kEggInfoDir ? location / "PKG-INFO"
                                                               : location;
  CAIRN_ASSIGN_OR_RETURN(std::string metadata, ReadOptionalFile(metadata_path));
  CoreMetadata core = ParseCoreMetadata(metadata);
  std::string folder_name, folder_version;
  ParseFolderStem(stem, &folder_name, &folder_version);
  d.name = core.name.empty() ? folder_name : core.name;
  d.version = core.version.empty() ? folder_version : core.version;
  d.normalized_name = NormalizeName(d.name);
  if (d.normalized_name.empty()) return std::optional<InstalledDistribution>();

  if (kind == MetadataKind::kEggInfoFile) return std::optional<InstalledDistribution>(d);

  CAIRN_ASSIGN_OR_RETURN(std::string installer, ReadOptionalFile(location / "INSTALLER"));
  d.installer = Trim(std::string_view(installer).substr(0, installer.find('\n')));

  CAIRN_ASSIGN_OR_RETURN(std::string direct_url, ReadOptionalFile(location / "direct_url.json"));
  if (!direct_url.empty()) d.direct_url = ParseDirectUrl(direct_url, &d.direct_url_error);

  Result<std::string> record = ReadFile(location / "RECORD");
  if (record.ok()) {
    d.record_sha256 = Sha256Hex(*record);
    d.record_files = CountCsvRows(*record);
  } else if (record.status().code() != StatusCode::kNotFound) {
    return record.status();
  }
  return std::optional<InstalledDistribution>(std::move(d));
}


// "file:///a/b%20c" → "/a/b c"; nullopt for other schemes and remote hosts.
std::optional<std::string> FileUrlToPath(std::string_view url) {
  constexpr std::string_view kScheme = "file://";
  if (url.substr(0, kScheme.size()) != kScheme) return std::nullopt;
  std::string_view rest = url.substr(kScheme.size());
  if (rest.substr(0, 10) == "localhost/") rest.remove_prefix(9);
  if (rest.empty() || rest[0] != '/') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string path;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && hex(rest[i + 1]) >= 0 && hex(rest[i + 2]) >= 0) {
      path.push_back(static_cast<char>(hex(rest[i + 1]) * 16 + hex(rest[i + 2])));
      i += 2;
    } else {
      path.push_back(rest[i]);
    }
  }
  return path;
}

// Writes the PEP 751 source table for a direct URL install. False when the record lacks what
// PEP 751 requires (a VCS commit-id, an archive hash, a local directory path).
bool AppendSourceTable(std::string* out, const DirectUrl& d) {
  switch (d.kind) {
    case DirectUrl::Kind::kVcs:
      if (d.commit_id.empty() || d.vcs.empty()) return false;
      out->append("\n[packages.vcs]\n");
      Str(out, "type", d.vcs);
      Str(out, "url", d.url);
      StrIfSet(out, "requested-revision", d.requested_revision);
      Str(out, "commit-id", d.commit_id);
      StrIfSet(out, "subdirectory", d.subdirectory);
      return true;
    case DirectUrl::Kind::kDirectory: {
      std::optional<std::string> path = FileUrlToPath(d.url);
      if (!path) return false;
      out->append("\n[packages.directory]\n");
      Str(out, "path", *path);
      Bool(out, "editable", d.editable);
      StrIfSet(out, "subdirectory", d.subdirectory);
      return true;
    }
    case DirectUrl::Kind::kArchive: {
      if (d.archive_hashes.empty()) return false;
      out->append("\n[packages.archive]\n");
      Str(out, "url", d.url);
      out->append("hashes = {");
      bool first = true;
      for (const auto& [algorithm, digest] : d.archive_hashes) {  // std::map: sorted
        out->append(first ? "" : ", ");
        first = false;
        AppendKey(out, algorithm);
        out->append(" = ");
        AppendString(out, digest);
      }
      out->append("}\n");
      StrIfSet(out, "subdirectory", d.subdirectory);
      return true;
    }
  }
  return false;
}

void AppendPackage(std::string* out, const InstalledDistribution& d) {
  out->append("\n[[packages]]\n");
  Str(out, "name", d.normalized_name);
  // PEP 751: a version "MUST NOT be included when it cannot be guaranteed to be consistent
  // with the code used (i.e. when a source tree is used)". The installed one is still a fact.
  bool source_tree = d.direct_url && (d.direct_url->kind == DirectUrl::Kind::kVcs ||
                                      d.direct_url->kind == DirectUrl::Kind::kDirectory);
  if (!source_tree) StrIfSet(out, "version", d.version);
  bool has_source = d.direct_url && AppendSourceTable(out, *d.direct_url);

  std::string tool;
  if (d.name != d.normalized_name) Str(&tool, "metadata-name", d.name);
  if (source_tree) StrIfSet(&tool, "version", d.version);
  StrIfSet(&tool, "installer", d.installer);
  if (d.egg_info) Bool(&tool, "egg-info", true);
  if (!d.record_sha256.empty()) {
    Str(&tool, "record-sha256", d.record_sha256);
    Int(&tool, "record-files", d.record_files);
  }
  if (d.direct_url && !has_source) Str(&tool, "direct-url", d.direct_url->url);
  StrIfSet(&tool, "direct-url-error", d.direct_url_error);
  if (!tool.empty()) {
    out->append("\n[packages.tool.cairn]\n");
    out->append(tool);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Result<InterpreterInfo> ParseInterpreterReport(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("interpreter report is not a JSON object");
  }
  InterpreterInfo info;
  CAIRN_RETURN_IF_ERROR(GetString(j, "executable", false, &info.executable));
  CAIRN_RETURN_IF_ERROR(GetString(j, "real_executable", false, &info.real_executable));
  CAIRN_RETURN_IF_ERROR(GetString(j, "version", true, &info.version));
  CAIRN_RETURN_IF_ERROR(GetString(j, "implementation", true, &info.implementation));
  CAIRN_RETURN_IF_ERROR(GetString(j, "sys_platform", false, &info.sys_platform));
  CAIRN_RETURN_IF_ERROR(GetString(j, "platform", false, &info.platform));
  CAIRN_RETURN_IF_ERROR(GetString(j, "soabi", false, &info.soabi));
  CAIRN_RETURN_IF_ERROR(GetString(j, "ext_suffix", false, &info.ext_suffix));
  CAIRN_RETURN_IF_ERROR(GetString(j, "python_tag", false, &info.python_tag));
  CAIRN_RETURN_IF_ERROR(GetString(j, "abi_tag", false, &info.abi_tag));
  CAIRN_RETURN_IF_ERROR(GetStringArray(j, "platform_tags", false, &info.platform_tags));
  CAIRN_RETURN_IF_ERROR(GetString(j, "prefix", true, &info.prefix));
  CAIRN_RETURN_IF_ERROR(GetString(j, "base_prefix", false, &info.base_prefix));
  CAIRN_RETURN_IF_ERROR(GetStringArray(j, "path_dirs", true, &info.path_dirs));
  if (info.base_prefix.empty()) info.base_prefix = info.prefix;
  auto in_venv = j.find("in_venv");
  if (in_venv != j.end() && in_venv->is_boolean()) {
    info.in_venv = in_venv->get<bool>();
  } else {
    info.in_venv = info.prefix != info.base_prefix;
  }
  if (info.version.empty() || info.version[0] < '0' || info.version[0] > '9') {
    return InvalidArgument("interpreter report: \"version\" is not a version: " + info.version);
  }
  return info;
}

Result<InterpreterInfo> ProbeInterpreter(const std::string& python) {
  if (python.empty()) return InvalidArgument("no Python interpreter given");
  SpawnOptions options;
  // -B: probing must not write __pycache__ into the environment it describes.
  options.argv = {python, "-B", "-c", kProbeScript};
  // PYTHONINSPECT would leave the interpreter waiting at a prompt after the script; an empty
  // value counts as unset. Every other variable is kept: the command will see it too.
  options.env = {{"PYTHONINSPECT", ""}};
  CaptureLimits limits;
  limits.timeout = std::chrono::seconds(kProbeTimeoutSeconds);
  limits.max_output = kMaxProbeOutput;
  limits.max_error_output = kMaxErrorText;
  limits.kill_on_overflow = true;
  Result<CapturedRun> run = RunAndCapture(std::move(options), limits);
  if (!run.ok()) {
    if (run.status().code() == StatusCode::kNotFound) {
      return NotFound(
          "Python interpreter not found: " + python +
          (python.find('/') == std::string::npos ? " (looked up on PATH)" : " (no such file)"));
    }
    return Status(run.status().code(),
                  "cannot run Python interpreter " + python + ": " + run.status().message());
  }
  if (run->timed_out) {
    return Unavailable("Python interpreter " + python + " did not answer within " +
                       std::to_string(kProbeTimeoutSeconds) + " s");
  }
  if (run->output_overflowed) {
    return FailedPrecondition("Python interpreter " + python + " printed more than " +
                              std::to_string(kMaxProbeOutput) + " bytes while probed");
  }
  const ExitStatus& exit = run->exit;
  if (exit.signaled || exit.code != 0) {
    // 127 is "command not found", e.g. a pyenv shim for a version that is not installed.
    StatusCode code = !exit.signaled && exit.code == 127 ? StatusCode::kNotFound
                                                         : StatusCode::kFailedPrecondition;
    return Status(code, "Python interpreter " + python + " failed (" + exit.ToString() +
                            "): " + ErrorText(run->error_output));
  }
  std::string out = "\n" + run->output;  // the marker may be on the very first line
  std::string_view report = FindReport(out);
  if (report.empty()) {
    return FailedPrecondition("Python interpreter " + python +
                              " printed no report: " + ErrorText(run->error_output));
  }
  Result<InterpreterInfo> info = ParseInterpreterReport(report);
  if (!info.ok()) return info.status().WithContext("probing " + python);
  return info;
}

Result<std::vector<InstalledDistribution>> ScanDistributions(
    const std::vector<std::string>& path_dirs) {
  std::map<std::string, InstalledDistribution> found;  // by normalized name, so sorted
  for (const std::string& dir : path_dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;

    struct Candidate {
      MetadataKind kind;
      fs::path path;
    };
    std::vector<Candidate> candidates;
    fs::directory_iterator it(dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::string filename = it->path().filename().string();
      std::error_code type_ec;
      bool is_dir = it->is_directory(type_ec);  // follows symlinks
      if (EndsWith(filename, ".dist-info") && filename.size() > 10 && is_dir) {
        candidates.push_back({MetadataKind::kDistInfo, it->path()});
      } else if (EndsWith(filename, ".egg-info") && filename.size() > 9) {
        candidates.push_back(
            {is_dir ? MetadataKind::kEggInfoDir : MetadataKind::kEggInfoFile, it->path()});
      }
    }
    if (ec) return Unavailable("listing " + dir + ": " + ec.message());

    // Listing order is the file system's; sort so that duplicates within one directory (Debian
    // ships "cryptography-38.0.4.dist-info" beside "cryptography.egg-info") always resolve the
    // same way, the standard .dist-info first.
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      bool a_dist = a.kind == MetadataKind::kDistInfo, b_dist = b.kind == MetadataKind::kDistInfo;
      if (a_dist != b_dist) return a_dist;
      return a.path.filename().string() < b.path.filename().string();
    });
    for (const Candidate& c : candidates) {
      Result<std::optional<InstalledDistribution>> d = ReadDistribution(c.path, c.kind);
      if (!d.ok()) return d.status().WithContext("reading " + c.path.string());
      if (!d->has_value()) continue;
      std::string key = (*d)->normalized_name;
      found.emplace(std::move(key), std::move(**d));  // keeps the first of a name
    }
  }
  std::vector<InstalledDistribution> out;
  out.reserve(found.size());
  for (auto& [name, d] : found) out.push_back(std::move(d));
  return out;
}

std::string SnapshotToml(const InterpreterInfo& interpreter,
                         const std::vector<InstalledDistribution>& distributions) {
  std::string out;
  out.reserve(256 + distributions.size() * 200);
  Str(&out, "lock-version", "1.0");
  Str(&out, "requires-python", "==" + interpreter.version);
  Str(&out, "created-by", "cairn");

  // Sorted here too, so that a caller's own list gives the same text as ScanDistributions'.
  std::vector<const InstalledDistribution*> sorted;
  sorted.reserve(distributions.size());
  for (const InstalledDistribution& d : distributions) sorted.push_back(&d);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return a->normalized_name < b->normalized_name;
  });
  for (const InstalledDistribution* d : sorted) AppendPackage(&out, *d);

  out.append("\n[tool.cairn]\n");
  // An installer that is handed this file by mistake should be able to tell it is a record of
  // what was installed, not a lock to install from.
  Str(&out, "kind", "environment-snapshot");
  Str(&out, "interpreter", interpreter.executable);
  StrIfSet(&out, "interpreter-realpath", interpreter.real_executable);
  Str(&out, "implementation", interpreter.implementation);
  Str(&out, "python-version", interpreter.version);
  StrIfSet(&out, "sys-platform", interpreter.sys_platform);
  StrIfSet(&out, "platform", interpreter.platform);
  StrIfSet(&out, "python-tag", interpreter.python_tag);
  StrIfSet(&out, "abi-tag", interpreter.abi_tag);
  StrArray(&out, "platform-tags", interpreter.platform_tags);
  StrIfSet(&out, "soabi", interpreter.soabi);
  StrIfSet(&out, "ext-suffix", interpreter.ext_suffix);
  Str(&out, "prefix", interpreter.prefix);
  Str(&out, "base-prefix", interpreter.base_prefix);
  Bool(&out, "venv", interpreter.in_venv);
  StrArray(&out, "sys-path", interpreter.path_dirs);
  return out;
}

std::string SnapshotHash(std::string_view toml) { return Sha256Hex(toml); }

Result<EnvSnapshot> SnapshotPythonEnvironment(const std::string& python) {
  EnvSnapshot s;
  CAIRN_ASSIGN_OR_RETURN(s.interpreter, ProbeInterpreter(python));
  Result<std::vector<InstalledDistribution>> dists = ScanDistributions(s.interpreter.path_dirs);
  if (!dists.ok()) return dists.status().WithContext("scanning the packages of " + python);
  s.distributions = std::move(dists).value();
  s.toml = SnapshotToml(s.interpreter, s.distributions);
  s.hash = SnapshotHash(s.toml);
  return s;
}

}  // namespace cairn::env
