// `cairn server`: run the tracking server in the foreground until SIGINT or SIGTERM.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cli/commands.h"
#include "server/server.h"
#include "util/log.h"

namespace cairn::cli {
namespace {

struct ServerFlags {
  std::string host = "127.0.0.1";
  int port = 5000;
  std::string data_dir;
  std::string backend_store_uri;
  std::string artifacts_destination;
  std::string default_artifact_root;
  bool serve_artifacts = true;
  int workers = 0;
  int threads = 64;
  int run_heartbeat_timeout = 120;
  std::string ui_dir;
  std::string log_level = "info";
};

int RunServer(ServerFlags flags) {
  LogLevel level;
  if (!ParseLogLevel(flags.log_level, &level)) {
    std::fprintf(stderr, "error: --log-level must be debug, info, warning or error\n");
    return 2;
  }
  SetLogLevel(level);
  if (flags.data_dir.empty()) {
    const char* home = std::getenv("CAIRN_HOME");
    flags.data_dir = home != nullptr && *home != '\0' ? home : "./.cairn";
  }
  server::ServerOptions options;
  options.host = flags.host;
  options.port = flags.port;
  options.threads = flags.threads;
  options.run_heartbeat_timeout_seconds = flags.run_heartbeat_timeout;
  options.ui_dir = flags.ui_dir;
  options.backend_store_uri = flags.backend_store_uri.empty()
                                  ? "sqlite:///" + flags.data_dir + "/cairn.db"
                                  : flags.backend_store_uri;
  options.artifacts_destination = flags.artifacts_destination.empty()
                                      ? flags.data_dir + "/artifacts"
                                      : flags.artifacts_destination;
  if (!flags.default_artifact_root.empty()) {
    LogWarning("--default-artifact-root is accepted for compatibility; artifacts are served by "
               "this server from --artifacts-destination");
  }

  // Signals are taken by a watcher thread, so block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Result<std::unique_ptr<server::Server>> srv = server::Server::Open(options);
  if (!srv.ok()) {
    std::fprintf(stderr, "error: %s\n", srv.status().message().c_str());
    return 1;
  }
  server::Server* s = srv->get();
  std::printf("cairn server listening on %s (store %s, artifacts %s)\n", s->url().c_str(),
              options.backend_store_uri.c_str(), options.artifacts_destination.c_str());
  if (s->ui_dir().empty()) {
    std::printf("web UI not built (make build builds it); %s/ says how\n", s->url().c_str());
  } else {
    std::printf("open %s/ in a browser for the web UI\n", s->url().c_str());
  }
  std::fflush(stdout);

  std::thread watcher([&signals, s] {
    int sig = 0;
    sigwait(&signals, &sig);
    LogInfo(sig == SIGINT ? "SIGINT: finishing requests in flight, then stopping"
                          : "SIGTERM: finishing requests in flight, then stopping");
    s->Stop();
  });
  s->Serve();
  // Serve() can also return on its own (a listen error); wake the watcher so it can be joined.
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  srv->reset();
  LogInfo("stopped; store closed");
  return 0;
}

}  // namespace

void RegisterServer(CLI::App& app, Action* action) {
  auto flags = std::make_shared<ServerFlags>();
  CLI::App* cmd = app.add_subcommand(
      "server",
      "Run the tracking server: the MLflow REST API (/api/2.0/mlflow/...), the artifact\n"
      "proxy (/api/2.0/mlflow-artifacts/...) and the web UI at /. MLflow clients log to it\n"
      "with MLFLOW_TRACKING_URI=http://HOST:PORT. Stops cleanly on Ctrl-C or SIGTERM.");
  cmd->add_option("--host", flags->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port,-p", flags->port, "Port to listen on; 0 picks a free port")
      ->capture_default_str();
  cmd->add_option("--data-dir", flags->data_dir,
                  "Directory for the embedded store and artifacts (default $CAIRN_HOME, else "
                  "./.cairn)");
  cmd->add_option("--backend-store-uri", flags->backend_store_uri,
                  "Metadata store: sqlite:///PATH or memory: (default "
                  "sqlite:///<data-dir>/cairn.db)");
  cmd->add_option("--artifacts-destination", flags->artifacts_destination,
                  "Directory that holds artifact blobs (default <data-dir>/artifacts)");
  cmd->add_option("--default-artifact-root", flags->default_artifact_root,
                  "Accepted for compatibility with `mlflow server`; artifacts are always served "
                  "through this server");
  cmd->add_flag("--serve-artifacts,!--no-serve-artifacts", flags->serve_artifacts,
                "Accepted for compatibility with `mlflow server`; artifacts are always served");
  cmd->add_option("--workers,-w", flags->workers,
                  "Accepted for compatibility with `mlflow server` and ignored: one process "
                  "serves all connections");
  cmd->add_option("--threads", flags->threads, "Connections served at once")
      ->capture_default_str()
      ->check(CLI::Range(2, 4096));
  cmd->add_option("--run-heartbeat-timeout", flags->run_heartbeat_timeout,
                  "Seconds without a heartbeat after which a run started by `cairn run` is "
                  "marked FAILED (its wrapper or host died); 0 never does")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400 * 365));
  cmd->add_option("--ui-dir", flags->ui_dir,
                  "The built web UI to serve at / (default $CAIRN_UI_DIR, else web/dist of the "
                  "source tree the binary was built in)");
  cmd->add_option("--log-level", flags->log_level, "debug, info, warning or error")
      ->capture_default_str();
  cmd->callback([flags, action] { *action = [flags] { return RunServer(*flags); }; });
}

}  // namespace cairn::cli
