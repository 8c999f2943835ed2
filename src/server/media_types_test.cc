#include "server/media_types.h"

#include <gtest/gtest.h>

namespace cairn::server {
namespace {

TEST(MediaTypesTest, UiFilesGetTheirTypesWithACharsetOnText) {
  EXPECT_EQ(UiContentType("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(UiContentType("assets/app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(UiContentType("app.css"), "text/css; charset=utf-8");
  EXPECT_EQ(UiContentType("app.js.map"), "application/json");
  EXPECT_EQ(UiContentType("favicon.svg"), "image/svg+xml");
  EXPECT_EQ(UiContentType("font.woff2"), "font/woff2");
  EXPECT_EQ(UiContentType("LICENSE"), "application/octet-stream");
}

TEST(MediaTypesTest, ArtifactsNeverRenderAsPagesOfTheServer) {
  EXPECT_EQ(ArtifactContentType("report.html"), "text/plain");
  EXPECT_EQ(ArtifactContentType("REPORT.HTM"), "text/plain");
  EXPECT_EQ(ArtifactContentType("x.js"), "text/plain");
  EXPECT_EQ(ArtifactContentType("model/MLmodel"), "text/plain");
  EXPECT_EQ(ArtifactContentType("notMLmodel"), "application/octet-stream");
  EXPECT_EQ(ArtifactContentType("train.log"), "text/plain");
  EXPECT_EQ(ArtifactContentType("metrics.json"), "application/json");
  EXPECT_EQ(ArtifactContentType("plot.PNG"), "image/png");
  EXPECT_EQ(ArtifactContentType("plot.svg"), "image/svg+xml");
  EXPECT_EQ(ArtifactContentType("weights.pt"), "application/octet-stream");
  EXPECT_EQ(ArtifactContentType("archive.tar.gz"), "application/octet-stream");
}

}  // namespace
}  // namespace cairn::server
