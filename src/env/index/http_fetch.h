// HTTP(S) and file:// GETs for package indexes and wheels, over libcurl (kept out of this
// header). Every call uses its own curl handle, so any function here may be called from any
// thread at once. Proxies come from the usual environment variables (https_proxy, no_proxy),
// credentials from the URL (https://user:token@host/...) or ~/.netrc; messages never show them.
//
// file:// URLs behave like a small static server: a missing file answers 404, a directory
// answers its index.html (as pip reads a file:// index), and a readable file 200.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "util/status.h"

namespace cairn::env {

struct HttpResponse {
  long status = 0;           // HTTP status; 200/404 for file:// URLs
  std::string body;          // decoded (gzip/deflate are undone)
  std::string content_type;  // the Content-Type header as sent; empty if none
  std::string url;           // the final URL, after redirects
};

struct FetchOptions {
  std::vector<std::string> headers;  // extra request headers, "Name: value"
  // HttpGet: the whole request. HttpDownload: the longest stall (no byte arriving), since a
  // large wheel over a slow link may rightly take longer than any fixed total.
  long timeout_seconds = 300;
  long connect_timeout_seconds = 30;
  // Extra attempts after a transient failure (no connection, reset, timeout, HTTP 5xx or 429),
  // waiting 0.25 s, 0.5 s, 1 s, ... between them.
  int retries = 2;
};

// GET into memory, following up to 10 redirects (https→http and to file:// are refused). An
// HTTP error status is a response, not an error (after the retries for 5xx). Errors:
// kUnavailable, naming the URL and curl's reason, when no answer came after the retries;
// kInvalidArgument for a malformed URL or an unsupported scheme.
Result<HttpResponse> HttpGet(const std::string& url, const FetchOptions& options = {});

struct Downloaded {
  std::string sha256;  // lowercase hex of the bytes written
  int64_t size = 0;
};

// Downloads `url` to `dest_path` (creating its directory), streaming through dest_path +
// ".part-<random>" (fsynced, then renamed into place, so dest_path is either absent or complete)
// and hashing as it goes. Errors, each naming the URL: kNotFound for 404 (or a missing file://
// file), kUnavailable for no answer or 5xx after the retries, kFailedPrecondition for other non-2xx
// statuses, kInvalidArgument for a bad URL, or the errno status of a failed local write. On error
// no file is left behind. `progress(bytes so far, total or -1)` is called now and then (at most ~10
// times a second, and once at the end) on the calling thread.
Result<Downloaded> HttpDownload(const std::string& url, const std::string& dest_path,
                                const FetchOptions& options = {},
                                std::function<void(int64_t, int64_t)> progress = {});

// `reference` resolved against `base` by RFC 3986 section 5 (absolute URLs, "//host/x",
// "/path", "../x", "x?q", "#frag", ""), keeping the fragment. Bytes a URL cannot hold (spaces,
// controls, non-ASCII, "<>\"{}|\\^`") are percent-encoded; existing escapes are kept as they
// are. A `base` without a scheme is treated as a path.
std::string ResolveUrl(const std::string& base, const std::string& reference);

// The URL without its credentials ("https://user:pw@host/x" → "https://host/x"), for messages
// and lock files. Works on any text: each "scheme://user:pw@" in it loses its "user:pw@".
std::string RedactUrl(const std::string& url);

}  // namespace cairn::env
