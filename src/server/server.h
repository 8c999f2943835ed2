// The cairn tracking server: MLflow's REST API, the artifact proxy, cairn's own API and the web
// UI over HTTP/1.1 (or HTTPS), on the event-driven edge of server/http_server.h.
//
// Open() opens the stores and binds the socket (port 0 picks a free port); Serve() answers
// requests until Stop(). Stop() may be called from any thread (a signal watcher): it stops
// accepting, lets requests in flight finish (up to limits.shutdown_grace), and Serve()
// returns; the stores flush and close when the Server is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/identity.h"
#include "core/retention.h"
#include "server/http_server.h"
#include "util/status.h"

namespace cairn::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 5000;
  std::string backend_store_uri;      // e.g. sqlite:///data/cairn.db
  std::string artifacts_destination;  // e.g. /data/artifacts
  int threads = 32;                   // requests handled at once
  int io_threads = 0;                 // 0: one per core
  HttpLimits limits;
  // Largest artifact upload; a larger one is refused and nothing of it is kept.
  uint64_t max_upload_bytes = uint64_t{10} << 30;
  // Extra names the Host header may carry, and the origins allowed cross-origin requests
  // (server/cross_site.h).
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> cors_origins;
  std::string tls_cert_file;  // both set: HTTPS
  std::string tls_key_file;
  // RUNNING runs of `cairn run` whose heartbeat is older than this are marked FAILED
  // (service::TrackingService::FailStaleRuns); 0 turns that off.
  int run_heartbeat_timeout_seconds = 120;
  // Every this often, the retention rules are applied and the blobs no artifact names are
  // collected (POST gc); 0 turns that off.
  int64_t gc_interval_seconds = 86400;
  // Server-wide retention rules (core/retention.h), before each experiment's own.
  std::vector<core::RetentionRule> retention;
  // A built web UI to serve at "/" instead of the one built into the binary (UI development).
  std::string ui_dir;
  // Identity (service/access_service.h). With `auth`, every API request needs credentials; a
  // bind other than loopback is refused without it unless `insecure_no_auth`.
  bool auth = false;
  bool insecure_no_auth = false;
  core::Permission default_permission = core::Permission::kRead;
  bool audit_reads = false;
  // Created at start as an admin when no account has this name.
  std::string init_admin;
  std::string init_admin_password;
  // URI schemes a model version's source may use without its files being copied into the
  // server (service::RegistryOptions); empty: only the server's own artifacts.
  std::vector<std::string> model_source_schemes;
};

// Whether a listening address reaches this machine only.
bool IsLoopback(std::string_view host);

// MLflow's cap on JSON request bodies.
inline constexpr uint64_t kMaxJsonBody = 1'000'000;

class Server {
 public:
  static Result<std::unique_ptr<Server>> Open(const ServerOptions& options);
  ~Server();

  int port() const;
  std::string url() const;
  // Where the web UI comes from: a directory, "built in", or "" when there is none.
  std::string ui_source() const;
  // Serves until Stop(); true when every request in flight finished within the grace period.
  bool Serve();
  void Stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The version string /version answers.
const char* Version();

}  // namespace cairn::server
