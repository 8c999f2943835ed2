// PEP 508 dependency specifiers, as packaging.python.org's "Dependency specifiers"
// specification defines them: a requirement `name[extra,...] specifier ; marker` or
// `name[extra,...] @ url ; marker`, and environment markers, the boolean expressions after ";"
// that say on which interpreters and platforms (and for which extras) a requirement applies.
//
// Marker comparisons follow the specification and pypa/packaging: the variables that hold
// versions (python_version, python_full_version, implementation_version, platform_release)
// compare by PEP 440 when the other side makes a valid specifier with the operator; every other
// comparison is on strings, where "in"/"not in" test for a substring, "==" and "!=" for
// equality, "<=" and ">=" behave as "==" and "<" and ">" are false (the specification's legacy
// rule: no order is assumed between strings). Values of `extra` compare as PEP 503 normalised
// names (PEP 685).
//
// Value types, safe to copy and to share between threads.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "env/standards/pep440.h"
#include "util/status.h"

namespace cairn::env {

// What the marker variables hold on the target: os_name, sys_platform, platform_machine,
// platform_python_implementation, platform_release, platform_system, platform_version,
// python_version, python_full_version, implementation_name, implementation_version.
// A variable missing from `values` reads as "0" when it holds a version and "" otherwise (the
// specification's rule for values an implementation cannot compute).
struct MarkerEnvironment {
  std::map<std::string, std::string> values;
  // The PEP 751 `dependency_groups` variable (a set): the groups requested from a lock file.
  std::set<std::string> dependency_groups;

  // CPython `python_full_version` (e.g. "3.11.2", "3.13.0rc1") on Linux `machine` (e.g.
  // "x86_64", "aarch64"): python_version is its first two numbers, implementation_version the
  // full version, os_name "posix", sys_platform "linux", platform_system "Linux". The kernel's
  // platform_release and platform_version are left empty: a lock does not depend on the kernel.
  static MarkerEnvironment LinuxCPython(std::string_view python_full_version,
                                        std::string_view machine);
};

class Marker {
 public:
  // The marker that always holds (what a requirement without ";" has).
  Marker() = default;

  // `python_version < "3.8" and (sys_platform == "linux" or extra == "gpu")`. Operators are
  // ==, !=, <, <=, >, >=, ~=, ===, in and not in; `and` binds tighter than `or`; strings are in
  // single or double quotes, without escapes. One side of each comparison is a variable (the
  // old spellings os.name, sys.platform, platform.machine, platform.version,
  // platform.python_implementation and python_implementation are accepted) and the other a
  // string. Also InvalidArgument, naming the text and the position, for comparisons that can
  // never be evaluated: ~= or === on a variable that is not a version, "python_version ~=
  // 'surprise'", and the set variables `extras` and `dependency_groups` other than as
  // `"name" in extras`.
  static Result<Marker> Parse(std::string_view text);

  // Whether the expression holds in `env`. `extra` takes each value of `extras` in turn and the
  // marker holds if it holds for one of them; with no extras `extra` is "". The PEP 751 set
  // variable `extras` is all of `extras` at once. Extra names compare normalised, so
  // `extra == "GPU_Support"` holds for {"gpu-support"}. A version comparison whose value is
  // not a version (platform_release "5.15.0-91-generic" >= "5") is false.
  bool Evaluate(const MarkerEnvironment& env, const std::set<std::string>& extras = {}) const;

  // Canonical text: variables in their current spelling, strings in double quotes (single
  // quotes when the string holds a double quote), extra names normalised, one space around
  // operators, and parentheses only where `or` sits inside `and`. Parse(ToString()) gives a
  // marker with the same ToString(). "" for the marker that always holds.
  std::string ToString() const;

  bool operator==(const Marker& o) const { return ToString() == o.ToString(); }

  struct Node;

 private:
  friend struct Requirement;
  // Parses text[at..]; errors start with `context` and count positions within all of `text`.
  static Result<Marker> ParseAt(std::string_view text, size_t at, std::string context);

  std::shared_ptr<const Node> root_;  // null: always holds
};

struct Requirement {
  std::string name;              // as written, e.g. "Zope.Interface"
  std::set<std::string> extras;  // normalised
  SpecifierSet specifier;        // empty for a URL requirement
  std::string url;               // `name @ url`; empty otherwise
  std::optional<Marker> marker;

  // The whole PEP 508 grammar: `requests [security,tests] >= 2.8.1, == 2.8.* ;
  // python_version < "2.7"`, the version specifier optionally in parentheses ("name (>=1.0)"),
  // and `pip @ https://example.org/pip-1.3.1.zip ; os_name == "posix"`, where the URL runs to
  // the next whitespace and a marker after it must be preceded by whitespace. Spaces and tabs
  // may surround every token; nothing else may follow (no comments, no line breaks).
  // InvalidArgument of the form "invalid requirement '<text>': <what> at position <n>", n
  // counting characters from 0, e.g. "invalid requirement 'foo>=': expected a version after
  // '>=' at position 5".
  static Result<Requirement> Parse(std::string_view text);

  // "name[a,b]<2,>=1; python_version < \"3.8\"" or "name @ url ; marker": the name as written,
  // extras sorted, the canonical specifier and marker. Parse(ToString()) gives an equal
  // requirement.
  std::string ToString() const;
};

}  // namespace cairn::env
