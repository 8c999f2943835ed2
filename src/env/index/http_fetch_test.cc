#include "env/index/http_fetch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "fakes/http_test_server.h"
#include "fakes/pattern_bytes.h"
#include "fakes/shell.h"
#include "fakes/temp_dir.h"
#include "util/hash.h"
#include "fakes/files.h"

namespace cairn::env {
namespace {
using fakes::Listing;
using fakes::WheelLikeBlob;
using fakes::WriteAll;

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A port on which nothing listens: bound, then closed.
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CAIRN_CHECK(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  CAIRN_CHECK(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  close(fd);
  return ntohs(addr.sin_port);
}

FetchOptions NoRetries() {
  FetchOptions o;
  o.retries = 0;
  return o;
}

class HttpFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& http = server_.http();
    http.Get("/page", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("hello", "text/plain; charset=utf-8");
    });
    http.Get("/redirect",
             [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/page"); });
    http.Get("/redirect-blob",
             [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/blob"); });
    http.Get("/missing", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content("no such thing", "text/plain");
    });
    http.Get("/forbidden", [](const httplib::Request&, httplib::Response& res) {
      res.status = 403;
      res.set_content("go away", "text/plain");
    });
    http.Get("/down", [](const httplib::Request&, httplib::Response& res) {
      res.status = 503;
      res.set_content("down", "text/plain");
    });
    http.Get("/flaky", [this](const httplib::Request&, httplib::Response& res) {
      if (flaky_failures_-- > 0) {
        res.status = 500;
        res.set_content("oops", "text/plain");
        return;
      }
      res.set_content("recovered", "text/plain");
    });
    http.Get("/flaky-blob", [this](const httplib::Request&, httplib::Response& res) {
      if (flaky_failures_-- > 0) {
        res.status = 502;
        return;
      }
      res.set_content(blob_, "application/octet-stream");
    });
    http.Get("/blob", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(blob_, "application/octet-stream");
    });
    http.Get("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(
          req.get_header_value("Authorization") + "|" + req.get_header_value("X-Cairn-Test"),
          "text/plain");
    });
    http.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(slow_mu_);
      slow_cv_.wait_for(lock, std::chrono::seconds(10), [this] { return slow_released_; });
      res.set_content("late", "text/plain");
    });
    server_.Start();
  }
  void TearDown() override {
    {
      std::lock_guard<std::mutex> lock(slow_mu_);
      slow_released_ = true;
    }
    slow_cv_.notify_all();
  }

  fakes::TempDir dir_;
  const std::string blob_ = WheelLikeBlob(300 * 1024 + 17);
  std::atomic<int> flaky_failures_{1};
  std::mutex slow_mu_;
  std::condition_variable slow_cv_;
  bool slow_released_ = false;
  fakes::HttpTestServer server_;  // last: stopped before the state its handlers use goes away
};

TEST_F(HttpFetchTest, GetReturnsBodyStatusAndContentType) {
  Result<HttpResponse> r = HttpGet(server_.Url("/page"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(r->url, server_.Url("/page"));
}

TEST_F(HttpFetchTest, GetReturnsHttpErrorsAsResponses) {
  Result<HttpResponse> r = HttpGet(server_.Url("/missing"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "no such thing");
  EXPECT_EQ(server_.Count("/missing"), 1);  // a 404 is not retried
}

TEST_F(HttpFetchTest, GetFollowsRedirectsAndReportsTheFinalUrl) {
  Result<HttpResponse> r = HttpGet(server_.Url("/redirect"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->url, server_.Url("/page"));
}

TEST_F(HttpFetchTest, GetRetriesA5xx) {
  Result<HttpResponse> r = HttpGet(server_.Url("/flaky"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "recovered");
  EXPECT_EQ(server_.Count("/flaky"), 2);
}

TEST_F(HttpFetchTest, GetReturnsThe5xxOnceRetriesRunOut) {
  FetchOptions o;
  o.retries = 1;
  Result<HttpResponse> r = HttpGet(server_.Url("/down"), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(server_.Count("/down"), 2);
}

TEST_F(HttpFetchTest, GetWithoutAServerIsUnavailableAndHidesCredentials) {
  FetchOptions o;
  o.retries = 1;
  const std::string url =
      "http://alice:s3cret@127.0.0.1:" + std::to_string(ClosedPort()) + "/simple/";
  Result<HttpResponse> r = HttpGet(url, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr(RedactUrl(url)));
  EXPECT_THAT(r.status().message(), HasSubstr("2 attempts"));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("s3cret")));
}

TEST_F(HttpFetchTest, GetSendsHeadersAndUrlCredentials) {
  FetchOptions o;
  o.headers = {"X-Cairn-Test: yes"};
  std::string url = server_.Url("/echo");
  url.insert(url.find("127."), "user:pw@");
  Result<HttpResponse> r = HttpGet(url, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "Basic " + Base64Encode("user:pw") + "|yes");
}

TEST_F(HttpFetchTest, GetTimesOut) {
  FetchOptions o = NoRetries();
  o.timeout_seconds = 1;
  Result<HttpResponse> r = HttpGet(server_.Url("/slow"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr(server_.Url("/slow")));
}

TEST_F(HttpFetchTest, GetRejectsAnUnsupportedScheme) {
  Result<HttpResponse> r = HttpGet("gopher://127.0.0.1/x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HttpFetchTest, GetIsSafeFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      Result<HttpResponse> r = HttpGet(server_.Url("/blob"));
      if (r.ok() && r->body == blob_) ++good;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(good, 8);
}

TEST_F(HttpFetchTest, DownloadStreamsHashesAndReportsProgress) {
  const fs::path dest = dir_.path() / "x.whl";
  std::vector<std::pair<int64_t, int64_t>> calls;
  Result<Downloaded> d =
      HttpDownload(server_.Url("/blob"), dest.string(), {},
                   [&](int64_t n, int64_t total) { calls.emplace_back(n, total); });
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->sha256, Sha256Hex(blob_));
  EXPECT_EQ(d->size, static_cast<int64_t>(blob_.size()));
  EXPECT_EQ(fakes::Slurp(dest), blob_);
  EXPECT_EQ(Listing(dir_.path()), std::vector<std::string>{"x.whl"});  // no .part left
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), std::make_pair(d->size, d->size));
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_LE(calls[i - 1].first, calls[i].first);
}

TEST_F(HttpFetchTest, DownloadFollowsRedirectsAndCreatesTheDirectory) {
  const fs::path dest = dir_.path() / "a" / "b" / "x.whl";
  Result<Downloaded> d = HttpDownload(server_.Url("/redirect-blob"), dest.string());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->sha256, Sha256Hex(blob_));
  EXPECT_EQ(fakes::Slurp(dest), blob_);
}

TEST_F(HttpFetchTest, Download404IsNotFoundAndLeavesNothing) {
  Result<Downloaded> d = HttpDownload(server_.Url("/missing"), (dir_.path() / "x").string());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(d.status().message(), HasSubstr(server_.Url("/missing")));
  EXPECT_THAT(d.status().message(), HasSubstr("404"));
  EXPECT_TRUE(Listing(dir_.path()).empty());
  EXPECT_EQ(server_.Count("/missing"), 1);
}

TEST_F(HttpFetchTest, Download403IsFailedPrecondition) {
  Result<Downloaded> d = HttpDownload(server_.Url("/forbidden"), (dir_.path() / "x").string());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(d.status().message(), HasSubstr("403"));
  EXPECT_TRUE(Listing(dir_.path()).empty());
}

TEST_F(HttpFetchTest, Download5xxIsUnavailableAfterTheRetries) {
  FetchOptions o;
  o.retries = 1;
  Result<Downloaded> d = HttpDownload(server_.Url("/down"), (dir_.path() / "x").string(), o);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(d.status().message(), HasSubstr("503"));
  EXPECT_EQ(server_.Count("/down"), 2);
  EXPECT_TRUE(Listing(dir_.path()).empty());
}

TEST_F(HttpFetchTest, DownloadRetriesA5xxThenSucceeds) {
  const fs::path dest = dir_.path() / "x.whl";
  Result<Downloaded> d = HttpDownload(server_.Url("/flaky-blob"), dest.string());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->sha256, Sha256Hex(blob_));
  EXPECT_EQ(server_.Count("/flaky-blob"), 2);
  EXPECT_EQ(Listing(dir_.path()), std::vector<std::string>{"x.whl"});
}

TEST_F(HttpFetchTest, DownloadWithoutAServerIsUnavailable) {
  const std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/x.whl";
  Result<Downloaded> d = HttpDownload(url, (dir_.path() / "x").string(), NoRetries());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(d.status().message(), HasSubstr(url));
  EXPECT_TRUE(Listing(dir_.path()).empty());
}

// file:// URLs ----------------------------------------------------------------------------------

TEST(HttpFetchFileTest, GetReadsFilesDirectoriesAndMissingOnes) {
  fakes::TempDir dir;
  fs::create_directories(dir.path() / "simple" / "demo");
  WriteAll(dir.path() / "simple" / "demo" / "index.html", "<a href='x.whl'>x.whl</a>");
  WriteAll(dir.path() / "page.json", "{}");
  const std::string base = "file://" + dir.path().string();

  Result<HttpResponse> file = HttpGet(base + "/page.json");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->status, 200);
  EXPECT_EQ(file->body, "{}");
  EXPECT_EQ(file->content_type, "application/json");

  Result<HttpResponse> index = HttpGet(base + "/simple/demo/");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->body, "<a href='x.whl'>x.whl</a>");
  EXPECT_EQ(index->content_type, "text/html");
  EXPECT_EQ(ResolveUrl(index->url, "x.whl"), base + "/simple/demo/x.whl");

  Result<HttpResponse> missing = HttpGet(base + "/simple/nothing/", NoRetries());
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(missing->status, 404);
}

TEST(HttpFetchFileTest, DownloadCopiesAndHashesAFile) {
  fakes::TempDir dir;
  const std::string blob = WheelLikeBlob(70000);
  WriteAll(dir.path() / "with space.whl", blob);
  Result<Downloaded> d =
      HttpDownload(ResolveUrl("file://" + dir.path().string() + "/", "with space.whl"),
                   (dir.path() / "out" / "copy.whl").string());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->sha256, Sha256Hex(blob));
  EXPECT_EQ(d->size, 70000);
  EXPECT_EQ(fakes::Slurp(dir.path() / "out" / "copy.whl"), blob);
}

TEST(HttpFetchFileTest, DownloadOfAMissingFileIsNotFound) {
  fakes::TempDir dir;
  Result<Downloaded> d = HttpDownload("file://" + dir.path().string() + "/none.whl",
                                      (dir.path() / "copy.whl").string());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(d.status().message(), HasSubstr("none.whl"));
  EXPECT_TRUE(Listing(dir.path()).empty());

  Result<Downloaded> of_dir =
      HttpDownload("file://" + dir.path().string() + "/", (dir.path() / "copy.whl").string());
  ASSERT_FALSE(of_dir.ok());
  EXPECT_EQ(of_dir.status().code(), StatusCode::kFailedPrecondition);
}

// ResolveUrl and RedactUrl ----------------------------------------------------------------------

TEST(ResolveUrlTest, FollowsTheRfc3986Examples) {
  // RFC 3986 section 5.4.1 (normal) and 5.4.2 (abnormal), against its base.
  const std::string base = "http://a/b/c/d;p?q";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"g:h", "g:h"},
      {"g", "http://a/b/c/g"},
      {"./g", "http://a/b/c/g"},
      {"g/", "http://a/b/c/g/"},
      {"/g", "http://a/g"},
      {"//g", "http://g"},
      {"?y", "http://a/b/c/d;p?y"},
      {"g?y", "http://a/b/c/g?y"},
      {"#s", "http://a/b/c/d;p?q#s"},
      {"g#s", "http://a/b/c/g#s"},
      {"g?y#s", "http://a/b/c/g?y#s"},
      {";x", "http://a/b/c/;x"},
      {"g;x", "http://a/b/c/g;x"},
      {"g;x?y#s", "http://a/b/c/g;x?y#s"},
      {"", "http://a/b/c/d;p?q"},
      {".", "http://a/b/c/"},
      {"./", "http://a/b/c/"},
      {"..", "http://a/b/"},
      {"../", "http://a/b/"},
      {"../g", "http://a/b/g"},
      {"../..", "http://a/"},
      {"../../", "http://a/"},
      {"../../g", "http://a/g"},
      {"../../../g", "http://a/g"},
      {"../../../../g", "http://a/g"},
      {"/./g", "http://a/g"},
      {"/../g", "http://a/g"},
      {"g.", "http://a/b/c/g."},
      {".g", "http://a/b/c/.g"},
      {"g..", "http://a/b/c/g.."},
      {"..g", "http://a/b/c/..g"},
      {"./../g", "http://a/b/g"},
      {"./g/.", "http://a/b/c/g/"},
      {"g/./h", "http://a/b/c/g/h"},
      {"g/../h", "http://a/b/c/h"},
      {"g;x=1/./y", "http://a/b/c/g;x=1/y"},
      {"g;x=1/../y", "http://a/b/c/y"},
      {"g?y/./x", "http://a/b/c/g?y/./x"},
      {"g?y/../x", "http://a/b/c/g?y/../x"},
      {"g#s/./x", "http://a/b/c/g#s/./x"},
      {"g#s/../x", "http://a/b/c/g#s/../x"},
      {"http:g", "http:g"},
  };
  for (const auto& [reference, want] : cases) {
    EXPECT_EQ(ResolveUrl(base, reference), want) << "reference \"" << reference << "\"";
  }
}

TEST(ResolveUrlTest, HandlesIndexLinks) {
  const std::string page = "https://u:tok@pypi.example/simple/numpy/";
  EXPECT_EQ(ResolveUrl(page, "../../packages/numpy-1.26.4.whl#sha256=ab"),
            "https://u:tok@pypi.example/packages/numpy-1.26.4.whl#sha256=ab");
  EXPECT_EQ(ResolveUrl(page, "/files/x.whl"), "https://u:tok@pypi.example/files/x.whl");
  EXPECT_EQ(ResolveUrl(page, "https://files.example/x.whl"), "https://files.example/x.whl");
  EXPECT_EQ(ResolveUrl(page, "HTTPS://files.example/x.whl"), "https://files.example/x.whl");
  EXPECT_EQ(ResolveUrl("http://h:8080", "x"), "http://h:8080/x");
  EXPECT_EQ(ResolveUrl("file:///srv/simple/demo/", "demo-1.0.whl"),
            "file:///srv/simple/demo/demo-1.0.whl");
  EXPECT_EQ(ResolveUrl("file:///srv/simple/demo/index.html", "../other/"),
            "file:///srv/simple/other/");
  // Escapes are kept; what a URL cannot hold is escaped; surrounding blanks are dropped.
  EXPECT_EQ(ResolveUrl(page, "x%2Bcpu.whl"), "https://u:tok@pypi.example/simple/numpy/x%2Bcpu.whl");
  EXPECT_EQ(ResolveUrl(page, " a b\xc3\xa9.whl\n"),
            "https://u:tok@pypi.example/simple/numpy/a%20b%C3%A9.whl");
}

TEST(RedactUrlTest, DropsCredentialsOnly) {
  EXPECT_EQ(RedactUrl("https://user:pass@host.example/simple/"), "https://host.example/simple/");
  EXPECT_EQ(RedactUrl("https://token@host.example:8443/x?a=b@c"),
            "https://host.example:8443/x?a=b@c");
  EXPECT_EQ(RedactUrl("https://u:p@ss@host/"), "https://host/");
  EXPECT_EQ(RedactUrl("http://host/path@x"), "http://host/path@x");
  EXPECT_EQ(RedactUrl("http://host?q=a@b"), "http://host?q=a@b");
  EXPECT_EQ(RedactUrl("file:///srv/x.whl"), "file:///srv/x.whl");
  EXPECT_EQ(RedactUrl("not a url"), "not a url");
  EXPECT_EQ(RedactUrl("fetching https://a:b@h/x failed, then http://c@i/y"),
            "fetching https://h/x failed, then http://i/y");
}

}  // namespace
}  // namespace cairn::env
