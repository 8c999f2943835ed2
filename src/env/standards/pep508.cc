#include "env/standards/pep508.h"
#include "util/strings.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace cairn::env {

struct Marker::Node {
  enum class Kind { kAnd, kOr, kCompare };
  Kind kind = Kind::kCompare;
  std::vector<std::shared_ptr<const Node>> children;  // kAnd, kOr: two or more

  // kCompare: a variable against a string, in either order.
  std::string variable;  // the current spelling, e.g. "os_name"
  std::string op;        // "==", "~=", "in", "not in", ...
  std::string literal;   // without quotes; normalised when the variable is `extra`
  bool variable_first = true;
  // `variable op literal` on a version variable, when op + literal is a valid specifier.
  std::optional<Specifier> spec;
};

namespace {

using NodePtr = std::shared_ptr<const Marker::Node>;
using Node = Marker::Node;

// Parentheses deeper than this are refused rather than risking the stack on hostile input.
constexpr int kMaxMarkerDepth = 64;

bool IsWsp(char c) { return c == ' ' || c == '\t'; }  // PEP 508's wsp: no line breaks
bool IsNameChar(char c) { return IsAsciiAlnum(c) || c == '-' || c == '_' || c == '.'; }
bool IsWordChar(char c) { return IsAsciiAlnum(c) || c == '_'; }
// The characters of `version` in PEP 508's grammar.
bool IsVersionChar(char c) {
  return IsAsciiAlnum(c) || c == '-' || c == '_' || c == '.' || c == '*' || c == '+' || c == '!';
}

enum class VarKind { kString, kVersion, kSet };

// The marker variables, and the old spellings that packaging still accepts.
std::optional<std::pair<std::string, VarKind>> LookupVariable(std::string_view name) {
  static const std::map<std::string, std::pair<std::string, VarKind>, std::less<>> kVariables = {
      {"os_name", {"os_name", VarKind::kString}},
      {"os.name", {"os_name", VarKind::kString}},
      {"sys_platform", {"sys_platform", VarKind::kString}},
      {"sys.platform", {"sys_platform", VarKind::kString}},
      {"platform_machine", {"platform_machine", VarKind::kString}},
      {"platform.machine", {"platform_machine", VarKind::kString}},
      {"platform_python_implementation", {"platform_python_implementation", VarKind::kString}},
      {"platform.python_implementation", {"platform_python_implementation", VarKind::kString}},
      {"python_implementation", {"platform_python_implementation", VarKind::kString}},
      {"platform_system", {"platform_system", VarKind::kString}},
      {"platform_version", {"platform_version", VarKind::kString}},
      {"platform.version", {"platform_version", VarKind::kString}},
      {"implementation_name", {"implementation_name", VarKind::kString}},
      {"extra", {"extra", VarKind::kString}},
      {"platform_release", {"platform_release", VarKind::kVersion}},
      {"python_version", {"python_version", VarKind::kVersion}},
      {"python_full_version", {"python_full_version", VarKind::kVersion}},
      {"implementation_version", {"implementation_version", VarKind::kVersion}},
      {"extras", {"extras", VarKind::kSet}},
      {"dependency_groups", {"dependency_groups", VarKind::kSet}},
  };
  auto it = kVariables.find(name);
  if (it == kVariables.end()) return std::nullopt;
  return it->second;
}

VarKind KindOf(const std::string& variable) { return LookupVariable(variable)->second; }

bool IsOrderOp(const std::string& op) { return op != "in" && op != "not in"; }

// Recursive descent over PEP 508's marker grammar:
//   marker  = and ("or" and)*
//   and     = atom ("and" atom)*
//   atom    = "(" marker ")" | operand op operand
// Positions in errors count from the start of the whole text (a requirement, when the marker
// is part of one).
class MarkerParser {
 public:
  // Parses text[at..] to the end; `context` starts each error message.
  MarkerParser(std::string_view text, size_t at, std::string context)
      : text_(text), at_(at), context_(std::move(context)) {}

  Result<NodePtr> ParseToEnd() {
    CAIRN_ASSIGN_OR_RETURN(NodePtr node, Or(0));
    SkipWsp();
    if (at_ < text_.size()) {
      return Error(text_[at_] == ')' ? "unexpected ')' without a matching '('"
                                     : "expected 'and', 'or' or the end");
    }
    return node;
  }

 private:
  struct Operand {
    bool is_variable = false;
    std::string text;  // the variable's current spelling, or the string without quotes
    size_t pos = 0;
  };

  Status Error(const std::string& what) const { return ErrorAt(what, at_); }
  Status ErrorAt(const std::string& what, size_t pos, const std::string& note = "") const {
    return InvalidArgument(context_ + ": " + what + " at position " + std::to_string(pos) + note);
  }

  void SkipWsp() {
    while (at_ < text_.size() && IsWsp(text_[at_])) ++at_;
  }

  // `word` as a whole word at the current position (after whitespace).
  bool Keyword(std::string_view word) {
    SkipWsp();
    if (text_.substr(at_, word.size()) != word) return false;
    const size_t end = at_ + word.size();
    if (end < text_.size() && IsWordChar(text_[end])) return false;
    at_ = end;
    return true;
  }

  // Joins `parts` under a `kind` node, lifting the parts of nested nodes of the same kind, so
  // that "a and (b and c)" and "(a and b) and c" become the same tree.
  static NodePtr Join(Node::Kind kind, std::vector<NodePtr> parts) {
    if (parts.size() == 1) return parts.front();
    auto node = std::make_shared<Node>();
    node->kind = kind;
    for (NodePtr& p : parts) {
      if (p->kind == kind) {
        node->children.insert(node->children.end(), p->children.begin(), p->children.end());
      } else {
        node->children.push_back(std::move(p));
      }
    }
    return node;
  }

  Result<NodePtr> Or(int depth) {
    std::vector<NodePtr> parts;
    do {
      CAIRN_ASSIGN_OR_RETURN(NodePtr part, And(depth));
      parts.push_back(std::move(part));
    } while (Keyword("or"));
    return Join(Node::Kind::kOr, std::move(parts));
  }

  Result<NodePtr> And(int depth) {
    std::vector<NodePtr> parts;
    do {
      CAIRN_ASSIGN_OR_RETURN(NodePtr part, Atom(depth));
      parts.push_back(std::move(part));
    } while (Keyword("and"));
    return Join(Node::Kind::kAnd, std::move(parts));
  }

  Result<NodePtr> Atom(int depth) {
    SkipWsp();
    if (at_ < text_.size() && text_[at_] == '(') {
      if (depth >= kMaxMarkerDepth) return Error("parentheses nested too deeply");
      const size_t open = at_++;
      CAIRN_ASSIGN_OR_RETURN(NodePtr inner, Or(depth + 1));
      SkipWsp();
      if (at_ >= text_.size() || text_[at_] != ')') {
        return ErrorAt("expected ')'", at_,
                       " to close the '(' at position " + std::to_string(open));
      }
      ++at_;
      return inner;
    }
    return Comparison();
  }

  Result<Operand> ReadOperand() {
    SkipWsp();
    Operand o;
    o.pos = at_;
    if (at_ >= text_.size()) return Error("expected a marker variable or a quoted string");
    const char quote = text_[at_];
    if (quote == '"' || quote == '\'') {
      const size_t end = text_.find(quote, at_ + 1);
      if (end == std::string_view::npos) return Error("unterminated string");
      o.text = std::string(text_.substr(at_ + 1, end - at_ - 1));
      if (size_t bs = o.text.find('\\'); bs != std::string::npos) {
        return ErrorAt("backslash escapes are not part of marker strings", at_ + 1 + bs);
      }
      at_ = end + 1;
      return o;
    }
    size_t end = at_;
    while (end < text_.size() && (IsWordChar(text_[end]) || text_[end] == '.')) ++end;
    const std::string_view word = text_.substr(at_, end - at_);
    if (word.empty()) return Error("expected a marker variable or a quoted string");
    auto variable = LookupVariable(word);
    if (!variable) return Error("unknown marker variable '" + std::string(word) + "'");
    o.is_variable = true;
    o.text = variable->first;
    at_ = end;
    return o;
  }

  Result<std::string> ReadOp() {
    SkipWsp();
    for (std::string_view op : {"===", "==", "~=", "!=", "<=", ">=", "<", ">"}) {
      if (text_.substr(at_, op.size()) == op) {
        at_ += op.size();
        return std::string(op);
      }
    }
    if (Keyword("in")) return std::string("in");
    if (Keyword("not")) {
      const size_t after_not = at_;
      if (at_ < text_.size() && IsWsp(text_[at_]) && Keyword("in")) return std::string("not in");
      return ErrorAt("expected 'in' after 'not'", after_not);
    }
    return Error("expected a marker operator (==, !=, <, <=, >, >=, ~=, ===, in, not in)");
  }

  Result<NodePtr> Comparison() {
    CAIRN_ASSIGN_OR_RETURN(Operand left, ReadOperand());
    const size_t op_pos = (SkipWsp(), at_);
    CAIRN_ASSIGN_OR_RETURN(std::string op, ReadOp());
    CAIRN_ASSIGN_OR_RETURN(Operand right, ReadOperand());
    if (left.is_variable == right.is_variable) {
      return ErrorAt(left.is_variable
                         ? "a comparison needs a quoted string on one side, not two variables"
                         : "a comparison needs a marker variable on one side, not two strings",
                     left.pos);
    }
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::kCompare;
    node->op = op;
    node->variable_first = left.is_variable;
    node->variable = left.is_variable ? left.text : right.text;
    node->literal = left.is_variable ? right.text : left.text;
    const VarKind kind = KindOf(node->variable);

    if (kind == VarKind::kSet) {
      if (IsOrderOp(op) || node->variable_first) {
        return ErrorAt("'" + node->variable + "' is a set: write \"name\" in " + node->variable,
                       left.pos);
      }
      node->literal = NormalizeName(node->literal);
      return NodePtr(node);
    }
    if (node->variable == "extra") node->literal = NormalizeName(node->literal);
    if ((op == "~=" || op == "===") && kind != VarKind::kVersion) {
      return ErrorAt(
          "'" + op + "' compares versions, and '" + node->variable + "' does not hold a version",
          op_pos);
    }
    if (kind == VarKind::kVersion && node->variable_first && IsOrderOp(op) && op != "===") {
      Result<Specifier> spec = Specifier::Parse(op + node->literal);
      if (spec.ok()) {
        node->spec = *std::move(spec);
      } else if (op == "~=") {
        return ErrorAt("'" + node->literal + "' is not a version for '~='", right.pos);
      }
    }
    return NodePtr(node);
  }

  std::string_view text_;
  size_t at_;
  std::string context_;
};

// The value a variable has in `env`.
std::string ValueOf(const std::string& variable, const MarkerEnvironment& env,
                    const std::string& extra) {
  if (variable == "extra") return extra;
  auto it = env.values.find(variable);
  if (it == env.values.end()) return KindOf(variable) == VarKind::kVersion ? "0" : "";
  // A Python built from an untagged checkout reports "3.13.0+", which is not a version.
  if (variable == "python_full_version" && it->second.ends_with("+")) return it->second + "local";
  return it->second;
}

bool EqualIgnoringCase(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return lower(x) == lower(y); });
}

bool CompareStrings(const std::string& lhs, const std::string& op, const std::string& rhs) {
  if (op == "in") return rhs.find(lhs) != std::string::npos;
  if (op == "not in") return rhs.find(lhs) == std::string::npos;
  if (op == "==" || op == "<=" || op == ">=") return lhs == rhs;
  if (op == "!=") return lhs != rhs;
  return false;  // "<" and ">" on strings; "~=" without versions
}

bool EvalCompare(const Node& n, const MarkerEnvironment& env, const std::string& extra,
                 const std::set<std::string>& extras) {
  const VarKind kind = KindOf(n.variable);
  if (kind == VarKind::kSet) {
    const std::set<std::string>& set = n.variable == "extras" ? extras : env.dependency_groups;
    const bool found = std::any_of(set.begin(), set.end(), [&n](const std::string& s) {
      return NormalizeName(s) == n.literal;
    });
    return (n.op == "in") == found;
  }
  const std::string value = ValueOf(n.variable, env, extra);
  const std::string& lhs = n.variable_first ? value : n.literal;
  const std::string& rhs = n.variable_first ? n.literal : value;
  if (n.op == "===") return EqualIgnoringCase(lhs, rhs);  // "arbitrary equality" is textual
  if (kind == VarKind::kVersion && IsOrderOp(n.op)) {
    std::optional<Specifier> spec = n.spec;
    if (!n.variable_first) {
      if (Result<Specifier> s = Specifier::Parse(n.op + rhs); s.ok()) spec = *std::move(s);
    }
    if (spec) {
      Result<Version> v = Version::Parse(lhs);
      return v.ok() && spec->Contains(*v);
    }
  }
  return CompareStrings(lhs, n.op, rhs);
}

bool Eval(const Node& n, const MarkerEnvironment& env, const std::string& extra,
          const std::set<std::string>& extras) {
  switch (n.kind) {
    case Node::Kind::kOr:
      return std::any_of(n.children.begin(), n.children.end(),
                         [&](const NodePtr& c) { return Eval(*c, env, extra, extras); });
    case Node::Kind::kAnd:
      return std::all_of(n.children.begin(), n.children.end(),
                         [&](const NodePtr& c) { return Eval(*c, env, extra, extras); });
    case Node::Kind::kCompare:
      return EvalCompare(n, env, extra, extras);
  }
  return false;
}

std::string Quote(const std::string& s) {
  return s.find('"') == std::string::npos ? "\"" + s + "\"" : "'" + s + "'";
}

std::string Format(const Node& n, bool inside_and) {
  if (n.kind == Node::Kind::kCompare) {
    const std::string literal = Quote(n.literal);
    return n.variable_first ? n.variable + " " + n.op + " " + literal
                            : literal + " " + n.op + " " + n.variable;
  }
  const bool is_or = n.kind == Node::Kind::kOr;
  std::string out;
  for (const NodePtr& c : n.children) {
    if (!out.empty()) out += is_or ? " or " : " and ";
    out += Format(*c, !is_or);
  }
  return is_or && inside_and ? "(" + out + ")" : out;
}

}  // namespace

MarkerEnvironment MarkerEnvironment::LinuxCPython(std::string_view python_full_version,
                                                  std::string_view machine) {
  const std::string full(python_full_version);
  // "3.11.2" -> "3.11"; "3.13.0rc1" -> "3.13".
  std::string short_version = full;
  if (size_t first = full.find('.'); first != std::string::npos) {
    size_t end = first + 1;
    while (end < full.size() && full[end] >= '0' && full[end] <= '9') ++end;
    short_version = full.substr(0, end);
  }
  MarkerEnvironment env;
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

Result<Marker> Marker::Parse(std::string_view text) {
  return ParseAt(text, 0, "invalid marker '" + std::string(text) + "'");
}

Result<Marker> Marker::ParseAt(std::string_view text, size_t at, std::string context) {
  MarkerParser parser(text, at, std::move(context));
  CAIRN_ASSIGN_OR_RETURN(NodePtr root, parser.ParseToEnd());
  Marker m;
  m.root_ = std::move(root);
  return m;
}

bool Marker::Evaluate(const MarkerEnvironment& env, const std::set<std::string>& extras) const {
  if (root_ == nullptr) return true;
  std::set<std::string> normalised;
  for (const std::string& e : extras) normalised.insert(NormalizeName(e));
  if (normalised.empty()) return Eval(*root_, env, "", normalised);
  return std::any_of(normalised.begin(), normalised.end(), [&](const std::string& extra) {
    return Eval(*root_, env, extra, normalised);
  });
}

std::string Marker::ToString() const { return root_ == nullptr ? "" : Format(*root_, false); }

// ---------------------------------------------------------------------------------------------

namespace {

// Reads a requirement from left to right; `at_` is the current position in `text_`.
class RequirementParser {
 public:
  explicit RequirementParser(std::string_view text)
      : text_(text), context_("invalid requirement '" + std::string(text) + "'") {}

  Result<Requirement> Parse() {
    Requirement r;
    SkipWsp();
    CAIRN_ASSIGN_OR_RETURN(r.name, Name("a project name"));
    SkipWsp();
    if (Peek('[')) CAIRN_RETURN_IF_ERROR(Extras(&r.extras));
    SkipWsp();
    if (Peek('@')) {
      ++at_;
      SkipWsp();
      const size_t start = at_;
      while (at_ < text_.size() && !IsWsp(text_[at_])) ++at_;
      if (at_ == start) return Error("expected a URL after '@'");
      r.url = std::string(text_.substr(start, at_ - start));
      // A marker after a URL needs whitespace before its ';' (a ';' touching the URL is part
      // of the URL).
      SkipWsp();
      if (at_ == text_.size()) return r;
      if (!Peek(';')) return Error("expected ';' and a marker after the URL");
    } else {
      CAIRN_ASSIGN_OR_RETURN(r.specifier, VersionSpec());
      SkipWsp();
      if (at_ == text_.size()) return r;
      if (!Peek(';')) {
        return Error(r.specifier.empty()
                         ? "expected a version specifier, '@', ';' or the end"
                         : "expected ',', ';' or the end after the version specifier");
      }
    }
    marker_at_ = at_ + 1;
    return r;
  }

  // Where the marker after ";" starts; nullopt when there is none.
  std::optional<size_t> marker_at() const { return marker_at_; }
  const std::string& context() const { return context_; }

 private:
  Status Error(const std::string& what) const { return ErrorAt(what, at_); }
  Status ErrorAt(const std::string& what, size_t pos, const std::string& note = "") const {
    return InvalidArgument(context_ + ": " + what + " at position " + std::to_string(pos) + note);
  }
  void SkipWsp() {
    while (at_ < text_.size() && IsWsp(text_[at_])) ++at_;
  }
  bool Peek(char c) const { return at_ < text_.size() && text_[at_] == c; }

  Result<std::string> Name(const std::string& what) {
    const size_t start = at_;
    while (at_ < text_.size() && IsNameChar(text_[at_])) ++at_;
    const std::string_view name = text_.substr(start, at_ - start);
    if (name.empty()) return ErrorAt("expected " + what, start);
    if (!IsValidName(name)) {
      return ErrorAt("'" + std::string(name) + "' must start and end with a letter or digit",
                     start);
    }
    return std::string(name);
  }

  // "[" wsp* (name (wsp* "," wsp* name)*)? wsp* "]"
  Status Extras(std::set<std::string>* out) {
    const size_t open = at_++;
    SkipWsp();
    if (Peek(']')) {
      ++at_;
      return Status::Ok();
    }
    for (;;) {
      SkipWsp();
      CAIRN_ASSIGN_OR_RETURN(std::string extra, Name("an extra name"));
      out->insert(NormalizeName(extra));
      SkipWsp();
      if (Peek(',')) {
        ++at_;
        continue;
      }
      if (Peek(']')) {
        ++at_;
        return Status::Ok();
      }
      if (at_ == text_.size()) {
        return ErrorAt("expected ']'", at_,
                       " to close the '[' at position " + std::to_string(open));
      }
      return Error("expected ',' or ']' in the extras");
    }
  }

  // ("(" clauses ")") | clauses, where clauses may be empty and one trailing comma is allowed.
  Result<SpecifierSet> VersionSpec() {
    const bool parenthesised = Peek('(');
    const size_t open = at_;
    if (parenthesised) ++at_;
    std::vector<Specifier> specs;
    for (;;) {
      SkipWsp();
      const size_t clause = at_;
      std::string_view op;
      for (std::string_view candidate : {"===", "==", "~=", "!=", "<=", ">=", "<", ">"}) {
        if (text_.substr(at_, candidate.size()) == candidate) {
          op = candidate;
          break;
        }
      }
      if (op.empty()) {
        // No (further) clause: fine at the start and after a trailing comma before the end,
        // ";" or ")".
        if (!specs.empty() && !(at_ == text_.size() || Peek(';') || Peek(')'))) {
          return Error("expected a version operator after ','");
        }
        break;
      }
      at_ += op.size();
      SkipWsp();
      const size_t version = at_;
      if (op == "===") {
        while (at_ < text_.size() && !IsWsp(text_[at_]) && text_[at_] != ',' && text_[at_] != ';' &&
               text_[at_] != ')') {
          ++at_;
        }
      } else {
        while (at_ < text_.size() && IsVersionChar(text_[at_])) ++at_;
      }
      if (at_ == version) return Error("expected a version after '" + std::string(op) + "'");
      Result<Specifier> spec = Specifier::Parse(text_.substr(clause, at_ - clause));
      if (!spec.ok()) return ErrorAt(spec.status().message(), clause);
      specs.push_back(*std::move(spec));
      SkipWsp();
      if (!Peek(',')) break;
      ++at_;
    }
    if (parenthesised) {
      SkipWsp();
      if (!Peek(')')) {
        return ErrorAt("expected ')'", at_,
                       " to close the '(' at position " + std::to_string(open));
      }
      ++at_;
    }
    return SpecifierSet::Of(std::move(specs));
  }

  std::string_view text_;
  std::string context_;
  size_t at_ = 0;
  std::optional<size_t> marker_at_;
};

}  // namespace

Result<Requirement> Requirement::Parse(std::string_view text) {
  RequirementParser parser(text);
  CAIRN_ASSIGN_OR_RETURN(Requirement r, parser.Parse());
  if (parser.marker_at()) {
    CAIRN_ASSIGN_OR_RETURN(r.marker, Marker::ParseAt(text, *parser.marker_at(), parser.context()));
  }
  return r;
}

std::string Requirement::ToString() const {
  std::string out = name;
  if (!extras.empty()) {
    out += '[';
    for (const std::string& e : extras) {
      if (out.back() != '[') out += ',';
      out += e;
    }
    out += ']';
  }
  out += specifier.ToString();
  if (!url.empty()) out += " @ " + url;
  if (marker) out += (url.empty() ? "; " : " ; ") + marker->ToString();
  return out;
}

}  // namespace cairn::env
