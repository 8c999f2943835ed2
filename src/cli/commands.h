// Registration of subcommands with the CLI11 application. Each Register* function adds one
// subcommand and its flags, and sets the action that runs when it is chosen.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "util/status.h"

namespace cairn::client {
class TrackingClient;
}

namespace cairn::cli {

// Adds --tracking-uri, with the same help for every command that talks to a server.
void AddTrackingUriOption(CLI::App* cmd, std::string* uri);
// The client for a --tracking-uri value (resolved through CAIRN_TRACKING_URI,
// MLFLOW_TRACKING_URI and the default); nullptr after printing why when the URI is unusable.
std::unique_ptr<client::TrackingClient> ConnectOrExplain(const std::string& tracking_uri_flag);

// The action of the chosen subcommand; it returns the exit code.
using Action = std::function<int()>;

// Adds subcommand `name` to `group` with fresh flags; when it is chosen, `action` becomes
// `run` on the flags as parsed. The caller adds the subcommand's options.
template <typename Flags>
std::pair<CLI::App*, std::shared_ptr<Flags>> AddSubcommand(CLI::App* group, Action* action,
                                                           const std::string& name,
                                                           const std::string& help,
                                                           std::function<int(const Flags&)> run) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = group->add_subcommand(name, help);
  cmd->callback([flags, action, run] { *action = [flags, run] { return run(*flags); }; });
  return {cmd, flags};
}

// Under an agent (CAIRN_AGENT_PID names it), makes this process end with the agent: a
// SIGTERM when the agent dies stops the command and ends the run KILLED, rather than leaving
// it running after its task was queued again elsewhere. False when the agent is gone already.
bool FollowAgent();

// A server's data directory: `given`, else $CAIRN_HOME, else ./.cairn.
std::string DataDir(const std::string& given);

// A cache collection's --max-age: "30d", "12h", ... in milliseconds; "0" is 0 (no limit).
// InvalidArgument naming the flag otherwise.
Result<int64_t> ParseMaxAge(const std::string& text);

// Writes text to stdout as it is; "error: MESSAGE" to stderr.
void PrintText(const std::string& text);
void PrintError(const Status& status);

void RegisterServer(CLI::App& app, Action* action);
// `after_dashes`: the arguments after `cairn run ... --`, split off before parsing.
void RegisterRun(CLI::App& app, Action* action, std::vector<std::string> after_dashes);
void RegisterLogs(CLI::App& app, Action* action);
// `cairn experiments ls` and `cairn runs ls|show|compare|diff-env`.
void RegisterExperiments(CLI::App& app, Action* action);
void RegisterRuns(CLI::App& app, Action* action);
// `cairn models ls|show|promote|rollback|history`.
void RegisterModels(CLI::App& app, Action* action);
void RegisterTask(CLI::App& app, Action* action);
void RegisterQueue(CLI::App& app, Action* action);
void RegisterAgent(CLI::App& app, Action* action);
// `cairn clone RUN` and `cairn reproduce RUN`.
void RegisterClone(CLI::App& app, Action* action);
void RegisterReproduce(CLI::App& app, Action* action);
void RegisterSync(CLI::App& app, Action* action);
// `cairn env ...`; `after_dashes` as for run (`cairn env exec -- COMMAND`).
void RegisterEnv(CLI::App& app, Action* action, std::vector<std::string> after_dashes);
// `cairn pipeline validate|run|resume|explain|status|ls|gc`.
void RegisterPipeline(CLI::App& app, Action* action);
// Identity: `cairn login`, `cairn token create|ls|revoke`, `cairn audit` (through a server's
// API) and `cairn admin create-user|set-password` (on a server's store directly).
void RegisterLogin(CLI::App& app, Action* action);
void RegisterToken(CLI::App& app, Action* action);
void RegisterAudit(CLI::App& app, Action* action);
void RegisterAdmin(CLI::App& app, Action* action);
void RegisterVerifyStore(CLI::App& app, Action* action);
// `cairn backup DEST` and `cairn restore SRC --data-dir DIR`.
void RegisterBackup(CLI::App& app, Action* action);
// `cairn retention set|clear EXPERIMENT`.
void RegisterRetention(CLI::App& app, Action* action);
// `cairn data add|ls|get|diff|verify`.
void RegisterData(CLI::App& app, Action* action);
void RegisterGc(CLI::App& app, Action* action);
void RegisterStorage(CLI::App& app, Action* action);

}  // namespace cairn::cli
