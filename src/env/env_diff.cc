#include "env/env_diff.h"

#include <toml++/toml.h>

#include <sstream>

#include "env/host_facts.h"
#include "env/standards/pep440.h"
#include "util/json_writer.h"
#include "util/strings.h"

namespace cairn::env {
namespace {

// The interpreter facts a snapshot's [tool.cairn] compares, in this order.
constexpr std::string_view kSnapshotInterpreterKeys[] = {
    "implementation", "python-version", "sys-platform", "platform", "python-tag",
    "abi-tag",        "platform-tags",  "soabi",        "venv",
};

std::string Str(const toml::table* t, std::string_view key) {
  if (t == nullptr) return "";
  return (*t)[key].value_or(std::string());
}

// A TOML value as one line of text: arrays joined with ", ".
std::string Text(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* a = node.as_array()) {
    std::string out;
    for (const toml::node& item : *a) out += (out.empty() ? "" : ", ") + Text(item);
    return out;
  }
  std::ostringstream other;
  node.visit([&other](const auto& v) { other << v; });
  return other.str();
}

// A package's origin when it was not installed from an index (PEP 751's vcs, directory and
// archive tables, or the direct URL a snapshot recorded).
std::string PackageSource(const toml::table& pkg, const toml::table* own) {
  auto with_subdir = [](const toml::table& t, std::string s) {
    std::string sub = Str(&t, "subdirectory");
    return sub.empty() ? s : s + "#subdirectory=" + sub;
  };
  if (const toml::table* vcs = pkg["vcs"].as_table(); vcs != nullptr) {
    return with_subdir(*vcs, Str(vcs, "type") + " " + Str(vcs, "url") + "@" +
                                 Str(vcs, "commit-id"));
  }
  if (const toml::table* dir = pkg["directory"].as_table(); dir != nullptr) {
    const bool editable = (*dir)["editable"].value_or(false);
    return with_subdir(*dir, "directory " + Str(dir, "path") + (editable ? " (editable)" : ""));
  }
  if (const toml::table* archive = pkg["archive"].as_table(); archive != nullptr) {
    std::string s = "archive " + Str(archive, "url");
    if (const toml::table* hashes = (*archive)["hashes"].as_table(); hashes != nullptr) {
      for (const auto& [algorithm, digest] : *hashes) {
        s += " " + std::string(algorithm.str()) + ":" + Text(digest);
      }
    }
    return with_subdir(*archive, s);
  }
  std::string url = Str(own, "direct-url");
  return url.empty() ? std::string() : "url " + url;
}

Status ReadPackages(const toml::table& root, EnvDescription* d) {
  const toml::node* packages = root.get("packages");
  if (packages == nullptr) return Status::Ok();
  if (!packages->is_array()) return InvalidArgument("'packages' is not an array of tables");
  for (const toml::node& node : *packages->as_array()) {
    const toml::table* p = node.as_table();
    if (p == nullptr) return InvalidArgument("'packages' is not an array of tables");
    const std::string name = Str(p, "name");
    if (name.empty()) return InvalidArgument("a package has no name");
    const toml::table* own = (*p)["tool"]["cairn"].as_table();
    PackageInfo info;
    info.version = Str(p, "version");
    if (info.version.empty()) info.version = Str(own, "version");  // snapshots of source trees
    info.source = PackageSource(*p, own);
    if (const toml::array* wheels = (*p)["wheels"].as_array(); wheels && !wheels->empty()) {
      const toml::table* w = wheels->get(0)->as_table();
      info.wheel = Str(w, "name");
      if (w != nullptr) info.wheel_sha256 = (*w)["hashes"]["sha256"].value_or(std::string());
    }
    info.record_sha256 = Str(own, "record-sha256");
    d->packages[NormalizeName(name)] = std::move(info);
  }
  return Status::Ok();
}

void ReadInterpreter(const toml::table* tool, EnvDescription* d) {
  if (tool == nullptr) return;
  if (d->snapshot) {
    for (std::string_view key : kSnapshotInterpreterKeys) {
      if (const toml::node* v = tool->get(key); v != nullptr) {
        d->interpreter.push_back({std::string(key), Text(*v)});
      }
    }
    return;
  }
  if (std::string python = Str(tool, "python"); !python.empty()) {
    d->interpreter.push_back({"python-version", python});
  }
  if (std::string target = Str(tool, "target"); !target.empty()) {
    d->interpreter.push_back({"target", target});
  }
}

Status ReadHostTables(const toml::table* tool, EnvDescription* d) {
  if (tool == nullptr) return Status::Ok();
  const toml::table* host = (*tool)["host"].as_table();
  d->host.cuda = Str(host, "cuda");
  d->host.driver = Str(host, "driver");
  d->host.compute_capability = Str(host, "compute-capability");
  d->host.glibc = Str(host, "glibc");
  if (const toml::table* facts = (*tool)["host-facts"].as_table(); facts != nullptr) {
    // The table holds host.json's fields: read it as that JSON.
    std::ostringstream json;
    json << toml::json_formatter(*facts);
    CAIRN_RETURN_IF_ERROR(AddHostFactsJson(json.str(), d));
  }
  if (const toml::array* conda = (*tool)["conda"].as_array(); conda != nullptr) {
    for (const toml::node& node : *conda) {
      const toml::table* c = node.as_table();
      CondaPackage pkg{Str(c, "name"), Str(c, "version"), Str(c, "build"), Str(c, "channel"),
                       Str(c, "url"),  Str(c, "md5"),     Str(c, "sha256")};
      if (!pkg.name.empty()) d->conda[pkg.name] = pkg;
    }
  }
  return Status::Ok();
}

// Fields of A that B lacks or has otherwise, in A's order, then fields only B has.
std::vector<EnvDiff::FieldChange> DiffFields(const FieldValues& a, const FieldValues& b) {
  auto lookup = [](const FieldValues& fields, const std::string& key) -> const std::string* {
    for (const auto& [k, v] : fields) {
      if (k == key) return &v;
    }
    return nullptr;
  };
  std::vector<EnvDiff::FieldChange> out;
  for (const auto& [key, value] : a) {
    const std::string* other = lookup(b, key);
    std::string after = other != nullptr ? *other : std::string();
    if (after != value) out.push_back({key, value, after});
  }
  for (const auto& [key, value] : b) {
    if (lookup(a, key) == nullptr && !value.empty()) out.push_back({key, "", value});
  }
  return out;
}

// Only the field named `key`, for comparing a lock with a snapshot: they record the
// interpreter differently, and only the Python version means the same on both.
FieldValues Only(const FieldValues& fields, std::string_view key) {
  FieldValues out;
  for (const auto& field : fields) {
    if (field.first == key) out.push_back(field);
  }
  return out;
}

std::string ShortHash(std::string_view s) {
  return s.empty() ? "(none)" : std::string(s.substr(0, 12));
}

std::string OrNone(std::string_view s) { return s.empty() ? "(none)" : std::string(s); }

// Same name on both sides: what changed beyond the version, if anything.
std::vector<std::string> PackageDetails(const PackageInfo& x, const PackageInfo& y,
                                        bool both_snapshots) {
  std::vector<std::string> details;
  if (x.source != y.source) {
    details.push_back("source " + OrNone(x.source) + " -> " + OrNone(y.source));
  }
  // A new version or source has other files anyway; the files tell more only when neither
  // changed (a rebuilt wheel, files edited in place).
  if (x.version != y.version || x.source != y.source) return details;
  if (!x.wheel.empty() && !y.wheel.empty() && x.wheel != y.wheel) {
    details.push_back("wheel " + x.wheel + " -> " + y.wheel);
  } else if (!x.wheel_sha256.empty() && !y.wheel_sha256.empty() &&
             x.wheel_sha256 != y.wheel_sha256) {
    details.push_back("wheel file differs (sha256 " + ShortHash(x.wheel_sha256) + " -> " +
                      ShortHash(y.wheel_sha256) + ")");
  }
  // A lock has no RECORD digests: between a lock and a snapshot they say nothing.
  const bool comparable =
      both_snapshots || (!x.record_sha256.empty() && !y.record_sha256.empty());
  if (comparable && x.record_sha256 != y.record_sha256) {
    details.push_back("installed files differ (RECORD sha256 " + ShortHash(x.record_sha256) +
                      " -> " + ShortHash(y.record_sha256) + ")");
  }
  return details;
}

// Walks two maps by key in order, calling `only_a`, `only_b` or `both` for each name.
template <typename Map, typename OnlyA, typename OnlyB, typename Both>
void MergeByName(const Map& a, const Map& b, OnlyA only_a, OnlyB only_b, Both both) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() || j != b.end()) {
    if (j == b.end() || (i != a.end() && i->first < j->first)) {
      only_a(i->first, i->second);
      ++i;
    } else if (i == a.end() || j->first < i->first) {
      only_b(j->first, j->second);
      ++j;
    } else {
      both(i->first, i->second, j->second);
      ++i;
      ++j;
    }
  }
}

std::string_view KindName(EnvDiff::Kind kind) {
  switch (kind) {
    case EnvDiff::Kind::kAdded:
      return "added";
    case EnvDiff::Kind::kRemoved:
      return "removed";
    case EnvDiff::Kind::kChanged:
      break;
  }
  return "changed";
}

constexpr std::string_view kGreen = "\x1b[32m";
constexpr std::string_view kRed = "\x1b[31m";
constexpr std::string_view kYellow = "\x1b[33m";

// "  + name 1.0", "  - name 2.0", "  ~ name 1.0 -> 1.1: details".
std::string PackageLine(const EnvDiff::PackageChange& c, bool color) {
  std::string line;
  std::string_view paint = kYellow;
  switch (c.kind) {
    case EnvDiff::Kind::kAdded:
      line = "+ " + c.name + " " + OrNone(c.to);
      paint = kGreen;
      break;
    case EnvDiff::Kind::kRemoved:
      line = "- " + c.name + " " + OrNone(c.from);
      paint = kRed;
      break;
    case EnvDiff::Kind::kChanged:
      line = "~ " + c.name + " " + OrNone(c.from);
      if (c.to != c.from) line += " -> " + OrNone(c.to);
      for (size_t k = 0; k < c.details.size(); ++k) line += (k == 0 ? ": " : "; ") + c.details[k];
      break;
  }
  line = PrintableText(line);
  if (color) line = std::string(paint) + line + "\x1b[0m";
  return "  " + line + "\n";
}

// "packages: 1 added, 2 changed".
std::string CountLine(std::string_view title, const std::vector<EnvDiff::PackageChange>& changes) {
  size_t counts[3] = {0, 0, 0};
  for (const EnvDiff::PackageChange& c : changes) ++counts[static_cast<int>(c.kind)];
  std::string summary;
  const EnvDiff::Kind kinds[3] = {EnvDiff::Kind::kAdded, EnvDiff::Kind::kRemoved,
                                  EnvDiff::Kind::kChanged};
  for (int k = 0; k < 3; ++k) {
    if (counts[k] == 0) continue;
    if (!summary.empty()) summary += ", ";
    summary += std::to_string(counts[k]) + " " + std::string(KindName(kinds[k]));
  }
  return std::string(title) + ": " + summary + "\n";
}

}  // namespace

std::string EnvDescription::python_version() const {
  for (const auto& [key, value] : interpreter) {
    if (key == "python-version") return value;
  }
  return "";
}

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
  d.snapshot = Str(tool, "kind") == "environment-snapshot";
  Status read = ReadPackages(root, &d);
  if (read.ok()) {
    ReadInterpreter(tool, &d);
    read = ReadHostTables(tool, &d);
  }
  if (!read.ok()) return read.WithContext(std::string(source));
  return d;
}

Status AddHostFactsJson(std::string_view json, EnvDescription* description) {
  CAIRN_ASSIGN_OR_RETURN(HostFacts facts, ParseHostFactsJson(json));
  description->host_facts = ComparedHostFacts(facts);
  return Status::Ok();
}

Result<EnvDescription> DescribeRunRecords(std::string_view pylock, std::string_view host_json,
                                          std::string_view label) {
  CAIRN_ASSIGN_OR_RETURN(EnvDescription d, DescribeLockText(pylock, kRunPylockArtifact));
  if (!host_json.empty()) {
    Status s = AddHostFactsJson(host_json, &d);
    if (!s.ok()) return s.WithContext(std::string(kRunHostArtifact));
  }
  d.label = std::string(label);
  return d;
}

bool EnvDiff::empty() const {
  return packages.empty() && interpreter.empty() && host.empty() && host_facts.empty() &&
         conda.empty();
}

EnvDiff DiffEnvironments(const EnvDescription& a, const EnvDescription& b) {
  EnvDiff d;
  d.packages_before = a.packages.size();
  d.python_before = a.python_version();
  const bool both_snapshots = a.snapshot && b.snapshot;
  MergeByName(
      a.packages, b.packages,
      [&](const std::string& name, const PackageInfo& p) {
        d.packages.push_back({EnvDiff::Kind::kRemoved, name, p.version, "", {}});
      },
      [&](const std::string& name, const PackageInfo& p) {
        d.packages.push_back({EnvDiff::Kind::kAdded, name, "", p.version, {}});
      },
      [&](const std::string& name, const PackageInfo& x, const PackageInfo& y) {
        std::vector<std::string> details = PackageDetails(x, y, both_snapshots);
        if (x.version != y.version || !details.empty()) {
          d.packages.push_back({EnvDiff::Kind::kChanged, name, x.version, y.version, details});
        }
      });
  if (a.snapshot == b.snapshot) {
    d.interpreter = DiffFields(a.interpreter, b.interpreter);
  } else {
    d.interpreter = DiffFields(Only(a.interpreter, "python-version"),
                               Only(b.interpreter, "python-version"));
  }
  auto requirements = [](const HostRequirements& h) {
    return FieldValues{{"cuda", h.cuda},
                       {"driver", h.driver},
                       {"compute-capability", h.compute_capability},
                       {"glibc", h.glibc}};
  };
  d.host = DiffFields(requirements(a.host), requirements(b.host));
  d.host_facts_compared = !a.host_facts.empty() && !b.host_facts.empty();
  if (d.host_facts_compared) d.host_facts = DiffFields(a.host_facts, b.host_facts);
  MergeByName(
      a.conda, b.conda,
      [&](const std::string& name, const CondaPackage& c) {
        d.conda.push_back({EnvDiff::Kind::kRemoved, name, c.version, "", {}});
      },
      [&](const std::string& name, const CondaPackage& c) {
        d.conda.push_back({EnvDiff::Kind::kAdded, name, "", c.version, {}});
      },
      [&](const std::string& name, const CondaPackage& x, const CondaPackage& y) {
        if (x.version != y.version || x.build != y.build) {
          d.conda.push_back({EnvDiff::Kind::kChanged, name, x.version + " " + x.build,
                             y.version + " " + y.build, {}});
        }
      });
  return d;
}

std::string FormatEnvDiff(const EnvDiff& d, std::string_view label_a, std::string_view label_b,
                          bool color) {
  std::string out = "--- " + PrintableText(label_a) + "\n+++ " + PrintableText(label_b) + "\n";
  if (d.empty()) {
    out += "no differences (" + std::to_string(d.packages_before) + " packages";
    if (!d.python_before.empty()) out += ", Python " + PrintableText(d.python_before);
    if (d.host_facts_compared) out += ", same host facts";
    return out + ")\n";
  }
  if (!d.packages.empty()) out += CountLine("packages", d.packages);
  for (const EnvDiff::PackageChange& c : d.packages) out += PackageLine(c, color);
  auto fields = [&](std::string_view title, const std::vector<EnvDiff::FieldChange>& changes) {
    if (changes.empty()) return;
    out += std::string(title) + ":\n";
    for (const EnvDiff::FieldChange& c : changes) {
      std::string line =
          PrintableText("~ " + c.name + ": " + OrNone(c.from) + " -> " + OrNone(c.to));
      if (color) line = std::string(kYellow) + line + "\x1b[0m";
      out += "  " + line + "\n";
    }
  };
  fields("interpreter", d.interpreter);
  fields("host requirements", d.host);
  fields("host", d.host_facts);
  if (!d.conda.empty()) out += CountLine("conda packages", d.conda);
  for (const EnvDiff::PackageChange& c : d.conda) out += PackageLine(c, color);
  return out;
}

std::string EnvDiffJson(const EnvDiff& d) {
  JsonWriter w;
  auto packages = [&w](std::string_view key, const std::vector<EnvDiff::PackageChange>& items) {
    w.Key(key).BeginArray();
    for (const EnvDiff::PackageChange& c : items) {
      w.BeginObject().Key("name").String(c.name).Key("change").String(KindName(c.kind));
      w.Key("from").String(c.from).Key("to").String(c.to).Key("details").BeginArray();
      for (const std::string& detail : c.details) w.String(detail);
      w.EndArray().EndObject();
    }
    w.EndArray();
  };
  auto fields = [&w](std::string_view key, const std::vector<EnvDiff::FieldChange>& items) {
    w.Key(key).BeginArray();
    for (const EnvDiff::FieldChange& c : items) {
      w.BeginObject().Key("name").String(c.name);
      w.Key("from").String(c.from).Key("to").String(c.to).EndObject();
    }
    w.EndArray();
  };
  w.BeginObject();
  w.Key("same").Bool(d.empty());
  packages("packages", d.packages);
  fields("interpreter", d.interpreter);
  fields("host_requirements", d.host);
  fields("host", d.host_facts);
  packages("conda", d.conda);
  w.Key("packages_before").Int(static_cast<int64_t>(d.packages_before));
  w.Key("python_before").String(d.python_before);
  w.EndObject();
  return w.Take();
}

}  // namespace cairn::env
