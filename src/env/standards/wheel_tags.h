// Wheel file names and compatibility tags: which built distributions a target interpreter can
// install, and which of several it prefers.
//
// A wheel is named `{distribution}-{version}(-{build tag})?-{python tag}-{abi tag}-{platform
// tag}.whl` (the binary distribution format). Each of the last three parts may be a
// "compressed tag set" such as `py2.py3`, so one file stands for the product of its parts:
// `cp310.cp311-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64` is four tags. A target (the
// interpreter and platform a lock is made for, or an environment is built for) accepts an
// ordered list of tags, best first; a wheel fits the target when one of its tags is on that
// list, and among several wheels of one release the one whose best tag comes first wins. The
// list is built the way pypa/packaging's `sys_tags` builds it for CPython (and PyPy) on Linux,
// but from a described target rather than the running interpreter, so that a lock can be made
// for a machine other than the one making it.
//
// Linux platform tags: `manylinux_X_Y_<arch>` (PEP 600) runs on glibc X.Y or newer; the legacy
// names manylinux1, manylinux2010 and manylinux2014 mean glibc 2.5, 2.12 and 2.17.
// `musllinux_X_Y_<arch>` (PEP 656) runs on musl X.Y or newer. `linux_<arch>` is a wheel built
// for one machine without such a promise; installers accept it anyway, last.
//
// Everything here is pure computation on strings, safe to call from several threads, except
// TargetPlatform::Host, which reads the running machine.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/status.h"

namespace cairn::env {

// One compatibility tag: `cp311-cp311-manylinux_2_17_x86_64`. Parsed tags are lowercase.
struct WheelTag {
  std::string interpreter;  // "cp311", "py3", "pp310"
  std::string abi;          // "cp311", "abi3", "none", "pypy310_pp73"
  std::string platform;     // "manylinux_2_17_x86_64", "linux_x86_64", "any"

  std::string ToString() const;  // "interpreter-abi-platform"
  bool operator==(const WheelTag&) const = default;
};

// A wheel file name can stand for at most this many tags (the product of its compressed tag sets).
// Real wheels name a handful; the limit keeps a hostile name from costing memory.
inline constexpr size_t kMaxWheelTags = 1024;

// Expands a compressed tag set ("py2.py3-none-any") into its tags, in file order (python tags
// outermost, platform tags innermost), without duplicates, lowercased. InvalidArgument when the
// text is not three '-'-separated parts, a '.'-separated member is empty, a python tag is not an
// identifier, a member has characters other than ASCII letters, digits and '_', or the set
// expands to more than kMaxWheelTags tags. Serves file names and the `Tag:` lines of WHEEL.
Result<std::vector<WheelTag>> ParseTagSet(std::string_view compressed);

struct WheelFileName {
  // The distribution as written in the file name, in its escaped form ("typing_extensions");
  // older wheels may keep '.' and uppercase letters. Compare names with NormalizedName().
  std::string name;
  std::string version;         // as written ("2.1.0+cu121"); not checked against PEP 440 here
  std::string build_tag;       // as written, starting with a digit; empty when the name has none
  std::vector<WheelTag> tags;  // the compressed tag sets expanded, see ParseTagSet

  // The name normalized per PEP 503: lowercase, each run of '-', '_' and '.' becomes one '-'.
  std::string NormalizedName() const;

  // Parses a file name (not a path or URL: take the last segment first). InvalidArgument, saying
  // what is wrong and quoting the name, when it does not end in ".whl", does not have 5 or 6
  // '-'-separated parts, has an empty part, a name with characters other than letters, digits,
  // '_' and '.', a version that does not start with a digit (or 'v' and a digit) or has
  // characters outside PEP 440's [A-Za-z0-9._+!], a build tag that does not start with a digit,
  // or tags ParseTagSet rejects.
  static Result<WheelFileName> Parse(std::string_view file_name);
};

// Orders build tags as the wheel specification says: no build tag sorts first; otherwise by the
// leading digits as a number (of any length), then by the rest as a string. Two wheels that
// differ only in their build tag: the greater one is the newer build.
std::strong_ordering CompareBuildTags(std::string_view a, std::string_view b);

// The interpreter and platform a lock is made for or an environment is built for.
struct TargetPlatform {
  std::string implementation = "cp";  // "cp" (CPython) or "pp" (PyPy)
  int python_major = 3;
  int python_minor = 11;
  std::string arch = "x86_64";  // as in platform tags: x86_64, aarch64, i686, armv7l, ppc64le, ...
  std::string libc = "glibc";   // "glibc" or "musl"
  int libc_major = 2;           // the glibc (or musl) version of the target
  int libc_minor = 36;
  // sys.abiflags of a CPython: empty for 3.8+, "t" for a free-threaded build (which cannot load
  // abi3 extensions), "d" for a debug build, "m" for 3.7 and older. Lowercase letters only.
  std::string abiflags;
  // The ABI tag of a non-CPython interpreter, which its version does not determine: PyPy 7.3
  // for Python 3.10 is "pypy310_pp73". Empty when unknown; the target then accepts no wheel with
  // compiled extensions for that interpreter. Always empty for CPython, whose ABI tag is
  // "cp{major}{minor}{abiflags}".
  std::string interpreter_abi;

  bool operator==(const TargetPlatform&) const = default;

  // InvalidArgument naming the field when the target cannot be described by tags: an
  // implementation other than "cp" or "pp", a Python major version outside 3..9 (the text form
  // has one digit for it) or a minor version above 99, an arch that is empty or has characters
  // other than [a-z0-9_], a libc other than "glibc" or "musl", a negative libc version, abiflags
  // that are not lowercase letters, or an interpreter_abi with characters other than [a-z0-9_] (or
  // one given for CPython).
  Status Validate() const;

  // The stable text form, used in lock files: "{implementation}{major}{minor}{abiflags}"
  // ("cp311", "cp313t"), then for PyPy with a known ABI "-{interpreter_abi}", then
  // "-manylinux_{libc_major}_{libc_minor}_{arch}" for glibc or "-musllinux_..." for musl:
  // "cp311-manylinux_2_36_x86_64", "cp312-musllinux_1_2_aarch64",
  // "pp310-pypy310_pp73-manylinux_2_35_x86_64". The major version is one digit. Meaningful only
  // for a target that passes Validate().
  std::string ToString() const;

  // Reads ToString's form back; FromString(t.ToString()) == t for every valid t. InvalidArgument
  // for any other text, including legacy aliases such as "manylinux2014_x86_64" and tags of
  // other platforms.
  static Result<TargetPlatform> FromString(std::string_view text);

  // A glibc target from facts as HostFacts records them: `python_version` as "3.11", "3.11.2"
  // or "3.13.0rc1"; `machine` as uname reports it ("x86_64", "aarch64"; "i386".."i686" become
  // "i686", "amd64" becomes "x86_64", "arm64" becomes "aarch64"); `glibc_version` as "2.36"
  // (anything after major.minor, such as "2.20-2014.11", is ignored). Python 3.7 and older get
  // abiflags "m", as their default builds have. InvalidArgument when a value cannot be read;
  // FailedPrecondition when `glibc_version` is empty (a host without glibc, such as a musl one,
  // whose version cairn cannot read: describe such a target by hand or with FromString).
  // uname cannot tell a 32-bit interpreter on a 64-bit kernel: such hosts need a hand-made
  // target.
  static Result<TargetPlatform> FromHostFacts(std::string_view python_version,
                                              std::string_view machine,
                                              std::string_view glibc_version,
                                              std::string_view implementation = "cp");

  // FromHostFacts with the machine from uname(2) and the glibc this process runs on.
  // FailedPrecondition when this process does not run on glibc.
  static Result<TargetPlatform> Host(std::string_view python_version,
                                     std::string_view implementation = "cp");
};

// The platform tags the target accepts, best first. glibc: manylinux_{major}_{minor}_{arch} from
// the target's glibc down to 2.5 on x86_64 and i686, or down to 2.17 on the other architectures
// manylinux defines (aarch64, armv7l, ppc64, ppc64le, s390x, loongarch64, riscv64; none for
// others), each legacy alias right after its manylinux_2_Y twin; musl: musllinux_{major}_{minor}
// _{arch} down to minor 0. Both end with linux_{arch}. Empty for an invalid target.
std::vector<std::string> PlatformTags(const TargetPlatform& target);

// Tags the target accepts, best first, as packaging.tags.sys_tags orders them. For CPython X.Y
// (P = each of PlatformTags): cpXY-cpXY{abiflags}-P (and cpXY-cpXY-P after it for a debug
// build), cpXY-abi3-P (abi3t for a free-threaded build), cpXY-none-P, then cpXZ-abi3-P for each
// older minor Z down to 2; then pyXY-none-P, pyX-none-P and pyXZ-none-P down to Z = 0; then
// cpXY-none-any, pyXY-none-any, pyX-none-any and pyXZ-none-any down to 0. PyPy: ppXY-{abi}-P,
// ppXY-none-P, the py*-none-P as above, ppX-none-any, then the py*-none-any. No duplicates.
// Empty for an invalid target.
std::vector<WheelTag> CompatibleTags(const TargetPlatform& target);

// Ranks wheels for one target. Builds a hash map of CompatibleTags once, so that ranking each of
// thousands of wheels costs a few lookups. Immutable after construction, so safe to share
// between threads.
class TagRanker {
 public:
  explicit TagRanker(const TargetPlatform& target);

  // The position in CompatibleTags of the wheel's best tag (lower is better), or nullopt when
  // none of its tags is accepted: the wheel cannot be installed on the target.
  std::optional<int> Rank(const WheelFileName& wheel) const;
  std::optional<int> Rank(const WheelTag& tag) const;

  // How many tags the target accepts; every rank is below it.
  size_t size() const { return ranks_.size(); }

 private:
  std::unordered_map<std::string, int> ranks_;  // WheelTag::ToString() -> position
};

// The glibc a platform tag demands, as (major, minor): manylinux1_* is 2.5, manylinux2010_* 2.12,
// manylinux2014_* 2.17, manylinux_X_Y_* is X.Y. nullopt for every other tag ("any",
// "linux_x86_64", "musllinux_*", "win_amd64") and for malformed ones ("manylinux_2_x86_64").
std::optional<std::pair<int, int>> ManylinuxFloor(std::string_view platform_tag);

// The musl a musllinux_X_Y_<arch> tag demands, as (X, Y); nullopt for every other tag.
std::optional<std::pair<int, int>> MusllinuxFloor(std::string_view platform_tag);

}  // namespace cairn::env
