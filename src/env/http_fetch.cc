#include "env/http_fetch.h"

#include <curl/curl.h>
#include <stdio.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "util/hash.h"

namespace cairn::env {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Easy {
  CURL* h = nullptr;
  curl_slist* headers = nullptr;
  Easy() {
    GlobalInit();
    h = curl_easy_init();
  }
  ~Easy() {
    if (headers != nullptr) curl_slist_free_all(headers);
    if (h != nullptr) curl_easy_cleanup(h);
  }
};

void Configure(Easy& e, const std::string& url, const FetchOptions& options) {
  curl_easy_setopt(e.h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e.h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(e.h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(e.h, CURLOPT_TIMEOUT, options.timeout_seconds);
  curl_easy_setopt(e.h, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_seconds);
  curl_easy_setopt(e.h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e.h, CURLOPT_USERAGENT, "cairn");
  curl_easy_setopt(e.h, CURLOPT_ACCEPT_ENCODING, "");  // gzip where the server offers it
  for (const std::string& h : options.headers) e.headers = curl_slist_append(e.headers, h.c_str());
  if (e.headers != nullptr) curl_easy_setopt(e.h, CURLOPT_HTTPHEADER, e.headers);
}

size_t ToString(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// Retries `attempt` while it fails in a way that may pass (no answer, 5xx).
template <typename F>
auto WithRetries(int retries, F attempt) -> decltype(attempt()) {
  for (int i = 0;; ++i) {
    auto r = attempt();
    const bool transient = !r.ok() && r.status().code() == StatusCode::kUnavailable;
    if (!transient || i >= retries) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(250 << i));
  }
}

}  // namespace

Result<HttpResponse> HttpGet(const std::string& url, const FetchOptions& options) {
  return WithRetries(options.retries, [&]() -> Result<HttpResponse> {
    Easy e;
    if (e.h == nullptr) return Internal("curl_easy_init failed");
    Configure(e, url, options);
    HttpResponse r;
    curl_easy_setopt(e.h, CURLOPT_WRITEFUNCTION, ToString);
    curl_easy_setopt(e.h, CURLOPT_WRITEDATA, &r.body);
    CURLcode rc = curl_easy_perform(e.h);
    if (rc != CURLE_OK) {
      return Unavailable("cannot fetch " + RedactUrl(url) + ": " + curl_easy_strerror(rc));
    }
    curl_easy_getinfo(e.h, CURLINFO_RESPONSE_CODE, &r.status);
    char* type = nullptr;
    curl_easy_getinfo(e.h, CURLINFO_CONTENT_TYPE, &type);
    if (type != nullptr) r.content_type = type;
    char* final_url = nullptr;
    curl_easy_getinfo(e.h, CURLINFO_EFFECTIVE_URL, &final_url);
    r.url = final_url != nullptr ? final_url : url;
    if (r.status >= 500) {
      return Unavailable("fetching " + RedactUrl(url) + ": HTTP " + std::to_string(r.status));
    }
    return r;
  });
}

namespace {

struct Sink {
  FILE* file = nullptr;
  Sha256Hasher hasher;
  int64_t size = 0;
  std::function<void(int64_t, int64_t)>* progress = nullptr;
  int64_t total = -1;
};

size_t ToFile(char* data, size_t size, size_t n, void* out) {
  Sink* sink = static_cast<Sink*>(out);
  const size_t bytes = size * n;
  if (std::fwrite(data, 1, bytes, sink->file) != bytes) return 0;
  sink->hasher.Update(std::string_view(data, bytes));
  sink->size += static_cast<int64_t>(bytes);
  if (sink->progress != nullptr && *sink->progress) (*sink->progress)(sink->size, sink->total);
  return bytes;
}

}  // namespace

Result<Downloaded> HttpDownload(const std::string& url, const std::string& dest_path,
                                const FetchOptions& options,
                                std::function<void(int64_t, int64_t)> progress) {
  return WithRetries(options.retries, [&]() -> Result<Downloaded> {
    Easy e;
    if (e.h == nullptr) return Internal("curl_easy_init failed");
    Configure(e, url, options);
    curl_easy_setopt(e.h, CURLOPT_ACCEPT_ENCODING, nullptr);  // the bytes as they are
    const std::string part = dest_path + ".part-" + RandomHex(6);
    Sink sink;
    sink.file = std::fopen(part.c_str(), "wb");
    if (sink.file == nullptr) return Internal("cannot write " + part);
    sink.progress = &progress;
    curl_easy_setopt(e.h, CURLOPT_WRITEFUNCTION, ToFile);
    curl_easy_setopt(e.h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(e.h, CURLOPT_FAILONERROR, 0L);
    CURLcode rc = curl_easy_perform(e.h);
    const bool closed = std::fclose(sink.file) == 0;
    long status = 0;
    curl_easy_getinfo(e.h, CURLINFO_RESPONSE_CODE, &status);
    auto fail = [&](Status s) {
      unlink(part.c_str());
      return s;
    };
    if (rc != CURLE_OK) {
      return fail(Unavailable("cannot download " + RedactUrl(url) + ": " + curl_easy_strerror(rc)));
    }
    if (!closed) return fail(Internal("writing " + part + " failed"));
    const bool file_url = url.starts_with("file:");
    if (!file_url && status == 404) return fail(NotFound("not found: " + RedactUrl(url)));
    if (!file_url && status >= 500) {
      return fail(Unavailable("downloading " + RedactUrl(url) + ": HTTP " + std::to_string(status)));
    }
    if (!file_url && (status < 200 || status >= 300)) {
      return fail(FailedPrecondition("downloading " + RedactUrl(url) + ": HTTP " +
                                     std::to_string(status)));
    }
    if (std::rename(part.c_str(), dest_path.c_str()) != 0) {
      return fail(Internal("cannot rename " + part + " to " + dest_path));
    }
    return Downloaded{sink.hasher.HexDigest(), sink.size};
  });
}

std::string ResolveUrl(const std::string& base, const std::string& reference) {
  GlobalInit();
  CURLU* u = curl_url();
  std::string out = reference;
  if (curl_url_set(u, CURLUPART_URL, base.c_str(), 0) == CURLUE_OK &&
      curl_url_set(u, CURLUPART_URL, reference.c_str(), 0) == CURLUE_OK) {
    char* resolved = nullptr;
    if (curl_url_get(u, CURLUPART_URL, &resolved, 0) == CURLUE_OK) {
      out = resolved;
      curl_free(resolved);
    }
  }
  curl_url_cleanup(u);
  return out;
}

std::string RedactUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t host_start = scheme + 3;
  const size_t path = url.find('/', host_start);
  const size_t at = url.rfind('@', path == std::string::npos ? std::string::npos : path);
  if (at == std::string::npos || at < host_start) return url;
  return url.substr(0, host_start) + url.substr(at + 1);
}

}  // namespace cairn::env
