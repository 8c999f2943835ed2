#include "env/standards/wheel_tags.h"

#include <sys/utsname.h>

#include <algorithm>
#include <unordered_set>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

#include "env/standards/pep440.h"
#include "util/strings.h"

namespace cairn::env {
namespace {


bool AllOf(std::string_view s, bool (*pred)(char)) { return std::all_of(s.begin(), s.end(), pred); }
bool IsLowerAlnumOrUnderscore(char c) { return IsAsciiLower(c) || IsAsciiDigit(c) || c == '_'; }
bool IsTagChar(char c) { return IsAsciiAlnum(c) || c == '_'; }

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

// A decimal number of at most 9 digits (so it fits an int). With `canonical`, a leading zero is
// refused ("05"), because the text forms cairn writes must read back to themselves.
std::optional<int> ParseNumber(std::string_view s, bool canonical) {
  if (s.empty() || s.size() > 9 || !AllOf(s, IsAsciiDigit)) return std::nullopt;
  if (canonical && s.size() > 1 && s[0] == '0') return std::nullopt;
  int value = 0;
  for (char c : s) value = value * 10 + (c - '0');
  return value;
}

// Takes the leading digits of `*s` off it as a number.
std::optional<int> TakeNumber(std::string_view* s) {
  size_t n = 0;
  while (n < s->size() && IsAsciiDigit((*s)[n])) ++n;
  std::optional<int> value = ParseNumber(s->substr(0, n), /*canonical=*/false);
  if (value) s->remove_prefix(n);
  return value;
}

// "major.minor" at the start of `text`; what follows ("-2014.11", ".2", "rc1") is ignored.
std::optional<std::pair<int, int>> LeadingMajorMinor(std::string_view text) {
  std::optional<int> major = TakeNumber(&text);
  if (!major || text.empty() || text[0] != '.') return std::nullopt;
  text.remove_prefix(1);
  std::optional<int> minor = TakeNumber(&text);
  if (!minor) return std::nullopt;
  return std::make_pair(*major, *minor);
}

struct LinuxPlatform {
  int major = 0;
  int minor = 0;
  std::string_view arch;
};

// "{prefix}X_Y_{arch}", e.g. prefix "manylinux_" and "manylinux_2_17_x86_64".
std::optional<LinuxPlatform> ParseVersionedLinux(std::string_view tag, std::string_view prefix,
                                                 bool canonical) {
  if (!tag.starts_with(prefix)) return std::nullopt;
  tag.remove_prefix(prefix.size());
  std::vector<std::string_view> parts = Split(tag, '_');
  if (parts.size() < 3) return std::nullopt;
  std::optional<int> major = ParseNumber(parts[0], canonical);
  std::optional<int> minor = ParseNumber(parts[1], canonical);
  if (!major || !minor) return std::nullopt;
  std::string_view arch = tag.substr(parts[0].size() + parts[1].size() + 2);
  if (arch.empty()) return std::nullopt;
  return LinuxPlatform{*major, *minor, arch};
}

std::string VersionNodot(int major, int minor) {
  return std::to_string(major) + std::to_string(minor);
}

// Architectures manylinux defines, and the oldest glibc minor (of glibc 2) each has tags for.
std::optional<int> ManylinuxOldestMinor(std::string_view arch) {
  if (arch == "x86_64" || arch == "i686") return 5;
  static constexpr std::string_view kOthers[] = {"aarch64", "armv7l",      "ppc64",  "ppc64le",
                                                 "s390x",   "loongarch64", "riscv64"};
  for (std::string_view a : kOthers) {
    if (arch == a) return 17;
  }
  return std::nullopt;
}

// glibc has never had a major version other than 2. Should a 3 come, the 2.x series is assumed
// to have ended at this minor (the same guess pypa/packaging makes).
constexpr int kLastMinorOfOlderGlibc = 50;

std::string_view LegacyManylinuxAlias(int major, int minor) {
  if (major != 2) return {};
  if (minor == 17) return "manylinux2014";
  if (minor == 12) return "manylinux2010";
  if (minor == 5) return "manylinux1";
  return {};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Tags and file names.

std::string WheelTag::ToString() const { return interpreter + "-" + abi + "-" + platform; }

Result<std::vector<WheelTag>> ParseTagSet(std::string_view compressed) {
  std::vector<std::string_view> parts = Split(compressed, '-');
  if (parts.size() != 3) {
    return InvalidArgument("tag " + Quote(compressed) +
                           " is not three '-'-separated parts (python-abi-platform)");
  }
  static constexpr const char* kPartNames[] = {"python", "abi", "platform"};
  std::vector<std::string> members[3];
  size_t count = 1;
  for (int i = 0; i < 3; ++i) {
    for (std::string_view member : Split(parts[i], '.')) {
      if (member.empty()) {
        return InvalidArgument("tag " + Quote(compressed) + " has an empty " + kPartNames[i] +
                               " tag");
      }
      if (!AllOf(member, IsTagChar)) {
        return InvalidArgument("tag " + Quote(compressed) + ": " + kPartNames[i] + " tag " +
                               Quote(member) + " has characters other than A-Z, a-z, 0-9, _");
      }
      if (i == 0 && IsAsciiDigit(member[0])) {
        return InvalidArgument("tag " + Quote(compressed) + ": python tag " + Quote(member) +
                               " starts with a digit");
      }
      members[i].push_back(AsciiLower(member));
    }
    count *= members[i].size();
    if (count > kMaxWheelTags) {
      return InvalidArgument("tag " + Quote(compressed.substr(0, 200)) + " stands for more than " +
                             std::to_string(kMaxWheelTags) + " tags");
    }
  }
  std::vector<WheelTag> tags;
  tags.reserve(count);
  std::unordered_set<std::string> seen;
  for (const std::string& interpreter : members[0]) {
    for (const std::string& abi : members[1]) {
      for (const std::string& platform : members[2]) {
        WheelTag tag{interpreter, abi, platform};
        if (seen.insert(tag.ToString()).second) tags.push_back(std::move(tag));
      }
    }
  }
  return tags;
}

std::string WheelFileName::NormalizedName() const { return NormalizeName(name); }

Result<WheelFileName> WheelFileName::Parse(std::string_view file_name) {
  auto error = [&](const std::string& what) {
    return InvalidArgument("wheel file name " + Quote(file_name) + ": " + what);
  };
  if (file_name.find('/') != std::string_view::npos ||
      file_name.find('\\') != std::string_view::npos) {
    return error("is a path or URL; give the file name alone");
  }
  constexpr std::string_view kSuffix = ".whl";
  if (!file_name.ends_with(kSuffix)) return error("does not end in \".whl\"; not a wheel");
  std::string_view stem = file_name.substr(0, file_name.size() - kSuffix.size());
  std::vector<std::string_view> parts = Split(stem, '-');
  if (parts.size() != 5 && parts.size() != 6) {
    return error("has " + std::to_string(parts.size()) +
                 " '-'-separated parts; a wheel has 5 or 6: "
                 "{name}-{version}(-{build tag})?-{python tag}-{abi tag}-{platform tag}.whl");
  }
  for (std::string_view part : parts) {
    if (part.empty()) return error("has an empty part (two '-' in a row, or one at an end)");
  }

  WheelFileName wheel;
  std::string_view name = parts[0];
  // Non-ASCII bytes are let through: the spec allows Unicode names (as UTF-8 here).
  for (char c : name) {
    if (!IsAsciiAlnum(c) && c != '_' && c != '.' && static_cast<unsigned char>(c) < 0x80) {
      return error("distribution name " + Quote(name) +
                   " has characters other than letters, digits, '_' and '.'");
    }
  }
  wheel.name = std::string(name);

  std::string_view version = parts[1];
  bool starts_well = IsAsciiDigit(version[0]) || ((version[0] == 'v' || version[0] == 'V') &&
                                             version.size() > 1 && IsAsciiDigit(version[1]));
  if (!starts_well) return error("version " + Quote(version) + " does not start with a digit");
  for (char c : version) {
    if (!IsAsciiAlnum(c) && c != '.' && c != '_' && c != '+' && c != '!') {
      return error("version " + Quote(version) + " has a character PEP 440 does not allow");
    }
  }
  wheel.version = std::string(version);

  if (parts.size() == 6) {
    if (!IsAsciiDigit(parts[2][0])) {
      return error("build tag " + Quote(parts[2]) + " does not start with a digit");
    }
    wheel.build_tag = std::string(parts[2]);
  }

  size_t n = parts.size();
  std::string compressed =
      std::string(parts[n - 3]) + "-" + std::string(parts[n - 2]) + "-" + std::string(parts[n - 1]);
  Result<std::vector<WheelTag>> tags = ParseTagSet(compressed);
  if (!tags.ok()) return error(tags.status().message());
  wheel.tags = std::move(tags).value();
  return wheel;
}

std::strong_ordering CompareBuildTags(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return !a.empty() <=> !b.empty();
  auto split = [](std::string_view tag) {
    size_t digits = 0;
    while (digits < tag.size() && IsAsciiDigit(tag[digits])) ++digits;
    std::string_view number = tag.substr(0, digits);
    while (!number.empty() && number[0] == '0') number.remove_prefix(1);
    return std::make_pair(number, tag.substr(digits));
  };
  auto [number_a, rest_a] = split(a);
  auto [number_b, rest_b] = split(b);
  // Digit strings without leading zeros: the longer is the larger number.
  if (number_a.size() != number_b.size()) return number_a.size() <=> number_b.size();
  if (auto order = number_a <=> number_b; order != 0) return order;
  return rest_a <=> rest_b;
}

// ---------------------------------------------------------------------------------------------
// Targets.

Status TargetPlatform::Validate() const {
  auto error = [](const std::string& what) { return InvalidArgument("target platform: " + what); };
  if (implementation != "cp" && implementation != "pp") {
    return error("implementation " + Quote(implementation) + " is not \"cp\" or \"pp\"");
  }
  if (python_major < 3 || python_major > 9 || python_minor < 0 || python_minor > 99) {
    return error("Python " + std::to_string(python_major) + "." + std::to_string(python_minor) +
                 " is not a version cairn can name in tags (3.0 to 9.99)");
  }
  if (arch.empty() || !AllOf(arch, IsLowerAlnumOrUnderscore)) {
    return error("arch " + Quote(arch) + " is not lowercase letters, digits and '_'");
  }
  if (libc != "glibc" && libc != "musl") {
    return error("libc " + Quote(libc) + " is not \"glibc\" or \"musl\"");
  }
  if (libc_major < 0 || libc_minor < 0) return error("negative libc version");
  if (!AllOf(abiflags, IsAsciiLower)) {
    return error("abiflags " + Quote(abiflags) + " are not lowercase letters");
  }
  if (!AllOf(interpreter_abi, IsLowerAlnumOrUnderscore)) {
    return error("interpreter_abi " + Quote(interpreter_abi) +
                 " is not lowercase letters, digits and '_'");
  }
  if (implementation == "cp" && !interpreter_abi.empty()) {
    return error("interpreter_abi is derived for CPython and must stay empty");
  }
  return Status::Ok();
}

std::string TargetPlatform::ToString() const {
  std::string out = implementation + VersionNodot(python_major, python_minor) + abiflags;
  if (!interpreter_abi.empty()) out += "-" + interpreter_abi;
  out += libc == "musl" ? "-musllinux_" : "-manylinux_";
  out += std::to_string(libc_major) + "_" + std::to_string(libc_minor) + "_" + arch;
  return out;
}

Result<TargetPlatform> TargetPlatform::FromString(std::string_view text) {
  auto error = [&](const std::string& what) {
    return InvalidArgument("target platform " + Quote(text) + ": " + what);
  };
  std::vector<std::string_view> parts = Split(text, '-');
  if (parts.size() != 2 && parts.size() != 3) {
    return error("expected {interpreter}[-{abi}]-{platform}, e.g. cp311-manylinux_2_36_x86_64");
  }
  TargetPlatform target;

  // "cp313t": implementation letters, one digit of major version, the minor, abiflags.
  std::string_view interpreter = parts[0];
  size_t letters = 0;
  while (letters < interpreter.size() && IsAsciiLower(interpreter[letters])) ++letters;
  size_t digits = letters;
  while (digits < interpreter.size() && IsAsciiDigit(interpreter[digits])) ++digits;
  std::string_view version = interpreter.substr(letters, digits - letters);
  std::optional<int> minor =
      version.size() >= 2 ? ParseNumber(version.substr(1), /*canonical=*/true) : std::nullopt;
  if (letters == 0 || !minor) {
    return error("interpreter " + Quote(interpreter) + " is not like \"cp311\"");
  }
  target.implementation = std::string(interpreter.substr(0, letters));
  target.python_major = version[0] - '0';
  target.python_minor = *minor;
  target.abiflags = std::string(interpreter.substr(digits));
  if (parts.size() == 3) target.interpreter_abi = std::string(parts[1]);

  std::string_view platform = parts.back();
  std::optional<LinuxPlatform> linux_platform;
  if ((linux_platform = ParseVersionedLinux(platform, "manylinux_", /*canonical=*/true))) {
    target.libc = "glibc";
  } else if ((linux_platform = ParseVersionedLinux(platform, "musllinux_", /*canonical=*/true))) {
    target.libc = "musl";
  } else {
    return error("platform " + Quote(platform) +
                 " is not manylinux_X_Y_{arch} or musllinux_X_Y_{arch}");
  }
  target.libc_major = linux_platform->major;
  target.libc_minor = linux_platform->minor;
  target.arch = std::string(linux_platform->arch);
  if (Status status = target.Validate(); !status.ok()) return error(status.message());
  return target;
}

Result<TargetPlatform> TargetPlatform::FromHostFacts(std::string_view python_version,
                                                     std::string_view machine,
                                                     std::string_view glibc_version,
                                                     std::string_view implementation) {
  TargetPlatform target;
  if (implementation == "cp" || implementation == "cpython") {
    target.implementation = "cp";
  } else if (implementation == "pp" || implementation == "pypy") {
    target.implementation = "pp";
  } else {
    return InvalidArgument("implementation " + Quote(implementation) +
                           " is not CPython or PyPy (\"cp\", \"pp\")");
  }

  std::optional<std::pair<int, int>> python = LeadingMajorMinor(python_version);
  if (!python) {
    return InvalidArgument("Python version " + Quote(python_version) + " is not like \"3.11\"");
  }
  target.python_major = python->first;
  target.python_minor = python->second;
  if (target.implementation == "cp" && target.python_major == 3 && target.python_minor < 8) {
    target.abiflags = "m";  // pymalloc, on by default before 3.8 removed the flag
  }

  std::string arch;
  for (char c : machine) arch.push_back(c == '-' || c == '.' ? '_' : AsciiLower(c));
  if (arch == "i386" || arch == "i486" || arch == "i586") arch = "i686";
  if (arch == "amd64") arch = "x86_64";
  if (arch == "arm64") arch = "aarch64";
  if (arch.empty()) return InvalidArgument("machine is empty");
  target.arch = std::move(arch);

  if (glibc_version.empty()) {
    return FailedPrecondition(
        "the host's glibc version is unknown (a musl or other non-glibc host?); describe the "
        "target by hand or with TargetPlatform::FromString");
  }
  std::optional<std::pair<int, int>> glibc = LeadingMajorMinor(glibc_version);
  if (!glibc) {
    return InvalidArgument("glibc version " + Quote(glibc_version) + " is not like \"2.36\"");
  }
  target.libc = "glibc";
  target.libc_major = glibc->first;
  target.libc_minor = glibc->second;
  CAIRN_RETURN_IF_ERROR(target.Validate());
  return target;
}

Result<TargetPlatform> TargetPlatform::Host(std::string_view python_version,
                                            std::string_view implementation) {
  struct utsname names {};
  if (uname(&names) != 0) return Unavailable("uname(2) failed");
#if defined(__GLIBC__)
  std::string_view glibc = gnu_get_libc_version();
#else
  std::string_view glibc;
#endif
  if (glibc.empty()) return FailedPrecondition("this process does not run on glibc");
  return FromHostFacts(python_version, names.machine, glibc, implementation);
}

// ---------------------------------------------------------------------------------------------
// Accepted tags.

std::vector<std::string> PlatformTags(const TargetPlatform& target) {
  std::vector<std::string> platforms;
  if (!target.Validate().ok()) return platforms;
  const std::string& arch = target.arch;
  if (target.libc == "glibc") {
    if (std::optional<int> oldest_minor = ManylinuxOldestMinor(arch)) {
      for (int major = target.libc_major; major >= 2; --major) {
        int newest = major == target.libc_major ? target.libc_minor : kLastMinorOfOlderGlibc;
        int oldest = major == 2 ? *oldest_minor : 0;
        for (int minor = newest; minor >= oldest; --minor) {
          platforms.push_back("manylinux_" + std::to_string(major) + "_" + std::to_string(minor) +
                              "_" + arch);
          std::string_view alias = LegacyManylinuxAlias(major, minor);
          if (!alias.empty()) platforms.push_back(std::string(alias) + "_" + arch);
        }
      }
    }
  } else {
    for (int minor = target.libc_minor; minor >= 0; --minor) {
      platforms.push_back("musllinux_" + std::to_string(target.libc_major) + "_" +
                          std::to_string(minor) + "_" + arch);
    }
  }
  platforms.push_back("linux_" + arch);
  return platforms;
}

std::vector<WheelTag> CompatibleTags(const TargetPlatform& target) {
  std::vector<WheelTag> tags;
  if (!target.Validate().ok()) return tags;
  const std::vector<std::string> platforms = PlatformTags(target);
  const int major = target.python_major;
  const int minor = target.python_minor;
  const std::string interpreter = target.implementation + VersionNodot(major, minor);

  std::unordered_set<std::string> seen;
  auto add = [&](const std::string& python, const std::string& abi, const std::string& platform) {
    WheelTag tag{python, abi, platform};
    if (seen.insert(tag.ToString()).second) tags.push_back(std::move(tag));
  };
  auto add_all_platforms = [&](const std::string& python, const std::string& abi) {
    for (const std::string& platform : platforms) add(python, abi, platform);
  };

  // The interpreter's own tags.
  if (target.implementation == "cp") {
    std::string abi = "cp" + VersionNodot(major, minor) + target.abiflags;
    add_all_platforms(interpreter, abi);
    // A debug build (3.8+) also loads extensions built for the release ABI.
    if (target.abiflags.find('d') != std::string::npos && (major > 3 || minor >= 8)) {
      std::string release_abi = abi;
      release_abi.erase(std::remove(release_abi.begin() + 2, release_abi.end(), 'd'),
                        release_abi.end());
      add_all_platforms(interpreter, release_abi);
    }
    // The stable ABI exists since 3.2; a free-threaded build has its own (abi3t, PEP 803).
    const bool threaded = target.abiflags.find('t') != std::string::npos;
    const std::string stable_abi = threaded ? "abi3t" : "abi3";
    const bool stable_applies = major > 3 || minor >= 2;
    if (stable_applies) add_all_platforms(interpreter, stable_abi);
    add_all_platforms(interpreter, "none");
    if (stable_applies) {
      for (int older = minor - 1; older >= 2; --older) {
        add_all_platforms("cp" + VersionNodot(major, older), stable_abi);
      }
    }
  } else {
    if (!target.interpreter_abi.empty()) add_all_platforms(interpreter, target.interpreter_abi);
    add_all_platforms(interpreter, "none");
  }

  // Tags of no particular implementation: pyXY, pyX, then older pyXZ.
  std::vector<std::string> generic_pythons = {"py" + VersionNodot(major, minor),
                                              "py" + std::to_string(major)};
  for (int older = minor - 1; older >= 0; --older) {
    generic_pythons.push_back("py" + VersionNodot(major, older));
  }
  for (const std::string& python : generic_pythons) add_all_platforms(python, "none");
  // CPython prefers its own pure wheels; PyPy names them for its major version only.
  add(target.implementation == "cp" ? interpreter : "pp" + std::to_string(major), "none", "any");
  for (const std::string& python : generic_pythons) add(python, "none", "any");
  return tags;
}

TagRanker::TagRanker(const TargetPlatform& target) {
  std::vector<WheelTag> tags = CompatibleTags(target);
  ranks_.reserve(tags.size());
  for (size_t i = 0; i < tags.size(); ++i) ranks_.emplace(tags[i].ToString(), static_cast<int>(i));
}

std::optional<int> TagRanker::Rank(const WheelTag& tag) const {
  auto it = ranks_.find(tag.ToString());
  if (it == ranks_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> TagRanker::Rank(const WheelFileName& wheel) const {
  std::optional<int> best;
  for (const WheelTag& tag : wheel.tags) {
    std::optional<int> rank = Rank(tag);
    if (rank && (!best || *rank < *best)) best = rank;
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Floors.

std::optional<std::pair<int, int>> ManylinuxFloor(std::string_view platform_tag) {
  struct Legacy {
    std::string_view prefix;
    int minor;
  };
  static constexpr Legacy kLegacy[] = {
      {"manylinux1_", 5}, {"manylinux2010_", 12}, {"manylinux2014_", 17}};
  for (const Legacy& legacy : kLegacy) {
    if (platform_tag.starts_with(legacy.prefix) && platform_tag.size() > legacy.prefix.size()) {
      return std::make_pair(2, legacy.minor);
    }
  }
  if (auto parsed = ParseVersionedLinux(platform_tag, "manylinux_", /*canonical=*/false)) {
    return std::make_pair(parsed->major, parsed->minor);
  }
  return std::nullopt;
}

std::optional<std::pair<int, int>> MusllinuxFloor(std::string_view platform_tag) {
  if (auto parsed = ParseVersionedLinux(platform_tag, "musllinux_", /*canonical=*/false)) {
    return std::make_pair(parsed->major, parsed->minor);
  }
  return std::nullopt;
}

}  // namespace cairn::env
