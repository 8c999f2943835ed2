// `cairn server`: run the tracking server in the foreground until SIGINT or SIGTERM.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/retention_file.h"
#include "cli/secrets.h"
#include "server/server.h"
#include "util/log.h"
#include "util/strings.h"

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
  int threads = 32;
  int io_threads = 0;
  int run_heartbeat_timeout = 120;
  int64_t gc_interval = 86400;
  std::string retention;
  std::string ui_dir;
  std::string log_level = "info";
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> cors_origins;
  std::vector<std::string> model_source_schemes;
  std::string tls_cert;
  std::string tls_key;
  int max_header_bytes = 16 << 10;
  int max_headers = 100;
  double header_timeout = 10;
  double idle_timeout = 60;
  int max_connections = 10'000;
  std::string max_upload = "10G";
  double shutdown_grace = 30;
  std::string auth = "off";
  bool insecure_no_auth = false;
  std::string default_permission = "READ";
  bool audit_reads = false;
  std::string init_admin;
  std::string password_file;
};

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// "10G", "512M", "64K", "1000": bytes, powers of 1024.
bool ParseSize(const std::string& text, uint64_t* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  std::string unit = text.substr(used);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  int shift = 0;
  if (unit == "K" || unit == "k" || unit == "Ki") shift = 10;
  else if (unit == "M" || unit == "m" || unit == "Mi") shift = 20;
  else if (unit == "G" || unit == "g" || unit == "Gi") shift = 30;
  else if (unit == "T" || unit == "t" || unit == "Ti") shift = 40;
  else if (!unit.empty()) return false;
  if (shift > 0 && n > (UINT64_MAX >> shift)) return false;
  *out = static_cast<uint64_t>(n) << shift;
  return true;
}

// --auth and its company; an exit code when a flag is wrong or the admin's password cannot be
// read, else 0.
int ApplyIdentityFlags(const ServerFlags& flags, server::ServerOptions* options_out) {
  server::ServerOptions& options = *options_out;
  options.auth = flags.auth == "on";
  options.insecure_no_auth = flags.insecure_no_auth;
  options.audit_reads = flags.audit_reads;
  if (!core::ParsePermission(flags.default_permission, &options.default_permission)) {
    std::fprintf(stderr, "error: --default-permission must be READ, EDIT, MANAGE or "
                         "NO_PERMISSIONS\n");
    return 2;
  }
  if (!flags.init_admin.empty()) {
    if (!options.auth) {
      std::fprintf(stderr, "error: --init-admin needs --auth on: without authentication "
                           "nobody signs in\n");
      return 2;
    }
    Result<std::string> password = ReadPassword(
        flags.password_file, "Password for the admin " + flags.init_admin + ": ", true);
    if (!password.ok()) {
      std::fprintf(stderr, "error: %s\n", password.status().message().c_str());
      return 2;
    }
    options.init_admin = flags.init_admin;
    options.init_admin_password = *password;
  }
  return 0;
}

int RunServer(ServerFlags flags) {
  LogLevel level;
  if (!ParseLogLevel(flags.log_level, &level)) {
    std::fprintf(stderr, "error: --log-level must be debug, info, warning or error\n");
    return 2;
  }
  SetLogLevel(level);
  flags.data_dir = DataDir(flags.data_dir);
  server::ServerOptions options;
  options.host = flags.host;
  options.port = flags.port;
  options.threads = flags.threads;
  options.io_threads = flags.io_threads;
  options.allowed_hosts = flags.allowed_hosts;
  options.cors_origins = flags.cors_origins;
  for (const std::string& scheme : flags.model_source_schemes) {
    options.model_source_schemes.push_back(AsciiLower(scheme));
  }
  options.tls_cert_file = flags.tls_cert;
  options.tls_key_file = flags.tls_key;
  options.limits.max_header_bytes = static_cast<size_t>(flags.max_header_bytes);
  options.limits.max_headers = static_cast<size_t>(flags.max_headers);
  options.limits.header_timeout = Millis(flags.header_timeout);
  options.limits.idle_timeout = Millis(flags.idle_timeout);
  options.limits.max_connections = static_cast<size_t>(flags.max_connections);
  options.limits.shutdown_grace = Millis(flags.shutdown_grace);
  if (!ParseSize(flags.max_upload, &options.max_upload_bytes)) {
    std::fprintf(stderr, "error: --max-upload takes a size such as 10G, 512M or 1000000\n");
    return 2;
  }
  if (int code = ApplyIdentityFlags(flags, &options); code != 0) return code;
  options.run_heartbeat_timeout_seconds = flags.run_heartbeat_timeout;
  options.gc_interval_seconds = flags.gc_interval;
  if (!flags.retention.empty()) {
    Result<std::string> json = ReadRetentionFile(flags.retention);
    if (!json.ok()) {
      std::fprintf(stderr, "error: --retention: %s\n", json.status().message().c_str());
      return 2;
    }
    options.retention = *core::ParseRetentionRules(*json);
  }
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
  if (s->ui_source().empty()) {
    std::printf("this binary has no web UI (make build builds one in); %s/ says how\n",
                s->url().c_str());
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
  const bool clean = s->Serve();
  watcher.join();
  if (!clean) LogWarning("requests still in flight at the end of the grace period were cut off");
  srv->reset();
  LogInfo("stopped; store closed");
  return 0;
}

void AddIdentityOptions(CLI::App* cmd, ServerFlags* flags) {
  cmd->add_option("--auth", flags->auth,
                  "on: every API request needs credentials (a password, a token or a browser "
                  "session); off: every request acts as a local admin. Off is refused on an "
                  "address other machines reach, unless --insecure-no-auth")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_flag("--insecure-no-auth", flags->insecure_no_auth,
                "Listen beyond loopback with --auth off: anyone who reaches the port may read "
                "and delete every run");
  cmd->add_option("--default-permission", flags->default_permission,
                  "What a user may do on an experiment, registered model or dataset where "
                  "nothing is granted: READ, EDIT, "
                  "MANAGE or NO_PERMISSIONS")
      ->capture_default_str();
  cmd->add_flag("--audit-reads", flags->audit_reads,
                "Write reads to the audit log too (changes are always written)");
  cmd->add_option("--init-admin", flags->init_admin,
                  "Create this admin account at start unless it exists; its password is read "
                  "from the terminal or --password-file (needs --auth on)");
  cmd->add_option("--password-file", flags->password_file,
                  "File whose first line is the --init-admin password (mode 0600)");
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
  cmd->add_option("--threads", flags->threads,
                  "Requests handled at once (handler threads); connections hold no thread")
      ->capture_default_str()
      ->check(CLI::Range(2, 4096));
  cmd->add_option("--io-threads", flags->io_threads,
                  "Threads that carry connections' I/O (default: one per core)")
      ->check(CLI::Range(0, 256));
  cmd->add_option("--allowed-hosts", flags->allowed_hosts,
                  "Names the Host header may carry besides localhost, IP addresses, this "
                  "machine's name and --host (DNS-rebinding protection); '*.example.com' "
                  "allows a domain, '*' any name. Comma-separated or repeated")
      ->delimiter(',');
  cmd->add_option("--cors-origins", flags->cors_origins,
                  "Origins (https://notebooks.example.com) whose pages may call the API from a "
                  "browser; off by default, '*' allows any. Comma-separated or repeated")
      ->delimiter(',');
  cmd->add_option("--allow-model-source", flags->model_source_schemes,
                  "URI schemes (s3, gs, https) a registered model version's source may use; "
                  "its files then stay there instead of being copied from the server's own "
                  "artifacts. Off by default. Comma-separated or repeated")
      ->delimiter(',');
  cmd->add_option("--tls-cert", flags->tls_cert,
                  "PEM certificate chain: serve HTTPS (with --tls-key)");
  cmd->add_option("--tls-key", flags->tls_key, "PEM private key for --tls-cert");
  cmd->add_option("--max-header-bytes", flags->max_header_bytes,
                  "Largest request line plus headers; larger gets 431")
      ->capture_default_str()
      ->check(CLI::Range(1024, 1 << 20));
  cmd->add_option("--max-headers", flags->max_headers,
                  "Most header fields in a request; more gets 431")
      ->capture_default_str()
      ->check(CLI::Range(8, 10000));
  cmd->add_option("--header-timeout", flags->header_timeout,
                  "Seconds from a request's first byte to its last header; slower gets 408")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--idle-timeout", flags->idle_timeout,
                  "Seconds an idle keep-alive connection stays open")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--max-connections", flags->max_connections,
                  "Open connections at most; more are answered 503 and closed")
      ->capture_default_str()
      ->check(CLI::Range(16, 1'000'000));
  cmd->add_option("--max-upload", flags->max_upload,
                  "Largest artifact upload (K, M, G, T suffixes); larger gets 413 and nothing "
                  "of it is kept")
      ->capture_default_str();
  cmd->add_option("--shutdown-grace", flags->shutdown_grace,
                  "Seconds that requests in flight get to finish after SIGTERM or Ctrl-C")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--gc-interval", flags->gc_interval,
                  "Seconds between collections: the retention rules applied, then the blobs no "
                  "artifact names (older than an hour) removed; 0 turns them off")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{365} * 86400));
  cmd->add_option("--retention", flags->retention,
                  "YAML file of server-wide retention rules, applied to every experiment before "
                  "its own: a list, or a cairn.yaml with a retention section (docs/retention.md)");
  cmd->add_option("--run-heartbeat-timeout", flags->run_heartbeat_timeout,
                  "Seconds without a heartbeat after which a run started by `cairn run` is "
                  "marked FAILED (its wrapper or host died); 0 never does")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400 * 365));
  AddIdentityOptions(cmd, flags.get());
  cmd->add_option("--ui-dir", flags->ui_dir,
                  "Serve the web UI from this directory (a web/dist being developed) instead of "
                  "the one built into the binary (default $CAIRN_UI_DIR when set)");
  cmd->add_option("--log-level", flags->log_level, "debug, info, warning or error")
      ->capture_default_str();
  cmd->callback([flags, action] { *action = [flags] { return RunServer(*flags); }; });
}

}  // namespace cairn::cli
