// A virtual environment's layout, as cairn writes it itself instead of running `python -m
// venv`: the same files CPython's venv makes on POSIX (pyvenv.cfg, bin/python* symlinks to the
// base interpreter, lib/pythonX.Y/site-packages, the lib64 -> lib symlink on 64-bit Linux and
// a POSIX-sh bin/activate), so the interpreter, site.py and tools that look for VIRTUAL_ENV
// treat it as a venv, but without pip and without running Python.
//
// The interpreter finds pyvenv.cfg next to (or one level above) the executable it was started
// as, takes `home` as the base installation and sets sys.prefix to the environment, putting
// its site-packages on sys.path and leaving the base's site-packages off it.
//
// Only CPython on POSIX with the GIL is laid out (PyPy and free-threaded builds name their
// library directory differently); VenvLayoutFor refuses others.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace cairn::env {

struct VenvLayout {
  std::string prefix;  // the environment root, absolute: where files are written
  // Where the environment will be used from, when it is built in one place and then moved
  // (renamed) there: the paths written into files (shebangs, activate, pyvenv.cfg) name it.
  // Empty: prefix.
  std::string location;
  const std::string& home() const { return location.empty() ? prefix : location; }
  std::string python;  // the base interpreter the venv runs on, absolute (/usr/bin/python3.11)
  int python_major = 3;
  int python_minor = 0;
  std::string python_version;  // "3.11.2", written to pyvenv.cfg; "X.Y.0" when empty
  std::string prompt;          // the activate prompt; empty: the prefix's last component

  // prefix/lib/pythonX.Y/site-packages. Debian-style builds put platlib there too; builds whose
  // platlib is under lib64 reach the same directory through the lib64 -> lib symlink.
  std::string purelib() const;
  std::string platlib() const { return purelib(); }
  std::string scripts() const;                       // prefix/bin
  std::string data() const { return prefix; }        // prefix
  std::string headers(std::string_view dist) const;  // prefix/include/site/pythonX.Y/<dist>
  std::string env_python() const;                    // prefix/bin/python, for shebangs
};

// Creates the layout described at the top of this file. The prefix may exist (and may be
// populated); existing directories are kept, and existing symlinks are accepted when they
// point where this layout would point them (FailedPrecondition otherwise), so calling it twice
// is harmless. pyvenv.cfg and bin/activate are (re)written atomically.
//
// InvalidArgument when prefix or python is not absolute, or the prefix contains ':' (it would
// break PATH) or a newline; NotFound when python does not exist; Unavailable for I/O errors.
Status CreateVenvLayout(const VenvLayout& layout);

// Runs `python` (a path or a name looked up on PATH) once with a short script and fills a
// layout for `prefix` (made absolute) from its answer: the real path of its base executable
// (sys._base_executable, so a venv's python gives the interpreter beneath it) and its
// version. NotFound when the interpreter cannot be run; FailedPrecondition when it fails or
// does not answer as expected; Unimplemented for a non-CPython or free-threaded interpreter;
// Unavailable when it does not answer within 60 s.
Result<VenvLayout> VenvLayoutFor(const std::string& prefix, const std::string& python);

// The text of pyvenv.cfg and bin/activate for `layout` (exposed for tests).
std::string PyvenvCfgText(const VenvLayout& layout);
std::string ActivateScriptText(const VenvLayout& layout);

// The variables a command runs with inside the environment at `prefix`, as bin/activate sets
// them: its bin first on PATH (this process's PATH after it), VIRTUAL_ENV, and PYTHONHOME
// emptied (Python ignores an empty one), so that the caller's cannot point the interpreter
// at another installation.
std::vector<std::pair<std::string, std::string>> ActivationVariables(const std::string& prefix);

}  // namespace cairn::env
