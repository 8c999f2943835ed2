// Running shell commands and reading files back in tests, where a failure is an expectation
// that fails rather than a Status to handle.
#pragma once

#include <filesystem>
#include <string>

namespace cairn::fakes {

struct ShellRun {
  int code = -1;    // the exit code, or 128 + the signal
  std::string out;  // stdout and stderr together
};

// Runs `command` with /bin/sh, its stderr joined to its stdout.
ShellRun RunShell(const std::string& command);

// A file's bytes; "" when it cannot be read.
std::string Slurp(const std::filesystem::path& path);

}  // namespace cairn::fakes
