#include "env/index/simple_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "fakes/http_test_server.h"
#include "fakes/temp_dir.h"
#include "util/hash.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kSha1 = std::string(64, 'a');
const std::string kSha2 = std::string(64, 'b');

// PEP 691's example of a JSON project page.
constexpr std::string_view kPep691Json = R"({
  "meta": {"api-version": "1.0"},
  "name": "holygrail",
  "files": [
    {
      "filename": "holygrail-1.0.tar.gz",
      "url": "https://example.com/files/holygrail-1.0.tar.gz",
      "hashes": {"sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "blake2b": "cc"},
      "requires-python": ">=3.7",
      "yanked": "Had a vulnerability"
    },
    {
      "filename": "holygrail-1.0-py3-none-any.whl",
      "url": "https://example.com/files/holygrail-1.0-py3-none-any.whl",
      "hashes": {"sha256": "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", "blake2b": "dd"},
      "requires-python": ">=3.7",
      "dist-info-metadata": true
    }
  ]
})";

// PEP 691's example of the same page in HTML (PEP 503 with PEP 629's meta tag).
constexpr std::string_view kPep691Html = R"(<!DOCTYPE html>
<html>
  <head>
    <meta name="pypi:repository-version" content="1.0">
    <title>Links for holygrail</title>
  </head>
  <body>
    <h1>Links for holygrail</h1>
    <a href="https://example.com/files/holygrail-1.0.tar.gz#sha256=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">holygrail-1.0.tar.gz</a>
    <a href="https://example.com/files/holygrail-1.0-py3-none-any.whl#sha256=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb">holygrail-1.0-py3-none-any.whl</a>
  </body>
</html>
)";

constexpr std::string_view kJsonType = "application/vnd.pypi.simple.v1+json";
constexpr std::string_view kHtmlType = "application/vnd.pypi.simple.v1+html";

TEST(ParseProjectPageTest, ReadsThePep691JsonExample) {
  Result<std::vector<IndexFile>> files =
      ParseProjectPage(kPep691Json, kJsonType, "https://example.com/simple/holygrail/");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 2u);
  const IndexFile& sdist = (*files)[0];
  EXPECT_EQ(sdist.filename, "holygrail-1.0.tar.gz");
  EXPECT_EQ(sdist.url, "https://example.com/files/holygrail-1.0.tar.gz");
  EXPECT_EQ(sdist.sha256, kSha1);
  EXPECT_EQ(sdist.requires_python, ">=3.7");
  EXPECT_TRUE(sdist.yanked);
  EXPECT_FALSE(sdist.has_metadata);
  EXPECT_EQ(sdist.size, -1);
  const IndexFile& wheel = (*files)[1];
  EXPECT_EQ(wheel.filename, "holygrail-1.0-py3-none-any.whl");
  EXPECT_EQ(wheel.sha256, kSha2);  // lower-cased
  EXPECT_FALSE(wheel.yanked);
  EXPECT_TRUE(wheel.has_metadata);
  EXPECT_EQ(wheel.metadata_sha256, "");
}

TEST(ParseProjectPageTest, ReadsThePep691HtmlExample) {
  for (std::string_view type : {kHtmlType, std::string_view("text/html; charset=utf-8")}) {
    Result<std::vector<IndexFile>> files =
        ParseProjectPage(kPep691Html, type, "https://example.com/simple/holygrail/");
    ASSERT_TRUE(files.ok()) << files.status().ToString();
    ASSERT_EQ(files->size(), 2u);
    EXPECT_EQ((*files)[0].filename, "holygrail-1.0.tar.gz");
    EXPECT_EQ((*files)[0].url, "https://example.com/files/holygrail-1.0.tar.gz");
    EXPECT_EQ((*files)[0].sha256, kSha1);
    EXPECT_EQ((*files)[1].filename, "holygrail-1.0-py3-none-any.whl");
    EXPECT_EQ((*files)[1].url, "https://example.com/files/holygrail-1.0-py3-none-any.whl");
    EXPECT_EQ((*files)[1].sha256, kSha2);
    EXPECT_FALSE((*files)[1].yanked);
    EXPECT_FALSE((*files)[1].has_metadata);
  }
}

TEST(ParseProjectPageTest, JsonResolvesUrlsAndReadsNewerKeys) {
  const std::string body = R"({
    "meta": {"api-version": "1.1"},
    "name": "demo",
    "versions": ["1.0"],
    "files": [
      {"filename": "demo-1.0-py3-none-any.whl", "url": "../../files/demo-1.0-py3-none-any.whl#sha256=)" +
                           kSha1 + R"(",
       "hashes": {}, "size": 1234, "requires-python": null, "yanked": false,
       "core-metadata": {"sha256": ")" +
                           kSha2 + R"("}, "dist-info-metadata": false},
      {"filename": "demo-1.0.tar.gz", "url": "/files/demo-1.0.tar.gz", "hashes": {"sha256": 5},
       "size": "big", "yanked": "", "core-metadata": false, "dist-info-metadata": true},
      {"filename": "demo-0.9.tar.gz", "url": "https://mirror.example/demo-0.9.tar.gz", "yanked": true},
      {"url": "/files/nameless.whl"},
      "not an object"
    ]})";
  Result<std::vector<IndexFile>> files =
      ParseProjectPage(body, "application/vnd.pypi.simple.v1+json; charset=utf-8",
                       "https://idx.example/simple/demo/");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 3u);
  const IndexFile& wheel = (*files)[0];
  EXPECT_EQ(wheel.url, "https://idx.example/files/demo-1.0-py3-none-any.whl");
  EXPECT_EQ(wheel.sha256, kSha1);  // from the fragment, as "hashes" has none
  EXPECT_EQ(wheel.size, 1234);
  EXPECT_EQ(wheel.requires_python, "");
  EXPECT_FALSE(wheel.yanked);
  EXPECT_TRUE(wheel.has_metadata);  // core-metadata wins over dist-info-metadata
  EXPECT_EQ(wheel.metadata_sha256, kSha2);
  const IndexFile& sdist = (*files)[1];
  EXPECT_EQ(sdist.url, "https://idx.example/files/demo-1.0.tar.gz");
  EXPECT_EQ(sdist.sha256, "");  // a number is no hash
  EXPECT_EQ(sdist.size, -1);
  EXPECT_TRUE(sdist.yanked);         // a string, even empty, means yanked
  EXPECT_FALSE(sdist.has_metadata);  // core-metadata: false is final
  EXPECT_TRUE((*files)[2].yanked);
  EXPECT_EQ((*files)[2].url, "https://mirror.example/demo-0.9.tar.gz");
}

TEST(ParseProjectPageTest, JsonErrors) {
  Result<std::vector<IndexFile>> garbage = ParseProjectPage("<html>", kJsonType, "https://i/x/");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(garbage.status().message(), HasSubstr("https://i/x/"));

  Result<std::vector<IndexFile>> v2 = ParseProjectPage(
      R"({"meta": {"api-version": "2.0"}, "files": []})", kJsonType, "https://i/x/");
  ASSERT_FALSE(v2.ok());
  EXPECT_EQ(v2.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(v2.status().message(), HasSubstr("2.0"));

  Result<std::vector<IndexFile>> empty = ParseProjectPage(
      R"({"meta": {"api-version": "1.3"}, "files": []})", kJsonType, "https://i/x/");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(ParseProjectPageTest, HtmlScannerIsTolerant) {
  const std::string body = R"(<!DOCTYPE html><html><head>
<!-- <a href="commented-out.whl">commented-out.whl</a> -->
<script>var s = "<a href='scripted.whl'>x</a>";</script>
<META NAME="pypi:repository-version" CONTENT="1.1">
</head><body><abbr title="not a link">abbr</abbr>
<A HREF="../../files/a-1.0-py3-none-any.whl#sha256=)" +
                           kSha1 +
                           R"(" DATA-REQUIRES-PYTHON="&gt;=3.8,&lt;4">a-1.0-py3-none-any.whl</A>
<a data-requires-python='>=3.9' data-yanked href='b-1.0-py3-none-any.whl'>  b-1.0-py3-none-any.whl </a>
<a href=c-1.0.tar.gz data-yanked="bad build" data-dist-info-metadata=true>c-1.0.tar.gz</a>
<a
   data-core-metadata="sha256=)" +
                           kSha2 + R"("
   data-dist-info-metadata="sha256=ffff"
   href = "d-1.0-py3-none-any.whl#md5=0123">
  <span>d-1.0-py3-none-any.whl</span></a>
<a href="e%2Bcpu-1.0-py3-none-any.whl" data-core-metadata="false" title="x href=&quot;wrong&quot;">e&#43;cpu-1.0-py3-none-any.whl</a>
<a href="f-1.0.whl" data-requires-python="&#x3E;=3.10 &#62;">f-1.0.whl</a>
<a name="anchor-without-href">not a file</a>
<a href="g-1.0.zip">
</body></html>)";
  Result<std::vector<IndexFile>> files =
      ParseProjectPage(body, "text/html", "https://idx.example/simple/demo/");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 7u);
  const std::vector<IndexFile>& f = *files;

  EXPECT_EQ(f[0].filename, "a-1.0-py3-none-any.whl");
  EXPECT_EQ(f[0].url, "https://idx.example/files/a-1.0-py3-none-any.whl");
  EXPECT_EQ(f[0].sha256, kSha1);
  EXPECT_EQ(f[0].requires_python, ">=3.8,<4");
  EXPECT_FALSE(f[0].yanked);
  EXPECT_FALSE(f[0].has_metadata);

  EXPECT_EQ(f[1].filename, "b-1.0-py3-none-any.whl");
  EXPECT_EQ(f[1].url, "https://idx.example/simple/demo/b-1.0-py3-none-any.whl");
  EXPECT_EQ(f[1].requires_python, ">=3.9");  // a raw '>' in a quoted value
  EXPECT_TRUE(f[1].yanked);                  // the bare attribute
  EXPECT_EQ(f[1].sha256, "");

  EXPECT_EQ(f[2].filename, "c-1.0.tar.gz");
  EXPECT_TRUE(f[2].yanked);
  EXPECT_TRUE(f[2].has_metadata);
  EXPECT_EQ(f[2].metadata_sha256, "");

  EXPECT_EQ(f[3].filename, "d-1.0-py3-none-any.whl");
  EXPECT_EQ(f[3].url, "https://idx.example/simple/demo/d-1.0-py3-none-any.whl");
  EXPECT_EQ(f[3].sha256, "");  // an md5 fragment is no sha256
  EXPECT_TRUE(f[3].has_metadata);
  EXPECT_EQ(f[3].metadata_sha256, kSha2);  // data-core-metadata wins

  EXPECT_EQ(f[4].filename, "e+cpu-1.0-py3-none-any.whl");
  EXPECT_EQ(f[4].url, "https://idx.example/simple/demo/e%2Bcpu-1.0-py3-none-any.whl");
  EXPECT_FALSE(f[4].has_metadata);

  EXPECT_EQ(f[5].requires_python, ">=3.10 >");

  EXPECT_EQ(f[6].filename, "g-1.0.zip");  // unclosed: named after its URL
}

TEST(ParseProjectPageTest, HtmlHonoursBaseHref) {
  const std::string body =
      R"(<html><head><base href="https://files.example/pkgs/"></head>)"
      R"(<body><a href="x-1.0.whl">x-1.0.whl</a><a href="/y-1.0.whl">y-1.0.whl</a></body></html>)";
  Result<std::vector<IndexFile>> files =
      ParseProjectPage(body, "text/html", "https://idx.example/simple/x/");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].url, "https://files.example/pkgs/x-1.0.whl");
  EXPECT_EQ((*files)[1].url, "https://files.example/y-1.0.whl");
}

TEST(ParseProjectPageTest, HtmlOfAnotherMajorVersionIsRefused) {
  Result<std::vector<IndexFile>> files = ParseProjectPage(
      R"(<meta name="pypi:repository-version" content="2.0"><a href="x.whl">x.whl</a>)",
      "text/html", "https://idx.example/simple/x/");
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), StatusCode::kFailedPrecondition);
}

TEST(ParseProjectPageTest, ContentTypeChoosesTheFormat) {
  // Without a Content-Type (file://), a body that is JSON is read as JSON.
  Result<std::vector<IndexFile>> json =
      ParseProjectPage(kPep691Json, "", "file:///srv/simple/holygrail/");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(json->size(), 2u);
  // HTML served as JSON is an error, not an empty page.
  EXPECT_FALSE(ParseProjectPage(kPep691Html, kJsonType, "https://i/x/").ok());
  // JSON served as HTML has no links.
  Result<std::vector<IndexFile>> html = ParseProjectPage(kPep691Json, "text/html", "https://i/x/");
  ASSERT_TRUE(html.ok());
  EXPECT_TRUE(html->empty());
}

// Against a server ---------------------------------------------------------------------------

class SimpleIndexServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& http = server_.http();
    // A PEP 691 index that negotiates: JSON when asked for it, else HTML.
    http.Get("/simple/demo/", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("Accept").find("application/vnd.pypi.simple.v1+json") !=
          std::string::npos) {
        res.set_content(R"({"meta": {"api-version": "1.1"}, "name": "demo", "files": [
            {"filename": "demo-1.0-py3-none-any.whl", "url": "../../files/demo-1.0-py3-none-any.whl",
             "hashes": {"sha256": ")" +
                            wheel_sha_ + R"("}, "size": 7,
             "core-metadata": {"sha256": ")" +
                            Sha256Hex(metadata_) + R"("}}]})",
                        "application/vnd.pypi.simple.v1+json");
      } else {
        res.set_content(
            "<a href='../../files/demo-1.0-py3-none-any.whl'>demo-1.0-py3-none-any.whl</a>",
            "text/html");
      }
    });
    // A PEP 503-only index behind a redirect: links resolve against the page it lands on.
    http.Get("/old/demo/", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/legacy/simple/demo/", 301);
    });
    http.Get("/legacy/simple/demo/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(
          "<html><body><a href=\"../../packages/demo-1.0.tar.gz#sha256=" + std::string(64, 'c') +
              "\" data-requires-python=\"&gt;=3.8\">demo-1.0.tar.gz</a></body></html>",
          "text/html; charset=utf-8");
    });
    http.Get("/broken/demo/",
             [](const httplib::Request&, httplib::Response& res) { res.status = 500; });
    http.Get("/private/demo/",
             [](const httplib::Request&, httplib::Response& res) { res.status = 401; });
    http.Get("/files/demo-1.0-py3-none-any.whl.metadata",
             [this](const httplib::Request&, httplib::Response& res) {
               res.set_content(metadata_, "application/octet-stream");
             });
    server_.Start();
  }

  const std::string metadata_ = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n";
  const std::string wheel_sha_ = std::string(64, 'd');
  fakes::HttpTestServer server_;  // last: stopped before the state its handlers use goes away
};

TEST_F(SimpleIndexServerTest, FetchesJsonWhenTheIndexOffersIt) {
  Result<std::vector<IndexFile>> files = FetchProjectPage(server_.Url("/simple"), "demo");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].url, server_.Url("/files/demo-1.0-py3-none-any.whl"));
  EXPECT_EQ((*files)[0].sha256, wheel_sha_);
  EXPECT_EQ((*files)[0].size, 7);
  EXPECT_TRUE((*files)[0].has_metadata);
  EXPECT_EQ(server_.Accept("/simple/demo/"),
            "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
            "text/html;q=0.01");
}

TEST_F(SimpleIndexServerTest, FollowsRedirectsAndResolvesAgainstTheFinalPage) {
  Result<std::vector<IndexFile>> files = FetchProjectPage(server_.Url("/old/"), "demo");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].url, server_.Url("/legacy/packages/demo-1.0.tar.gz"));
  EXPECT_EQ((*files)[0].sha256, std::string(64, 'c'));
  EXPECT_EQ((*files)[0].requires_python, ">=3.8");
}

TEST_F(SimpleIndexServerTest, AnUnknownProjectIsAnEmptyList) {
  Result<std::vector<IndexFile>> files = FetchProjectPage(server_.Url("/simple/"), "nothing");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_TRUE(files->empty());
  EXPECT_EQ(server_.Count("/simple/nothing/"), 1);
}

TEST_F(SimpleIndexServerTest, ServerErrorsNameTheUrlWithoutCredentials) {
  FetchOptions o;
  o.retries = 0;
  std::string index = server_.Url("/broken/");
  index.insert(index.find("127."), "me:s3cret@");
  Result<std::vector<IndexFile>> broken = FetchProjectPage(index, "demo", o);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(broken.status().message(), HasSubstr(server_.Url("/broken/demo/")));
  EXPECT_THAT(broken.status().message(), HasSubstr("500"));
  EXPECT_THAT(broken.status().message(), Not(HasSubstr("s3cret")));

  Result<std::vector<IndexFile>> denied = FetchProjectPage(server_.Url("/private"), "demo", o);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(denied.status().message(), HasSubstr("401"));
}

TEST_F(SimpleIndexServerTest, FetchesAndChecksCoreMetadata) {
  Result<std::vector<IndexFile>> files = FetchProjectPage(server_.Url("/simple/"), "demo");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 1u);
  Result<std::string> metadata = FetchCoreMetadata((*files)[0]);
  ASSERT_TRUE(metadata.ok()) << metadata.status().ToString();
  EXPECT_EQ(*metadata, metadata_);

  IndexFile unhashed = (*files)[0];
  unhashed.metadata_sha256.clear();
  EXPECT_TRUE(FetchCoreMetadata(unhashed).ok());

  IndexFile wrong = (*files)[0];
  wrong.metadata_sha256 = std::string(64, '0');
  Result<std::string> mismatch = FetchCoreMetadata(wrong);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(mismatch.status().message(), HasSubstr(Sha256Hex(metadata_)));

  IndexFile absent = (*files)[0];
  absent.url = server_.Url("/files/other-1.0-py3-none-any.whl");
  Result<std::string> none = FetchCoreMetadata(absent);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
}

TEST(SimpleIndexFileTest, ReadsAFileIndex) {
  fakes::TempDir tmp("index");
  const fs::path root = tmp.path();
  fs::create_directories(root / "simple" / "demo");
  std::ofstream(root / "simple" / "demo" / "index.html")
      << "<a href=\"demo-1.0-py3-none-any.whl#sha256=" << std::string(64, 'e')
      << "\">demo-1.0-py3-none-any.whl</a>";
  const std::string index = "file://" + root.string() + "/simple";
  Result<std::vector<IndexFile>> files = FetchProjectPage(index, "demo");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].url, index + "/demo/demo-1.0-py3-none-any.whl");
  EXPECT_EQ((*files)[0].sha256, std::string(64, 'e'));
  Result<std::vector<IndexFile>> none = FetchProjectPage(index, "nothing");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace cairn::env
