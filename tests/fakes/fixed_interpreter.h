// Test data: a CPython 3.11 interpreter in a virtual environment on x86-64 Linux, fixed, so
// that a snapshot's text can be compared byte for byte.
#pragma once

#include "env/python_env.h"

namespace cairn::fakes {

inline env::InterpreterInfo FixedInterpreter() {
  env::InterpreterInfo i;
  i.executable = "/opt/venv/bin/python";
  i.real_executable = "/usr/bin/python3.11";
  i.version = "3.11.2";
  i.implementation = "cpython";
  i.sys_platform = "linux";
  i.platform = "linux-x86_64";
  i.soabi = "cpython-311-x86_64-linux-gnu";
  i.ext_suffix = ".cpython-311-x86_64-linux-gnu.so";
  i.python_tag = "cp311";
  i.abi_tag = "cp311";
  i.platform_tags = {"manylinux_2_36_x86_64", "linux_x86_64"};
  i.prefix = "/opt/venv";
  i.base_prefix = "/usr";
  i.in_venv = true;
  i.path_dirs = {"/usr/lib/python3.11", "/opt/venv/lib/python3.11/site-packages"};
  return i;
}

}  // namespace cairn::fakes
