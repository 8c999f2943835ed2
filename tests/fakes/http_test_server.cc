#include "fakes/http_test_server.h"

#include <cstdio>
#include <cstdlib>

namespace cairn::fakes {

HttpTestServer::HttpTestServer() {
  http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[req.path];
    accept_[req.path] = req.get_header_value("Accept");
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

HttpTestServer::~HttpTestServer() {
  if (!thread_.joinable()) return;
  while (!http_.is_running()) std::this_thread::yield();
  http_.stop();
  thread_.join();
}

void HttpTestServer::Start() {
  port_ = http_.bind_to_any_port("127.0.0.1");
  if (port_ <= 0) {
    std::fprintf(stderr, "HttpTestServer: cannot bind a port on 127.0.0.1\n");
    std::abort();
  }
  thread_ = std::thread([this] { http_.listen_after_bind(); });
}

std::string HttpTestServer::Url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

int HttpTestServer::Count(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_[path];
}

std::string HttpTestServer::Accept(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return accept_[path];
}

}  // namespace cairn::fakes
