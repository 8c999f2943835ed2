#include "env/index/http_fetch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "util/curl_api.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/strings.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

constexpr long kMaxRedirects = 10;
constexpr auto kProgressInterval = std::chrono::milliseconds(100);

bool IsFileUrl(std::string_view url) { return StartsWithIgnoreCase(url, "file:"); }

// One curl easy handle, configured for `url`; curl's own message lands in error_.
class Handle {
 public:
  Handle(const std::string& url, const FetchOptions& options) {
    if (!Curl().error.empty()) return;  // h_ stays null: the caller reports Curl().error
    h_ = Curl().easy_init();
    if (h_ == nullptr) return;
    Curl().easy_setopt(h_, CURLOPT_URL, url.c_str());
    Curl().easy_setopt(h_, CURLOPT_ERRORBUFFER, error_);
    Curl().easy_setopt(h_, CURLOPT_NOSIGNAL, 1L);
    Curl().easy_setopt(h_, CURLOPT_FOLLOWLOCATION, 1L);
    Curl().easy_setopt(h_, CURLOPT_MAXREDIRS, kMaxRedirects);
    Curl().easy_setopt(h_, CURLOPT_PROTOCOLS_STR, "http,https,file");
    // A redirect may not leave TLS, nor reach the local disk.
    Curl().easy_setopt(h_, CURLOPT_REDIR_PROTOCOLS_STR,
                     StartsWithIgnoreCase(url, "https:") ? "https" : "http,https");
    Curl().easy_setopt(h_, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_seconds);
    Curl().easy_setopt(h_, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
    Curl().easy_setopt(h_, CURLOPT_USERAGENT, "cairn");
    for (const std::string& header : options.headers) {
      headers_ = Curl().slist_append(headers_, header.c_str());
    }
    if (headers_ != nullptr) Curl().easy_setopt(h_, CURLOPT_HTTPHEADER, headers_);
  }
  ~Handle() {
    if (headers_ != nullptr) Curl().slist_free_all(headers_);
    if (h_ != nullptr) Curl().easy_cleanup(h_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  CURL* get() const { return h_; }

  CURLcode Perform() {
    error_[0] = '\0';
    return Curl().easy_perform(h_);
  }

  std::string Message(CURLcode rc) const {
    return error_[0] != '\0' ? std::string(error_) : std::string(Curl().easy_strerror(rc));
  }

  long ResponseCode() const {
    long status = 0;
    Curl().easy_getinfo(h_, CURLINFO_RESPONSE_CODE, &status);
    return status;
  }

 private:
  CURL* h_ = nullptr;
  curl_slist* headers_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
};

// Failures another attempt may cure; a malformed URL or a bad certificate will not change.
bool IsTransient(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool IsTransientStatus(long status) { return status >= 500 || status == 429; }

Status CurlError(std::string_view verb, const std::string& url, CURLcode rc, const Handle& handle) {
  std::string message =
      std::string(verb) + " " + RedactUrl(url) + ": " + RedactUrl(handle.Message(rc));
  if (rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL) {
    return InvalidArgument(std::move(message));
  }
  return Unavailable(std::move(message));
}

// The outcome of one attempt, and whether another may fare better.
template <typename T>
struct Attempt {
  Result<T> result;
  bool transient = false;
};

template <typename T, typename F>
Result<T> WithRetries(int retries, F attempt) {
  for (int i = 0;; ++i) {
    Attempt<T> a = attempt();
    if (!a.transient || i >= retries) {
      if (!a.result.ok() && a.transient && i > 0) {
        const Status& s = a.result.status();
        return Status(s.code(), s.message() + " (" + std::to_string(i + 1) + " attempts)");
      }
      return std::move(a.result);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250) * (1 << std::min(i, 5)));
  }
}

// What a file:// URL names on the local disk.
struct LocalTarget {
  enum class Kind { kFile, kDirectory, kMissing, kUnknown } kind = Kind::kUnknown;
  std::string path;
};

LocalTarget InspectFileUrl(const std::string& url) {
  LocalTarget target;
  if (!Curl().error.empty()) return target;
  CURLU* u = Curl().url();
  char* path = nullptr;
  if (Curl().url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      Curl().url_get(u, CURLUPART_PATH, &path, CURLU_URLDECODE) == CURLUE_OK) {
    target.path = path;
    Curl().free(path);
  }
  Curl().url_cleanup(u);
  if (target.path.empty()) return target;  // curl will name what is wrong with the URL
  struct stat st {};
  if (stat(target.path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) target.kind = LocalTarget::Kind::kMissing;
    return target;
  }
  target.kind = S_ISDIR(st.st_mode) ? LocalTarget::Kind::kDirectory : LocalTarget::Kind::kFile;
  return target;
}

// A Content-Type for a local file, from its name; empty when unknown.
std::string LocalContentType(std::string_view path) {
  auto ends = [&](std::string_view suffix) {
    return path.size() >= suffix.size() &&
           StartsWithIgnoreCase(path.substr(path.size() - suffix.size()), suffix);
  };
  if (ends(".json")) return "application/json";
  if (ends(".html") || ends(".htm")) return "text/html";
  return "";
}

size_t AppendToString(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

Attempt<HttpResponse> GetOnce(const std::string& url, const FetchOptions& options) {
  std::string target = url;
  if (IsFileUrl(url)) {
    LocalTarget local = InspectFileUrl(url);
    if (local.kind == LocalTarget::Kind::kMissing) {
      HttpResponse missing;
      missing.status = 404;
      missing.url = url;
      return {std::move(missing), false};
    }
    if (local.kind == LocalTarget::Kind::kDirectory) {
      const size_t end = target.find_first_of("?#");
      if (end != std::string::npos) target.resize(end);
      target += target.ends_with("/") ? "index.html" : "/index.html";
    }
  }
  Handle handle(target, options);
  if (handle.get() == nullptr) return {Unavailable(Curl().error.empty() ? "curl_easy_init failed" : Curl().error), false};
  Curl().easy_setopt(handle.get(), CURLOPT_TIMEOUT, options.timeout_seconds);
  Curl().easy_setopt(handle.get(), CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
  HttpResponse r;
  Curl().easy_setopt(handle.get(), CURLOPT_WRITEFUNCTION, AppendToString);
  Curl().easy_setopt(handle.get(), CURLOPT_WRITEDATA, &r.body);
  const CURLcode rc = handle.Perform();
  if (rc != CURLE_OK) {
    if (rc == CURLE_FILE_COULDNT_READ_FILE && IsFileUrl(target)) {
      r.status = 404;  // vanished between the stat and the read, or unreadable
      r.url = target;
      r.body.clear();
      return {std::move(r), false};
    }
    return {CurlError("cannot fetch", url, rc, handle), IsTransient(rc)};
  }
  r.status = handle.ResponseCode();
  char* final_url = nullptr;
  Curl().easy_getinfo(handle.get(), CURLINFO_EFFECTIVE_URL, &final_url);
  r.url = final_url != nullptr ? final_url : target;
  if (IsFileUrl(r.url)) {
    if (r.status == 0) r.status = 200;
    r.content_type = LocalContentType(r.url);
  } else {
    char* type = nullptr;
    Curl().easy_getinfo(handle.get(), CURLINFO_CONTENT_TYPE, &type);
    if (type != nullptr) r.content_type = type;
  }
  const bool transient = IsTransientStatus(r.status);
  return {std::move(r), transient};
}

// Where HttpDownload's bytes go: a file, a running hash, and the progress callback.
struct Sink {
  CURL* handle = nullptr;
  bool local = false;  // a file:// transfer, which has no status to check
  int fd = -1;
  std::string path;
  Sha256Hasher hasher;
  int64_t size = 0;
  std::optional<Status> write_error;
  const std::function<void(int64_t, int64_t)>* progress = nullptr;
  std::chrono::steady_clock::time_point last_progress;
};

size_t WriteToSink(char* data, size_t size, size_t n, void* out) {
  Sink* sink = static_cast<Sink*>(out);
  const size_t bytes = size * n;
  if (!sink->local) {
    long status = 0;
    Curl().easy_getinfo(sink->handle, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status >= 300) return bytes;  // an error page: not worth keeping
  }
  for (size_t off = 0; off < bytes;) {
    const ssize_t w = write(sink->fd, data + off, bytes - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      sink->write_error = ErrnoStatus("write", sink->path);
      return 0;  // curl stops with CURLE_WRITE_ERROR
    }
    off += static_cast<size_t>(w);
  }
  sink->hasher.Update(std::string_view(data, bytes));
  sink->size += static_cast<int64_t>(bytes);
  if (*sink->progress) {
    const auto now = std::chrono::steady_clock::now();
    if (now - sink->last_progress >= kProgressInterval) {
      sink->last_progress = now;
      curl_off_t total = -1;
      Curl().easy_getinfo(sink->handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &total);
      (*sink->progress)(sink->size, total >= 0 ? static_cast<int64_t>(total) : -1);
    }
  }
  return bytes;
}

Attempt<Downloaded> DownloadOnce(const std::string& url, const std::string& dest_path,
                                 const FetchOptions& options,
                                 const std::function<void(int64_t, int64_t)>& progress) {
  const bool local = IsFileUrl(url);
  if (local) {
    LocalTarget target = InspectFileUrl(url);
    if (target.kind == LocalTarget::Kind::kMissing) {
      return {NotFound("not found: " + RedactUrl(url)), false};
    }
    if (target.kind == LocalTarget::Kind::kDirectory) {
      return {FailedPrecondition("cannot download " + RedactUrl(url) + ": it is a directory"),
              false};
    }
  }
  Handle handle(url, options);
  if (handle.get() == nullptr) return {Unavailable(Curl().error.empty() ? "curl_easy_init failed" : Curl().error), false};
  // A stall limit rather than a total one: big wheels on slow links take what they take.
  Curl().easy_setopt(handle.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
  Curl().easy_setopt(handle.get(), CURLOPT_LOW_SPEED_TIME, options.timeout_seconds);

  if (const fs::path dir = fs::path(dest_path).parent_path(); !dir.empty()) {
    if (Status made = MakeDirs(dir); !made.ok()) return {made, false};
  }
  Sink sink;
  sink.handle = handle.get();
  sink.local = local;
  sink.path = dest_path + ".part-" + RandomHex(8);
  sink.progress = &progress;
  sink.fd = open(sink.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (sink.fd < 0) return {ErrnoStatus("create", sink.path), false};
  Curl().easy_setopt(handle.get(), CURLOPT_WRITEFUNCTION, WriteToSink);
  Curl().easy_setopt(handle.get(), CURLOPT_WRITEDATA, &sink);
  const CURLcode rc = handle.Perform();

  auto discard = [&](Status status, bool transient) -> Attempt<Downloaded> {
    if (sink.fd >= 0) close(sink.fd);
    unlink(sink.path.c_str());
    return {std::move(status), transient};
  };
  if (sink.write_error) return discard(*sink.write_error, false);
  if (rc != CURLE_OK) {
    if (rc == CURLE_FILE_COULDNT_READ_FILE && local) {
      return discard(NotFound("cannot read " + RedactUrl(url) + ": " + handle.Message(rc)), false);
    }
    return discard(CurlError("cannot download", url, rc, handle), IsTransient(rc));
  }
  if (!local) {
    const long status = handle.ResponseCode();
    const std::string what = RedactUrl(url) + ": HTTP " + std::to_string(status);
    if (status == 404) return discard(NotFound("not found: " + what), false);
    if (IsTransientStatus(status)) return discard(Unavailable("cannot download " + what), true);
    if (status < 200 || status >= 300) {
      return discard(FailedPrecondition("cannot download " + what), false);
    }
  }
  if (fsync(sink.fd) != 0) return discard(ErrnoStatus("fsync", sink.path), false);
  const int fd = sink.fd;
  sink.fd = -1;
  if (close(fd) != 0) return discard(ErrnoStatus("close", sink.path), false);
  if (std::rename(sink.path.c_str(), dest_path.c_str()) != 0) {
    return discard(ErrnoStatus("rename", sink.path), false);
  }
  if (progress) progress(sink.size, sink.size);
  return {Downloaded{sink.hasher.HexDigest(), sink.size}, false};
}

// ---------------------------------------------------------------------------------------------
// RFC 3986 reference resolution. curl's URL API (7.88) resolves "#frag" and "" against the
// directory instead of the base document, so this follows section 5.2 directly.

struct UrlParts {
  std::optional<std::string> scheme;
  std::optional<std::string> authority;
  std::string path;
  std::optional<std::string> query;
  std::optional<std::string> fragment;
};

bool IsScheme(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

UrlParts SplitUrl(std::string_view s) {
  UrlParts p;
  const size_t colon = s.find(':');
  const size_t delim = s.find_first_of("/?#");
  if (colon != std::string_view::npos && (delim == std::string_view::npos || colon < delim) &&
      IsScheme(s.substr(0, colon))) {
    std::string scheme(s.substr(0, colon));
    scheme = AsciiLower(scheme);
    p.scheme = std::move(scheme);
    s.remove_prefix(colon + 1);
  }
  if (s.starts_with("//")) {
    const size_t end = s.find_first_of("/?#", 2);
    p.authority = std::string(s.substr(2, end == std::string_view::npos ? s.npos : end - 2));
    s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  }
  if (const size_t hash = s.find('#'); hash != std::string_view::npos) {
    p.fragment = std::string(s.substr(hash + 1));
    s = s.substr(0, hash);
  }
  if (const size_t q = s.find('?'); q != std::string_view::npos) {
    p.query = std::string(s.substr(q + 1));
    s = s.substr(0, q);
  }
  p.path = std::string(s);
  return p;
}

void PopSegment(std::string* out) {
  const size_t slash = out->rfind('/');
  out->resize(slash == std::string::npos ? 0 : slash);
}

// Section 5.2.4.
std::string RemoveDotSegments(std::string_view in) {
  std::string out;
  while (!in.empty()) {
    if (in.starts_with("../")) {
      in.remove_prefix(3);
    } else if (in.starts_with("./")) {
      in.remove_prefix(2);
    } else if (in.starts_with("/./")) {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.starts_with("/../")) {
      in.remove_prefix(3);
      PopSegment(&out);
    } else if (in == "/..") {
      in = "/";
      PopSegment(&out);
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      const size_t next = in.find('/', in[0] == '/' ? 1 : 0);
      const size_t n = next == std::string_view::npos ? in.size() : next;
      out.append(in.substr(0, n));
      in.remove_prefix(n);
    }
  }
  return out;
}

// Section 5.2.3.
std::string MergePaths(const UrlParts& base, const std::string& path) {
  if (base.authority && base.path.empty()) return "/" + path;
  const size_t slash = base.path.rfind('/');
  if (slash == std::string::npos) return path;
  return base.path.substr(0, slash + 1) + path;
}

// Escapes what may not appear in a URL; '%' stays, so existing escapes are kept.
void AppendEscaped(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b <= 0x20 || b >= 0x7f ||
        std::string_view("\"<>\\^`{|}").find(c) != std::string_view::npos) {
      out->push_back('%');
      out->push_back(kHex[b >> 4]);
      out->push_back(kHex[b & 0xf]);
    } else {
      out->push_back(c);
    }
  }
}

}  // namespace

Result<HttpResponse> HttpGet(const std::string& url, const FetchOptions& options) {
  return WithRetries<HttpResponse>(options.retries, [&] { return GetOnce(url, options); });
}

Result<Downloaded> HttpDownload(const std::string& url, const std::string& dest_path,
                                const FetchOptions& options,
                                std::function<void(int64_t, int64_t)> progress) {
  return WithRetries<Downloaded>(options.retries,
                                 [&] { return DownloadOnce(url, dest_path, options, progress); });
}

std::string ResolveUrl(const std::string& base_url, const std::string& reference) {
  const UrlParts base = SplitUrl(Trim(base_url));
  const UrlParts ref = SplitUrl(Trim(reference));
  UrlParts t;
  if (ref.scheme) {
    t = ref;
    t.path = RemoveDotSegments(ref.path);
  } else {
    if (ref.authority) {
      t.authority = ref.authority;
      t.path = RemoveDotSegments(ref.path);
      t.query = ref.query;
    } else {
      if (ref.path.empty()) {
        t.path = base.path;
        t.query = ref.query ? ref.query : base.query;
      } else {
        t.path =
            RemoveDotSegments(ref.path.starts_with("/") ? ref.path : MergePaths(base, ref.path));
        t.query = ref.query;
      }
      t.authority = base.authority;
    }
    t.scheme = base.scheme;
  }
  t.fragment = ref.fragment;

  std::string out;
  if (t.scheme) out += *t.scheme + ":";
  if (t.authority) out += "//" + *t.authority;
  AppendEscaped(t.path, &out);
  if (t.query) {
    out += "?";
    AppendEscaped(*t.query, &out);
  }
  if (t.fragment) {
    out += "#";
    AppendEscaped(*t.fragment, &out);
  }
  return out;
}

std::string RedactUrl(const std::string& url) {
  std::string out = url;
  // Messages (curl's too) may hold a URL anywhere in them: redact each "scheme://" in turn.
  for (size_t sep = out.find("://"); sep != std::string::npos; sep = out.find("://", sep + 3)) {
    const size_t start = sep + 3;
    const size_t end = out.find_first_of("/?# \t\n\"'<>", start);
    const std::string_view authority =
        std::string_view(out).substr(start, end == std::string::npos ? out.npos : end - start);
    const size_t at = authority.rfind('@');
    if (at != std::string_view::npos) out.erase(start, at + 1);
  }
  return out;
}

}  // namespace cairn::env
