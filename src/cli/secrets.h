// Passwords and tokens as the command line takes them: typed at the terminal without echo, or
// read from a file that only its owner may read.
#pragma once

#include <string>

#include "util/status.h"

namespace cairn::cli {

// Reads a line from the terminal with echo off; with `confirm`, asks twice and compares.
// kFailedPrecondition when there is no terminal to ask.
Result<std::string> ReadPasswordFromTerminal(const std::string& prompt, bool confirm);
// The first line of `path`. kPermissionDenied when the file may be read by its group or others.
Result<std::string> ReadSecretFile(const std::string& path);
// --password-file when given, else the terminal.
Result<std::string> ReadPassword(const std::string& password_file, const std::string& prompt,
                                 bool confirm);

}  // namespace cairn::cli
