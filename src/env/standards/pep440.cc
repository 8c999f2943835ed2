#include "env/standards/pep440.h"
#include "util/strings.h"

#include <algorithm>
#include <utility>

namespace cairn::env {
namespace {

bool IsSeparator(char c) { return c == '-' || c == '_' || c == '.'; }

// Reads a version from left to right. The grammar is the specification's regular expression;
// each optional segment is tried in turn and the reader backs up when a segment's separator
// is not followed by its label. Taking the longest label and consuming an optional separator
// greedily never loses a match the expression would find: no segment can start with the
// characters a shorter choice would leave behind.
class VersionReader {
 public:
  explicit VersionReader(std::string_view text) : s_(text) {}

  size_t pos() const { return at_; }
  bool done() const { return at_ >= s_.size(); }
  char peek(size_t ahead = 0) const {
    return at_ + ahead < s_.size() ? AsciiLower(s_[at_ + ahead]) : '\0';
  }
  void advance(size_t n = 1) { at_ += n; }
  void reset(size_t to) { at_ = to; }

  bool AtDigit() const { return at_ < s_.size() && IsAsciiDigit(s_[at_]); }

  // Consumes one of `labels` (longest first), ignoring case.
  std::optional<std::string_view> Label(std::initializer_list<std::string_view> labels) {
    for (std::string_view label : labels) {
      if (s_.size() - at_ < label.size()) continue;
      bool match = true;
      for (size_t i = 0; i < label.size() && match; ++i) match = AsciiLower(s_[at_ + i]) == label[i];
      if (match) {
        at_ += label.size();
        return label;
      }
    }
    return std::nullopt;
  }

  bool Separator() {
    if (at_ < s_.size() && IsSeparator(s_[at_])) {
      ++at_;
      return true;
    }
    return false;
  }

  // Digits as a number; false (with `error`) when it does not fit in int64_t.
  bool Number(int64_t* out, std::string* error) {
    const size_t start = at_;
    int64_t value = 0;
    bool overflow = false;
    while (AtDigit()) {
      const int d = s_[at_] - '0';
      if (value > (INT64_MAX - d) / 10) overflow = true;
      if (!overflow) value = value * 10 + d;
      ++at_;
    }
    if (overflow) {
      *error = "the number '" + std::string(s_.substr(start, at_ - start)) + "' at position " +
               std::to_string(start) + " is too large";
      return false;
    }
    *out = value;
    return true;
  }

 private:
  std::string_view s_;
  size_t at_ = 0;
};

// Release segments compare as if the shorter were padded with zeros.
int CompareRelease(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < a.size() ? a[i] : 0;
    const int64_t y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

template <typename T>
int Cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Digit strings without leading zeros compare by length, then as text.
int CompareDigits(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
}

}  // namespace

// One pass in PEP 440's order: epoch, release, pre-, post- and development release, local
// label. Each field is read where the one before it ended and shares the reader and the error
// messages (positions count from the start of `text`), so the fields stay together in one
// function rather than being passed state between helpers.
Result<Version> Version::Parse(std::string_view text) {
  std::string error;
  auto fail = [&text](const std::string& why) {
    return InvalidArgument("invalid version '" + std::string(text) + "': " + why);
  };
  const std::string_view trimmed = Trim(text);
  if (trimmed.empty()) return fail("it is empty");
  // Positions in messages count from the first character of `text`.
  const size_t lead = static_cast<size_t>(trimmed.data() - text.data());
  VersionReader r(trimmed);
  auto unexpected = [&](const std::string& expected) {
    if (r.done()) return fail(expected + " at the end");
    return fail("unexpected '" + std::string(1, trimmed[r.pos()]) + "' at position " +
                std::to_string(lead + r.pos()) + (expected.empty() ? "" : "; " + expected));
  };

  Version v;
  v.release_.clear();
  if (r.peek() == 'v') r.advance();
  if (!r.AtDigit()) return unexpected("expected a number");
  int64_t number = 0;
  if (!r.Number(&number, &error)) return fail(error);
  if (r.peek() == '!') {
    v.epoch_ = number;
    r.advance();
    if (!r.AtDigit()) return unexpected("expected the release number after the epoch");
    if (!r.Number(&number, &error)) return fail(error);
  }
  v.release_.push_back(number);
  while (r.peek() == '.' && IsAsciiDigit(r.peek(1))) {
    r.advance();
    if (!r.Number(&number, &error)) return fail(error);
    v.release_.push_back(number);
  }

  // Pre-release: [sep] label [sep] [number].
  size_t mark = r.pos();
  r.Separator();
  if (auto label = r.Label({"alpha", "a", "beta", "b", "preview", "pre", "rc", "c"})) {
    Pre pre;
    pre.kind = (*label == "alpha" || *label == "a")  ? PreKind::kAlpha
               : (*label == "beta" || *label == "b") ? PreKind::kBeta
                                                     : PreKind::kCandidate;
    r.Separator();
    if (r.AtDigit() && !r.Number(&pre.number, &error)) return fail(error);
    v.pre_ = pre;
  } else {
    r.reset(mark);
  }

  // Post-release: "-N", or [sep] label [sep] [number].
  mark = r.pos();
  if (r.peek() == '-' && IsAsciiDigit(r.peek(1))) {
    r.advance();
    int64_t post = 0;
    if (!r.Number(&post, &error)) return fail(error);
    v.post_ = post;
  } else {
    r.Separator();
    if (r.Label({"post", "rev", "r"})) {
      int64_t post = 0;
      r.Separator();
      if (r.AtDigit() && !r.Number(&post, &error)) return fail(error);
      v.post_ = post;
    } else {
      r.reset(mark);
    }
  }

  // Development release: [sep] "dev" [sep] [number].
  mark = r.pos();
  r.Separator();
  if (r.Label({"dev"})) {
    int64_t dev = 0;
    r.Separator();
    if (r.AtDigit() && !r.Number(&dev, &error)) return fail(error);
    v.dev_ = dev;
  } else {
    r.reset(mark);
  }

  // Local label: "+" then alphanumeric parts separated by "-", "_" or ".".
  if (r.peek() == '+') {
    r.advance();
    for (;;) {
      const size_t start = r.pos();
      while (!r.done() && IsAsciiAlnum(trimmed[r.pos()])) r.advance();
      if (r.pos() == start) return unexpected("expected a letter or digit in the local label");
      std::string_view part = trimmed.substr(start, r.pos() - start);
      LocalPart lp;
      lp.numeric = std::all_of(part.begin(), part.end(), IsAsciiDigit);
      if (lp.numeric) {
        part.remove_prefix(std::min(part.find_first_not_of('0'), part.size() - 1));
        lp.text = std::string(part);
      } else {
        lp.text = AsciiLower(part);
      }
      v.local_.push_back(std::move(lp));
      if (!r.Separator()) break;
    }
  }

  if (!r.done()) return unexpected("");
  return v;
}

std::string Version::local() const {
  std::string out;
  for (size_t i = 0; i < local_.size(); ++i) {
    if (i > 0) out += '.';
    out += local_[i].text;
  }
  return out;
}

std::string Version::ToString() const {
  std::string out;
  if (epoch_ != 0) out += std::to_string(epoch_) + "!";
  for (size_t i = 0; i < release_.size(); ++i) {
    if (i > 0) out += '.';
    out += std::to_string(release_[i]);
  }
  if (pre_) {
    static constexpr const char* kNames[] = {"a", "b", "rc"};
    out += kNames[static_cast<int>(pre_->kind)] + std::to_string(pre_->number);
  }
  if (post_) out += ".post" + std::to_string(*post_);
  if (dev_) out += ".dev" + std::to_string(*dev_);
  if (!local_.empty()) out += "+" + local();
  return out;
}

int Version::Compare(const Version& o) const {
  if (int c = Cmp(epoch_, o.epoch_)) return c;
  if (int c = CompareRelease(release_, o.release_)) return c;

  // Within one release: X.devN < X{a,b,rc}N < X < X.postN. A dev release of the release itself
  // (no pre or post segment) sorts before all its pre-releases; otherwise a missing pre-release
  // sorts after every pre-release.
  auto pre_rank = [](const Version& v) -> std::pair<int, int64_t> {
    if (!v.pre_ && !v.post_ && v.dev_) return {-1, 0};
    if (!v.pre_) return {3, 0};
    return {static_cast<int>(v.pre_->kind), v.pre_->number};
  };
  if (int c = Cmp(pre_rank(*this), pre_rank(o))) return c;
  // No post-release sorts before any post-release; no dev release after every dev release.
  auto post_rank = [](const Version& v) {
    return v.post_ ? std::pair<int, int64_t>{1, *v.post_} : std::pair<int, int64_t>{0, 0};
  };
  auto dev_rank = [](const Version& v) {
    return v.dev_ ? std::pair<int, int64_t>{0, *v.dev_} : std::pair<int, int64_t>{1, 0};
  };
  if (int c = Cmp(post_rank(*this), post_rank(o))) return c;
  if (int c = Cmp(dev_rank(*this), dev_rank(o))) return c;

  // Local labels: none first; then part by part, a number after a word.
  const size_t n = std::min(local_.size(), o.local_.size());
  for (size_t i = 0; i < n; ++i) {
    const LocalPart& a = local_[i];
    const LocalPart& b = o.local_[i];
    if (a.numeric != b.numeric) return a.numeric ? 1 : -1;
    const int c = a.numeric ? CompareDigits(a.text, b.text) : Cmp(a.text, b.text);
    if (c != 0) return c;
  }
  return Cmp(local_.size(), o.local_.size());
}

Version Version::Public() const {
  Version v = *this;
  v.local_.clear();
  return v;
}

Version Version::BaseVersion() const {
  Version v;
  v.epoch_ = epoch_;
  v.release_ = release_;
  return v;
}

// ---------------------------------------------------------------------------------------------
// Specifiers.

std::string_view SpecOpText(SpecOp op) {
  switch (op) {
    case SpecOp::kCompatible:
      return "~=";
    case SpecOp::kEqual:
      return "==";
    case SpecOp::kNotEqual:
      return "!=";
    case SpecOp::kLessEqual:
      return "<=";
    case SpecOp::kGreaterEqual:
      return ">=";
    case SpecOp::kLess:
      return "<";
    case SpecOp::kGreater:
      return ">";
    case SpecOp::kArbitrary:
      return "===";
  }
  return "";
}

Result<Specifier> Specifier::Parse(std::string_view text) {
  const std::string_view s = Trim(text);
  auto invalid = [&s](const std::string& why) {
    return InvalidArgument("invalid version specifier '" + std::string(s) + "': " + why);
  };
  // Longest operators first: "===" before "==", "<=" before "<".
  static constexpr SpecOp kOps[] = {SpecOp::kArbitrary, SpecOp::kCompatible, SpecOp::kEqual,
                                    SpecOp::kNotEqual,  SpecOp::kLessEqual,  SpecOp::kGreaterEqual,
                                    SpecOp::kLess,      SpecOp::kGreater};
  Specifier spec;
  std::string_view rest;
  bool found = false;
  for (SpecOp op : kOps) {
    if (s.starts_with(SpecOpText(op))) {
      spec.op_ = op;
      rest = Trim(s.substr(SpecOpText(op).size()));
      found = true;
      break;
    }
  }
  if (!found) {
    return invalid(s.empty() ? "it is empty"
                             : "expected an operator (~=, ==, !=, <=, >=, <, >, ===) first");
  }
  const std::string op_text(SpecOpText(spec.op_));
  if (rest.empty()) return invalid("expected a version after '" + op_text + "'");
  // Whitespace may follow the operator but not split the version; "===" takes any other text
  // up to the delimiters of a requirement.
  const bool arbitrary = spec.op_ == SpecOp::kArbitrary;
  if (size_t bad = rest.find_first_of(arbitrary ? " \t\n\r\f\v,;)" : " \t\n\r\f\v");
      bad != std::string_view::npos) {
    return invalid("unexpected '" + std::string(1, rest[bad]) + "' in the version");
  }

  if (spec.op_ == SpecOp::kArbitrary) {
    spec.arbitrary_ = std::string(rest);
    if (Result<Version> v = Version::Parse(rest); v.ok()) {
      spec.version_ = *v;
      spec.arbitrary_is_version_ = true;
    }
    return spec;
  }

  std::string_view version_text = rest;
  if (version_text.ends_with(".*")) {
    if (spec.op_ != SpecOp::kEqual && spec.op_ != SpecOp::kNotEqual) {
      return invalid("a '.*' prefix match is allowed only after == and !=");
    }
    spec.prefix_ = true;
    version_text.remove_suffix(2);
  }
  Result<Version> v = Version::Parse(version_text);
  if (!v.ok()) return invalid(v.status().message());
  spec.version_ = *std::move(v);
  if (spec.prefix_ && spec.version_.has_local()) {
    return invalid("a '.*' prefix match cannot follow a local label");
  }
  if (spec.prefix_ && spec.version_.is_devrelease()) {
    return invalid("a '.*' prefix match cannot follow a dev release");
  }
  if (spec.version_.has_local() && spec.op_ != SpecOp::kEqual && spec.op_ != SpecOp::kNotEqual) {
    return invalid("only == and != may name a local version");
  }
  if (spec.op_ == SpecOp::kCompatible && spec.version_.release().size() < 2) {
    return invalid("~= needs at least two release numbers (~=2.2, not ~=2)");
  }
  return spec;
}

namespace {

// Whether the first `n` numbers of `v`'s release, padded with zeros, are those of `want`.
bool ReleaseStartsWith(const Version& v, const std::vector<int64_t>& want, size_t n) {
  const std::vector<int64_t>& have = v.release();
  for (size_t i = 0; i < n; ++i) {
    if ((i < have.size() ? have[i] : 0) != want[i]) return false;
  }
  return true;
}

// Whether `v` starts with `prefix`'s segments (==prefix.*). The release is compared zero-padded
// up to the prefix's length; when the prefix goes on into a pre- or post-release segment (the
// specification puts an implied "." before a pre-release, so "==1.1a1.*" is a prefix too), the
// whole release must be equal and those segments too. Later segments and the local label of `v`
// are ignored.
bool MatchesPrefix(const Version& v, const Version& prefix) {
  if (v.epoch() != prefix.epoch()) return false;
  if (!prefix.pre() && !prefix.post()) {
    return ReleaseStartsWith(v, prefix.release(), prefix.release().size());
  }
  if (CompareRelease(v.release(), prefix.release()) != 0) return false;
  if (v.pre() != prefix.pre()) return false;
  return !prefix.post() || v.post() == prefix.post();
}

}  // namespace

bool Specifier::Contains(const Version& v) const {
  const Version& spec = version_;
  switch (op_) {
    case SpecOp::kArbitrary:
      return AsciiLower(v.ToString()) == AsciiLower(arbitrary_);
    case SpecOp::kEqual:
    case SpecOp::kNotEqual: {
      bool equal;
      if (prefix_) {
        equal = MatchesPrefix(v, spec);
      } else if (spec.has_local()) {
        equal = v == spec;
      } else {
        equal = v.Public() == spec;
      }
      return (op_ == SpecOp::kEqual) == equal;
    }
    case SpecOp::kCompatible:
      // ~=X.Y.Z is >=X.Y.Z together with ==X.Y.*: the prefix drops the last release number
      // and every pre, post or dev segment.
      return v.Public() >= spec && v.epoch() == spec.epoch() &&
             ReleaseStartsWith(v, spec.release(), spec.release().size() - 1);
    case SpecOp::kLessEqual:
      return v.Public() <= spec;
    case SpecOp::kGreaterEqual:
      return v >= spec;
    case SpecOp::kLess: {
      // Below V and below V's earliest pre-release (V.dev0) unless V is a pre-release itself:
      // <2.0 admits neither 2.0rc1 nor 2.0.dev3, while <2.0rc2 admits 2.0rc1.
      if (spec.is_prerelease()) return v < spec;
      Version bound = spec;
      bound.dev_ = 0;
      return v < bound;
    }
    case SpecOp::kGreater: {
      if (!(v > spec)) return false;
      // Above V, but not V with a local label, and not one of V's post-releases unless V is a
      // post-release itself: >1.7 admits neither 1.7+local nor 1.7.post1 (nor 1.7.0.post1).
      // A post- or dev release V has no post-releases of its own; only V+local lies between it
      // and the next version.
      if (spec.is_postrelease() || spec.is_devrelease()) return v.Public() != spec;
      return !(v.epoch() == spec.epoch() && CompareRelease(v.release(), spec.release()) == 0 &&
               v.pre() == spec.pre());
    }
  }
  return false;
}

bool Specifier::names_prerelease() const {
  if (op_ == SpecOp::kNotEqual) return false;
  if (op_ == SpecOp::kArbitrary && !arbitrary_is_version_) return false;
  return version_.is_prerelease();
}

std::string Specifier::ToString() const {
  std::string out(SpecOpText(op_));
  if (op_ == SpecOp::kArbitrary) return out + arbitrary_;
  out += version_.ToString();
  if (prefix_) out += ".*";
  return out;
}

// ---------------------------------------------------------------------------------------------
// Sets.

Result<SpecifierSet> SpecifierSet::Parse(std::string_view text) {
  SpecifierSet set;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string_view part = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (Trim(part).empty()) {
      // Blank text is the empty set; one trailing comma after a clause is tolerated.
      const bool last = comma == std::string_view::npos;
      if (last && (start == 0 || !set.specs_.empty())) break;
      return InvalidArgument("invalid version specifier set '" + std::string(text) +
                             "': expected a clause at position " + std::to_string(start));
    }
    Result<Specifier> spec = Specifier::Parse(part);
    if (!spec.ok()) {
      return InvalidArgument("invalid version specifier set '" + std::string(text) +
                             "': " + spec.status().message());
    }
    set.specs_.push_back(*std::move(spec));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  set.Canonicalize();
  return set;
}

SpecifierSet SpecifierSet::Of(std::vector<Specifier> specifiers) {
  SpecifierSet set;
  set.specs_ = std::move(specifiers);
  set.Canonicalize();
  return set;
}

void SpecifierSet::Canonicalize() {
  std::vector<std::pair<std::string, Specifier>> keyed;
  keyed.reserve(specs_.size());
  for (Specifier& s : specs_) keyed.emplace_back(s.ToString(), std::move(s));
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  keyed.erase(std::unique(keyed.begin(), keyed.end(),
                          [](const auto& a, const auto& b) { return a.first == b.first; }),
              keyed.end());
  specs_.clear();
  for (auto& [key, s] : keyed) specs_.push_back(std::move(s));
}

bool SpecifierSet::names_prerelease() const {
  return std::any_of(specs_.begin(), specs_.end(),
                     [](const Specifier& s) { return s.names_prerelease(); });
}

bool SpecifierSet::Contains(const Version& v, std::optional<bool> prereleases) const {
  if (v.is_prerelease() && !prereleases.value_or(names_prerelease())) return false;
  return std::all_of(specs_.begin(), specs_.end(),
                     [&v](const Specifier& s) { return s.Contains(v); });
}

std::string SpecifierSet::ToString() const {
  std::string out;
  for (const Specifier& s : specs_) {
    if (!out.empty()) out += ',';
    out += s.ToString();
  }
  return out;
}

SpecifierSet SpecifierSet::And(const SpecifierSet& other) const {
  SpecifierSet out = *this;
  out.specs_.insert(out.specs_.end(), other.specs_.begin(), other.specs_.end());
  out.Canonicalize();
  return out;
}

// ---------------------------------------------------------------------------------------------
// Names.

std::string NormalizeName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  bool in_run = false;
  for (char c : name) {
    if (IsSeparator(c)) {
      if (!in_run) out.push_back('-');
      in_run = true;
    } else {
      out.push_back(AsciiLower(c));
      in_run = false;
    }
  }
  return out;
}

bool IsValidName(std::string_view name) {
  if (name.empty() || !IsAsciiAlnum(name.front()) || !IsAsciiAlnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return IsAsciiAlnum(c) || IsSeparator(c); });
}

}  // namespace cairn::env
