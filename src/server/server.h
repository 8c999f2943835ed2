// The cairn tracking server: MLflow's REST API and the artifact proxy over HTTP/1.1.
//
// Open() opens the stores and binds the socket (port 0 picks a free port); Serve() answers
// requests on a thread pool until Stop(). Stop() may be called from any thread (a signal
// watcher): it stops accepting, lets requests in flight finish, and Serve() returns; the
// stores close when the Server is destroyed.
#pragma once

#include <memory>
#include <string>

#include "util/status.h"

namespace cairn::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 5000;
  std::string backend_store_uri;      // e.g. sqlite:///data/cairn.db
  std::string artifacts_destination;  // e.g. /data/artifacts
  int threads = 64;                   // connections served at once (keep-alive holds one)
  // RUNNING runs of `cairn run` whose heartbeat is older than this are marked FAILED
  // (service::TrackingService::FailStaleRuns); 0 turns that off.
  int run_heartbeat_timeout_seconds = 120;
  // The built web UI served at "/" (web/dist); empty: UiFiles::DefaultDir().
  std::string ui_dir;
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> Open(const ServerOptions& options);
  ~Server();

  int port() const;
  std::string url() const;
  // The directory the web UI is served from; "" when no built UI was found.
  std::string ui_dir() const;
  void Serve();
  void Stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The version string /version answers.
const char* Version();

}  // namespace cairn::server
