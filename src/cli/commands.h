// Registration of subcommands with the CLI11 application. Each Register* function adds one
// subcommand and its flags, and sets the action that runs when it is chosen.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace cairn::cli {

// The action of the chosen subcommand; it returns the exit code.
using Action = std::function<int()>;

void RegisterServer(CLI::App& app, Action* action);
// `after_dashes`: the arguments after `cairn run ... --`, split off before parsing.
void RegisterRun(CLI::App& app, Action* action, std::vector<std::string> after_dashes);
void RegisterLogs(CLI::App& app, Action* action);
void RegisterSync(CLI::App& app, Action* action);

}  // namespace cairn::cli
