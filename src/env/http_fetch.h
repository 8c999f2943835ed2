// HTTP(S) and file:// downloads with libcurl, for package indexes and wheels.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "util/status.h"

namespace cairn::env {

struct HttpResponse {
  long status = 0;
  std::string body;
  std::string content_type;
  std::string url;  // the final URL, after redirects
};

struct FetchOptions {
  std::vector<std::string> headers;  // "Name: value"
  long timeout_seconds = 300;
  long connect_timeout_seconds = 30;
  int retries = 2;  // after connection failures and 5xx answers, with backoff
};

// GET into memory, following up to 10 redirects. An HTTP error status is a response, not an
// error; kUnavailable, naming the URL, when no answer came (after the retries).
Result<HttpResponse> HttpGet(const std::string& url, const FetchOptions& options = {});

struct Downloaded {
  std::string sha256;
  int64_t size = 0;
};

// Downloads `url` to `dest_path` (through a temporary file renamed into place), hashing as it
// streams. kNotFound for 404, kUnavailable for no answer or 5xx (after the retries),
// kFailedPrecondition for other statuses; each names the URL. `progress(bytes, total or -1)`.
Result<Downloaded> HttpDownload(const std::string& url, const std::string& dest_path,
                                const FetchOptions& options = {},
                                std::function<void(int64_t, int64_t)> progress = {});

// `reference` resolved against `base` (RFC 3986).
std::string ResolveUrl(const std::string& base, const std::string& reference);
// The URL without credentials (user:password@), for messages and lock files.
std::string RedactUrl(const std::string& url);

}  // namespace cairn::env
