// PEP 440: Python package versions and version specifiers, as packaging.python.org's
// "Version specifiers" specification defines them (the normalised spellings, the total order
// of versions, each comparison operator's rules on pre-, post- and dev-releases and local
// labels, and when pre-releases are accepted), plus PEP 503 name normalisation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace cairn::env {

class Version {
 public:
  Version() = default;
  // Any PEP 440 spelling: a leading "v", "-", "_" or "." separators, alpha/beta/c/pre/preview,
  // rev/r and "-N" post-releases, implicit numbers, upper case, surrounding whitespace.
  // InvalidArgument for anything else.
  static Result<Version> Parse(std::string_view text);

  std::string ToString() const;  // the normalised form: "1!2.0rc1.post2.dev3+ubuntu.1"
  // The PEP 440 order: <0 when this sorts before `other`. "1.0" equals "1.0.0".
  int Compare(const Version& other) const;
  bool operator==(const Version& o) const { return Compare(o) == 0; }
  bool operator!=(const Version& o) const { return Compare(o) != 0; }
  bool operator<(const Version& o) const { return Compare(o) < 0; }
  bool operator<=(const Version& o) const { return Compare(o) <= 0; }
  bool operator>(const Version& o) const { return Compare(o) > 0; }
  bool operator>=(const Version& o) const { return Compare(o) >= 0; }

  int64_t epoch() const { return epoch_; }
  const std::vector<int64_t>& release() const { return release_; }
  bool is_prerelease() const { return pre_kind_ >= 0 || dev_ >= 0; }  // a pre or dev part
  bool is_postrelease() const { return post_ >= 0; }
  bool is_devrelease() const { return dev_ >= 0; }
  bool has_local() const { return !local_.empty(); }
  Version Public() const;       // without the local label
  Version BaseVersion() const;  // epoch and release only

 private:
  int64_t epoch_ = 0;
  std::vector<int64_t> release_;
  int pre_kind_ = -1;  // 0 a, 1 b, 2 rc; -1 none
  int64_t pre_ = 0;
  int64_t post_ = -1;  // -1: none
  int64_t dev_ = -1;   // -1: none
  std::vector<std::string> local_;  // lower case
};

enum class SpecOp { kCompatible, kEqual, kNotEqual, kLessEqual, kGreaterEqual, kLess, kGreater,
                    kArbitrary };

class Specifier {
 public:
  // "~=2.2", "==1.1.*", "!=1.5", ">=1.0a1", "===foobar"; whitespace allowed after the operator.
  static Result<Specifier> Parse(std::string_view text);
  // Whether `v` satisfies the operator's rule (pre-releases are SpecifierSet's business).
  bool Contains(const Version& v) const;
  std::string ToString() const;
  SpecOp op() const { return op_; }
  // The version names a pre-release for an operator that admits it (==, ===, >=, <=, ~=, and
  // the exclusive ones): then pre-releases are accepted by default.
  bool names_prerelease() const;

 private:
  SpecOp op_ = SpecOp::kEqual;
  std::string text_;  // the version as written (trimmed)
  Version version_;   // parsed (not for ===)
  bool prefix_ = false;  // ==V.* / !=V.*
};

class SpecifierSet {
 public:
  SpecifierSet() = default;
  // Comma-separated specifiers; empty text is the empty set (every version).
  static Result<SpecifierSet> Parse(std::string_view text);
  // Whether `v` satisfies every specifier. Pre-releases: accepted when `prereleases` is true,
  // rejected when false; when nullopt, accepted only if some specifier names a pre-release.
  bool Contains(const Version& v, std::optional<bool> prereleases = std::nullopt) const;
  bool empty() const { return specs_.empty(); }
  // Canonical: the specifiers sorted and joined by ",".
  std::string ToString() const;
  SpecifierSet And(const SpecifierSet& other) const;
  const std::vector<Specifier>& specifiers() const { return specs_; }

 private:
  std::vector<Specifier> specs_;
};

// PEP 503: lower case, every run of "-", "_" and "." becomes one "-".
std::string NormalizeName(std::string_view name);
// A valid distribution name (PEP 508): letters, digits, ".", "-", "_", starting and ending with
// a letter or digit.
bool IsValidName(std::string_view name);

}  // namespace cairn::env
