#include "env/manifest.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "env/yaml_document.h"
#include "util/file.h"
#include "util/hash.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

class SpecReader {
 public:
  explicit SpecReader(std::string_view source) : source_(source) {}

  Status Error(const std::string& field, const std::string& what) const {
    return InvalidArgument(std::string(source_) + ": environment." + field + " " + what);
  }

  Result<std::string> Scalar(const YAML::Node& node, const std::string& field) const {
    if (!node.IsScalar()) return Error(field, "must be a single value");
    return node.Scalar();
  }

  Result<std::vector<std::string>> Scalars(const YAML::Node& node,
                                           const std::string& field) const {
    if (node.IsScalar()) return std::vector<std::string>{node.Scalar()};
    if (!node.IsSequence()) return Error(field, "must be a list");
    std::vector<std::string> out;
    for (size_t i = 0; i < node.size(); ++i) {
      CAIRN_ASSIGN_OR_RETURN(std::string v,
                             Scalar(node[i], field + "[" + std::to_string(i) + "]"));
      out.push_back(std::move(v));
    }
    return out;
  }

  // A map whose keys must all be among `known`.
  Status CheckKeys(const YAML::Node& node, const std::string& field,
                   std::initializer_list<std::string_view> known) const {
    if (!node.IsMap()) return Error(field, "must be a mapping");
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string list;
        for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        return Error(field.empty() ? key : field + "." + key,
                     "is not a known key (known: " + list + ")");
      }
    }
    return Status::Ok();
  }

 private:
  std::string_view source_;
};

Result<EnvironmentSpec> Read(const YAML::Node& env, const SpecReader& r) {
  CAIRN_RETURN_IF_ERROR(r.CheckKeys(env, "", {"python", "requirements", "sources", "platforms",
                                              "prereleases", "host", "base"}));
  EnvironmentSpec spec;
  if (env["python"]) {
    CAIRN_ASSIGN_OR_RETURN(spec.python, r.Scalar(env["python"], "python"));
  }
  if (env["requirements"]) {
    CAIRN_ASSIGN_OR_RETURN(spec.requirements, r.Scalars(env["requirements"], "requirements"));
  }
  if (env["platforms"]) {
    CAIRN_ASSIGN_OR_RETURN(spec.platforms, r.Scalars(env["platforms"], "platforms"));
  }
  if (env["prereleases"]) {
    CAIRN_ASSIGN_OR_RETURN(std::string v, r.Scalar(env["prereleases"], "prereleases"));
    if (v != "true" && v != "false") return r.Error("prereleases", "must be true or false");
    spec.prereleases = v == "true";
  }
  if (env["base"]) {
    CAIRN_ASSIGN_OR_RETURN(spec.base, r.Scalar(env["base"], "base"));
  }
  if (const YAML::Node sources = env["sources"]; sources) {
    if (!sources.IsSequence()) return r.Error("sources", "must be a list");
    for (size_t i = 0; i < sources.size(); ++i) {
      const std::string field = "sources[" + std::to_string(i) + "]";
      const YAML::Node s = sources[i];
      CAIRN_RETURN_IF_ERROR(r.CheckKeys(s, field, {"find-links", "index"}));
      if (s.size() != 1) return r.Error(field, "must be one of find-links: DIR or index: URL");
      PackageSourceSpec source;
      if (s["find-links"]) {
        source.kind = PackageSourceSpec::Kind::kFindLinks;
        CAIRN_ASSIGN_OR_RETURN(source.location, r.Scalar(s["find-links"], field + ".find-links"));
      } else {
        source.kind = PackageSourceSpec::Kind::kIndex;
        CAIRN_ASSIGN_OR_RETURN(source.location, r.Scalar(s["index"], field + ".index"));
        if (!source.location.starts_with("http://") && !source.location.starts_with("https://") &&
            !source.location.starts_with("file://")) {
          return r.Error(field + ".index", "must be an http://, https:// or file:// URL");
        }
      }
      if (source.location.empty()) return r.Error(field, "is empty");
      spec.sources.push_back(std::move(source));
    }
  }
  if (const YAML::Node host = env["host"]; host) {
    CAIRN_RETURN_IF_ERROR(
        r.CheckKeys(host, "host", {"cuda", "driver", "compute-capability", "glibc"}));
    if (host["cuda"]) {
      CAIRN_ASSIGN_OR_RETURN(spec.host.cuda, r.Scalar(host["cuda"], "host.cuda"));
    }
    if (host["driver"]) {
      CAIRN_ASSIGN_OR_RETURN(spec.host.driver, r.Scalar(host["driver"], "host.driver"));
    }
    if (host["compute-capability"]) {
      CAIRN_ASSIGN_OR_RETURN(spec.host.compute_capability,
                             r.Scalar(host["compute-capability"], "host.compute-capability"));
    }
    if (host["glibc"]) {
      CAIRN_ASSIGN_OR_RETURN(spec.host.glibc, r.Scalar(host["glibc"], "host.glibc"));
    }
  }
  return spec;
}

}  // namespace

std::string PackageSourceSpec::ToString() const {
  return (kind == Kind::kFindLinks ? "find-links:" : "index:") + location;
}

Result<PackageSourceSpec> PackageSourceSpec::FromString(std::string_view text) {
  PackageSourceSpec s;
  if (text.starts_with("find-links:")) {
    s.kind = Kind::kFindLinks;
    s.location = std::string(text.substr(11));
  } else if (text.starts_with("index:")) {
    s.kind = Kind::kIndex;
    s.location = std::string(text.substr(6));
  } else {
    return InvalidArgument("a package source is find-links:DIR or index:URL, got '" +
                           std::string(text) + "'");
  }
  if (s.location.empty()) return InvalidArgument("empty package source '" + std::string(text) + "'");
  return s;
}

std::string EnvironmentSpec::Resolve(const std::string& path) const {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(dir) / path).lexically_normal().string();
}

std::string EnvironmentSpec::InputsHash() const {
  // One line per input, each value length-prefixed so no two inputs read the same.
  std::string text = "cairn environment inputs 1\n";
  auto add = [&text](std::string_view key, std::string_view value) {
    text += std::string(key) + " " + std::to_string(value.size()) + " " + std::string(value) + "\n";
  };
  add("python", python);
  for (const std::string& r : requirements) add("requirement", r);
  for (const PackageSourceSpec& s : sources) add("source", s.ToString());
  for (const std::string& p : platforms) add("platform", p);
  add("prereleases", prereleases ? "true" : "false");
  add("host.cuda", host.cuda);
  add("host.driver", host.driver);
  add("host.compute-capability", host.compute_capability);
  add("host.glibc", host.glibc);
  add("base", base);
  return Sha256Hex(text);
}

Result<EnvironmentSpec> ParseEnvironmentSpec(std::string_view yaml, std::string_view source,
                                             const std::string& dir) {
  SpecReader r(source);
  CAIRN_ASSIGN_OR_RETURN(YAML::Node root, env::LoadYamlDocument(yaml, source));
  if (!root.IsMap() || !root["environment"]) {
    return NotFound(std::string(source) + " has no environment section");
  }
  try {
    CAIRN_ASSIGN_OR_RETURN(EnvironmentSpec spec, Read(root["environment"], r));
    spec.dir = dir;
    return spec;
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string(source) + ": " + e.msg);
  }
}

Result<EnvironmentSpec> ReadEnvironmentSpec(const std::string& project_dir) {
  const std::string path = (fs::path(project_dir) / "cairn.yaml").string();
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return NotFound("no cairn.yaml in " + project_dir +
                      ": a project's environment is declared in its cairn.yaml (see "
                      "docs/formats/cairn-yaml.md)");
    }
    return text.status();
  }
  std::error_code ec;
  const std::string dir = fs::absolute(project_dir, ec).lexically_normal().string();
  return ParseEnvironmentSpec(*text, path, dir);
}

}  // namespace cairn::env
