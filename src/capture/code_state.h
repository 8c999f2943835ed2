// Code state: which code a run ran. The git repository that holds the working directory, its
// remote (without credentials), branch and commit, and everything that differs from that
// commit: changes to tracked files (staged or not) and untracked text files, as one patch
// that `git apply` takes on a checkout of the commit. Read with libgit2, so no git binary is
// needed. A directory outside any repository has no code state; that is not an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "util/status.h"

namespace cairn::capture {

struct CodeStateOptions {
  // Untracked files go into the patch only when they are text and at most this large; the
  // others are listed by name.
  int64_t max_untracked_file_bytes = 256 * 1024;
  // The whole patch is cut at this size (the cut is marked), so that a run never uploads an
  // unbounded diff.
  int64_t max_patch_bytes = 16 * 1024 * 1024;
  // Absolute paths (files or directories) whose changes are left out: a pipeline's data and
  // outputs are not its code.
  std::vector<std::string> exclude;
};

struct CodeState {
  bool in_repository = false;
  std::string root;        // the repository's working directory
  std::string remote_url;  // "origin", else the first remote; credentials removed
  std::string branch;      // empty when HEAD is detached
  std::string commit;      // HEAD's full hash; empty on a branch without commits
  // True when tracked files differ from HEAD (in the index or the working tree) or untracked,
  // not ignored files exist.
  bool dirty = false;
  std::string patch;                           // the differences; empty when clean
  bool patch_truncated = false;                // cut at max_patch_bytes
  std::vector<std::string> untracked_skipped;  // untracked files left out (binary or too large)
};

// Reads the code state of the repository containing `dir` (searching upward).
Result<CodeState> ReadCodeState(const std::string& dir, const CodeStateOptions& options = {});

// How a run records its code state (empty outside a repository): MLflow's git tags
// (mlflow.source.git.commit, .branch, .repoURL, so that other MLflow tools read them too) with
// cairn.git.root and cairn.git.dirty; the artifact kCodeStateArtifact, the state as JSON
// without the patch; and the patch as kCodeDiffArtifact, which `git apply` takes on a checkout
// of the commit.
inline constexpr std::string_view kCodeStateArtifact = "cairn/code.json";
inline constexpr std::string_view kCodeDiffArtifact = "cairn/code.diff";
std::vector<core::Tag> CodeTags(const CodeState& code);
std::string CodeStateJson(const CodeState& code);
// Cuts the patch to at most `max_bytes` at the start of a file's part, marking the cut, as
// ReadCodeState does with CodeStateOptions::max_patch_bytes.
void CutPatch(CodeState* code, int64_t max_bytes);

// The files that make up the code at `dir`, as a code snapshot takes them.
struct WorkingFiles {
  bool in_repository = false;
  // The repository's working directory; outside a repository, `dir` itself.
  std::string root;
  // Relative to root, '/'-separated, sorted: in a repository, the tracked files as they are in
  // the working tree (those deleted there are left out) and the untracked files git does not
  // ignore; elsewhere, every file under root. `.git` and `.cairn` directories are never listed.
  std::vector<std::string> paths;
  std::vector<std::string> submodules;  // left out: a snapshot does not descend into them
};

// Lists the working files of the repository containing `dir`, or of `dir` when it is in none.
// Outside a repository nothing says what is code, so more than `max_files` files there is
// kFailedPrecondition, saying so.
Result<WorkingFiles> ListWorkingFiles(const std::string& dir, int64_t max_files = 20000);
// Every file under `dir` (but in `.git` and `.cairn`), whatever repository may hold it.
Result<WorkingFiles> ListDirectoryFiles(const std::string& dir, int64_t max_files = 20000);

// Writes the code a run recorded into `dest` (made when missing; it should be empty): the tree
// of `commit` in the git repository around `repo_dir`, with `patch` (the run's cairn/code.diff,
// uncommitted changes and untracked text files) applied. The repository's refs, index and
// working tree are left alone; the changed files' contents are added to its object store, as
// `git apply --cached` would. InvalidArgument for a `commit` that is not a full hash; kNotFound
// when there is no repository there or it lacks the commit; kFailedPrecondition when the patch
// does not apply.
Status RebuildCode(const std::string& repo_dir, const std::string& commit, std::string_view patch,
                   const std::string& dest);

// A remote URL without the secrets it may carry: "https://user:token@host/r.git" and
// "https://token@host/r.git" become "https://host/r.git"; ssh and scp-style addresses keep their
// user name ("git@host:org/r.git"), which is not a secret, but lose any password.
std::string StripCredentials(std::string_view url);

}  // namespace cairn::capture
