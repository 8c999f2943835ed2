// An HTTP server for tests that need one to talk to (package indexes, downloads): cpp-httplib on
// 127.0.0.1 and a free port, in a background thread, counting requests and remembering the
// Accept header by path. Handlers are registered on http() before Start().
#pragma once

#include <httplib.h>

#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace cairn::fakes {

class HttpTestServer {
 public:
  HttpTestServer();
  ~HttpTestServer();
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  httplib::Server& http() { return http_; }
  // Binds and serves; aborts the test binary when no port can be bound.
  void Start();
  std::string Url(const std::string& path) const;
  int Count(const std::string& path);
  std::string Accept(const std::string& path);

 private:
  httplib::Server http_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, int> counts_;
  std::map<std::string, std::string> accept_;
};

}  // namespace cairn::fakes
