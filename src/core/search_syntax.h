// The syntax of MLflow's search language, before any name in it means something: the tokens of
// a filter or order_by entry, a filter read as raw comparisons joined by AND, and an order_by
// entry read as an identifier and a direction. Which keys, comparators and values go together is
// checked afterwards by the runs or experiments resolver (search.cc); this part only rejects
// text that cannot be read, with messages that name the offending part.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/search.h"
#include "util/status.h"

namespace cairn::core::search_syntax {

// Messages quote names and values in single quotes.
std::string Quoted(std::string_view text);
std::string_view ComparatorName(Comparator op);
bool IsListComparator(Comparator op);

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

// A token borrows from the text it was read from (`source`), which must outlive it.
struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string_view source;            // as written, quotes included; empty for kEnd
  size_t offset = 0;                  // where `source` starts in the input
  std::vector<IdentifierPart> parts;  // kIdentifier
  std::string text;                   // kString: the text between the quotes
  double number = 0;                  // kNumber
  Comparator op = Comparator::kEq;    // kOperator
};

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

struct RawOrder {
  Token identifier;
  bool ascending = true;
};

// The comparisons of a filter; an empty or all-blank filter gives none.
Result<std::vector<RawComparison>> ParseComparisons(std::string_view filter);
// One order_by entry: "<identifier> [ASC|DESC]".
Result<RawOrder> ParseOrderEntry(std::string_view entry);

}  // namespace cairn::core::search_syntax
