// Registration of subcommands with the CLI11 application. Each Register* function adds one
// subcommand and its flags, and sets the action that runs when it is chosen.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace cairn::cli {

// The action of the chosen subcommand; it returns the exit code.
using Action = std::function<int()>;

void RegisterServer(CLI::App& app, Action* action);

}  // namespace cairn::cli
