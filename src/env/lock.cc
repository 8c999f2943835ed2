#include "env/lock.h"

#include <algorithm>
#include <toml++/toml.h>

#include "util/file.h"
#include "util/hash.h"
#include "util/strings.h"
#include "util/toml_writer.h"

namespace cairn::env {
namespace {

using toml_writer::AppendKey;
using toml_writer::AppendString;
using toml_writer::Int;
using toml_writer::Str;
using toml_writer::StrArray;
using toml_writer::StrIfSet;

// `key = [{name = "a"}, {name = "b"}]`, PEP 751's form of a package's dependencies.
void NameTables(std::string* out, std::string_view key, const std::vector<std::string>& names) {
  AppendKey(out, key);
  out->append(" = [");
  for (size_t i = 0; i < names.size(); ++i) {
    out->append(i > 0 ? ", {name = " : "{name = ");
    AppendString(out, names[i]);
    out->push_back('}');
  }
  out->append("]\n");
}

void AppendWheel(std::string* out, const LockedWheel& w) {
  out->append("  {name = ");
  AppendString(out, w.name);
  if (!w.url.empty()) {
    out->append(", url = ");
    AppendString(out, w.url);
  }
  if (!w.path.empty()) {
    out->append(", path = ");
    AppendString(out, w.path);
  }
  if (w.size >= 0) out->append(", size = " + std::to_string(w.size));
  out->append(", hashes = {sha256 = ");
  AppendString(out, w.sha256);
  out->append("}},\n");
}

void AppendPackage(std::string* out, const LockedPackage& p) {
  out->append("\n[[packages]]\n");
  Str(out, "name", p.name);
  StrIfSet(out, "version", p.version);
  StrIfSet(out, "marker", p.marker);
  StrIfSet(out, "requires-python", p.requires_python);
  StrIfSet(out, "index", p.index);
  if (!p.dependencies.empty()) NameTables(out, "dependencies", p.dependencies);
  out->append("wheels = [\n");
  for (const LockedWheel& w : p.wheels) AppendWheel(out, w);
  out->append("]\n");
  if (p.requested) out->append("\n[packages.tool.cairn]\nrequested = true\n");
}

// Reading: toml++ nodes to our fields, with errors that name the field.
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  Status Error(const std::string& what) const {
    return InvalidArgument(std::string(source_) + ": " + what);
  }

  // A string value at `key` of `table` (empty when missing); an error when of another type.
  Result<std::string> String(const toml::table& table, std::string_view key,
                             const std::string& where) const {
    const toml::node* n = table.get(key);
    if (n == nullptr) return std::string();
    if (const auto* s = n->as_string()) return s->get();
    return Error(where + "." + std::string(key) + " must be a string");
  }

  Result<std::vector<std::string>> Strings(const toml::table& table, std::string_view key,
                                           const std::string& where) const {
    std::vector<std::string> out;
    const toml::node* n = table.get(key);
    if (n == nullptr) return out;
    const toml::array* a = n->as_array();
    if (a == nullptr) return Error(where + "." + std::string(key) + " must be an array");
    for (const toml::node& item : *a) {
      const auto* s = item.as_string();
      if (s == nullptr) return Error(where + "." + std::string(key) + " must hold strings");
      out.push_back(s->get());
    }
    return out;
  }

 private:
  std::string_view source_;
};

Result<LockedWheel> ReadWheel(const Reader& r, const toml::node& node, const std::string& where) {
  const toml::table* t = node.as_table();
  if (t == nullptr) return r.Error(where + " must be a table");
  LockedWheel w;
  CAIRN_ASSIGN_OR_RETURN(w.name, r.String(*t, "name", where));
  CAIRN_ASSIGN_OR_RETURN(w.url, r.String(*t, "url", where));
  CAIRN_ASSIGN_OR_RETURN(w.path, r.String(*t, "path", where));
  if (w.name.empty()) {
    // PEP 751 lets the name be derived from the URL or path.
    const std::string& from = !w.url.empty() ? w.url : w.path;
    w.name = from.substr(from.find_last_of('/') + 1);
  }
  if (w.name.empty()) return r.Error(where + " has no name, url or path");
  if (const toml::node* size = t->get("size"); size != nullptr) {
    const auto* i = size->as_integer();
    if (i == nullptr || i->get() < 0) return r.Error(where + ".size must be a non-negative integer");
    w.size = i->get();
  }
  const toml::table* hashes = t->get_as<toml::table>("hashes");
  if (hashes == nullptr) return r.Error(where + " (" + w.name + ") has no hashes");
  CAIRN_ASSIGN_OR_RETURN(w.sha256, r.String(*hashes, "sha256", where + ".hashes"));
  w.sha256 = AsciiLower(w.sha256);
  if (w.sha256.size() != 64 || w.sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return r.Error(where + " (" + w.name + ") needs a sha256 hash of 64 hex digits");
  }
  return w;
}

Result<LockedPackage> ReadPackage(const Reader& r, const toml::node& node, size_t index) {
  const std::string where = "packages[" + std::to_string(index) + "]";
  const toml::table* t = node.as_table();
  if (t == nullptr) return r.Error(where + " must be a table");
  LockedPackage p;
  CAIRN_ASSIGN_OR_RETURN(p.name, r.String(*t, "name", where));
  if (p.name.empty()) return r.Error(where + " has no name");
  CAIRN_ASSIGN_OR_RETURN(p.version, r.String(*t, "version", where));
  CAIRN_ASSIGN_OR_RETURN(p.marker, r.String(*t, "marker", where));
  CAIRN_ASSIGN_OR_RETURN(p.requires_python, r.String(*t, "requires-python", where));
  CAIRN_ASSIGN_OR_RETURN(p.index, r.String(*t, "index", where));
  if (const toml::array* deps = t->get_as<toml::array>("dependencies"); deps != nullptr) {
    for (const toml::node& d : *deps) {
      const toml::table* dt = d.as_table();
      if (dt == nullptr) return r.Error(where + ".dependencies must hold tables");
      CAIRN_ASSIGN_OR_RETURN(std::string name, r.String(*dt, "name", where + ".dependencies"));
      if (!name.empty()) p.dependencies.push_back(std::move(name));
    }
  }
  const toml::array* wheels = t->get_as<toml::array>("wheels");
  if (wheels == nullptr || wheels->empty()) {
    for (const char* other : {"sdist", "vcs", "directory", "archive"}) {
      if (t->contains(other)) {
        return r.Error(where + " (" + p.name + ") is installed from " + other +
                       ", which cairn cannot build; lock it as a wheel");
      }
    }
    return r.Error(where + " (" + p.name + ") has no wheels");
  }
  for (size_t i = 0; i < wheels->size(); ++i) {
    CAIRN_ASSIGN_OR_RETURN(LockedWheel w,
                           ReadWheel(r, *wheels->get(i), where + ".wheels[" + std::to_string(i) + "]"));
    p.wheels.push_back(std::move(w));
  }
  if (const toml::table* tool = t->get_as<toml::table>("tool"); tool != nullptr) {
    if (const toml::table* ours = tool->get_as<toml::table>("cairn"); ours != nullptr) {
      p.requested = ours->get_as<bool>("requested") != nullptr &&
                    ours->get_as<bool>("requested")->get();
    }
  }
  return p;
}

}  // namespace

const LockedPackage* Lock::Find(std::string_view name) const {
  for (const LockedPackage& p : packages) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string FormatLock(const Lock& lock) {
  std::string out;
  out.reserve(1024 + lock.packages.size() * 400);
  Str(&out, "lock-version", "1.0");
  if (!lock.environments.empty()) StrArray(&out, "environments", lock.environments);
  StrIfSet(&out, "requires-python", lock.requires_python);
  Str(&out, "created-by", lock.created_by.empty() ? "cairn" : lock.created_by);

  std::vector<const LockedPackage*> sorted;
  for (const LockedPackage& p : lock.packages) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return a->name != b->name ? a->name < b->name : a->version < b->version;
  });
  for (const LockedPackage* p : sorted) AppendPackage(&out, *p);

  out.append("\n[tool.cairn]\n");
  StrIfSet(&out, "target", lock.target);
  StrIfSet(&out, "python", lock.python);
  StrArray(&out, "requirements", lock.requirements);
  StrArray(&out, "sources", lock.sources);
  StrIfSet(&out, "inputs-hash", lock.inputs_hash);
  StrIfSet(&out, "base", lock.base);
  if (!lock.host.empty()) {
    out.append("\n[tool.cairn.host]\n");
    StrIfSet(&out, "cuda", lock.host.cuda);
    StrIfSet(&out, "driver", lock.host.driver);
    StrIfSet(&out, "compute-capability", lock.host.compute_capability);
    StrIfSet(&out, "glibc", lock.host.glibc);
  }
  for (const CondaPackage& c : lock.conda) {
    out.append("\n[[tool.cairn.conda]]\n");
    Str(&out, "name", c.name);
    StrIfSet(&out, "version", c.version);
    StrIfSet(&out, "build", c.build);
    StrIfSet(&out, "channel", c.channel);
    StrIfSet(&out, "url", c.url);
    StrIfSet(&out, "md5", c.md5);
    StrIfSet(&out, "sha256", c.sha256);
  }
  return out;
}

Result<Lock> ParseLock(std::string_view text, std::string_view source) {
  Reader r(source);
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    return r.Error("not valid TOML at line " + std::to_string(begin.line) + ", column " +
                   std::to_string(begin.column) + ": " + std::string(e.description()));
  }
  Lock lock;
  const std::string version = root["lock-version"].value_or(std::string());
  if (version.empty()) return r.Error("lock-version is missing: not a pylock.toml file");
  if (version != "1" && !version.starts_with("1.")) {
    return r.Error("lock-version " + version + " is not supported (only 1.x)");
  }
  CAIRN_ASSIGN_OR_RETURN(lock.requires_python, r.String(root, "requires-python", "lock"));
  CAIRN_ASSIGN_OR_RETURN(lock.environments, r.Strings(root, "environments", "lock"));
  CAIRN_ASSIGN_OR_RETURN(lock.created_by, r.String(root, "created-by", "lock"));
  const toml::array* packages = root.get_as<toml::array>("packages");
  if (packages != nullptr) {
    for (size_t i = 0; i < packages->size(); ++i) {
      CAIRN_ASSIGN_OR_RETURN(LockedPackage p, ReadPackage(r, *packages->get(i), i));
      lock.packages.push_back(std::move(p));
    }
  } else if (root.contains("packages")) {
    return r.Error("packages must be an array of tables");
  }
  const toml::table* tool = root.get_as<toml::table>("tool");
  const toml::table* ours = tool != nullptr ? tool->get_as<toml::table>("cairn") : nullptr;
  if (ours == nullptr) return lock;
  const std::string where = "tool.cairn";
  CAIRN_ASSIGN_OR_RETURN(lock.target, r.String(*ours, "target", where));
  CAIRN_ASSIGN_OR_RETURN(lock.python, r.String(*ours, "python", where));
  CAIRN_ASSIGN_OR_RETURN(lock.requirements, r.Strings(*ours, "requirements", where));
  CAIRN_ASSIGN_OR_RETURN(lock.sources, r.Strings(*ours, "sources", where));
  CAIRN_ASSIGN_OR_RETURN(lock.inputs_hash, r.String(*ours, "inputs-hash", where));
  CAIRN_ASSIGN_OR_RETURN(lock.base, r.String(*ours, "base", where));
  CAIRN_ASSIGN_OR_RETURN(std::string kind, r.String(*ours, "kind", where));
  if (kind == "environment-snapshot") {
    return r.Error("this is a snapshot of an environment (cairn env snapshot), which records what "
                   "was installed but not the wheels' hashes: it cannot be built");
  }
  if (const toml::table* host = ours->get_as<toml::table>("host"); host != nullptr) {
    const std::string w = where + ".host";
    CAIRN_ASSIGN_OR_RETURN(lock.host.cuda, r.String(*host, "cuda", w));
    CAIRN_ASSIGN_OR_RETURN(lock.host.driver, r.String(*host, "driver", w));
    CAIRN_ASSIGN_OR_RETURN(lock.host.compute_capability, r.String(*host, "compute-capability", w));
    CAIRN_ASSIGN_OR_RETURN(lock.host.glibc, r.String(*host, "glibc", w));
  }
  if (const toml::array* conda = ours->get_as<toml::array>("conda"); conda != nullptr) {
    for (size_t i = 0; i < conda->size(); ++i) {
      const std::string w = where + ".conda[" + std::to_string(i) + "]";
      const toml::table* t = conda->get(i)->as_table();
      if (t == nullptr) return r.Error(w + " must be a table");
      CondaPackage c;
      CAIRN_ASSIGN_OR_RETURN(c.name, r.String(*t, "name", w));
      CAIRN_ASSIGN_OR_RETURN(c.version, r.String(*t, "version", w));
      CAIRN_ASSIGN_OR_RETURN(c.build, r.String(*t, "build", w));
      CAIRN_ASSIGN_OR_RETURN(c.channel, r.String(*t, "channel", w));
      CAIRN_ASSIGN_OR_RETURN(c.url, r.String(*t, "url", w));
      CAIRN_ASSIGN_OR_RETURN(c.md5, r.String(*t, "md5", w));
      CAIRN_ASSIGN_OR_RETURN(c.sha256, r.String(*t, "sha256", w));
      lock.conda.push_back(std::move(c));
    }
  }
  return lock;
}

Result<Lock> ReadLockFile(const std::string& path) {
  CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseLock(text, path);
}

std::string LockHash(std::string_view text) { return Sha256Hex(text); }

}  // namespace cairn::env
