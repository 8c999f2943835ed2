#include "cli/cli.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "cli/commands.h"
#include "client/tracking_client.h"
#include "core/retention.h"
#include "server/server.h"

namespace cairn::cli {

void AddTrackingUriOption(CLI::App* cmd, std::string* uri) {
  cmd->add_option("--tracking-uri", *uri,
                  "Tracking server (default $CAIRN_TRACKING_URI, else $MLFLOW_TRACKING_URI, "
                  "else http://127.0.0.1:5000)");
  // Passed on through the environment, so that the clients of processes cairn starts (a
  // training script under `cairn run`) trust the same authority.
  cmd->add_option_function<std::string>(
         "--ca-cert", [](const std::string& file) { setenv("CAIRN_CA_BUNDLE", file.c_str(), 1); },
         "PEM file of the certificate authority an https:// tracking server's certificate "
         "chains to (default $CAIRN_CA_BUNDLE, else the system's)")
      ->check(CLI::ExistingFile);
}

void PrintText(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

std::string DataDir(const std::string& given) {
  if (!given.empty()) return given;
  const char* home = std::getenv("CAIRN_HOME");
  return home != nullptr && *home != '\0' ? home : "./.cairn";
}

Result<int64_t> ParseMaxAge(const std::string& text) {
  if (text == "0") return int64_t{0};
  Result<int64_t> age = core::ParseRetentionAge(text);
  if (!age.ok()) return InvalidArgument("--max-age: " + age.status().message());
  return age;
}

void PrintError(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
}

std::unique_ptr<client::TrackingClient> ConnectOrExplain(const std::string& tracking_uri_flag) {
  client::ClientOptions options;
  options.tracking_uri = client::ResolveTrackingUri(tracking_uri_flag);
  auto client = client::TrackingClient::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "error: %s\n", client.status().message().c_str());
    return nullptr;
  }
  return std::move(client).value();
}

int Main(int argc, char** argv) {
  CLI::App app{
      "cairn: reproducible machine learning. Records runs (MLflow-compatible tracking server),\n"
      "pins environments and runs pipelines."};
  app.set_version_flag("--version", std::string("cairn ") + server::Version());
  app.require_subcommand(1);
  Action action;
  RegisterServer(app, &action);
  // `cairn run [OPTIONS] -- COMMAND` and `cairn env exec -- COMMAND`: the command after "--" is
  // kept away from option parsing.
  int parsed = argc;
  std::vector<std::string> after_dashes;
  const bool wraps =
      argc > 1 &&
      (std::string_view(argv[1]) == "run" ||
       (argc > 2 && std::string_view(argv[1]) == "env" && std::string_view(argv[2]) == "exec"));
  if (wraps) {
    for (int i = 2; i < argc; ++i) {
      if (std::string_view(argv[i]) == "--") {
        after_dashes.assign(argv + i + 1, argv + argc);
        parsed = i;
        break;
      }
    }
  }
  const bool env_exec = argc > 1 && std::string_view(argv[1]) == "env";
  RegisterRun(app, &action, env_exec ? std::vector<std::string>() : after_dashes);
  RegisterEnv(app, &action, env_exec ? std::move(after_dashes) : std::vector<std::string>());
  RegisterLogs(app, &action);
  RegisterExperiments(app, &action);
  RegisterRuns(app, &action);
  RegisterModels(app, &action);
  RegisterData(app, &action);
  RegisterTask(app, &action);
  RegisterQueue(app, &action);
  RegisterAgent(app, &action);
  RegisterClone(app, &action);
  RegisterReproduce(app, &action);
  RegisterSync(app, &action);
  RegisterPipeline(app, &action);
  RegisterLogin(app, &action);
  RegisterToken(app, &action);
  RegisterAudit(app, &action);
  RegisterAdmin(app, &action);
  RegisterVerifyStore(app, &action);
  RegisterGc(app, &action);
  RegisterStorage(app, &action);
  RegisterBackup(app, &action);
  RegisterRetention(app, &action);
  try {
    app.parse(parsed, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return action ? action() : 0;
}

}  // namespace cairn::cli
