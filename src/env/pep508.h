// PEP 508 dependency specifiers: `name[extra,...] specifier ; marker` and `name @ url ; marker`,
// and environment markers evaluated for a target interpreter and platform.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "env/pep440.h"
#include "util/status.h"

namespace cairn::env {

// The values of the marker variables (os_name, sys_platform, platform_machine,
// platform_python_implementation, platform_release, platform_system, platform_version,
// python_version, python_full_version, implementation_name, implementation_version).
struct MarkerEnvironment {
  std::map<std::string, std::string> values;
  // CPython `python_full_version` ("3.11.2") on Linux `machine` ("x86_64"); platform_release
  // and platform_version are left empty (a lock does not depend on the kernel).
  static MarkerEnvironment LinuxCPython(std::string_view python_full_version,
                                        std::string_view machine);
};

class Marker {
 public:
  Marker();
  ~Marker();
  Marker(const Marker& other);
  Marker& operator=(const Marker& other);
  Marker(Marker&&) noexcept;
  Marker& operator=(Marker&&) noexcept;

  // `python_version < "3.8" and (sys_platform == "linux" or extra == "gpu")`.
  static Result<Marker> Parse(std::string_view text);
  // True when the expression holds in `env`. `extra` takes each value of `extras` in turn (the
  // marker holds if it holds for one of them) and "" when there are none; extra names compare
  // normalised. Version variables compare by PEP 440 when the other side is a version
  // specifier's version, else as strings; `in` and `not in` are substring tests.
  bool Evaluate(const MarkerEnvironment& env, const std::set<std::string>& extras = {}) const;
  std::string ToString() const;

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
};

struct Requirement {
  std::string name;  // as written
  std::set<std::string> extras;  // normalised
  SpecifierSet specifier;
  std::string url;  // `name @ url`
  std::optional<Marker> marker;

  static Result<Requirement> Parse(std::string_view text);
  std::string ToString() const;  // "name[a,b]>=1,<2; python_version < \"3.8\""
};

}  // namespace cairn::env
