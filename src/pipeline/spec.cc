#include "pipeline/spec.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>

#include "core/dataset.h"
#include "core/registry.h"
#include "env/yaml_document.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;

std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

bool ValidStepName(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

std::optional<double> ParseNumber(std::string_view text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// Reads one YAML document's fields, noting each problem and going on.
class Reader {
 public:
  explicit Reader(std::vector<std::string>* problems) : problems_(problems) {}

  void Problem(const std::string& field, const std::string& what) {
    problems_->push_back(field + ": " + what);
  }

  bool Scalar(const YAML::Node& node, const std::string& field, std::string* out) {
    if (!node.IsScalar()) {
      Problem(field, "must be a single value");
      return false;
    }
    *out = node.Scalar();
    return true;
  }

  // A list of scalars; a single scalar is a list of one.
  std::vector<std::string> Scalars(const YAML::Node& node, const std::string& field) {
    std::vector<std::string> out;
    if (node.IsScalar()) return {node.Scalar()};
    if (!node.IsSequence()) {
      Problem(field, "must be a list");
      return out;
    }
    for (size_t i = 0; i < node.size(); ++i) {
      std::string v;
      if (Scalar(node[i], field + "[" + std::to_string(i) + "]", &v)) out.push_back(v);
    }
    return out;
  }

  // Paths, and datasets as {data: NAME@VERSION, path: DIR}.
  void ReadInputs(const YAML::Node& node, const std::string& field, StepSpec* s) {
    if (!node.IsSequence()) {
      s->inputs = Scalars(node, field);
      return;
    }
    for (size_t i = 0; i < node.size(); ++i) {
      const std::string at = field + "[" + std::to_string(i) + "]";
      const YAML::Node item = node[i];
      if (!item.IsMap()) {
        std::string v;
        if (Scalar(item, at, &v)) s->inputs.push_back(v);
        continue;
      }
      if (!CheckKeys(item, at, {"data", "path"})) continue;
      DataInputSpec d;
      if (!item["data"]) {
        Problem(at, "names no dataset: write {data: NAME@VERSION}");
        continue;
      }
      if (!Scalar(item["data"], at + ".data", &d.ref)) continue;
      if (item["path"] && !Scalar(item["path"], at + ".path", &d.path)) continue;
      s->data.push_back(std::move(d));
    }
  }

  std::map<std::string, ParamValue> Params(const YAML::Node& node, const std::string& field) {
    std::map<std::string, ParamValue> out;
    if (!node.IsMap()) {
      Problem(field, "must be a mapping of names to values");
      return out;
    }
    for (const auto& kv : node) {
      const std::string name = kv.first.Scalar();
      ParamValue value;
      if (kv.second.IsSequence()) {
        value.is_list = true;
        value.list = Scalars(kv.second, field + "." + name);
      } else if (kv.second.IsScalar()) {
        value.scalar = kv.second.Scalar();
      } else if (kv.second.IsNull()) {
        value.scalar = "";
      } else {
        Problem(field + "." + name, "must be a value or a list of values");
        continue;
      }
      out[name] = std::move(value);
    }
    return out;
  }

  // Keys of a mapping must be among `known`.
  bool CheckKeys(const YAML::Node& node, const std::string& field,
                 std::initializer_list<std::string_view> known) {
    if (!node.IsMap()) {
      Problem(field, "must be a mapping");
      return false;
    }
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::vector<std::string> names(known.begin(), known.end());
        Problem(field.empty() ? key : field + "." + key,
                "is not a known key (known: " + Join(names, ", ") + ")");
      }
    }
    return true;
  }

  StepSpec Step(const std::string& name, const YAML::Node& node) {
    StepSpec s;
    s.name = name;
    s.line = node.Mark().line + 1;
    const std::string at = "steps." + name;
    if (!ValidStepName(name)) {
      Problem(at, "a step name may hold letters, digits, '_', '-' and '.' only");
    }
    if (!CheckKeys(
            node, at,
            {"run", "needs", "inputs", "outputs", "code", "params", "variables", "env", "resources",
             "retries", "timeout", "cache", "foreach", "register", "checkpoint", "approve"})) {
      return s;
    }
    if (const YAML::Node n = node["run"]; n) {
      Scalar(n, at + ".run", &s.run);
    }
    if (s.run.empty()) Problem(at + ".run", "is missing: the command the step runs");
    if (const YAML::Node n = node["needs"]; n) s.needs = Scalars(n, at + ".needs");
    if (const YAML::Node n = node["inputs"]; n) ReadInputs(n, at + ".inputs", &s);
    if (const YAML::Node n = node["outputs"]; n) s.outputs = Scalars(n, at + ".outputs");
    if (const YAML::Node n = node["code"]; n) s.code = Scalars(n, at + ".code");
    if (const YAML::Node n = node["params"]; n) s.params = Params(n, at + ".params");
    if (const YAML::Node n = node["variables"]; n) s.variables = Variables(n, at + ".variables");
    if (const YAML::Node n = node["env"]; n) Scalar(n, at + ".env", &s.env);
    if (const YAML::Node n = node["resources"]; n)
      ReadResources(n, at + ".resources", &s.resources);
    if (const YAML::Node n = node["retries"]; n) ReadRetries(n, at + ".retries", &s.retries);
    if (const YAML::Node n = node["timeout"]; n) ReadTimeout(n, at + ".timeout", &s.timeout_ms);
    if (const YAML::Node n = node["cache"]; n) ReadCache(n, at + ".cache", &s.cache);
    if (const YAML::Node n = node["foreach"]; n) {
      s.has_foreach = true;
      s.foreach = Scalars(n, at + ".foreach");
      if (s.foreach.empty() && n.IsSequence()) Problem(at + ".foreach", "is an empty list");
    }
    if (const YAML::Node n = node["register"]; n)
      s.registration = ReadRegister(n, at + ".register");
    if (const YAML::Node n = node["checkpoint"]; n)
      s.checkpoint = ReadCheckpoint(n, at + ".checkpoint");
    if (const YAML::Node n = node["approve"]; n) s.approval = ReadApproval(n, at + ".approve");
    return s;
  }

 private:
  std::map<std::string, std::string> Variables(const YAML::Node& n, const std::string& field) {
    std::map<std::string, std::string> out;
    if (!n.IsMap()) {
      Problem(field, "must be a mapping of names to values");
      return out;
    }
    for (const auto& kv : n) {
      std::string value;
      if (Scalar(kv.second, field + "." + kv.first.Scalar(), &value)) {
        out[kv.first.Scalar()] = value;
      }
    }
    return out;
  }

  void ReadResources(const YAML::Node& n, const std::string& field, Resources* out) {
    if (!CheckKeys(n, field, {"cpus", "memory", "gpus"})) return;
    std::string text;
    if (n["cpus"] && Scalar(n["cpus"], field + ".cpus", &text)) {
      std::optional<double> v = ParseNumber(text);
      if (!v || *v <= 0) {
        Problem(field + ".cpus", "must be a number above 0, got '" + text + "'");
      } else {
        out->cpus = *v;
      }
    }
    if (n["memory"] && Scalar(n["memory"], field + ".memory", &text)) {
      Result<int64_t> v = ParseMemory(text);
      if (!v.ok()) {
        Problem(field + ".memory", v.status().message());
      } else {
        out->memory_mib = *v;
      }
    }
    if (n["gpus"] && Scalar(n["gpus"], field + ".gpus", &text)) {
      std::optional<double> v = ParseNumber(text);
      if (!v || *v < 0 || *v != std::floor(*v)) {
        Problem(field + ".gpus", "must be a whole number ≥ 0, got '" + text + "'");
      } else {
        out->gpus = static_cast<int>(*v);
      }
    }
  }

  // `retries: 2` is the limit alone.
  void ReadRetries(const YAML::Node& n, const std::string& field, RetryPolicy* out) {
    std::string limit, backoff;
    if (n.IsScalar()) {
      limit = n.Scalar();
    } else if (CheckKeys(n, field, {"limit", "backoff"})) {
      if (n["limit"]) Scalar(n["limit"], field + ".limit", &limit);
      if (n["backoff"]) Scalar(n["backoff"], field + ".backoff", &backoff);
    }
    if (!limit.empty()) {
      std::optional<double> v = ParseNumber(limit);
      if (!v || *v < 0 || *v != std::floor(*v) || *v > 100) {
        Problem(field + ".limit", "must be a whole number from 0 to 100, got '" + limit + "'");
      } else {
        out->limit = static_cast<int>(*v);
      }
    }
    if (!backoff.empty()) {
      Result<int64_t> v = ParseDuration(backoff);
      if (!v.ok()) {
        Problem(field + ".backoff", v.status().message());
      } else {
        out->backoff_ms = *v;
      }
    }
  }

  void ReadTimeout(const YAML::Node& n, const std::string& field, int64_t* out_ms) {
    std::string text;
    if (!Scalar(n, field, &text)) return;
    Result<int64_t> v = ParseDuration(text);
    if (!v.ok() || *v <= 0) {
      Problem(field, v.ok() ? "must be above 0" : v.status().message());
    } else {
      *out_ms = *v;
    }
  }

  void ReadCache(const YAML::Node& n, const std::string& field, bool* out) {
    std::string text;
    if (!Scalar(n, field, &text)) return;
    if (text == "true" || text == "on" || text == "yes") {
      *out = true;
    } else if (text == "false" || text == "off" || text == "no") {
      *out = false;
    } else {
      Problem(field, "must be true or false, got '" + text + "'");
    }
  }

  // `approve: NAME` is `by` alone.
  std::optional<Approval> ReadApproval(const YAML::Node& n, const std::string& field) {
    Approval a;
    if (n.IsScalar()) {
      if (!Scalar(n, field, &a.by)) return std::nullopt;
    } else {
      if (!CheckKeys(n, field, {"by"})) return std::nullopt;
      if (n["by"] && !Scalar(n["by"], field + ".by", &a.by)) return std::nullopt;
    }
    if (a.by.empty()) {
      Problem(field + ".by", "is missing: the user or team who approves the step");
      return std::nullopt;
    }
    return a;
  }

  // `checkpoint: DIR` is the path alone.
  std::optional<Checkpoint> ReadCheckpoint(const YAML::Node& n, const std::string& field) {
    Checkpoint c;
    std::string every;
    if (n.IsScalar()) {
      if (!Scalar(n, field, &c.path)) return std::nullopt;
    } else {
      if (!CheckKeys(n, field, {"path", "every"})) return std::nullopt;
      if (n["path"] && !Scalar(n["path"], field + ".path", &c.path)) return std::nullopt;
      if (n["every"] && !Scalar(n["every"], field + ".every", &every)) return std::nullopt;
    }
    if (c.path.empty()) {
      Problem(field + ".path", "is missing: the directory the step keeps its checkpoint in");
      return std::nullopt;
    }
    if (!every.empty()) {
      Result<int64_t> v = ParseDuration(every);
      if (!v.ok() || *v <= 0) {
        Problem(field + ".every", v.ok() ? "must be above 0" : v.status().message());
        return std::nullopt;
      }
      c.every_ms = *v;
    }
    return c;
  }

  // `register: {model: NAME, path: OUTPUT, alias: ALIAS}`; the path is checked against the
  // outputs once parameters are substituted.
  std::optional<Registration> ReadRegister(const YAML::Node& n, const std::string& field) {
    if (!CheckKeys(n, field, {"model", "path", "alias"})) return std::nullopt;
    Registration r;
    bool ok = true;
    const std::pair<const char*, std::string*> fields[] = {
        {"model", &r.model}, {"path", &r.path}, {"alias", &r.alias}};
    for (const auto& [key, out] : fields) {
      if (n[key] && !Scalar(n[key], field + "." + key, out)) ok = false;
    }
    if (ok && r.model.empty()) {
      Problem(field + ".model", "is missing: the registered model the output becomes a version of");
      ok = false;
    }
    if (ok && r.path.empty()) {
      Problem(field + ".path", "is missing: the output that becomes the version's files");
      ok = false;
    }
    return ok ? std::optional<Registration>(r) : std::nullopt;
  }

  std::vector<std::string>* problems_;
};

// ${params.NAME} and ${item} substituted into `text`; other ${...} kept for the shell.
class Substituter {
 public:
  Substituter(const std::map<std::string, std::string>& params, const std::string* item,
              std::vector<std::string>* problems)
      : params_(params), item_(item), problems_(problems) {}

  std::string Apply(std::string_view text, const std::string& field) {
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t open = text.find("${", pos);
      if (open == std::string_view::npos) break;
      size_t close = text.find('}', open);
      if (close == std::string_view::npos) break;
      out.append(text.substr(pos, open - pos));
      std::string_view ref = text.substr(open + 2, close - open - 2);
      if (ref.starts_with("params.")) {
        std::string name(ref.substr(7));
        auto it = params_.find(name);
        if (it == params_.end()) {
          std::vector<std::string> names;
          for (const auto& [k, v] : params_) names.push_back(k);
          problems_->push_back(field + ": ${params." + name + "} names no parameter" +
                               (names.empty() ? " (the pipeline has none)"
                                              : " (parameters: " + Join(names, ", ") + ")"));
        } else {
          out += it->second;
          used_[name] = it->second;
        }
      } else if (ref == "item") {
        if (item_ == nullptr) {
          problems_->push_back(field + ": ${item} is only known in a step with foreach");
        } else {
          out += *item_;
        }
      } else {
        out.append(text.substr(open, close - open + 1));  // the shell's
      }
      pos = close + 1;
    }
    out.append(text.substr(pos));
    return out;
  }

  const std::map<std::string, std::string>& used() const { return used_; }

 private:
  const std::map<std::string, std::string>& params_;
  const std::string* item_;
  std::vector<std::string>* problems_;
  std::map<std::string, std::string> used_;
};

// Whether `inner` is `outer` or lies inside it ("data" holds "data/x.csv").
bool Within(const std::string& inner, const std::string& outer) {
  return inner == outer ||
         (inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/');
}

}  // namespace

std::string ParamValue::ToString() const { return is_list ? Join(list, ",") : scalar; }

Result<int64_t> ParseDuration(std::string_view text) {
  const std::string original(text);
  auto bad = [&] {
    return InvalidArgument("'" + original +
                           "' is not a duration (like 30s, 5m, 1h30m, 500ms or seconds)");
  };
  if (text.empty()) return bad();
  if (std::optional<double> seconds = ParseNumber(text); seconds) {
    if (*seconds < 0) return bad();
    return static_cast<int64_t>(std::llround(*seconds * 1000));
  }
  double total = 0;
  while (!text.empty()) {
    size_t n = 0;
    while (n < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[n])) || text[n] == '.')) {
      ++n;
    }
    std::optional<double> value = ParseNumber(text.substr(0, n));
    if (!value) return bad();
    text.remove_prefix(n);
    size_t u = 0;
    while (u < text.size() && std::isalpha(static_cast<unsigned char>(text[u]))) ++u;
    std::string_view unit = text.substr(0, u);
    text.remove_prefix(u);
    double scale = 0;
    if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m" || unit == "min") {
      scale = 60'000;
    } else if (unit == "h") {
      scale = 3'600'000;
    } else if (unit == "d") {
      scale = 86'400'000;
    } else {
      return bad();
    }
    total += *value * scale;
  }
  return static_cast<int64_t>(std::llround(total));
}

Result<int64_t> ParseMemory(std::string_view text) {
  const std::string original(text);
  size_t n = 0;
  while (n < text.size() && (std::isdigit(static_cast<unsigned char>(text[n])) || text[n] == '.')) {
    ++n;
  }
  std::optional<double> value = ParseNumber(text.substr(0, n));
  std::string unit(text.substr(n));
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB")) {
    unit.resize(unit.size() - 2);
  } else if (unit.size() == 2 && unit.back() == 'B') {
    unit.pop_back();
  }
  double mib = 0;
  if (!value) {
    mib = -1;
  } else if (unit.empty() || unit == "M") {
    mib = *value;
  } else if (unit == "K") {
    mib = *value / 1024;
  } else if (unit == "G") {
    mib = *value * 1024;
  } else if (unit == "T") {
    mib = *value * 1024 * 1024;
  } else {
    mib = -1;
  }
  if (mib <= 0) {
    return InvalidArgument("'" + original + "' is not an amount of memory (like 512M or 4G)");
  }
  return static_cast<int64_t>(std::ceil(mib));
}

Result<PipelineSpec> ParsePipelineSpec(std::string_view yaml, std::string_view source,
                                       std::vector<std::string>* problems) {
  CAIRN_ASSIGN_OR_RETURN(YAML::Node root, env::LoadYamlDocument(yaml, source));
  if (!root.IsMap()) {
    return InvalidArgument(std::string(source) +
                           ": a pipeline is a mapping with name, params "
                           "and steps");
  }
  PipelineSpec spec;
  spec.source = std::string(source);
  Reader r(problems);
  try {
    r.CheckKeys(root, "", {"name", "params", "env", "steps"});
    if (const YAML::Node n = root["name"]; n) r.Scalar(n, "name", &spec.name);
    if (spec.name.empty()) r.Problem("name", "is missing: every pipeline has a name");
    if (const YAML::Node n = root["params"]; n) spec.params = r.Params(n, "params");
    if (const YAML::Node n = root["env"]; n) r.Scalar(n, "env", &spec.env);
    const YAML::Node steps = root["steps"];
    if (!steps || !steps.IsMap() || steps.size() == 0) {
      r.Problem("steps", "must map step names to steps, and name at least one");
    } else {
      for (const auto& kv : steps) spec.steps.push_back(r.Step(kv.first.Scalar(), kv.second));
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string(source) + ": " + e.msg);
  }
  return spec;
}

std::string NormalisePath(std::string_view path) {
  if (path.empty()) return "";
  const bool absolute = path.front() == '/';
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(pos, slash - pos);
    pos = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (parts.empty()) return "";
      parts.pop_back();
      continue;
    }
    parts.emplace_back(part);
  }
  std::string out = absolute ? "/" : "";
  out += Join(parts, "/");
  return out == "" ? "." : out;
}

bool PathExistsOnDisk(const std::string& dir, const std::string& path) {
  std::error_code ec;
  return fs::exists(path.starts_with('/') ? fs::path(path) : fs::path(dir) / path, ec);
}

int Pipeline::Find(std::string_view id) const {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

namespace {

// The pipeline's parameters with the -p overrides applied.
std::map<std::string, ParamValue> ApplyOverrides(
    const std::map<std::string, ParamValue>& declared,
    const std::map<std::string, std::string>& overrides, std::vector<std::string>* problems) {
  std::map<std::string, ParamValue> params = declared;
  for (const auto& [name, value] : overrides) {
    auto it = params.find(name);
    if (it == params.end()) {
      problems->push_back("-p " + name + ": the pipeline has no parameter " + name);
      continue;
    }
    if (it->second.is_list) {
      it->second.list.clear();
      size_t pos = 0;
      // "-p seeds=" is the empty list.
      while (!value.empty() && pos <= value.size()) {
        size_t comma = value.find(',', pos);
        if (comma == std::string::npos) comma = value.size();
        it->second.list.push_back(value.substr(pos, comma - pos));
        pos = comma + 1;
      }
    } else {
      it->second.scalar = value;
    }
  }
  return params;
}

// A step's fan-out items: one "" for a step without foreach. `own` holds the parameters the
// step sees, as text.
std::vector<std::string> ForeachItems(const StepSpec& s,
                                      const std::map<std::string, ParamValue>& params,
                                      const std::map<std::string, std::string>& own,
                                      std::vector<std::string>* problems) {
  if (!s.has_foreach) return {""};
  const std::string at = "steps." + s.name;
  std::vector<std::string> items;
  // A lone ${params.NAME} names a list parameter, which a substitution would flatten.
  if (s.foreach.size() == 1 && s.foreach[0].starts_with("${params.") &&
      s.foreach[0].ends_with("}")) {
    const std::string name = s.foreach[0].substr(9, s.foreach[0].size() - 10);
    const ParamValue* value = nullptr;
    if (auto it = s.params.find(name); it != s.params.end()) {
      value = &it->second;
    } else if (auto jt = params.find(name); jt != params.end()) {
      value = &jt->second;
    }
    if (value == nullptr) {
      problems->push_back(at + ".foreach: ${params." + name + "} names no parameter");
    } else {
      items = value->is_list ? value->list : std::vector<std::string>{value->scalar};
    }
  } else {
    Substituter sub(own, nullptr, problems);
    for (const std::string& item : s.foreach) items.push_back(sub.Apply(item, at + ".foreach"));
  }
  std::set<std::string> seen;
  for (const std::string& item : items) {
    if (!seen.insert(item).second) {
      problems->push_back(at + ".foreach: the item '" + item + "' appears twice");
    }
  }
  return items;
}

// Step paths as cairn compares them: normalised and relative to the pipeline's directory.
class PathResolver {
 public:
  explicit PathResolver(const std::string& dir)
      : dir_(dir), base_(dir.starts_with('/') ? NormalisePath(dir) : "") {}

  std::vector<std::string> Resolve(const std::vector<std::string>& in, Substituter& sub,
                                   const std::string& field, bool outputs,
                                   std::vector<std::string>* problems) const {
    std::vector<std::string> out;
    for (const std::string& raw : in) {
      std::string text = sub.Apply(raw, field);
      std::string path = NormalisePath(text);
      if (path.empty() && !text.starts_with('/')) {
        // "../x": resolved against the pipeline's directory (fine to read; an output must
        // come back inside it).
        path = NormalisePath((fs::path(dir_) / text).lexically_normal().string());
      }
      // An absolute path into the pipeline's directory is the relative one, so that it
      // meets the same path written by another step.
      if (path.starts_with('/') && !base_.empty() && Within(path, base_)) {
        path = path == base_ ? "." : path.substr(base_.size() + 1);
      }
      if (outputs && (path.empty() || path.starts_with('/') || path == ".")) {
        problems->push_back(field + ": " + text +
                            " is outside the pipeline's directory; outputs must be inside it");
        continue;
      }
      if (path.empty()) {
        problems->push_back(field + ": '" + text + "' is not a path");
        continue;
      }
      if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
    }
    return out;
  }

 private:
  std::string dir_;
  std::string base_;  // `dir` normalised when absolute, else ""
};

// A step's `register` with parameters substituted, its path resolved and checked: it must be
// one of the step's outputs or lie inside one.
std::optional<Registration> Register(const Step& step, const Registration& spec, Substituter& sub,
                                     const PathResolver& resolver,
                                     std::vector<std::string>* problems) {
  const std::string at = "steps." + step.spec_name + ".register";
  Registration r;
  r.model = sub.Apply(spec.model, at + ".model");
  r.alias = sub.Apply(spec.alias, at + ".alias");
  bool ok = true;
  if (r.model.empty()) {
    problems->push_back(at + ".model: is empty once parameters are substituted");
    ok = false;
  }
  if (!r.alias.empty()) {
    if (Status valid = core::ValidateModelAlias(r.alias); !valid.ok()) {
      problems->push_back(at + ".alias: " + valid.message());
      ok = false;
    }
  }
  std::vector<std::string> path = resolver.Resolve({spec.path}, sub, at + ".path", true, problems);
  if (path.empty()) return std::nullopt;
  r.path = path[0];
  const bool among = std::any_of(step.outputs.begin(), step.outputs.end(),
                                 [&](const std::string& out) { return Within(r.path, out); });
  if (!among) {
    problems->push_back(at + ".path: " + r.path + " is not among the step's outputs (" +
                        (step.outputs.empty() ? "it declares none" : Join(step.outputs, ", ")) +
                        ")");
    ok = false;
  }
  return ok ? std::optional<Registration>(r) : std::nullopt;
}

// One runnable instance of `s`; `item` is null outside a fan-out.
Step Instantiate(const StepSpec& s, const std::string& pipeline_env, const std::string* item,
                 const std::map<std::string, std::string>& own, const PathResolver& resolver,
                 std::vector<std::string>* problems) {
  const std::string at = "steps." + s.name;
  Substituter sub(own, item, problems);
  Step step;
  step.spec_name = s.name;
  step.item = item != nullptr ? *item : "";
  step.id = item != nullptr ? s.name + "[" + *item + "]" : s.name;
  step.command = sub.Apply(s.run, at + ".run");
  step.inputs = resolver.Resolve(s.inputs, sub, at + ".inputs", false, problems);
  for (const DataInputSpec& d : s.data) {
    Result<core::DataRef> ref =
        core::ParseDataRef(sub.Apply(d.ref, at + ".inputs.data"), /*allow_dir=*/false);
    if (!ref.ok()) {
      problems->push_back(at + ".inputs: " + ref.status().message());
      continue;
    }
    const std::string dir = d.path.empty() ? "data/" + ref->name : d.path;
    // A dataset's directory is written like an output: it must lie inside the pipeline's.
    std::vector<std::string> path =
        resolver.Resolve({dir}, sub, at + ".inputs.path", true, problems);
    if (path.empty()) continue;
    step.data.push_back(DataInput{ref->name, ref->version, path[0]});
  }
  step.outputs = resolver.Resolve(s.outputs, sub, at + ".outputs", true, problems);
  step.code = resolver.Resolve(s.code, sub, at + ".code", false, problems);
  for (const auto& [name, value] : s.variables) {
    step.variables[name] = sub.Apply(value, at + ".variables." + name);
  }
  step.params = sub.used();
  step.env = s.env.empty() ? pipeline_env : s.env;
  step.resources = s.resources;
  step.retries = s.retries;
  step.timeout_ms = s.timeout_ms;
  step.cache = s.cache;
  // After `params` is taken: parameters used only here do not change the cache key.
  if (s.registration) step.registration = Register(step, *s.registration, sub, resolver, problems);
  if (s.checkpoint) {
    std::vector<std::string> path =
        resolver.Resolve({s.checkpoint->path}, sub, at + ".checkpoint", true, problems);
    if (!path.empty()) {
      // Outputs are removed before each attempt; a checkpoint is kept across them.
      for (const std::string& out : step.outputs) {
        const bool overlap =
            path[0] == out || path[0].starts_with(out + "/") || out.starts_with(path[0] + "/");
        if (overlap) {
          problems->push_back(at + ".checkpoint: " + path[0] + " overlaps the output " + out +
                              ", which is removed before each attempt");
          path.clear();
          break;
        }
      }
    }
    if (!path.empty()) step.checkpoint = Checkpoint{path[0], s.checkpoint->every_ms};
  }
  if (s.approval) step.approval = Approval{sub.Apply(s.approval->by, at + ".approve.by")};
  return step;
}

// Every step's instances, in file order.
struct Instances {
  std::vector<Step> steps;
  std::map<std::string, std::vector<size_t>> by_name;  // step name -> indexes into `steps`
};

Instances InstantiateSteps(const PipelineSpec& spec,
                           const std::map<std::string, ParamValue>& params,
                           const std::map<std::string, std::string>& param_text,
                           const std::string& dir, std::vector<std::string>* problems) {
  Instances out;
  const PathResolver resolver(dir);
  for (const StepSpec& s : spec.steps) {
    std::map<std::string, std::string> own = param_text;
    for (const auto& [name, value] : s.params) own[name] = value.ToString();
    const std::vector<std::string> items = ForeachItems(s, params, own, problems);
    out.by_name[s.name];  // known even when its foreach has no items
    for (const std::string& item : items) {
      const std::string* item_ptr = s.has_foreach ? &item : nullptr;
      out.by_name[s.name].push_back(out.steps.size());
      out.steps.push_back(Instantiate(s, spec.env, item_ptr, own, resolver, problems));
    }
  }
  return out;
}

// Output path -> the step writing it; two steps writing the same or nested outputs are a
// problem.
std::map<std::string, size_t> FindWriters(const std::vector<Step>& steps,
                                          std::vector<std::string>* problems) {
  std::map<std::string, size_t> writers;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const std::string& out : steps[i].outputs) {
      for (const auto& [path, j] : writers) {
        if (j == i) continue;
        if (path == out) {
          problems->push_back("steps " + steps[j].id + " and " + steps[i].id + " both write " +
                              out);
        } else if (Within(out, path) || Within(path, out)) {
          const bool inner_is_new = Within(out, path);
          problems->push_back("steps " + steps[j].id + " and " + steps[i].id +
                              " write overlapping outputs: " + (inner_is_new ? out : path) +
                              " is inside " + (inner_is_new ? path : out));
        }
      }
      writers.emplace(out, i);
    }
  }
  return writers;
}

// The instances `s` waits for through `needs`. A needed step whose foreach has no items
// passes its own needs on, so that the order through it holds.
void AddNeeds(const PipelineSpec& spec, const StepSpec& s, const Instances& instances,
              std::set<size_t>* deps, std::vector<std::string>* problems) {
  std::vector<std::string> needs(s.needs.begin(), s.needs.end());
  std::set<std::string> seen_needs;
  while (!needs.empty()) {
    const std::string need = needs.back();
    needs.pop_back();
    if (!seen_needs.insert(need).second) continue;
    auto it = instances.by_name.find(need);
    if (it == instances.by_name.end()) {
      std::vector<std::string> names;
      for (const StepSpec& other : spec.steps) names.push_back(other.name);
      problems->push_back("steps." + s.name + ".needs: no step is named " + need +
                          " (steps: " + Join(names, ", ") + ")");
      continue;
    }
    for (size_t j : it->second) deps->insert(j);
    if (it->second.empty()) {
      for (const StepSpec& other : spec.steps) {
        if (other.name == need) needs.insert(needs.end(), other.needs.begin(), other.needs.end());
      }
    }
  }
}

// The steps whose outputs step `i`'s inputs lie in (or hold); an input nobody writes must
// exist.
void AddInputDeps(size_t i, const std::vector<Step>& steps,
                  const std::map<std::string, size_t>& writers, const std::string& dir,
                  PathExists exists, std::set<size_t>* deps, std::vector<std::string>* problems) {
  const std::string at = "steps." + steps[i].spec_name + ".inputs: ";
  for (const std::string& input : steps[i].inputs) {
    bool produced = false;
    for (const auto& [path, j] : writers) {
      if (j == i && Within(input, path)) {
        // Outputs are removed before a step runs: this would delete the input.
        problems->push_back(at + input + " is inside the step's own output " + path +
                            ", which cairn removes before the step runs");
        produced = true;
      } else if (j == i && Within(path, input)) {
        // Its content would count what the step wrote the time before.
        problems->push_back(at + input + " holds the step's own output " + path +
                            "; name the input files apart from the output");
        produced = true;
      } else if (Within(input, path) || Within(path, input)) {
        produced = true;
        if (j != i) deps->insert(j);
      }
    }
    if (!produced && !exists(dir, input)) {
      problems->push_back(at + input + " does not exist and no step writes it");
    }
  }
}

// A depth-first search that reports each cycle it closes, as a path.
void ReportCycles(const std::vector<Step>& steps, const std::vector<std::set<size_t>>& deps,
                  std::vector<std::string>* problems) {
  std::vector<int> state(steps.size(), 0);  // 0 new, 1 on the stack, 2 done
  std::vector<size_t> stack;
  std::set<std::string> reported;
  std::function<void(size_t)> visit = [&](size_t i) {
    state[i] = 1;
    stack.push_back(i);
    for (size_t j : deps[i]) {
      if (state[j] == 1) {
        // Shown in the order things would run (a needs b is "b -> a"), from the step that
        // comes first in the file.
        std::vector<size_t> cycle_steps(std::find(stack.begin(), stack.end(), j), stack.end());
        std::reverse(cycle_steps.begin(), cycle_steps.end());
        std::rotate(cycle_steps.begin(), std::min_element(cycle_steps.begin(), cycle_steps.end()),
                    cycle_steps.end());
        std::vector<std::string> names;
        for (size_t k : cycle_steps) names.push_back(steps[k].id);
        names.push_back(names.front());
        std::string cycle = Join(names, " -> ");
        if (reported.insert(cycle).second) problems->push_back("cycle: " + cycle);
      } else if (state[j] == 0) {
        visit(j);
      }
    }
    stack.pop_back();
    state[i] = 2;
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    if (state[i] == 0) visit(i);
  }
}

// Each step after the steps it needs, otherwise file order, with `deps` renumbered into
// Step::deps. With a cycle the steps on it are left out (the pipeline cannot run anyway).
std::vector<Step> InDependencyOrder(const std::vector<Step>& steps,
                                    const std::vector<std::set<size_t>>& deps) {
  std::vector<size_t> order;
  std::vector<size_t> waiting(steps.size());
  std::vector<std::vector<size_t>> users(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    waiting[i] = deps[i].size();
    for (size_t j : deps[i]) users[j].push_back(i);
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (waiting[i] == 0) ready.insert(i);
  }
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (size_t u : users[i]) {
      if (--waiting[u] == 0) ready.insert(u);
    }
  }
  std::vector<size_t> new_index(steps.size(), SIZE_MAX);
  for (size_t k = 0; k < order.size(); ++k) new_index[order[k]] = k;
  std::vector<Step> out;
  for (size_t i : order) {
    Step step = steps[i];
    for (size_t j : deps[i]) step.deps.push_back(new_index[j]);
    std::sort(step.deps.begin(), step.deps.end());
    out.push_back(std::move(step));
  }
  return out;
}

// A dataset's directory is cairn's to write: no step may write inside it or around it, and
// two steps reading one directory must read the same version there.
void CheckDataPaths(const std::vector<Step>& steps, const std::map<std::string, size_t>& writers,
                    std::vector<std::string>* problems) {
  std::map<std::string, std::pair<const Step*, const DataInput*>> seen;  // path -> first
  for (const Step& step : steps) {
    const std::string at = "steps." + step.spec_name + ".inputs: ";
    for (const DataInput& d : step.data) {
      for (const auto& [path, j] : writers) {
        if (Within(d.path, path) || Within(path, d.path)) {
          problems->push_back(at + "dataset " + d.name + " goes in " + d.path + ", which step " +
                              steps[j].id + " writes (" + path + ")");
        }
      }
      auto [it, fresh] = seen.emplace(d.path, std::make_pair(&step, &d));
      const DataInput& first = *it->second.second;
      if (!fresh && (first.name != d.name || first.version != d.version)) {
        problems->push_back(at + d.path + " holds " + core::DataRefText(first.name, first.version) +
                            " for step " + it->second.first->id + " and " +
                            core::DataRefText(d.name, d.version) + " for step " + step.id +
                            "; give one of them another path");
      }
    }
  }
}

const StepSpec& SpecOf(const PipelineSpec& spec, const Step& step) {
  const StepSpec* s = nullptr;
  for (const StepSpec& candidate : spec.steps) {
    if (candidate.name == step.spec_name) s = &candidate;
  }
  return *s;
}

}  // namespace

Pipeline ExpandPipeline(const PipelineSpec& spec,
                        const std::map<std::string, std::string>& overrides, const std::string& dir,
                        PathExists exists, std::vector<std::string>* problems) {
  Pipeline p;
  p.name = spec.name;
  const std::map<std::string, ParamValue> params = ApplyOverrides(spec.params, overrides, problems);
  for (const auto& [name, value] : params) p.params[name] = value.ToString();

  const Instances instances = InstantiateSteps(spec, params, p.params, dir, problems);
  const std::vector<Step>& steps = instances.steps;

  // Dependencies: `needs`, and inputs that lie in (or hold) another step's outputs.
  std::vector<std::set<size_t>> deps(steps.size());
  const std::map<std::string, size_t> writers = FindWriters(steps, problems);
  for (size_t i = 0; i < steps.size(); ++i) {
    AddNeeds(spec, SpecOf(spec, steps[i]), instances, &deps[i], problems);
    AddInputDeps(i, steps, writers, dir, exists, &deps[i], problems);
  }
  CheckDataPaths(steps, writers, problems);

  ReportCycles(steps, deps, problems);
  p.steps = InDependencyOrder(steps, deps);
  return p;
}

}  // namespace cairn::pipeline
