#include "env/conda.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/strings.h"
#include "util/toml_writer.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

bool Hex(std::string_view s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

// The channel in a package URL: what lies between the host and the platform directory
// (".../conda-forge/linux-64/x.conda" → "conda-forge", ".../pkgs/main/linux-64/x" →
// "pkgs/main"); the URL's directory for file:// URLs.
std::string ChannelOf(std::string_view url) {
  const size_t scheme = url.find("://");
  std::string_view path = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  if (!url.starts_with("file:")) {
    const size_t slash = path.find('/');
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  const size_t file = path.rfind('/');
  if (file == std::string_view::npos) return "";
  std::string_view dir = path.substr(0, file);
  const size_t platform = dir.rfind('/');
  if (platform == std::string_view::npos) return std::string(dir);
  return std::string(dir.substr(0, platform));
}

}  // namespace

Result<std::vector<CondaPackage>> ParseCondaExplicit(std::string_view text,
                                                     std::string_view source) {
  std::vector<CondaPackage> out;
  bool explicit_seen = false;
  size_t number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t eol = text.find('\n', pos);
    std::string_view line =
        Trim(text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos));
    pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
    ++number;
    auto bad = [&](const std::string& why) {
      return InvalidArgument(std::string(source) + " line " + std::to_string(number) + ": " + why);
    };
    if (line.empty() || line.front() == '#') continue;
    if (line == "@EXPLICIT") {
      explicit_seen = true;
      continue;
    }
    if (!explicit_seen) return bad("expected @EXPLICIT before the package URLs");
    CondaPackage p;
    std::string_view url = line;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
      url = line.substr(0, hash);
      std::string_view digest = line.substr(hash + 1);
      if (digest.starts_with("sha256:")) {
        digest.remove_prefix(7);
        if (!Hex(digest, 64)) return bad("a sha256 has 64 hex digits");
        p.sha256 = std::string(digest);
      } else {
        if (!Hex(digest, 32)) return bad("expected #<md5> or #sha256:<hex> after the URL");
        p.md5 = std::string(digest);
      }
    }
    if (!url.starts_with("https://") && !url.starts_with("http://") && !url.starts_with("file://")) {
      return bad("expected a package URL, got '" + std::string(line) + "'");
    }
    std::string_view file = url.substr(url.rfind('/') + 1);
    if (file.ends_with(".conda")) {
      file.remove_suffix(6);
    } else if (file.ends_with(".tar.bz2")) {
      file.remove_suffix(8);
    } else {
      return bad("a conda package ends in .conda or .tar.bz2");
    }
    // name-version-build; the name may hold dashes, version and build do not.
    const size_t build_dash = file.rfind('-');
    const size_t version_dash =
        build_dash == std::string_view::npos ? build_dash : file.rfind('-', build_dash - 1);
    if (version_dash == std::string_view::npos || version_dash == 0) {
      return bad("'" + std::string(file) + "' is not name-version-build");
    }
    p.name = std::string(file.substr(0, version_dash));
    p.version = std::string(file.substr(version_dash + 1, build_dash - version_dash - 1));
    p.build = std::string(file.substr(build_dash + 1));
    p.url = std::string(url);
    p.channel = ChannelOf(url);
    out.push_back(std::move(p));
  }
  if (!explicit_seen) {
    return InvalidArgument(std::string(source) +
                           " is not a conda explicit spec (no @EXPLICIT line; make one with "
                           "`conda list --explicit`)");
  }
  return out;
}

Result<std::vector<CondaPackage>> ReadCondaMeta(const std::string& prefix) {
  const fs::path dir = fs::path(prefix) / "conda-meta";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound(prefix + " has no conda-meta directory");
  std::vector<CondaPackage> out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(entry.path()));
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return InvalidArgument(entry.path().string() + " is not a JSON object");
    auto str = [&j](const char* key) {
      auto it = j.find(key);
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    CondaPackage p{str("name"), str("version"), str("build"), str("channel"), str("url"),
                   str("md5"), str("sha256")};
    if (p.name.empty()) continue;
    // Channels are recorded as URLs ("https://conda.anaconda.org/conda-forge/linux-64").
    if (p.channel.find("://") != std::string::npos) p.channel = ChannelOf(p.channel + "/x");
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(),
            [](const CondaPackage& a, const CondaPackage& b) { return a.name < b.name; });
  return out;
}

std::string CondaTomlTables(const std::vector<CondaPackage>& packages) {
  std::string out;
  for (const CondaPackage& c : packages) {
    out.append("\n[[tool.cairn.conda]]\n");
    toml_writer::Str(&out, "name", c.name);
    toml_writer::StrIfSet(&out, "version", c.version);
    toml_writer::StrIfSet(&out, "build", c.build);
    toml_writer::StrIfSet(&out, "channel", c.channel);
    toml_writer::StrIfSet(&out, "url", c.url);
    toml_writer::StrIfSet(&out, "md5", c.md5);
    toml_writer::StrIfSet(&out, "sha256", c.sha256);
  }
  return out;
}

}  // namespace cairn::env
