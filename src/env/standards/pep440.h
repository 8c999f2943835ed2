// PEP 440 versions and version specifiers, as the "Version specifiers" specification on
// packaging.python.org defines them, plus PEP 503 project name normalisation.
//
// A Version is parsed from any spelling the specification admits ("v1.0", "1.0-1", "1.0ALPHA",
// "1.0.post-2", "1.0+Ubuntu-1") and kept in normalised parts, so that printing it gives the
// normal form ("1.0", "1.0.post1", "1.0a0", "1.0.post2", "1.0+ubuntu.1") and comparing two
// versions follows the specification's total order:
//
//   1.dev0 < 1.0a1.dev1 < 1.0a1 < 1.0a1.post1 < 1.0b1 < 1.0rc1 < 1.0 < 1.0+abc < 1.0+5
//          < 1.0.post1.dev1 < 1.0.post1 < 1.0.1 < 1!0.1
//
// A Specifier is one clause ("~=2.2", "==1.1.*", "!=1.5", "<2.0", "===foo"); a SpecifierSet
// is their conjunction. Which pre-releases a set accepts is decided by SpecifierSet::Contains,
// not by the single clauses (see there).
//
// Everything here is a value type without shared state: safe to copy and to use from several
// threads at once.
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
  // The pre-release phases in their order; "alpha", "beta", "c", "pre" and "preview" are
  // other spellings of these.
  enum class PreKind { kAlpha, kBeta, kCandidate };  // a, b, rc
  struct Pre {
    PreKind kind = PreKind::kAlpha;
    int64_t number = 0;
    bool operator==(const Pre&) const = default;
  };

  // The version "0".
  Version() = default;

  // Any spelling the specification admits: an optional leading "v"; "-", "_" or "." between
  // the segments (or none); alpha/a, beta/b, c/rc/pre/preview; post/rev/r and the implicit
  // "-N" post-release; omitted numbers (taken as 0); upper case; surrounding whitespace.
  // InvalidArgument naming the text and the position of the first character that does not fit,
  // or when a number does not fit in 63 bits.
  static Result<Version> Parse(std::string_view text);

  // The normal form: "1!2.0rc1.post2.dev3+ubuntu.1". Parse(ToString()) gives an equal version.
  std::string ToString() const;

  // <0, 0 or >0 as this version sorts before, with or after `other` in the PEP 440 order. The
  // release is compared zero-padded ("1.0" equals "1.0.0"); a local label sorts after the same
  // version without one, and labels compare part by part, numbers numerically and after words.
  int Compare(const Version& other) const;
  bool operator==(const Version& o) const { return Compare(o) == 0; }
  bool operator!=(const Version& o) const { return Compare(o) != 0; }
  bool operator<(const Version& o) const { return Compare(o) < 0; }
  bool operator<=(const Version& o) const { return Compare(o) <= 0; }
  bool operator>(const Version& o) const { return Compare(o) > 0; }
  bool operator>=(const Version& o) const { return Compare(o) >= 0; }

  int64_t epoch() const { return epoch_; }
  // As written, trailing zeros included: "1.0.0" gives {1, 0, 0}. Never empty.
  const std::vector<int64_t>& release() const { return release_; }
  const std::optional<Pre>& pre() const { return pre_; }
  const std::optional<int64_t>& post() const { return post_; }
  const std::optional<int64_t>& dev() const { return dev_; }
  // The normalised local label without "+" ("ubuntu.1"); empty when there is none.
  std::string local() const;

  // A pre-release in the sense of the specifier rules: it has a pre-release or a dev segment.
  bool is_prerelease() const { return pre_.has_value() || dev_.has_value(); }
  bool is_postrelease() const { return post_.has_value(); }
  bool is_devrelease() const { return dev_.has_value(); }
  bool has_local() const { return !local_.empty(); }

  Version Public() const;       // without the local label
  Version BaseVersion() const;  // epoch and release only

 private:
  friend class Specifier;  // builds the bound V.dev0 of "<V"

  // A local label part: a word in lower case, or digits without leading zeros (kept as text
  // so that a long number still compares exactly).
  struct LocalPart {
    bool numeric = false;
    std::string text;
  };

  int64_t epoch_ = 0;
  std::vector<int64_t> release_ = {0};
  std::optional<Pre> pre_;
  std::optional<int64_t> post_;
  std::optional<int64_t> dev_;
  std::vector<LocalPart> local_;
};

enum class SpecOp {
  kCompatible,    // ~=
  kEqual,         // ==
  kNotEqual,      // !=
  kLessEqual,     // <=
  kGreaterEqual,  // >=
  kLess,          // <
  kGreater,       // >
  kArbitrary,     // ===
};

// "~=", "==", ... for `op`.
std::string_view SpecOpText(SpecOp op);

class Specifier {
 public:
  // One clause: an operator, optional whitespace, a version. "==" and "!=" take a trailing
  // ".*" (a prefix match; not after a dev release or a local label) and a local label; "~="
  // needs at least two release numbers; "===" takes any text without whitespace, ",", ";" or
  // ")". InvalidArgument naming the clause and what is wrong with it.
  static Result<Specifier> Parse(std::string_view text);

  // Whether `v` satisfies the operator's rule in the specification:
  //   ~=V       v >= V and v matches the prefix V's release without its last number
  //   ==V / !=V (in)equality with V's release zero-padded; v's local label is ignored unless V
  //             has one; with ".*", whether v starts with V's segments
  //   <=V, >=V  the order, v's local label ignored
  //   <V        v < V, but never a pre-release of V itself unless V is a pre-release
  //   >V        v > V, but never a post-release of V unless V is one, nor V with a local label
  //   ===V      case-insensitive equality of the normalised text
  // Pre-releases pass like any version here: accepting them is SpecifierSet's decision.
  bool Contains(const Version& v) const;

  // The clause with its version normalised: ">=1.0rc1", "==1.1.*"; "===" keeps the text as
  // written.
  std::string ToString() const;

  SpecOp op() const { return op_; }
  // The version the clause names (without ".*"). For "===" it is the text parsed as a version
  // when it is one, else "0".
  const Version& version() const { return version_; }
  bool is_prefix_match() const { return prefix_; }

  // Whether the clause names a pre-release with an operator other than "!=", which makes a set
  // holding it accept pre-releases by default.
  bool names_prerelease() const;

 private:
  SpecOp op_ = SpecOp::kGreaterEqual;
  Version version_;
  bool prefix_ = false;    // ==V.* / !=V.*
  std::string arbitrary_;  // the text of a "===" clause, as written
  bool arbitrary_is_version_ = false;
};

class SpecifierSet {
 public:
  // The empty set, which every version satisfies.
  SpecifierSet() = default;

  // Comma-separated clauses, whitespace allowed around them and one trailing comma tolerated
  // (">=3," is among PEP 508's examples). Empty or blank text is the empty set.
  // InvalidArgument naming the text and the first bad clause.
  static Result<SpecifierSet> Parse(std::string_view text);

  // The set of these clauses.
  static SpecifierSet Of(std::vector<Specifier> specifiers);

  // Whether `v` satisfies every clause. Pre-releases (including dev releases) are accepted
  // when `prereleases` is true and rejected when it is false. When it is nullopt they are
  // accepted only if some clause names a pre-release (names_prerelease()), as pypa/packaging
  // did before version 26. The specification's further rule, that a pre-release is fine when
  // it is the only version that fits, needs the list of available versions: that is the
  // caller's to apply (by asking again with `prereleases` true).
  bool Contains(const Version& v, std::optional<bool> prereleases = std::nullopt) const;

  bool empty() const { return specs_.empty(); }
  // Whether some clause names a pre-release (see Specifier::names_prerelease).
  bool names_prerelease() const;

  // Canonical: the clauses' ToString(), sorted as strings, without duplicates, joined by ",".
  // The same set of clauses always prints the same, whatever order or spelling it came in,
  // so the text can go into lock files and hashes. "" for the empty set.
  std::string ToString() const;

  // The intersection: the clauses of both. Contains(v) of the result is exactly
  // Contains(v) of this and of `other` for every v when pre-releases are asked for explicitly;
  // with nullopt, a clause naming a pre-release in either admits pre-releases in both.
  SpecifierSet And(const SpecifierSet& other) const;

  // Sorted and without duplicates, as ToString() prints them.
  const std::vector<Specifier>& specifiers() const { return specs_; }

  bool operator==(const SpecifierSet& o) const { return ToString() == o.ToString(); }
  bool operator!=(const SpecifierSet& o) const { return !(*this == o); }

 private:
  void Canonicalize();

  std::vector<Specifier> specs_;
};

// PEP 503: lower case, and every run of "-", "_" and "." becomes one "-".
// "Friendly.Bard__Two" gives "friendly-bard-two".
std::string NormalizeName(std::string_view name);

// A valid project (and extra) name: ASCII letters, digits, ".", "-" and "_", starting and
// ending with a letter or digit.
bool IsValidName(std::string_view name);

}  // namespace cairn::env
