#include "server/ui_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "util/file.h"

namespace cairn::server {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class UiFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cairn-ui-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "assets");
    ASSERT_TRUE(WriteFileAtomic(dir_ / "index.html", "<!doctype html>page").ok());
    ASSERT_TRUE(WriteFileAtomic(dir_ / "assets/index-3f2a.js", "console.log(1)").ok());
    ASSERT_TRUE(WriteFileAtomic(dir_ / "favicon.svg", "<svg/>").ok());
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(UiFilesTest, ServesThePageAndItsAssetsWithTheirCaching) {
  Result<UiFiles> ui = UiFiles::Load(dir_.string());
  ASSERT_TRUE(ui.ok()) << ui.status().ToString();
  EXPECT_TRUE(ui->built());
  for (const char* path : {"/", "/index.html"}) {
    std::optional<UiFile> page = ui->Find(path);
    ASSERT_TRUE(page.has_value()) << path;
    EXPECT_EQ(*page->body, "<!doctype html>page");
    EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
    EXPECT_EQ(page->cache_control, "no-cache");
  }
  std::optional<UiFile> js = ui->Find("/assets/index-3f2a.js");
  ASSERT_TRUE(js.has_value());
  EXPECT_EQ(js->content_type, "text/javascript; charset=utf-8");
  EXPECT_THAT(js->cache_control, HasSubstr("immutable"));
  std::optional<UiFile> icon = ui->Find("/favicon.svg");
  ASSERT_TRUE(icon.has_value());
  EXPECT_EQ(icon->content_type, "image/svg+xml");
  EXPECT_EQ(icon->cache_control, "public, max-age=3600");
}

TEST_F(UiFilesTest, AnswersNothingOutsideItsFiles) {
  Result<UiFiles> ui = UiFiles::Load(dir_.string());
  ASSERT_TRUE(ui.ok());
  for (const char* path : {"/nope", "/assets/", "/assets/../index.html", "/../etc/passwd",
                           "//index.html", "/.hidden", "relative"}) {
    EXPECT_FALSE(ui->Find(path).has_value()) << path;
  }
}

TEST_F(UiFilesTest, WithoutABuiltUiTheRootSaysHowToBuildIt) {
  Result<UiFiles> ui = UiFiles::Load((dir_ / "assets").string());
  ASSERT_TRUE(ui.ok());
  EXPECT_FALSE(ui->built());
  EXPECT_EQ(ui->source(), "");
  std::optional<UiFile> page = ui->Find("/");
  ASSERT_TRUE(page.has_value());
  EXPECT_THAT(*page->body, HasSubstr("make build"));
  EXPECT_FALSE(ui->Find("/assets/index-3f2a.js").has_value());
}

}  // namespace
}  // namespace cairn::server
