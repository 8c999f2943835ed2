#include "capture/code_state.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "util/hash.h"

namespace cairn::capture {
namespace {

namespace fs = std::filesystem;

class CodeStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("cairn-git-" + RandomHex(8));
    fs::create_directories(root_ / "repo");
  }
  void TearDown() override { fs::remove_all(root_); }

  // Runs a shell command in `dir`; the test fails when it does.
  void Sh(const fs::path& dir, const std::string& cmd) {
    std::string full = "cd '" + dir.string() + "' && " + cmd + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(full.c_str()), 0) << cmd;
  }
  void Write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  std::string Read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path repo() const { return root_ / "repo"; }
  void InitRepo() {
    Sh(repo(), "git init -q -b main && git config user.email t@example.com && "
               "git config user.name t");
    Write(repo() / "train.py", "lr = 0.1\n");
    Write(repo() / "lib/model.py", "layers = 3\n");
    Write(repo() / ".gitignore", "*.ckpt\n");
    Sh(repo(), "git add -A && git commit -q -m first");
  }

  fs::path root_;
};

TEST_F(CodeStateTest, OutsideARepositoryThereIsNoCodeState) {
  auto state = ReadCodeState(repo().string());
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_FALSE(state->in_repository);
  EXPECT_TRUE(state->commit.empty());
}

TEST_F(CodeStateTest, CleanCheckoutNamesCommitBranchAndRemote) {
  InitRepo();
  Sh(repo(), "git remote add origin https://alice:s3cret@git.example.com/ml/vision.git");
  auto state = ReadCodeState((repo() / "lib").string());  // found from a subdirectory
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_TRUE(state->in_repository);
  EXPECT_EQ(fs::canonical(state->root), fs::canonical(repo()));
  EXPECT_EQ(state->branch, "main");
  EXPECT_EQ(state->commit.size(), 40u);
  EXPECT_EQ(state->remote_url, "https://git.example.com/ml/vision.git");
  EXPECT_FALSE(state->dirty);
  EXPECT_TRUE(state->patch.empty());
}

TEST_F(CodeStateTest, PatchRecreatesTheWorkingTreeOnACleanCheckout) {
  InitRepo();
  Write(repo() / "train.py", "lr = 0.01\nepochs = 3\n");        // modified, unstaged
  Write(repo() / "lib/data.py", "batch = 32\n");                // new, staged
  Sh(repo(), "git add lib/data.py");
  Write(repo() / "notes/idea.txt", "try dropout\n");            // untracked text
  Write(repo() / "weights.bin", std::string("\0\1\2binary", 9));  // untracked binary
  Write(repo() / "big.txt", std::string(300 * 1024, 'x'));      // untracked, too large
  Write(repo() / "model.ckpt", "ignored\n");                    // ignored
  Sh(repo(), "git rm -q lib/model.py");                         // deleted

  auto state = ReadCodeState(repo().string());
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_TRUE(state->dirty);
  EXPECT_FALSE(state->patch_truncated);
  EXPECT_NE(state->patch.find("+epochs = 3"), std::string::npos);
  EXPECT_EQ(state->patch.find("model.ckpt"), std::string::npos);
  std::vector<std::string> skipped = state->untracked_skipped;
  std::sort(skipped.begin(), skipped.end());
  EXPECT_EQ(skipped, (std::vector<std::string>{"big.txt", "weights.bin"}));

  // Applying the patch to a fresh clone of the commit gives the same files back.
  Sh(root_, "git clone -q repo copy");
  Write(root_ / "code.patch", state->patch);
  Sh(root_ / "copy", "git apply ../code.patch");
  EXPECT_EQ(Read(root_ / "copy/train.py"), "lr = 0.01\nepochs = 3\n");
  EXPECT_EQ(Read(root_ / "copy/lib/data.py"), "batch = 32\n");
  EXPECT_EQ(Read(root_ / "copy/notes/idea.txt"), "try dropout\n");
  EXPECT_FALSE(fs::exists(root_ / "copy/lib/model.py"));
}

TEST_F(CodeStateTest, RebuildWritesTheCommitWithTheRecordedChangesAndLeavesTheRepository) {
  InitRepo();
  Write(repo() / "train.py", "lr = 0.01\nepochs = 3\n");
  Write(repo() / "notes/idea.txt", "try dropout\n");
  Sh(repo(), "git rm -q lib/model.py");
  auto state = ReadCodeState(repo().string());
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  // Later work moves the repository on; the rebuild takes the run's commit and changes.
  Sh(repo(), "git add -A && git commit -q -m second");
  Write(repo() / "train.py", "lr = 1\n");
  Write(repo() / "staged.txt", "in the index\n");
  Sh(repo(), "git add staged.txt");
  const std::string index_before = Read(repo() / ".git/index");
  const std::string head_before = Read(repo() / ".git/HEAD");

  Status rebuilt = RebuildCode((repo() / "notes").string(), state->commit, state->patch,
                               (root_ / "rebuilt").string());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.ToString();
  EXPECT_EQ(Read(root_ / "rebuilt/train.py"), "lr = 0.01\nepochs = 3\n");
  EXPECT_EQ(Read(root_ / "rebuilt/notes/idea.txt"), "try dropout\n");
  EXPECT_EQ(Read(root_ / "rebuilt/.gitignore"), "*.ckpt\n");
  EXPECT_FALSE(fs::exists(root_ / "rebuilt/lib/model.py"));
  EXPECT_FALSE(fs::exists(root_ / "rebuilt/.git"));
  EXPECT_EQ(Read(repo() / "train.py"), "lr = 1\n") << "the working tree is left alone";
  EXPECT_EQ(Read(repo() / ".git/index"), index_before) << "and the index";
  EXPECT_EQ(Read(repo() / ".git/HEAD"), head_before) << "and HEAD";
  EXPECT_FALSE(fs::exists(root_ / "rebuilt/staged.txt"));

  // A clean run's commit alone.
  ASSERT_TRUE(RebuildCode(repo().string(), state->commit, "", (root_ / "clean").string()).ok());
  EXPECT_EQ(Read(root_ / "clean/train.py"), "lr = 0.1\n");
  EXPECT_TRUE(fs::exists(root_ / "clean/lib/model.py"));

  EXPECT_EQ(RebuildCode(repo().string(), std::string(40, 'a'), "", (root_ / "x").string()).code(),
            StatusCode::kNotFound);
  Status outside =
      RebuildCode((root_ / "rebuilt").string(), state->commit, "", (root_ / "y").string());
  EXPECT_EQ(outside.code(), StatusCode::kNotFound);
  EXPECT_NE(outside.message().find("is not in a git repository"), std::string::npos)
      << outside.ToString();
  for (const char* revision : {"HEAD", "main", "main~1", ":/first"}) {
    EXPECT_EQ(RebuildCode(repo().string(), revision, "", (root_ / "w").string()).code(),
              StatusCode::kInvalidArgument)
        << revision << " is a revision, not a commit's hash";
  }
  const std::string bad =
      "diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n"
      "@@ -1 +1 @@\n-nothing like this\n+x\n";
  EXPECT_EQ(RebuildCode(repo().string(), state->commit, bad, (root_ / "z").string()).code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(CodeStateTest, OnlyUntrackedFilesMakeItDirty) {
  InitRepo();
  Write(repo() / "scratch.py", "print(1)\n");
  auto state = ReadCodeState(repo().string());
  ASSERT_TRUE(state.ok());
  EXPECT_TRUE(state->dirty);
  EXPECT_NE(state->patch.find("scratch.py"), std::string::npos);
}

TEST_F(CodeStateTest, LargePatchIsCutAndMarked) {
  InitRepo();
  Write(repo() / "train.py", std::string(4000, 'y') + "\n");
  CodeStateOptions options;
  options.max_patch_bytes = 1000;
  auto state = ReadCodeState(repo().string(), options);
  ASSERT_TRUE(state.ok());
  EXPECT_TRUE(state->patch_truncated);
  EXPECT_LT(state->patch.size(), 1200u);
  EXPECT_NE(state->patch.find("the patch was cut"), std::string::npos);
}

TEST_F(CodeStateTest, UnbornBranchAndDetachedHead) {
  Sh(repo(), "git init -q -b dev");
  Write(repo() / "a.py", "x = 1\n");
  auto unborn = ReadCodeState(repo().string());
  ASSERT_TRUE(unborn.ok()) << unborn.status().ToString();
  EXPECT_EQ(unborn->branch, "dev");
  EXPECT_TRUE(unborn->commit.empty());
  EXPECT_TRUE(unborn->dirty);

  Sh(repo(), "git config user.email t@example.com && git config user.name t && git add -A && "
             "git commit -q -m one && git checkout -q --detach");
  auto detached = ReadCodeState(repo().string());
  ASSERT_TRUE(detached.ok());
  EXPECT_TRUE(detached->branch.empty());
  EXPECT_EQ(detached->commit.size(), 40u);
  EXPECT_FALSE(detached->dirty);
}

TEST(StripCredentialsTest, RemovesSecretsKeepsAddresses) {
  EXPECT_EQ(StripCredentials("https://user:tok@github.com/o/r.git"), "https://github.com/o/r.git");
  EXPECT_EQ(StripCredentials("https://ghp_abc@github.com/o/r.git"), "https://github.com/o/r.git");
  EXPECT_EQ(StripCredentials("https://github.com/o/r.git"), "https://github.com/o/r.git");
  EXPECT_EQ(StripCredentials("ssh://git:pw@host:22/o/r.git"), "ssh://git@host:22/o/r.git");
  EXPECT_EQ(StripCredentials("ssh://git@host/o/r.git"), "ssh://git@host/o/r.git");
  EXPECT_EQ(StripCredentials("git@github.com:o/r.git"), "git@github.com:o/r.git");
  EXPECT_EQ(StripCredentials("/srv/git/r.git"), "/srv/git/r.git");
  EXPECT_EQ(StripCredentials("https://u:p@host"), "https://host");
}

}  // namespace
}  // namespace cairn::capture
