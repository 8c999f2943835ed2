#include "core/search.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "util/strings.h"

namespace cairn::core {
namespace {

// ---------------------------------------------------------------------------------------------
// Text helpers. Only ASCII is folded or classified: keys and keywords of the grammar are ASCII,
// and locale-dependent <cctype> would make parsing depend on the process environment.

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsWordChar(char c) { return IsLetter(c) || IsDigit(c) || c == '_'; }

std::string Quoted(std::string_view text) {
  std::string out = "'";
  out += text;
  out += "'";
  return out;
}

std::string_view ComparatorName(Comparator op) {
  switch (op) {
    case Comparator::kEq:
      return "=";
    case Comparator::kNe:
      return "!=";
    case Comparator::kLt:
      return "<";
    case Comparator::kLe:
      return "<=";
    case Comparator::kGt:
      return ">";
    case Comparator::kGe:
      return ">=";
    case Comparator::kLike:
      return "LIKE";
    case Comparator::kILike:
      return "ILIKE";
    case Comparator::kIn:
      return "IN";
    case Comparator::kNotIn:
      return "NOT IN";
  }
  return "?";
}

bool IsListComparator(Comparator op) { return op == Comparator::kIn || op == Comparator::kNotIn; }

// ---------------------------------------------------------------------------------------------
// Tokens.

enum class TokenKind {
  kIdentifier,  // dot-separated parts, each bare or quoted with "..." or `...`
  kString,      // '...'
  kNumber,
  kOperator,  // = != < <= > >=
  kLeftParen,
  kRightParen,
  kComma,
  kEnd,
};

struct IdentifierPart {
  std::string text;
  char quote = 0;  // '"' or '`' when the part was quoted
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string_view source;            // as written, quotes included; empty for kEnd
  size_t offset = 0;                  // where `source` starts in the input
  std::vector<IdentifierPart> parts;  // kIdentifier
  std::string text;                   // kString: the text between the quotes
  double number = 0;                  // kNumber
  Comparator op = Comparator::kEq;    // kOperator
};

// Keywords are single bare words compared case-insensitively, as SQL does.
bool IsKeyword(const Token& token, std::string_view word) {
  return token.kind == TokenKind::kIdentifier && token.parts.size() == 1 &&
         token.parts[0].quote == 0 && EqualsIgnoreCase(token.parts[0].text, word);
}

bool IsReservedWord(const Token& token) {
  for (std::string_view word : {"and", "or", "not", "in", "like", "ilike"}) {
    if (IsKeyword(token, word)) return true;
  }
  return false;
}

std::string Describe(const Token& token) {
  return token.kind == TokenKind::kEnd ? "end of input" : Quoted(token.source);
}

class Lexer {
 public:
  // `what` names the input in messages: "filter string" or "order_by clause".
  Lexer(std::string_view input, std::string_view what) : input_(input), what_(what) {}

  // The tokens of the input, always ending with one kEnd token.
  Result<std::vector<Token>> Tokenize();

 private:
  bool AtNumberStart() const;
  Status LexIdentifier(Token* token);
  Status LexNumber(Token* token);
  Status LexOperator(Token* token);
  // Reads text between a pair of the quote character at pos_. There are no escapes: MLflow only
  // trims the quotes, so a quote character cannot occur inside a quoted string or key.
  Status LexQuoted(std::string* text);
  Status Error(std::string_view problem, size_t at) const;
  char At(size_t i) const { return i < input_.size() ? input_[i] : '\0'; }

  std::string_view input_;
  std::string_view what_;
  size_t pos_ = 0;
};

Result<std::vector<Token>> Lexer::Tokenize() {
  std::vector<Token> tokens;
  while (true) {
    while (pos_ < input_.size() && IsAsciiSpace(input_[pos_])) ++pos_;
    Token token;
    token.offset = pos_;
    if (pos_ == input_.size()) {
      tokens.push_back(std::move(token));
      return tokens;
    }
    const char c = input_[pos_];
    if (c == '\'') {
      token.kind = TokenKind::kString;
      CAIRN_RETURN_IF_ERROR(LexQuoted(&token.text));
    } else if (AtNumberStart()) {
      CAIRN_RETURN_IF_ERROR(LexNumber(&token));
    } else if (IsLetter(c) || c == '_' || c == '"' || c == '`') {
      CAIRN_RETURN_IF_ERROR(LexIdentifier(&token));
    } else if (c == '=' || c == '!' || c == '<' || c == '>') {
      CAIRN_RETURN_IF_ERROR(LexOperator(&token));
    } else if (c == '(' || c == ')' || c == ',') {
      token.kind = c == '(' ? TokenKind::kLeftParen
                            : (c == ')' ? TokenKind::kRightParen : TokenKind::kComma);
      ++pos_;
    } else {
      return Error("Unexpected character " + Quoted(std::string(1, c)), pos_);
    }
    token.source = input_.substr(token.offset, pos_ - token.offset);
    tokens.push_back(std::move(token));
  }
}

bool Lexer::AtNumberStart() const {
  size_t i = pos_;
  if (At(i) == '+' || At(i) == '-') ++i;
  return IsDigit(At(i)) || (At(i) == '.' && IsDigit(At(i + 1)));
}

Status Lexer::LexIdentifier(Token* token) {
  token->kind = TokenKind::kIdentifier;
  while (true) {
    IdentifierPart part;
    const char c = At(pos_);
    if (c == '"' || c == '`') {
      part.quote = c;
      CAIRN_RETURN_IF_ERROR(LexQuoted(&part.text));
    } else if (IsWordChar(c)) {
      const size_t start = pos_;
      while (IsWordChar(At(pos_))) ++pos_;
      part.text = std::string(input_.substr(start, pos_ - start));
    } else {
      return Error("Expected a key after '.'", pos_);
    }
    token->parts.push_back(std::move(part));
    if (At(pos_) != '.') return Status::Ok();
    ++pos_;
  }
}

Status Lexer::LexNumber(Token* token) {
  token->kind = TokenKind::kNumber;
  const size_t start = pos_;
  if (At(pos_) == '+') ++pos_;  // std::from_chars accepts '-' but not '+'
  const size_t number_start = pos_;
  if (At(pos_) == '-') ++pos_;
  while (IsDigit(At(pos_))) ++pos_;
  if (At(pos_) == '.') {
    ++pos_;
    while (IsDigit(At(pos_))) ++pos_;
  }
  if ((At(pos_) == 'e' || At(pos_) == 'E') &&
      (IsDigit(At(pos_ + 1)) ||
       ((At(pos_ + 1) == '+' || At(pos_ + 1) == '-') && IsDigit(At(pos_ + 2))))) {
    pos_ += 2;
    while (IsDigit(At(pos_))) ++pos_;
  }
  if (IsWordChar(At(pos_)) || At(pos_) == '.') {
    while (IsWordChar(At(pos_)) || At(pos_) == '.') ++pos_;
    return Error("Invalid number " + Quoted(input_.substr(start, pos_ - start)), start);
  }
  const char* first = input_.data() + number_start;
  const char* last = input_.data() + pos_;
  auto [end, error] = std::from_chars(first, last, token->number);
  if (error != std::errc() || end != last) {
    return Error("Invalid number " + Quoted(input_.substr(start, pos_ - start)), start);
  }
  return Status::Ok();
}

Status Lexer::LexOperator(Token* token) {
  token->kind = TokenKind::kOperator;
  const size_t start = pos_;
  const char c = input_[pos_++];
  const bool then_equals = At(pos_) == '=';
  switch (c) {
    case '=':
      token->op = Comparator::kEq;  // "==" is not an operator: the second '=' fails later
      return Status::Ok();
    case '!':
      if (!then_equals) return Error("Unexpected character '!'", start);
      token->op = Comparator::kNe;
      break;
    case '<':
      token->op = then_equals ? Comparator::kLe : Comparator::kLt;
      break;
    case '>':
      token->op = then_equals ? Comparator::kGe : Comparator::kGt;
      break;
  }
  if (then_equals) ++pos_;
  return Status::Ok();
}

Status Lexer::LexQuoted(std::string* text) {
  const size_t start = pos_;
  const char quote = input_[pos_++];
  const size_t close = input_.find(quote, pos_);
  if (close == std::string_view::npos) return Error("Unterminated quoted text", start);
  *text = std::string(input_.substr(pos_, close - pos_));
  pos_ = close + 1;
  return Status::Ok();
}

Status Lexer::Error(std::string_view problem, size_t at) const {
  return InvalidArgument(std::string(problem) + " at position " + std::to_string(at) + " in " +
                         std::string(what_) + " " + Quoted(input_));
}

// ---------------------------------------------------------------------------------------------
// Syntax of a filter: comparisons joined by AND. Which keys, comparators and values go together
// is checked afterwards, by the runs or experiments resolver.

struct RawValue {
  enum class Kind { kNumber, kString, kBareWord, kList };
  Kind kind = Kind::kString;
  double number = 0;
  std::string text;
  std::vector<std::string> list;
  std::string source;  // as written, for messages
};

struct RawComparison {
  Token identifier;
  Comparator op = Comparator::kEq;
  RawValue value;
};

class FilterParser {
 public:
  FilterParser(std::string_view filter, const std::vector<Token>& tokens)
      : filter_(filter), tokens_(tokens) {}

  Result<std::vector<RawComparison>> Parse();

 private:
  Result<RawComparison> ParseComparison();
  Result<Comparator> ParseComparator(const Token& identifier);
  Result<RawValue> ParseValue(const Token& identifier, Comparator op);
  Result<RawValue> ParseList(const Token& identifier);

  // MLflow's message for anything that is not a comparison or AND, e.g. OR or a parenthesis.
  Status InvalidClause() const;
  // A comparison that started at `identifier` but is malformed at the current token.
  Status InvalidComparison(const Token& identifier, std::string_view expected) const;

  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Take() {
    const Token& token = tokens_[pos_];
    if (token.kind != TokenKind::kEnd) ++pos_;
    return token;
  }

  std::string_view filter_;
  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
};

Result<std::vector<RawComparison>> FilterParser::Parse() {
  std::vector<RawComparison> comparisons;
  if (Peek().kind == TokenKind::kEnd) return comparisons;
  while (true) {
    CAIRN_ASSIGN_OR_RETURN(RawComparison comparison, ParseComparison());
    comparisons.push_back(std::move(comparison));
    if (Peek().kind == TokenKind::kEnd) return comparisons;
    if (!IsKeyword(Peek(), "and")) return InvalidClause();
    Take();
  }
}

Result<RawComparison> FilterParser::ParseComparison() {
  const Token& identifier = Peek();
  if (identifier.kind != TokenKind::kIdentifier || IsReservedWord(identifier)) {
    return InvalidClause();
  }
  Take();
  RawComparison comparison;
  comparison.identifier = identifier;
  CAIRN_ASSIGN_OR_RETURN(comparison.op, ParseComparator(identifier));
  CAIRN_ASSIGN_OR_RETURN(comparison.value, ParseValue(identifier, comparison.op));
  return comparison;
}

Result<Comparator> FilterParser::ParseComparator(const Token& identifier) {
  const Token& token = Peek();
  if (token.kind == TokenKind::kOperator) {
    Take();
    return token.op;
  }
  if (IsKeyword(token, "like")) {
    Take();
    return Comparator::kLike;
  }
  if (IsKeyword(token, "ilike")) {
    Take();
    return Comparator::kILike;
  }
  if (IsKeyword(token, "in")) {
    Take();
    return Comparator::kIn;
  }
  if (IsKeyword(token, "not")) {
    Take();
    if (!IsKeyword(Peek(), "in")) return InvalidComparison(identifier, "IN after NOT");
    Take();
    return Comparator::kNotIn;
  }
  return InvalidComparison(identifier,
                           "a comparison operator (=, !=, <, <=, >, >=, LIKE, ILIKE, IN, NOT IN)");
}

Result<RawValue> FilterParser::ParseValue(const Token& identifier, Comparator op) {
  if (IsListComparator(op)) {
    if (Peek().kind != TokenKind::kLeftParen) {
      return InvalidComparison(identifier,
                               "a parenthesized list of quoted strings, e.g. ('a', 'b')");
    }
    return ParseList(identifier);
  }
  const Token& token = Peek();
  RawValue value;
  value.source = std::string(token.source);
  switch (token.kind) {
    case TokenKind::kNumber:
      value.kind = RawValue::Kind::kNumber;
      value.number = token.number;
      break;
    case TokenKind::kString:
      value.kind = RawValue::Kind::kString;
      value.text = token.text;
      break;
    case TokenKind::kIdentifier:
      // MLflow reads a "double-quoted" value as a string too; anything else is a bare word that
      // the resolver rejects with a message naming the expected value type.
      if (token.parts.size() == 1 && token.parts[0].quote == '"') {
        value.kind = RawValue::Kind::kString;
        value.text = token.parts[0].text;
      } else {
        value.kind = RawValue::Kind::kBareWord;
      }
      break;
    case TokenKind::kLeftParen:
      return InvalidComparison(identifier, "a single value (a list needs IN or NOT IN)");
    default:
      return InvalidComparison(identifier, "a value");
  }
  Take();
  return value;
}

Result<RawValue> FilterParser::ParseList(const Token& identifier) {
  const Token& open = Take();
  RawValue value;
  value.kind = RawValue::Kind::kList;
  while (true) {
    const Token& item = Peek();
    if (item.kind == TokenKind::kString) {
      value.list.push_back(item.text);
    } else if (item.kind == TokenKind::kIdentifier && item.parts.size() == 1 &&
               item.parts[0].quote == '"') {
      value.list.push_back(item.parts[0].text);
    } else {
      return InvalidComparison(identifier, "a non-empty list of quoted strings");
    }
    Take();
    const Token& separator = Peek();
    if (separator.kind == TokenKind::kRightParen) {
      Take();
      value.source = std::string(filter_.substr(open.offset, separator.offset + 1 - open.offset));
      return value;
    }
    if (separator.kind != TokenKind::kComma) {
      return InvalidComparison(identifier, "',' or ')' in the list");
    }
    Take();
  }
}

Status FilterParser::InvalidClause() const {
  const Token& token = Peek();
  if (token.kind == TokenKind::kEnd) {
    return InvalidArgument("Invalid filter string " + Quoted(filter_) +
                           ": expected a comparison after the last AND");
  }
  std::string_view clause = token.source;
  if (token.kind == TokenKind::kLeftParen) {
    // Quote the whole parenthesized group, as MLflow does.
    size_t end = filter_.size();
    int depth = 0;
    for (size_t i = pos_; tokens_[i].kind != TokenKind::kEnd; ++i) {
      if (tokens_[i].kind == TokenKind::kLeftParen) ++depth;
      if (tokens_[i].kind == TokenKind::kRightParen && --depth == 0) {
        end = tokens_[i].offset + 1;
        break;
      }
    }
    clause = filter_.substr(token.offset, end - token.offset);
  }
  return InvalidArgument("Invalid clause(s) in filter string: " + Quoted(clause));
}

Status FilterParser::InvalidComparison(const Token& identifier, std::string_view expected) const {
  std::string_view so_far = filter_.substr(identifier.offset, Peek().offset - identifier.offset);
  while (!so_far.empty() && IsAsciiSpace(so_far.back())) so_far.remove_suffix(1);
  return InvalidArgument("Invalid comparison clause " + Quoted(so_far) + ": expected " +
                         std::string(expected) + ", found " + Describe(Peek()));
}

Result<std::vector<RawComparison>> ParseComparisons(std::string_view filter) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer(filter, "filter string").Tokenize());
  return FilterParser(filter, tokens).Parse();
}

// ---------------------------------------------------------------------------------------------
// Identifiers: entity prefixes, attribute names and their aliases.

struct EntityName {
  std::string_view name;
  EntityType type;
};

struct AttributeName {
  std::string_view name;
  std::string_view canonical;
  bool numeric;
};

constexpr EntityName kRunEntities[] = {
    {"metric", EntityType::kMetric},
    {"metrics", EntityType::kMetric},
    {"param", EntityType::kParam},
    {"params", EntityType::kParam},
    {"parameter", EntityType::kParam},
    {"parameters", EntityType::kParam},
    {"tag", EntityType::kTag},
    {"tags", EntityType::kTag},
    {"attribute", EntityType::kAttribute},
    {"attributes", EntityType::kAttribute},
    {"attr", EntityType::kAttribute},
    {"run", EntityType::kAttribute},
    {"dataset", EntityType::kDataset},
    {"datasets", EntityType::kDataset},
};

// The aliases are the spellings MLflow's UI sends.
constexpr AttributeName kRunAttributes[] = {
    {"run_id", "run_id", false},
    {"run_name", "run_name", false},
    {"user_id", "user_id", false},
    {"status", "status", false},
    {"artifact_uri", "artifact_uri", false},
    {"start_time", "start_time", true},
    {"end_time", "end_time", true},
    {"created", "start_time", true},
    {"Created", "start_time", true},
    {"run name", "run_name", false},
    {"Run name", "run_name", false},
    {"Run Name", "run_name", false},
};

constexpr AttributeName kDatasetKeys[] = {
    {"name", "name", false},
    {"digest", "digest", false},
    {"context", "context", false},
};

// MLflow accepts only "attribute", "tag" and "tags" here; the other attribute spellings of runs
// are accepted too so that one habit works for both searches.
constexpr EntityName kExperimentEntities[] = {
    {"attribute", EntityType::kAttribute},
    {"attributes", EntityType::kAttribute},
    {"attr", EntityType::kAttribute},
    {"tag", EntityType::kTag},
    {"tags", EntityType::kTag},
};

constexpr AttributeName kExperimentFilterAttributes[] = {
    {"name", "name", false},
    {"creation_time", "creation_time", true},
    {"last_update_time", "last_update_time", true},
};

constexpr AttributeName kExperimentOrderAttributes[] = {
    {"name", "name", false},
    {"experiment_id", "experiment_id", false},
    {"creation_time", "creation_time", true},
    {"last_update_time", "last_update_time", true},
};

template <typename T>
const T* FindName(std::span<const T> table, std::string_view name) {
  for (const T& entry : table) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

// "'a', 'b', 'c'" of the table's names; for attributes only the canonical names.
std::string ListNames(std::span<const EntityName> table) {
  std::string out;
  for (const EntityName& entry : table) {
    if (!out.empty()) out += ", ";
    out += Quoted(entry.name);
  }
  return out;
}

std::string ListNames(std::span<const AttributeName> table) {
  std::string out;
  for (const AttributeName& entry : table) {
    if (entry.name != entry.canonical) continue;
    if (!out.empty()) out += ", ";
    out += Quoted(entry.name);
  }
  return out;
}

// What an identifier names once prefixes, quotes and aliases are resolved.
struct Target {
  EntityType type = EntityType::kAttribute;
  std::string key;
  bool numeric = false;  // compared with numbers (metrics, times) rather than strings
};

std::string DescribeTarget(const Target& target) {
  switch (target.type) {
    case EntityType::kMetric:
      return "metric " + Quoted(target.key);
    case EntityType::kParam:
      return "parameter " + Quoted(target.key);
    case EntityType::kTag:
      return "tag " + Quoted(target.key);
    case EntityType::kAttribute:
      return "attribute " + Quoted(target.key);
    case EntityType::kDataset:
      return "dataset key " + Quoted(target.key);
  }
  return Quoted(target.key);
}

// The key after the entity prefix: either one quoted part (which may hold dots and spaces) or
// bare parts joined by dots, so that tags.mlflow.user means the tag "mlflow.user".
Result<std::string> KeyAfterPrefix(const Token& identifier) {
  const std::vector<IdentifierPart>& parts = identifier.parts;
  if (parts.size() == 2) return parts[1].text;
  std::string key;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].quote != 0) {
      return InvalidArgument("Invalid identifier " + Quoted(identifier.source) +
                             ": quote the whole key, e.g. tags.\"a.b\"");
    }
    if (i > 1) key += ".";
    key += parts[i].text;
  }
  return key;
}

Result<Target> ResolveTarget(const Token& identifier, std::span<const EntityName> entities,
                             std::span<const AttributeName> attributes) {
  Target target;
  std::string key;
  if (identifier.parts.size() == 1) {
    key = identifier.parts[0].text;
  } else {
    const std::string& prefix = identifier.parts[0].text;
    const EntityName* entity = FindName(entities, prefix);
    if (entity == nullptr) {
      return InvalidArgument("Invalid entity type " + Quoted(prefix) + " in " +
                             Quoted(identifier.source) + ". Valid entity types are " +
                             ListNames(entities));
    }
    target.type = entity->type;
    CAIRN_ASSIGN_OR_RETURN(key, KeyAfterPrefix(identifier));
  }
  if (key.empty()) {
    return InvalidArgument("Invalid identifier " + Quoted(identifier.source) +
                           ": the key is empty");
  }
  switch (target.type) {
    case EntityType::kAttribute: {
      const AttributeName* attribute = FindName(attributes, key);
      if (attribute == nullptr) {
        return InvalidArgument("Invalid attribute key " + Quoted(key) +
                               " specified. Valid keys are " + ListNames(attributes));
      }
      target.key = std::string(attribute->canonical);
      target.numeric = attribute->numeric;
      break;
    }
    case EntityType::kDataset: {
      const AttributeName* dataset_key =
          FindName(std::span<const AttributeName>(kDatasetKeys), key);
      if (dataset_key == nullptr) {
        return InvalidArgument("Invalid dataset key " + Quoted(key) +
                               " specified. Valid keys are " + ListNames(kDatasetKeys));
      }
      target.key = std::string(dataset_key->canonical);
      break;
    }
    case EntityType::kMetric:
      target.key = std::move(key);
      target.numeric = true;
      break;
    case EntityType::kParam:
    case EntityType::kTag:
      target.key = std::move(key);
      break;
  }
  return target;
}

// ---------------------------------------------------------------------------------------------
// Clauses: which comparators and values each kind of key accepts.

constexpr Comparator kNumericComparators[] = {Comparator::kEq, Comparator::kNe, Comparator::kGt,
                                              Comparator::kGe, Comparator::kLt, Comparator::kLe};
constexpr Comparator kStringComparators[] = {Comparator::kEq, Comparator::kNe, Comparator::kLike,
                                             Comparator::kILike};
constexpr Comparator kStringOrListComparators[] = {Comparator::kEq,   Comparator::kNe,
                                                   Comparator::kLike, Comparator::kILike,
                                                   Comparator::kIn,   Comparator::kNotIn};

Result<Clause> BuildClause(const Target& target, RawComparison raw, bool lists_allowed) {
  using Comparators = std::span<const Comparator>;
  const Comparators allowed = target.numeric  ? Comparators(kNumericComparators)
                              : lists_allowed ? Comparators(kStringOrListComparators)
                                              : Comparators(kStringComparators);
  if (std::find(allowed.begin(), allowed.end(), raw.op) == allowed.end()) {
    std::string names;
    for (Comparator op : allowed) {
      if (!names.empty()) names += ", ";
      names += ComparatorName(op);
    }
    return InvalidArgument("Invalid comparator " + Quoted(ComparatorName(raw.op)) + " for " +
                           DescribeTarget(target) + "; expected one of " + names);
  }
  Clause clause;
  clause.type = target.type;
  clause.key = target.key;
  clause.op = raw.op;
  RawValue& value = raw.value;
  if (target.numeric) {
    if (value.kind != RawValue::Kind::kNumber) {
      return InvalidArgument("Expected numeric value type for " + DescribeTarget(target) +
                             ". Found " + value.source);
    }
    clause.number = value.number;
  } else if (IsListComparator(raw.op)) {
    clause.list = std::move(value.list);  // the parser gives IN and NOT IN a list, nothing else
  } else {
    if (value.kind != RawValue::Kind::kString) {
      return InvalidArgument("Expected a quoted string value for " + DescribeTarget(target) +
                             " (e.g. 'my-value'). Got value " + value.source);
    }
    clause.text = std::move(value.text);
  }
  return clause;
}

// ---------------------------------------------------------------------------------------------
// order_by entries: "<identifier> [ASC|DESC]".

struct RawOrder {
  Token identifier;
  bool ascending = true;
};

Result<RawOrder> ParseOrderEntry(std::string_view entry) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer(entry, "order_by clause").Tokenize());
  const Status unparsable =
      InvalidArgument("Invalid order_by clause " + Quoted(entry) + ". Could not be parsed.");
  if (tokens[0].kind != TokenKind::kIdentifier) return unparsable;
  RawOrder order;
  order.identifier = tokens[0];
  size_t next = 1;
  if (tokens[next].kind == TokenKind::kIdentifier) {
    if (IsKeyword(tokens[next], "desc")) {
      order.ascending = false;
    } else if (!IsKeyword(tokens[next], "asc")) {
      return InvalidArgument("Invalid ordering key in order_by clause " + Quoted(entry) +
                             ": expected ASC or DESC, found " + Describe(tokens[next]));
    }
    ++next;
  }
  if (tokens[next].kind != TokenKind::kEnd) return unparsable;
  return order;
}

// ---------------------------------------------------------------------------------------------
// Values of runs and experiments, shared by matching and ordering.

// A run's or experiment's value for one key, borrowed from it.
struct FieldValue {
  enum class Kind { kMissing, kNumber, kText };
  Kind kind = Kind::kMissing;
  double number = 0;
  std::string_view text;

  static FieldValue Missing() { return {}; }
  static FieldValue Number(double number) { return {Kind::kNumber, number, {}}; }
  static FieldValue Text(std::string_view text) { return {Kind::kText, 0, text}; }
};

FieldValue TagValue(const std::vector<Tag>& tags, std::string_view key) {
  for (const Tag& tag : tags) {
    if (tag.key == key) return FieldValue::Text(tag.value);
  }
  return FieldValue::Missing();
}

FieldValue RunAttribute(const Run& run, std::string_view key) {
  const RunInfo& info = run.info;
  if (key == "run_id") return FieldValue::Text(info.run_id);
  if (key == "run_name") {
    // MLflow evaluates run_name as the mlflow.runName tag: runs from old clients have no name
    // column. A run that has neither has no name at all.
    if (const Tag* tag = run.FindTag(kRunNameTag)) return FieldValue::Text(tag->value);
    if (!info.run_name.empty()) return FieldValue::Text(info.run_name);
    return FieldValue::Missing();
  }
  if (key == "user_id") return FieldValue::Text(info.user_id);
  if (key == "status") return FieldValue::Text(RunStatusName(info.status));
  if (key == "artifact_uri") return FieldValue::Text(info.artifact_uri);
  if (key == "start_time") return FieldValue::Number(static_cast<double>(info.start_time));
  if (key == "end_time" && info.end_time.has_value()) {
    return FieldValue::Number(static_cast<double>(*info.end_time));
  }
  return FieldValue::Missing();
}

FieldValue RunField(const Run& run, EntityType type, std::string_view key) {
  switch (type) {
    case EntityType::kMetric:
      if (const Metric* metric = run.FindMetric(key)) return FieldValue::Number(metric->value);
      return FieldValue::Missing();
    case EntityType::kParam:
      if (const Param* param = run.FindParam(key)) return FieldValue::Text(param->value);
      return FieldValue::Missing();
    case EntityType::kTag:
      return TagValue(run.data.tags, key);
    case EntityType::kAttribute:
      return RunAttribute(run, key);
    case EntityType::kDataset:
      return FieldValue::Missing();  // a run has many; see DatasetMatches
  }
  return FieldValue::Missing();
}

FieldValue ExperimentField(const Experiment& experiment, EntityType type, std::string_view key) {
  if (type == EntityType::kTag) return TagValue(experiment.tags, key);
  if (type != EntityType::kAttribute) return FieldValue::Missing();
  if (key == "name") return FieldValue::Text(experiment.name);
  if (key == "experiment_id") return FieldValue::Text(experiment.experiment_id);
  if (key == "creation_time")
    return FieldValue::Number(static_cast<double>(experiment.creation_time));
  if (key == "last_update_time") {
    return FieldValue::Number(static_cast<double>(experiment.last_update_time));
  }
  return FieldValue::Missing();
}

// IEEE comparisons, so a NaN value satisfies only !=.
bool NumberMatches(double value, Comparator op, double literal) {
  switch (op) {
    case Comparator::kEq:
      return value == literal;
    case Comparator::kNe:
      return value != literal;
    case Comparator::kLt:
      return value < literal;
    case Comparator::kLe:
      return value <= literal;
    case Comparator::kGt:
      return value > literal;
    case Comparator::kGe:
      return value >= literal;
    default:
      return false;
  }
}

bool TextMatches(std::string_view value, const Clause& clause) {
  switch (clause.op) {
    case Comparator::kEq:
      return value == clause.text;
    case Comparator::kNe:
      return value != clause.text;
    case Comparator::kLike:
      return LikeMatch(value, clause.text, /*fold_case=*/false);
    case Comparator::kILike:
      return LikeMatch(value, clause.text, /*fold_case=*/true);
    case Comparator::kIn:
      return std::find(clause.list.begin(), clause.list.end(), value) != clause.list.end();
    case Comparator::kNotIn:
      return std::find(clause.list.begin(), clause.list.end(), value) == clause.list.end();
    default:
      return false;
  }
}

// A missing value never matches, whatever the comparator: MLflow's SQL store joins on the key.
bool FieldMatches(const FieldValue& value, const Clause& clause) {
  switch (value.kind) {
    case FieldValue::Kind::kMissing:
      return false;
    case FieldValue::Kind::kNumber:
      return NumberMatches(value.number, clause.op, clause.number);
    case FieldValue::Kind::kText:
      return TextMatches(value.text, clause);
  }
  return false;
}

// A dataset clause holds when any one of the run's inputs satisfies it.
bool DatasetMatches(const Run& run, const Clause& clause) {
  for (const DatasetInput& input : run.inputs) {
    FieldValue value;
    if (clause.key == "name") {
      value = FieldValue::Text(input.dataset.name);
    } else if (clause.key == "digest") {
      value = FieldValue::Text(input.dataset.digest);
    } else if (clause.key == "context") {
      value = TagValue(input.tags, kDatasetContextTag);
    }
    if (FieldMatches(value, clause)) return true;
  }
  return false;
}

// Three-way comparison of two present, non-NaN values of one key.
int CompareValues(const FieldValue& a, const FieldValue& b) {
  if (a.kind == FieldValue::Kind::kNumber && b.kind == FieldValue::Kind::kNumber) {
    return a.number < b.number ? -1 : (a.number > b.number ? 1 : 0);
  }
  if (a.kind == FieldValue::Kind::kText && b.kind == FieldValue::Kind::kText) {
    const int c = a.text.compare(b.text);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  return a.kind == FieldValue::Kind::kNumber ? -1 : 1;  // unreachable for parsed keys
}

// Where a value sorts regardless of direction: values, then NaN, then missing. This is the order
// MLflow's SQL store produces with its CASE columns.
int PlacementRank(const FieldValue& value) {
  if (value.kind == FieldValue::Kind::kMissing) return 2;
  if (value.kind == FieldValue::Kind::kNumber && std::isnan(value.number)) return 1;
  return 0;
}

int CompareForOrder(const FieldValue& a, const FieldValue& b, bool ascending) {
  const int rank_a = PlacementRank(a);
  const int rank_b = PlacementRank(b);
  if (rank_a != rank_b) return rank_a < rank_b ? -1 : 1;
  if (rank_a != 0) return 0;
  const int c = CompareValues(a, b);
  return ascending ? c : -c;
}

bool IsAllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), IsDigit);
}

// Experiment ids are integers in MLflow's SQL store and compare numerically there; ids that are
// not integers fall back to byte order.
int CompareExperimentIds(std::string_view a, std::string_view b) {
  if (IsAllDigits(a) && IsAllDigits(b)) {
    const auto strip = [](std::string_view s) {
      const size_t first = s.find_first_not_of('0');
      return first == std::string_view::npos ? std::string_view() : s.substr(first);
    };
    a = strip(a);
    b = strip(b);
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  }
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// Steps over one UTF-8 character starting at `i`, so that '_' matches a character, not a byte.
size_t NextCharacter(std::string_view text, size_t i) {
  ++i;
  while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
  return i;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public interface.

Result<std::vector<Clause>> ParseRunFilter(std::string_view filter) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<RawComparison> comparisons, ParseComparisons(filter));
  std::vector<Clause> clauses;
  clauses.reserve(comparisons.size());
  for (RawComparison& raw : comparisons) {
    CAIRN_ASSIGN_OR_RETURN(Target target,
                           ResolveTarget(raw.identifier, kRunEntities, kRunAttributes));
    const bool is_string_attribute = target.type == EntityType::kAttribute && !target.numeric;
    if (is_string_attribute && IsListComparator(raw.op) && target.key != "run_id") {
      return InvalidArgument(
          "Only the 'run_id' attribute supports comparison with a list of quoted string values; "
          "got " +
          Quoted(raw.identifier.source) + " " + std::string(ComparatorName(raw.op)));
    }
    const bool lists_allowed =
        target.type == EntityType::kDataset || (is_string_attribute && target.key == "run_id");
    CAIRN_ASSIGN_OR_RETURN(Clause clause, BuildClause(target, std::move(raw), lists_allowed));
    clauses.push_back(std::move(clause));
  }
  return clauses;
}

Result<std::vector<OrderKey>> ParseRunOrderBy(const std::vector<std::string>& order_by) {
  std::vector<OrderKey> keys;
  for (size_t i = 0; i < order_by.size(); ++i) {
    CAIRN_ASSIGN_OR_RETURN(RawOrder raw, ParseOrderEntry(order_by[i]));
    CAIRN_ASSIGN_OR_RETURN(Target target,
                           ResolveTarget(raw.identifier, kRunEntities, kRunAttributes));
    if (target.type == EntityType::kDataset) {
      return InvalidArgument("Invalid order_by clause " + Quoted(order_by[i]) +
                             ": runs are ordered by attributes, metrics, params or tags");
    }
    for (size_t j = 0; j < keys.size(); ++j) {
      if (keys[j].type == target.type && keys[j].key == target.key) {
        return InvalidArgument("order_by contains duplicate fields: " + Quoted(order_by[j]) +
                               " and " + Quoted(order_by[i]) + " name the same key");
      }
    }
    keys.push_back({target.type, std::move(target.key), raw.ascending});
  }
  return keys;
}

Result<std::vector<Clause>> ParseExperimentFilter(std::string_view filter) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<RawComparison> comparisons, ParseComparisons(filter));
  std::vector<Clause> clauses;
  clauses.reserve(comparisons.size());
  for (RawComparison& raw : comparisons) {
    CAIRN_ASSIGN_OR_RETURN(Target target, ResolveTarget(raw.identifier, kExperimentEntities,
                                                        kExperimentFilterAttributes));
    CAIRN_ASSIGN_OR_RETURN(Clause clause,
                           BuildClause(target, std::move(raw), /*lists_allowed=*/false));
    clauses.push_back(std::move(clause));
  }
  return clauses;
}

Result<std::vector<OrderKey>> ParseExperimentOrderBy(const std::vector<std::string>& order_by) {
  std::vector<OrderKey> keys;
  for (const std::string& entry : order_by) {
    CAIRN_ASSIGN_OR_RETURN(RawOrder raw, ParseOrderEntry(entry));
    CAIRN_ASSIGN_OR_RETURN(Target target, ResolveTarget(raw.identifier, kExperimentEntities,
                                                        kExperimentOrderAttributes));
    if (target.type != EntityType::kAttribute) {
      return InvalidArgument("Invalid order_by clause " + Quoted(entry) +
                             ": experiments are ordered by attributes only (" +
                             ListNames(kExperimentOrderAttributes) + ")");
    }
    keys.push_back({target.type, std::move(target.key), raw.ascending});
  }
  return keys;
}

bool RunMatches(const Run& run, const std::vector<Clause>& clauses) {
  return std::all_of(clauses.begin(), clauses.end(), [&run](const Clause& clause) {
    if (clause.type == EntityType::kDataset) return DatasetMatches(run, clause);
    return FieldMatches(RunField(run, clause.type, clause.key), clause);
  });
}

bool ExperimentMatches(const Experiment& experiment, const std::vector<Clause>& clauses) {
  return std::all_of(clauses.begin(), clauses.end(), [&experiment](const Clause& clause) {
    return FieldMatches(ExperimentField(experiment, clause.type, clause.key), clause);
  });
}

void SortRuns(std::vector<Run>* runs, const std::vector<OrderKey>& order, size_t limit) {
  std::vector<OrderKey> keys = order;
  const bool orders_by_start_time = std::any_of(order.begin(), order.end(), [](const OrderKey& k) {
    return k.type == EntityType::kAttribute && k.key == "start_time";
  });
  if (!orders_by_start_time) keys.push_back({EntityType::kAttribute, "start_time", false});
  keys.push_back({EntityType::kAttribute, "run_id", true});

  // Look every value up once rather than once per comparison, into one flat table (a row per
  // run, a column per key); the views borrow from *runs, which stays untouched until the order
  // is known.
  const size_t width = keys.size();
  std::vector<FieldValue> values;
  values.reserve(runs->size() * width);
  for (const Run& run : *runs) {
    for (const OrderKey& key : keys) values.push_back(RunField(run, key.type, key.key));
  }
  std::vector<size_t> order_of(runs->size());
  for (size_t i = 0; i < order_of.size(); ++i) order_of[i] = i;
  // Ties left after every key (equal run ids) keep their input order.
  auto before = [&](size_t a, size_t b) {
    const FieldValue* va = &values[a * width];
    const FieldValue* vb = &values[b * width];
    for (size_t k = 0; k < width; ++k) {
      const int c = CompareForOrder(va[k], vb[k], keys[k].ascending);
      if (c != 0) return c < 0;
    }
    return a < b;
  };
  const size_t keep = std::min(limit, order_of.size());
  if (keep < order_of.size()) {
    std::partial_sort(order_of.begin(), order_of.begin() + static_cast<ptrdiff_t>(keep),
                      order_of.end(), before);
  } else {
    std::sort(order_of.begin(), order_of.end(), before);
  }

  std::vector<Run> sorted;
  sorted.reserve(keep);
  for (size_t n = 0; n < keep; ++n) sorted.push_back(std::move((*runs)[order_of[n]]));
  *runs = std::move(sorted);
}

void SortExperiments(std::vector<Experiment>* experiments, const std::vector<OrderKey>& order) {
  std::vector<OrderKey> keys = order;
  if (keys.empty()) keys.push_back({EntityType::kAttribute, "creation_time", false});
  const bool orders_by_id = std::any_of(keys.begin(), keys.end(), [](const OrderKey& k) {
    return k.type == EntityType::kAttribute && k.key == "experiment_id";
  });
  if (!orders_by_id) keys.push_back({EntityType::kAttribute, "experiment_id", true});

  std::stable_sort(experiments->begin(), experiments->end(),
                   [&keys](const Experiment& a, const Experiment& b) {
                     for (const OrderKey& key : keys) {
                       int c = 0;
                       if (key.type == EntityType::kAttribute && key.key == "experiment_id") {
                         c = CompareExperimentIds(a.experiment_id, b.experiment_id);
                         if (!key.ascending) c = -c;
                       } else {
                         c = CompareForOrder(ExperimentField(a, key.type, key.key),
                                             ExperimentField(b, key.type, key.key), key.ascending);
                       }
                       if (c != 0) return c < 0;
                     }
                     return false;
                   });
}

bool LikeMatch(std::string_view text, std::string_view pattern, bool fold_case) {
  const auto same = [fold_case](char a, char b) {
    return fold_case ? AsciiLower(a) == AsciiLower(b) : a == b;
  };
  // Greedy matching that, on a mismatch, lets the last '%' absorb one more character. Linear in
  // practice and O(text * pattern) at worst, without recursion.
  size_t t = 0;
  size_t p = 0;
  size_t star_p = std::string_view::npos;  // pattern position just after the last '%'
  size_t star_t = 0;                       // text position that '%' has absorbed up to
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '%') {
      star_p = ++p;
      star_t = t;
    } else if (p < pattern.size() && pattern[p] == '_') {
      t = NextCharacter(text, t);
      ++p;
    } else if (p < pattern.size() && same(text[t], pattern[p])) {
      ++t;
      ++p;
    } else if (star_p != std::string_view::npos) {
      star_t = NextCharacter(text, star_t);
      t = star_t;
      p = star_p;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '%') ++p;
  return p == pattern.size();
}

}  // namespace cairn::core
