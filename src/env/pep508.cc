#include "env/pep508.h"

#include <cctype>
#include <vector>

namespace cairn::env {

struct Marker::Node {
  enum class Kind { kOr, kAnd, kCompare };
  Kind kind = Kind::kCompare;
  std::vector<std::shared_ptr<const Node>> children;  // kOr, kAnd
  // kCompare: each side a variable name or a literal.
  bool lhs_var = false, rhs_var = false;
  std::string lhs, rhs, op;
};

namespace {

using Node = Marker::Node;

// Marker variables, with the old spellings packaging still accepts.
std::string CanonicalVariable(const std::string& name) {
  static const std::map<std::string, std::string> kAliases = {
      {"os.name", "os_name"},
      {"sys.platform", "sys_platform"},
      {"platform.version", "platform_version"},
      {"platform.machine", "platform_machine"},
      {"platform.python_implementation", "platform_python_implementation"},
      {"python_implementation", "platform_python_implementation"}};
  auto it = kAliases.find(name);
  return it == kAliases.end() ? name : it->second;
}

bool IsVariable(const std::string& name) {
  static const std::set<std::string> kVariables = {
      "os_name", "sys_platform", "platform_machine", "platform_python_implementation",
      "platform_release", "platform_system", "platform_version", "python_version",
      "python_full_version", "implementation_name", "implementation_version", "extra"};
  return kVariables.count(name) > 0;
}

class MarkerParser {
 public:
  explicit MarkerParser(std::string_view text) : text_(text) {}

  Result<std::shared_ptr<const Node>> Parse() {
    CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const Node> node, Or());
    Skip();
    if (at_ < text_.size()) return Error("unexpected '" + std::string(text_.substr(at_)) + "'");
    return node;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument("invalid marker '" + std::string(text_) + "' at position " +
                           std::to_string(at_) + ": " + what);
  }
  void Skip() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_])) != 0) ++at_;
  }
  // The keyword `word` as a whole word.
  bool Keyword(std::string_view word) {
    Skip();
    if (text_.substr(at_, word.size()) != word) return false;
    const size_t end = at_ + word.size();
    if (end < text_.size() &&
        (std::isalnum(static_cast<unsigned char>(text_[end])) != 0 || text_[end] == '_')) {
      return false;
    }
    at_ = end;
    return true;
  }

  Result<std::shared_ptr<const Node>> Or() {
    CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const Node> first, And());
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::kOr;
    node->children.push_back(first);
    while (Keyword("or")) {
      CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const Node> next, And());
      node->children.push_back(next);
    }
    if (node->children.size() == 1) return first;
    return std::shared_ptr<const Node>(node);
  }

  Result<std::shared_ptr<const Node>> And() {
    CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const Node> first, Atom());
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::kAnd;
    node->children.push_back(first);
    while (Keyword("and")) {
      CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const Node> next, Atom());
      node->children.push_back(next);
    }
    if (node->children.size() == 1) return first;
    return std::shared_ptr<const Node>(node);
  }

  Result<std::shared_ptr<const Node>> Atom() {
    Skip();
    if (at_ < text_.size() && text_[at_] == '(') {
      ++at_;
      CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const Node> inner, Or());
      Skip();
      if (at_ >= text_.size() || text_[at_] != ')') return Error("expected ')'");
      ++at_;
      return inner;
    }
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::kCompare;
    CAIRN_RETURN_IF_ERROR(Value(&node->lhs, &node->lhs_var));
    CAIRN_ASSIGN_OR_RETURN(node->op, Op());
    CAIRN_RETURN_IF_ERROR(Value(&node->rhs, &node->rhs_var));
    if (!node->lhs_var && !node->rhs_var) return Error("a comparison needs a marker variable");
    return std::shared_ptr<const Node>(node);
  }

  Status Value(std::string* out, bool* is_var) {
    Skip();
    if (at_ >= text_.size()) return Error("expected a variable or a quoted string");
    const char c = text_[at_];
    if (c == '"' || c == '\'') {
      const size_t end = text_.find(c, at_ + 1);
      if (end == std::string_view::npos) return Error("unterminated string");
      *out = std::string(text_.substr(at_ + 1, end - at_ - 1));
      *is_var = false;
      at_ = end + 1;
      return Status::Ok();
    }
    size_t end = at_;
    while (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) != 0 ||
                                  text_[end] == '_' || text_[end] == '.')) {
      ++end;
    }
    std::string name = CanonicalVariable(std::string(text_.substr(at_, end - at_)));
    if (!IsVariable(name)) {
      return Error(name.empty() ? "expected a variable or a quoted string"
                                : "unknown marker variable '" + name + "'");
    }
    *out = name;
    *is_var = true;
    at_ = end;
    return Status::Ok();
  }

  Result<std::string> Op() {
    Skip();
    for (std::string_view op : {"===", "==", "!=", "<=", ">=", "~=", "<", ">"}) {
      if (text_.substr(at_, op.size()) == op) {
        at_ += op.size();
        return std::string(op);
      }
    }
    if (Keyword("in")) return std::string("in");
    if (Keyword("not")) {
      if (Keyword("in")) return std::string("not in");
      return Error("expected 'in' after 'not'");
    }
    return Error("expected a comparison operator");
  }

  std::string_view text_;
  size_t at_ = 0;
};

bool Compare(const std::string& lhs, const std::string& op, const std::string& rhs) {
  if (op == "in") return rhs.find(lhs) != std::string::npos;
  if (op == "not in") return rhs.find(lhs) == std::string::npos;
  // A version comparison when the right side makes a specifier and the left a version.
  if (Result<Specifier> spec = Specifier::Parse(op + rhs); spec.ok()) {
    if (Result<Version> v = Version::Parse(lhs); v.ok()) {
      SpecifierSet set;
      if (Result<SpecifierSet> s = SpecifierSet::Parse(op + rhs); s.ok()) set = *s;
      return set.Contains(*v, true);
    }
  }
  if (op == "==" || op == "===") return lhs == rhs;
  if (op == "!=") return lhs != rhs;
  if (op == "<") return lhs < rhs;
  if (op == "<=") return lhs <= rhs;
  if (op == ">") return lhs > rhs;
  if (op == ">=") return lhs >= rhs;
  return false;  // ~= on strings has no meaning
}

bool Eval(const Node& n, const MarkerEnvironment& env, const std::string& extra) {
  switch (n.kind) {
    case Node::Kind::kOr:
      for (const auto& c : n.children) {
        if (Eval(*c, env, extra)) return true;
      }
      return false;
    case Node::Kind::kAnd:
      for (const auto& c : n.children) {
        if (!Eval(*c, env, extra)) return false;
      }
      return true;
    case Node::Kind::kCompare:
      break;
  }
  const bool extra_compare = (n.lhs_var && n.lhs == "extra") || (n.rhs_var && n.rhs == "extra");
  auto value = [&](const std::string& text, bool var) -> std::string {
    std::string v;
    if (!var) {
      v = text;
    } else if (text == "extra") {
      v = extra;
    } else if (auto it = env.values.find(text); it != env.values.end()) {
      v = it->second;
    }
    return extra_compare ? NormalizeName(v) : v;
  };
  return Compare(value(n.lhs, n.lhs_var), n.op, value(n.rhs, n.rhs_var));
}

std::string Quote(const std::string& s) {
  return s.find('"') == std::string::npos ? "\"" + s + "\"" : "'" + s + "'";
}

std::string Format(const Node& n, bool nested) {
  if (n.kind == Node::Kind::kCompare) {
    return (n.lhs_var ? n.lhs : Quote(n.lhs)) + " " + n.op + " " +
           (n.rhs_var ? n.rhs : Quote(n.rhs));
  }
  const bool is_or = n.kind == Node::Kind::kOr;
  std::string out;
  for (const auto& c : n.children) {
    if (!out.empty()) out += is_or ? " or " : " and ";
    out += Format(*c, !is_or);
  }
  return is_or && nested ? "(" + out + ")" : out;
}

}  // namespace

MarkerEnvironment MarkerEnvironment::LinuxCPython(std::string_view python_full_version,
                                                  std::string_view machine) {
  MarkerEnvironment env;
  std::string full(python_full_version);
  std::string short_version = full;
  if (size_t first = full.find('.'); first != std::string::npos) {
    size_t second = full.find('.', first + 1);
    short_version = full.substr(0, second);
  }
  env.values = {{"os_name", "posix"},
                {"sys_platform", "linux"},
                {"platform_machine", std::string(machine)},
                {"platform_python_implementation", "CPython"},
                {"platform_release", ""},
                {"platform_system", "Linux"},
                {"platform_version", ""},
                {"python_version", short_version},
                {"python_full_version", full},
                {"implementation_name", "cpython"},
                {"implementation_version", full}};
  return env;
}

Marker::Marker() = default;
Marker::~Marker() = default;
Marker::Marker(const Marker& other) = default;
Marker& Marker::operator=(const Marker& other) = default;
Marker::Marker(Marker&&) noexcept = default;
Marker& Marker::operator=(Marker&&) noexcept = default;

Result<Marker> Marker::Parse(std::string_view text) {
  MarkerParser parser(text);
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const Node> root, parser.Parse());
  Marker m;
  m.root_ = std::move(root);
  return m;
}

bool Marker::Evaluate(const MarkerEnvironment& env, const std::set<std::string>& extras) const {
  if (root_ == nullptr) return true;
  if (extras.empty()) return Eval(*root_, env, "");
  for (const std::string& e : extras) {
    if (Eval(*root_, env, e)) return true;
  }
  return false;
}

std::string Marker::ToString() const { return root_ == nullptr ? "" : Format(*root_, false); }

Result<Requirement> Requirement::Parse(std::string_view text) {
  auto invalid = [&text](const std::string& why) {
    return InvalidArgument("invalid requirement '" + std::string(text) + "': " + why);
  };
  size_t at = 0;
  auto skip = [&] {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at])) != 0) ++at;
  };
  skip();
  size_t end = at;
  while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) != 0 ||
                               text[end] == '.' || text[end] == '-' || text[end] == '_')) {
    ++end;
  }
  Requirement r;
  r.name = std::string(text.substr(at, end - at));
  if (!IsValidName(r.name)) return invalid("expected a project name at the start");
  at = end;
  skip();
  if (at < text.size() && text[at] == '[') {
    const size_t close = text.find(']', at);
    if (close == std::string_view::npos) return invalid("expected ']' after the extras");
    std::string_view list = text.substr(at + 1, close - at - 1);
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      std::string_view e = list.substr(start, comma == std::string_view::npos ? comma : comma - start);
      while (!e.empty() && std::isspace(static_cast<unsigned char>(e.front())) != 0) e.remove_prefix(1);
      while (!e.empty() && std::isspace(static_cast<unsigned char>(e.back())) != 0) e.remove_suffix(1);
      if (!e.empty()) {
        if (!IsValidName(e)) return invalid("bad extra name '" + std::string(e) + "'");
        r.extras.insert(NormalizeName(e));
      } else if (comma != std::string_view::npos) {
        return invalid("empty extra name");
      }
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    at = close + 1;
    skip();
  }
  std::string_view marker_text;
  bool has_marker = false;
  if (at < text.size() && text[at] == '@') {
    ++at;
    skip();
    size_t url_end = at;
    while (url_end < text.size() && std::isspace(static_cast<unsigned char>(text[url_end])) == 0) {
      ++url_end;
    }
    r.url = std::string(text.substr(at, url_end - at));
    if (r.url.empty()) return invalid("expected a URL after '@'");
    at = url_end;
    skip();
    if (at < text.size()) {
      if (text[at] != ';') return invalid("expected ';' and a marker after the URL");
      marker_text = text.substr(at + 1);
      has_marker = true;
    }
  } else {
    const size_t semi = text.find(';', at);
    std::string_view spec = text.substr(at, semi == std::string_view::npos ? semi : semi - at);
    while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.back())) != 0) {
      spec.remove_suffix(1);
    }
    if (spec.starts_with("(")) {
      if (!spec.ends_with(")")) return invalid("expected ')' after the version specifier");
      spec = spec.substr(1, spec.size() - 2);
    }
    Result<SpecifierSet> set = SpecifierSet::Parse(spec);
    if (!set.ok()) return invalid(set.status().message());
    r.specifier = std::move(set).value();
    if (semi != std::string_view::npos) {
      marker_text = text.substr(semi + 1);
      has_marker = true;
    }
  }
  if (has_marker) {
    Result<Marker> marker = Marker::Parse(marker_text);
    if (!marker.ok()) return invalid(marker.status().message());
    r.marker = std::move(marker).value();
  }
  return r;
}

std::string Requirement::ToString() const {
  std::string out = name;
  if (!extras.empty()) {
    out += "[";
    bool first = true;
    for (const std::string& e : extras) {
      out += (first ? "" : ",") + e;
      first = false;
    }
    out += "]";
  }
  out += specifier.ToString();
  if (!url.empty()) out += " @ " + url;
  if (marker) out += (url.empty() ? "; " : " ; ") + marker->ToString();
  return out;
}

}  // namespace cairn::env
