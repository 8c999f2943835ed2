#include "env/env_diff.h"

#include <toml++/toml.h>

#include <sstream>

#include "env/host_facts.h"
#include "env/pep440.h"
#include "util/json_writer.h"

namespace cairn::env {
namespace {

std::string Str(const toml::table* t, std::string_view key) {
  if (t == nullptr) return "";
  return (*t)[key].value_or(std::string());
}

void Compare(std::vector<EnvDiff::Change>* out, const std::string& name, const std::string& a,
             const std::string& b) {
  if (a != b) out->push_back({name, a, b, name});
}

}  // namespace

Result<EnvDescription> DescribeLockText(std::string_view text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(std::string(source) +
                           ": not valid TOML: " + std::string(e.description()));
  }
  if (!root.contains("lock-version")) {
    return InvalidArgument(std::string(source) + " is not a lock file (no lock-version)");
  }
  EnvDescription d;
  d.label = std::string(source);
  const toml::table* tool = root["tool"]["cairn"].as_table();
  if (const toml::array* packages = root["packages"].as_array(); packages != nullptr) {
    for (const toml::node& node : *packages) {
      const toml::table* p = node.as_table();
      if (p == nullptr) continue;
      PackageInfo info;
      info.version = Str(p, "version");
      const toml::table* own = (*p)["tool"]["cairn"].as_table();
      if (info.version.empty()) info.version = Str(own, "version");  // snapshots of source trees
      if (const toml::array* wheels = (*p)["wheels"].as_array(); wheels && !wheels->empty()) {
        const toml::table* w = wheels->get(0)->as_table();
        info.wheel = Str(w, "name");
        if (w != nullptr) info.digest = (*w)["hashes"]["sha256"].value_or(std::string());
      }
      if (info.digest.empty()) info.digest = Str(own, "record-sha256");
      d.packages[NormalizeName(Str(p, "name"))] = info;
    }
  }
  d.python = Str(tool, "python");
  if (d.python.empty()) d.python = Str(tool, "python-version");
  d.target = Str(tool, "target");
  if (d.target.empty() && tool != nullptr) {
    d.target = Str(tool, "python-tag") + "-" + Str(tool, "abi-tag") + "-" + Str(tool, "platform");
    if (d.target == "--") d.target.clear();
  }
  const toml::table* host = tool != nullptr ? (*tool)["host"].as_table() : nullptr;
  d.host.cuda = Str(host, "cuda");
  d.host.driver = Str(host, "driver");
  d.host.compute_capability = Str(host, "compute-capability");
  d.host.glibc = Str(host, "glibc");
  if (const toml::table* facts = tool != nullptr ? (*tool)["host-facts"].as_table() : nullptr;
      facts != nullptr) {
    // The table holds host.json's fields: read it as that JSON.
    std::ostringstream json;
    json << toml::json_formatter(*facts);
    CAIRN_ASSIGN_OR_RETURN(HostFacts parsed, ParseHostFactsJson(json.str()));
    d.host_facts = ComparedHostFacts(parsed);
  }
  if (tool != nullptr) {
    if (const toml::array* conda = (*tool)["conda"].as_array(); conda != nullptr) {
      for (const toml::node& node : *conda) {
        const toml::table* c = node.as_table();
        CondaPackage pkg{Str(c, "name"), Str(c, "version"), Str(c, "build"), Str(c, "channel"),
                         Str(c, "url"),  Str(c, "md5"),     Str(c, "sha256")};
        if (!pkg.name.empty()) d.conda[pkg.name] = pkg;
      }
    }
  }
  return d;
}

bool EnvDiff::empty() const {
  return added.empty() && removed.empty() && changed.empty() && interpreter.empty() &&
         host.empty() && host_facts.empty() && conda_added.empty() && conda_removed.empty() &&
         conda_changed.empty();
}

EnvDiff DiffEnvironments(const EnvDescription& a, const EnvDescription& b) {
  EnvDiff d;
  for (const auto& [name, p] : b.packages) {
    auto it = a.packages.find(name);
    if (it == a.packages.end()) {
      d.added.push_back({name, p.version});
    } else if (it->second.version != p.version) {
      d.changed.push_back({name, it->second.version, p.version, "version"});
    } else if (!it->second.wheel.empty() && !p.wheel.empty() && it->second.wheel != p.wheel) {
      d.changed.push_back({name, it->second.wheel, p.wheel, "wheel"});
    } else if (!it->second.digest.empty() && !p.digest.empty() && it->second.digest != p.digest) {
      d.changed.push_back({name, p.version, p.version, "files"});
    }
  }
  for (const auto& [name, p] : a.packages) {
    if (b.packages.count(name) == 0) d.removed.push_back({name, p.version});
  }
  Compare(&d.interpreter, "python", a.python, b.python);
  Compare(&d.interpreter, "target", a.target, b.target);
  Compare(&d.host, "cuda", a.host.cuda, b.host.cuda);
  Compare(&d.host, "driver", a.host.driver, b.host.driver);
  Compare(&d.host, "compute-capability", a.host.compute_capability, b.host.compute_capability);
  Compare(&d.host, "glibc", a.host.glibc, b.host.glibc);
  if (!a.host_facts.empty() && !b.host_facts.empty()) {
    std::map<std::string, std::string> before(a.host_facts.begin(), a.host_facts.end());
    for (const auto& [key, value] : b.host_facts) {
      auto it = before.find(key);
      Compare(&d.host_facts, key, it == before.end() ? "" : it->second, value);
      if (it != before.end()) before.erase(it);
    }
    for (const auto& [key, value] : a.host_facts) {
      if (before.count(key) != 0) Compare(&d.host_facts, key, value, "");
    }
  }
  for (const auto& [name, c] : b.conda) {
    auto it = a.conda.find(name);
    if (it == a.conda.end()) {
      d.conda_added.push_back({name, c.version});
    } else if (it->second.version != c.version || it->second.build != c.build) {
      d.conda_changed.push_back({name, it->second.version + " " + it->second.build,
                                 c.version + " " + c.build, "version"});
    }
  }
  for (const auto& [name, c] : a.conda) {
    if (b.conda.count(name) == 0) d.conda_removed.push_back({name, c.version});
  }
  return d;
}

std::string FormatEnvDiff(const EnvDiff& d, const std::string& label_a, const std::string& label_b,
                          bool color) {
  if (d.empty()) return "no differences between " + label_a + " and " + label_b + "\n";
  auto paint = [color](const char* code, const std::string& line) {
    return color ? std::string("\033[") + code + "m" + line + "\033[0m\n" : line + "\n";
  };
  std::string out = "--- " + label_a + "\n+++ " + label_b + "\n";
  if (!d.added.empty() || !d.removed.empty() || !d.changed.empty()) out += "packages:\n";
  for (const auto& [name, version] : d.added) out += paint("32", "+ " + name + " " + version);
  for (const auto& [name, version] : d.removed) out += paint("31", "- " + name + " " + version);
  for (const EnvDiff::Change& c : d.changed) {
    if (c.what == "files") {
      out += paint("33", "~ " + c.name + " " + c.to + " (installed files differ)");
    } else {
      out += paint("33", "~ " + c.name + " " + c.from + " -> " + c.to);
    }
  }
  if (!d.interpreter.empty()) out += "interpreter:\n";
  for (const EnvDiff::Change& c : d.interpreter) {
    out += paint("33", "~ " + c.name + " " + c.from + " -> " + c.to);
  }
  auto fields = [&](const char* heading, const std::vector<EnvDiff::Change>& changes) {
    if (!changes.empty()) out += heading;
    for (const EnvDiff::Change& c : changes) {
      out += paint("33", "~ " + c.name + " " + (c.from.empty() ? "(none)" : c.from) + " -> " +
                             (c.to.empty() ? "(none)" : c.to));
    }
  };
  fields("host requirements:\n", d.host);
  fields("host:\n", d.host_facts);
  if (!d.conda_added.empty() || !d.conda_removed.empty() || !d.conda_changed.empty()) {
    out += "conda packages:\n";
  }
  for (const auto& [name, version] : d.conda_added) out += paint("32", "+ " + name + " " + version);
  for (const auto& [name, version] : d.conda_removed)
    out += paint("31", "- " + name + " " + version);
  for (const EnvDiff::Change& c : d.conda_changed) {
    out += paint("33", "~ " + c.name + " " + c.from + " -> " + c.to);
  }
  return out;
}

std::string EnvDiffJson(const EnvDiff& d) {
  JsonWriter w;
  auto pairs = [&w](std::string_view key,
                    const std::vector<std::pair<std::string, std::string>>& items) {
    w.Key(key).BeginArray();
    for (const auto& [name, version] : items) {
      w.BeginObject().Key("name").String(name).Key("version").String(version).EndObject();
    }
    w.EndArray();
  };
  auto changes = [&w](std::string_view key, const std::vector<EnvDiff::Change>& items) {
    w.Key(key).BeginArray();
    for (const EnvDiff::Change& c : items) {
      w.BeginObject().Key("name").String(c.name).Key("from").String(c.from);
      w.Key("to").String(c.to).Key("what").String(c.what).EndObject();
    }
    w.EndArray();
  };
  w.BeginObject();
  w.Key("same").Bool(d.empty());
  pairs("added", d.added);
  pairs("removed", d.removed);
  changes("changed", d.changed);
  changes("interpreter", d.interpreter);
  changes("host", d.host);
  changes("host_facts", d.host_facts);
  pairs("conda_added", d.conda_added);
  pairs("conda_removed", d.conda_removed);
  changes("conda_changed", d.conda_changed);
  w.EndObject();
  return w.Take();
}

}  // namespace cairn::env
