#include "core/search_syntax.h"

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "util/strings.h"

namespace cairn::core::search_syntax {

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

namespace {

// ---------------------------------------------------------------------------------------------
// Text helpers. Only ASCII is folded or classified: keys and keywords of the grammar are ASCII,
// and locale-dependent <cctype> would make parsing depend on the process environment.

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsWordChar(char c) { return IsLetter(c) || IsAsciiDigit(c) || c == '_'; }

// ---------------------------------------------------------------------------------------------
// Tokens.

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
  return IsAsciiDigit(At(i)) || (At(i) == '.' && IsAsciiDigit(At(i + 1)));
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
  while (IsAsciiDigit(At(pos_))) ++pos_;
  if (At(pos_) == '.') {
    ++pos_;
    while (IsAsciiDigit(At(pos_))) ++pos_;
  }
  if ((At(pos_) == 'e' || At(pos_) == 'E') &&
      (IsAsciiDigit(At(pos_ + 1)) ||
       ((At(pos_ + 1) == '+' || At(pos_ + 1) == '-') && IsAsciiDigit(At(pos_ + 2))))) {
    pos_ += 2;
    while (IsAsciiDigit(At(pos_))) ++pos_;
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
// Syntax of a filter: comparisons joined by AND.

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

}  // namespace

Result<std::vector<RawComparison>> ParseComparisons(std::string_view filter) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer(filter, "filter string").Tokenize());
  return FilterParser(filter, tokens).Parse();
}

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

}  // namespace cairn::core::search_syntax
