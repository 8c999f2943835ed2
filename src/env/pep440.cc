#include "env/pep440.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace cairn::env {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

int64_t Number(const std::string& s) {
  // Versions with absurd numbers are still versions; saturate rather than fail.
  if (s.size() > 18) return INT64_MAX;
  return s.empty() ? 0 : std::stoll(s);
}

// The specification's regular expression, applied to the lower-cased, trimmed text.
const std::regex& VersionPattern() {
  static const std::regex pattern(
      R"(v?(?:([0-9]+)!)?([0-9]+(?:\.[0-9]+)*))"                                // epoch, release
      R"(([-_.]?(alpha|a|beta|b|preview|pre|c|rc)[-_.]?([0-9]+)?)?)"             // pre
      R"(((?:-([0-9]+))|(?:[-_.]?(post|rev|r)[-_.]?([0-9]+)?))?)"              // post
      R"(([-_.]?(dev)[-_.]?([0-9]+)?)?)"                                         // dev
      R"((?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?)",                               // local
      std::regex::ECMAScript | std::regex::optimize);
  return pattern;
}

// A local label's parts compare numerically when both are numbers, a number sorts after a
// string, and otherwise as strings.
int CompareLocal(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const bool an = AllDigits(a[i]), bn = AllDigits(b[i]);
    if (an && bn) {
      const int64_t x = Number(a[i]), y = Number(b[i]);
      if (x != y) return x < y ? -1 : 1;
    } else if (an != bn) {
      return an ? 1 : -1;
    } else if (a[i] != b[i]) {
      return a[i] < b[i] ? -1 : 1;
    }
  }
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return 0;
}

std::vector<int64_t> Stripped(std::vector<int64_t> release) {
  while (release.size() > 1 && release.back() == 0) release.pop_back();
  return release;
}

}  // namespace

Result<Version> Version::Parse(std::string_view text) {
  const std::string s = Lower(Trim(text));
  std::smatch m;
  if (!std::regex_match(s, m, VersionPattern())) {
    return InvalidArgument("invalid version '" + std::string(text) + "'");
  }
  Version v;
  v.epoch_ = m[1].matched ? Number(m[1]) : 0;
  const std::string release = m[2];
  size_t start = 0;
  while (start <= release.size()) {
    size_t dot = release.find('.', start);
    v.release_.push_back(Number(release.substr(start, dot == std::string::npos ? dot : dot - start)));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (m[3].matched) {
    const std::string l = m[4];
    v.pre_kind_ = (l == "a" || l == "alpha") ? 0 : (l == "b" || l == "beta") ? 1 : 2;
    v.pre_ = m[5].matched ? Number(m[5]) : 0;
  }
  if (m[6].matched) v.post_ = m[7].matched ? Number(m[7]) : m[9].matched ? Number(m[9]) : 0;
  if (m[10].matched) v.dev_ = m[12].matched ? Number(m[12]) : 0;
  if (m[13].matched) {
    const std::string local = m[13];
    size_t at = 0;
    while (at <= local.size()) {
      size_t sep = local.find_first_of("-_.", at);
      v.local_.push_back(local.substr(at, sep == std::string::npos ? sep : sep - at));
      if (sep == std::string::npos) break;
      at = sep + 1;
    }
  }
  return v;
}

std::string Version::ToString() const {
  std::string out;
  if (epoch_ != 0) out += std::to_string(epoch_) + "!";
  for (size_t i = 0; i < release_.size(); ++i) {
    if (i > 0) out += ".";
    out += std::to_string(release_[i]);
  }
  if (pre_kind_ >= 0) out += (pre_kind_ == 0 ? "a" : pre_kind_ == 1 ? "b" : "rc") + std::to_string(pre_);
  if (post_ >= 0) out += ".post" + std::to_string(post_);
  if (dev_ >= 0) out += ".dev" + std::to_string(dev_);
  for (size_t i = 0; i < local_.size(); ++i) out += (i == 0 ? "+" : ".") + local_[i];
  return out;
}

int Version::Compare(const Version& o) const {
  if (epoch_ != o.epoch_) return epoch_ < o.epoch_ ? -1 : 1;
  const std::vector<int64_t> a = Stripped(release_), b = Stripped(o.release_);
  if (a != b) return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end()) ? -1 : 1;
  // Pre: a dev release of the final version sorts before its pre-releases; a final after them.
  auto pre_key = [](const Version& v) -> std::pair<int, int64_t> {
    if (v.pre_kind_ < 0 && v.post_ < 0 && v.dev_ >= 0) return {-1, 0};
    if (v.pre_kind_ < 0) return {3, 0};
    return {v.pre_kind_, v.pre_};
  };
  if (auto x = pre_key(*this), y = pre_key(o); x != y) return x < y ? -1 : 1;
  if (post_ != o.post_) return post_ < o.post_ ? -1 : 1;  // none (-1) first
  auto dev_key = [](const Version& v) { return v.dev_ < 0 ? INT64_MAX : v.dev_; };
  if (dev_key(*this) != dev_key(o)) return dev_key(*this) < dev_key(o) ? -1 : 1;
  if (local_.empty() != o.local_.empty()) return local_.empty() ? -1 : 1;
  return CompareLocal(local_, o.local_);
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

Result<Specifier> Specifier::Parse(std::string_view text) {
  std::string_view s = Trim(text);
  static constexpr std::pair<std::string_view, SpecOp> kOps[] = {
      {"===", SpecOp::kArbitrary}, {"~=", SpecOp::kCompatible}, {"==", SpecOp::kEqual},
      {"!=", SpecOp::kNotEqual},   {"<=", SpecOp::kLessEqual},  {">=", SpecOp::kGreaterEqual},
      {"<", SpecOp::kLess},        {">", SpecOp::kGreater}};
  Specifier spec;
  bool found = false;
  for (const auto& [token, op] : kOps) {
    if (s.starts_with(token)) {
      spec.op_ = op;
      s.remove_prefix(token.size());
      found = true;
      break;
    }
  }
  auto invalid = [&text](const std::string& why) {
    return InvalidArgument("invalid version specifier '" + std::string(Trim(text)) + "': " + why);
  };
  if (!found) return invalid("expected an operator (~=, ==, !=, <=, >=, <, >, ===)");
  s = Trim(s);
  if (s.empty()) return invalid("expected a version after the operator");
  spec.text_ = std::string(s);
  if (spec.op_ == SpecOp::kArbitrary) {
    if (s.find_first_of(" \t,;") != std::string_view::npos) return invalid("bad version");
    return spec;
  }
  std::string_view version = s;
  if (version.ends_with(".*")) {
    if (spec.op_ != SpecOp::kEqual && spec.op_ != SpecOp::kNotEqual) {
      return invalid(".* is allowed only with == and !=");
    }
    spec.prefix_ = true;
    version.remove_suffix(2);
  }
  Result<Version> v = Version::Parse(version);
  if (!v.ok()) return invalid("'" + std::string(version) + "' is not a version");
  spec.version_ = *v;
  if (spec.prefix_ && (v->has_local() || v->is_devrelease())) {
    return invalid("a prefix match cannot name a local or dev version");
  }
  if (v->has_local() && spec.op_ != SpecOp::kEqual && spec.op_ != SpecOp::kNotEqual) {
    return invalid("only == and != may name a local version");
  }
  if (spec.op_ == SpecOp::kCompatible && v->release().size() < 2) {
    return invalid("~= needs at least two release numbers (~=2.2, not ~=2)");
  }
  return spec;
}

namespace {

// Whether `v` matches the prefix `prefix` (the version of ==V.*): same epoch, and v's release,
// padded with zeros, starts with prefix's release; a prefix with a pre/post part also needs
// those equal.
bool PrefixMatch(const Version& v, const Version& prefix) {
  if (v.epoch() != prefix.epoch()) return false;
  std::vector<int64_t> release = v.release();
  const std::vector<int64_t>& want = prefix.release();
  if (release.size() < want.size()) release.resize(want.size(), 0);
  if (!std::equal(want.begin(), want.end(), release.begin())) return false;
  if (prefix.is_prerelease() || prefix.is_postrelease()) {
    // "==1.0rc1.*": the candidate's version up to the prefix's last part must be equal.
    Version trimmed = v.Public();
    return trimmed.ToString().starts_with(prefix.ToString());
  }
  return true;
}

}  // namespace

bool Specifier::Contains(const Version& v) const {
  switch (op_) {
    case SpecOp::kArbitrary:
      return Lower(v.ToString()) == Lower(text_);
    case SpecOp::kEqual:
    case SpecOp::kNotEqual: {
      bool equal;
      if (prefix_) {
        equal = PrefixMatch(v, version_);
      } else if (version_.has_local()) {
        equal = v == version_;
      } else {
        equal = v.Public() == version_;
      }
      return op_ == SpecOp::kEqual ? equal : !equal;
    }
    case SpecOp::kCompatible: {
      if (v.Public() < version_) return false;
      Version prefix = version_.BaseVersion();
      std::vector<int64_t> release = prefix.release();
      release.pop_back();
      std::string text = (prefix.epoch() != 0 ? std::to_string(prefix.epoch()) + "!" : "");
      for (size_t i = 0; i < release.size(); ++i) text += (i ? "." : "") + std::to_string(release[i]);
      return PrefixMatch(v, *Version::Parse(text));
    }
    case SpecOp::kLessEqual:
      return v.Public() <= version_;
    case SpecOp::kGreaterEqual:
      return v.Public() >= version_;
    case SpecOp::kLess: {
      if (!(v.Public() < version_)) return false;
      // <3.0 does not admit 3.0's pre-releases, unless it names a pre-release itself.
      if (!version_.is_prerelease() && v.is_prerelease() &&
          v.BaseVersion() == version_.BaseVersion()) {
        return false;
      }
      return true;
    }
    case SpecOp::kGreater: {
      if (!(v.Public() > version_)) return false;
      // >1.7 does not admit 1.7's post-releases (unless it names one), nor 1.7+local.
      if (!version_.is_postrelease() && v.is_postrelease() &&
          v.BaseVersion() == version_.BaseVersion()) {
        return false;
      }
      if (v.has_local() && v.BaseVersion() == version_.BaseVersion()) return false;
      return true;
    }
  }
  return false;
}

bool Specifier::names_prerelease() const {
  if (op_ == SpecOp::kNotEqual) return false;
  if (op_ == SpecOp::kArbitrary) {
    Result<Version> v = Version::Parse(text_);
    return v.ok() && v->is_prerelease();
  }
  return version_.is_prerelease();
}

std::string Specifier::ToString() const {
  static constexpr const char* kNames[] = {"~=", "==", "!=", "<=", ">=", "<", ">", "==="};
  return std::string(kNames[static_cast<int>(op_)]) + text_;
}

Result<SpecifierSet> SpecifierSet::Parse(std::string_view text) {
  SpecifierSet set;
  std::string_view s = Trim(text);
  if (s.empty()) return set;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string_view part = s.substr(start, comma == std::string_view::npos ? comma : comma - start);
    // A trailing comma is tolerated ("name>=3," is among PEP 508's test strings).
    if (comma == std::string_view::npos && Trim(part).empty() && !set.specs_.empty()) break;
    CAIRN_ASSIGN_OR_RETURN(Specifier spec, Specifier::Parse(part));
    set.specs_.push_back(std::move(spec));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return set;
}

bool SpecifierSet::Contains(const Version& v, std::optional<bool> prereleases) const {
  bool allow = prereleases.value_or(false);
  if (!prereleases) {
    allow = std::any_of(specs_.begin(), specs_.end(),
                        [](const Specifier& s) { return s.names_prerelease(); });
  }
  if (v.is_prerelease() && !allow) return false;
  return std::all_of(specs_.begin(), specs_.end(),
                     [&v](const Specifier& s) { return s.Contains(v); });
}

std::string SpecifierSet::ToString() const {
  std::vector<std::string> parts;
  for (const Specifier& s : specs_) parts.push_back(s.ToString());
  std::sort(parts.begin(), parts.end());
  parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

SpecifierSet SpecifierSet::And(const SpecifierSet& other) const {
  SpecifierSet out = *this;
  out.specs_.insert(out.specs_.end(), other.specs_.begin(), other.specs_.end());
  return out;
}

std::string NormalizeName(std::string_view name) {
  std::string out;
  bool run = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!run) out.push_back('-');
      run = true;
      continue;
    }
    run = false;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

bool IsValidName(std::string_view name) {
  if (name.empty()) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '-' || c == '_'; });
}

}  // namespace cairn::env
