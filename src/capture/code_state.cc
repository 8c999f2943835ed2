#include "capture/code_state.h"

#include <git2.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "util/json_writer.h"

namespace cairn::capture {
namespace {

std::string CutMark(int64_t max_bytes) {
  return "\n# cairn: the patch was cut here at " + std::to_string(max_bytes) + " bytes\n";
}

// libgit2 keeps global state; one init per use, balanced by its shutdown.
struct Libgit2 {
  Libgit2() { git_libgit2_init(); }
  ~Libgit2() { git_libgit2_shutdown(); }
};

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Repo = std::unique_ptr<git_repository, Deleter<git_repository, git_repository_free>>;
using Ref = std::unique_ptr<git_reference, Deleter<git_reference, git_reference_free>>;
using Remote = std::unique_ptr<git_remote, Deleter<git_remote, git_remote_free>>;
using Object = std::unique_ptr<git_object, Deleter<git_object, git_object_free>>;
using Tree = std::unique_ptr<git_tree, Deleter<git_tree, git_tree_free>>;
using Diff = std::unique_ptr<git_diff, Deleter<git_diff, git_diff_free>>;
using Patch = std::unique_ptr<git_patch, Deleter<git_patch, git_patch_free>>;
using Index = std::unique_ptr<git_index, Deleter<git_index, git_index_free>>;

Status GitError(const std::string& what) {
  const git_error* e = git_error_last();
  return Internal(what + ": " + (e != nullptr && e->message != nullptr ? e->message : "libgit2"));
}

std::string RemoteUrl(git_repository* repo) {
  git_remote* raw = nullptr;
  if (git_remote_lookup(&raw, repo, "origin") != 0) {
    git_strarray names = {nullptr, 0};
    if (git_remote_list(&names, repo) == 0 && names.count > 0) {
      git_remote_lookup(&raw, repo, names.strings[0]);
    }
    git_strarray_dispose(&names);
  }
  Remote remote(raw);
  if (!remote || git_remote_url(remote.get()) == nullptr) return "";
  return StripCredentials(git_remote_url(remote.get()));
}

// Whether `dir` may be in a git repository: a `.git` in it or a directory above, or GIT_DIR
// set. Answered without libgit2, whose start-up (it loads the system's CA certificates) costs
// more than a run outside any repository should.
bool MayBeInRepository(const std::string& dir) {
  if (const char* git_dir = std::getenv("GIT_DIR"); git_dir != nullptr && *git_dir != '\0') {
    return true;
  }
  std::error_code ec;
  std::filesystem::path at = std::filesystem::absolute(dir, ec);
  if (ec) return true;
  for (;;) {
    if (std::filesystem::exists(at / ".git", ec)) return true;
    if (!at.has_parent_path() || at.parent_path() == at) return false;
    at = at.parent_path();
  }
}

// Whether the repository path `path` is one of `exclude` (absolute) or lies under one.
bool Excluded(const std::string& root, const char* path, const std::vector<std::string>& exclude) {
  if (path == nullptr || exclude.empty()) return false;
  std::string full = root;
  if (!full.empty() && full.back() != '/') full += '/';
  full += path;
  for (const std::string& e : exclude) {
    if (full == e || (full.size() > e.size() && full.starts_with(e) && full[e.size()] == '/')) {
      return true;
    }
  }
  return false;
}

// Appends the patch of every delta; untracked files only when text and small enough.
Status AppendPatches(git_diff* diff, const CodeStateOptions& options, CodeState* state) {
  const size_t n = git_diff_num_deltas(diff);
  for (size_t i = 0; i < n; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff, i);
    // cairn's own data directory (the default ./.cairn of the server and of run journals) is
    // not the user's code: counting it would make every run after the first one dirty.
    if (delta->status == GIT_DELTA_UNTRACKED &&
        std::string_view(delta->new_file.path).starts_with(".cairn/")) {
      continue;
    }
    if (Excluded(state->root, delta->new_file.path, options.exclude) ||
        Excluded(state->root, delta->old_file.path, options.exclude)) {
      continue;
    }
    state->dirty = true;
    if (delta->status == GIT_DELTA_UNTRACKED &&
        (static_cast<int64_t>(delta->new_file.size) > options.max_untracked_file_bytes ||
         (delta->flags & GIT_DIFF_FLAG_BINARY) != 0)) {
      state->untracked_skipped.push_back(delta->new_file.path);
      continue;
    }
    git_patch* raw = nullptr;
    if (git_patch_from_diff(&raw, diff, i) != 0) return GitError("building the patch");
    Patch patch(raw);
    if (!patch) continue;  // nothing to show (e.g. a mode change libgit2 folds away)
    git_buf buf = GIT_BUF_INIT;
    if (git_patch_to_buf(&buf, patch.get()) != 0) return GitError("printing the patch");
    // Binary files that slipped past the check above are now marked; drop them too.
    std::string_view text(buf.ptr, buf.size);
    if (delta->status == GIT_DELTA_UNTRACKED && (delta->flags & GIT_DIFF_FLAG_BINARY) != 0) {
      state->untracked_skipped.push_back(delta->new_file.path);
    } else if (static_cast<int64_t>(state->patch.size() + text.size()) > options.max_patch_bytes) {
      state->patch_truncated = true;
    } else {
      state->patch.append(text);
    }
    git_buf_dispose(&buf);
    if (state->patch_truncated) {
      state->patch += CutMark(options.max_patch_bytes);
      return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace

std::string StripCredentials(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    // scp-like "user@host:path" carries no password.
    return std::string(url);
  }
  const std::string_view scheme = url.substr(0, scheme_end);
  const size_t authority = scheme_end + 3;
  const size_t path = url.find('/', authority);
  const std::string_view host_part = url.substr(
      authority, path == std::string_view::npos ? std::string_view::npos : path - authority);
  const size_t at = host_part.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  std::string_view user = host_part.substr(0, at);
  std::string kept_user;
  // Over http(s) the user part is where tokens go; over ssh it names the account.
  if (scheme == "ssh" || scheme == "git+ssh" || scheme == "ssh+git") {
    kept_user = std::string(user.substr(0, user.find(':'))) + "@";
  }
  return std::string(url.substr(0, authority)) + kept_user +
         std::string(url.substr(authority + at + 1));
}

Result<CodeState> ReadCodeState(const std::string& dir, const CodeStateOptions& options) {
  CodeState state;
  if (!MayBeInRepository(dir)) return state;
  Libgit2 lib;
  git_repository* raw_repo = nullptr;
  int rc = git_repository_open_ext(&raw_repo, dir.c_str(), 0, nullptr);
  if (rc == GIT_ENOTFOUND) return state;
  if (rc != 0) return GitError("opening the git repository of " + dir);
  Repo repo(raw_repo);
  state.in_repository = true;
  if (const char* workdir = git_repository_workdir(repo.get()); workdir != nullptr) {
    state.root = workdir;
    while (state.root.size() > 1 && state.root.ends_with('/')) state.root.pop_back();
  }
  state.remote_url = RemoteUrl(repo.get());

  git_reference* raw_head = nullptr;
  rc = git_repository_head(&raw_head, repo.get());
  Ref head(raw_head);
  if (rc == 0) {
    if (git_reference_is_branch(head.get()) != 0) {
      const char* name = nullptr;
      if (git_branch_name(&name, head.get()) == 0 && name != nullptr) state.branch = name;
    }
    if (const git_oid* oid = git_reference_target(head.get()); oid != nullptr) {
      char hex[GIT_OID_HEXSZ + 1];
      git_oid_tostr(hex, sizeof(hex), oid);
      state.commit = hex;
    }
  } else if (rc == GIT_EUNBORNBRANCH) {
    // A new repository: the branch HEAD points to has no commit yet.
    git_reference* sym = nullptr;
    if (git_reference_lookup(&sym, repo.get(), "HEAD") == 0) {
      Ref owned(sym);
      if (const char* target = git_reference_symbolic_target(sym); target != nullptr) {
        std::string_view t(target);
        if (t.starts_with("refs/heads/")) t.remove_prefix(11);
        state.branch = std::string(t);
      }
    }
  } else {
    return GitError("reading HEAD");
  }

  Tree tree;
  if (!state.commit.empty()) {
    git_object* obj = nullptr;
    if (git_revparse_single(&obj, repo.get(), "HEAD^{tree}") != 0) {
      return GitError("reading HEAD's tree");
    }
    Object owned(obj);
    git_tree* t = nullptr;
    if (git_tree_lookup(&t, repo.get(), git_object_id(obj)) != 0) return GitError("reading tree");
    tree.reset(t);
  }
  git_diff_options diff_options = GIT_DIFF_OPTIONS_INIT;
  diff_options.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
                       GIT_DIFF_SHOW_UNTRACKED_CONTENT;
  git_diff* raw_diff = nullptr;
  if (git_diff_tree_to_workdir_with_index(&raw_diff, repo.get(), tree.get(), &diff_options) != 0) {
    return GitError("comparing the working tree with HEAD");
  }
  Diff diff(raw_diff);
  CAIRN_RETURN_IF_ERROR(AppendPatches(diff.get(), options, &state));
  return state;
}

Status RebuildCode(const std::string& repo_dir, const std::string& commit, std::string_view patch,
                   const std::string& dest) {
  Libgit2 lib;
  git_repository* raw_repo = nullptr;
  int rc = git_repository_open_ext(&raw_repo, repo_dir.c_str(), 0, nullptr);
  if (rc == GIT_ENOTFOUND) return NotFound(repo_dir + " is not in a git repository");
  if (rc != 0) return GitError("opening the git repository of " + repo_dir);
  Repo repo(raw_repo);
  // A full hash, not any revision: a run's tag must not name "HEAD" or a branch.
  const bool full_hash =
      (commit.size() == 40 || commit.size() == 64) &&
      std::all_of(commit.begin(), commit.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      });
  if (!full_hash) return InvalidArgument("'" + commit + "' is not a commit's full hash");
  git_object* raw_tree = nullptr;
  if (git_revparse_single(&raw_tree, repo.get(), (commit + "^{tree}").c_str()) != 0) {
    return NotFound("the repository of " + repo_dir + " has no commit " + commit +
                    " (fetch it first)");
  }
  Object tree_object(raw_tree);
  git_tree* tree = reinterpret_cast<git_tree*>(tree_object.get());
  std::error_code ec;
  std::filesystem::create_directories(dest, ec);
  if (ec) return Unavailable("making " + dest + ": " + ec.message());
  git_checkout_options checkout = GIT_CHECKOUT_OPTIONS_INIT;
  checkout.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_WRITE_INDEX;
  checkout.target_directory = dest.c_str();
  if (patch.empty()) {
    if (git_checkout_tree(repo.get(), tree_object.get(), &checkout) != 0) {
      return GitError("writing commit " + commit + " into " + dest);
    }
    return Status::Ok();
  }
  git_diff* raw_diff = nullptr;
  if (git_diff_from_buffer(&raw_diff, patch.data(), patch.size()) != 0) {
    return FailedPrecondition(GitError("reading the recorded changes").message());
  }
  Diff diff(raw_diff);
  git_index* raw_index = nullptr;
  if (git_apply_to_tree(&raw_index, repo.get(), tree, diff.get(), nullptr) != 0) {
    return FailedPrecondition(
        GitError("applying the recorded changes to commit " + commit).message());
  }
  Index index(raw_index);
  if (git_checkout_index(repo.get(), index.get(), &checkout) != 0) {
    return GitError("writing commit " + commit + " with the recorded changes into " + dest);
  }
  return Status::Ok();
}

namespace {

bool UnderHiddenStateDir(std::string_view rel) {
  for (std::string_view dir : {".git", ".cairn"}) {
    if (rel == dir || rel.starts_with(std::string(dir) + "/") ||
        rel.find("/" + std::string(dir) + "/") != std::string_view::npos) {
      return true;
    }
  }
  return false;
}


}  // namespace

Result<WorkingFiles> ListDirectoryFiles(const std::string& dir, int64_t max_files) {
  namespace fs = std::filesystem;
  WorkingFiles out;
  std::error_code ec;
  out.root = fs::absolute(dir, ec).lexically_normal().string();
  while (out.root.size() > 1 && out.root.ends_with('/')) out.root.pop_back();
  fs::recursive_directory_iterator it(out.root, fs::directory_options::skip_permission_denied, ec);
  if (ec) return Unavailable("listing " + out.root + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Unavailable("listing " + out.root + ": " + ec.message());
    const std::string name = it->path().filename().string();
    if (it->is_directory(ec) && !it->is_symlink(ec) && (name == ".git" || name == ".cairn")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec) && !it->is_symlink(ec)) continue;
    if (static_cast<int64_t>(out.paths.size()) >= max_files) {
      return FailedPrecondition(
          out.root + " is not in a git repository and holds more than " +
          std::to_string(max_files) +
          " files; a code snapshot of a repository takes what git tracks and does not ignore, "
          "so run from a repository (git init, with a .gitignore for data and outputs) or from "
          "a smaller directory");
    }
    out.paths.push_back(it->path().lexically_relative(out.root).generic_string());
  }
  std::sort(out.paths.begin(), out.paths.end());
  return out;
}

Result<WorkingFiles> ListWorkingFiles(const std::string& dir, int64_t max_files) {
  if (!MayBeInRepository(dir)) return ListDirectoryFiles(dir, max_files);
  Libgit2 lib;
  git_repository* raw_repo = nullptr;
  int rc = git_repository_open_ext(&raw_repo, dir.c_str(), 0, nullptr);
  if (rc == GIT_ENOTFOUND) return ListDirectoryFiles(dir, max_files);
  if (rc != 0) return GitError("opening the git repository of " + dir);
  Repo repo(raw_repo);
  const char* workdir = git_repository_workdir(repo.get());
  if (workdir == nullptr) return FailedPrecondition(dir + " is in a bare repository");
  WorkingFiles out;
  out.in_repository = true;
  out.root = workdir;
  while (out.root.size() > 1 && out.root.ends_with('/')) out.root.pop_back();

  git_index* raw_index = nullptr;
  if (git_repository_index(&raw_index, repo.get()) != 0) return GitError("reading the index");
  std::unique_ptr<git_index, Deleter<git_index, git_index_free>> index(raw_index);
  const size_t count = git_index_entrycount(index.get());
  for (size_t i = 0; i < count; ++i) {
    const git_index_entry* e = git_index_get_byindex(index.get(), i);
    if (e == nullptr || e->path == nullptr) continue;
    if (e->mode == GIT_FILEMODE_COMMIT) {
      out.submodules.push_back(e->path);
    } else if (git_index_entry_stage(e) == 0 || out.paths.empty() || out.paths.back() != e->path) {
      out.paths.push_back(e->path);  // a conflicted path has several stages: listed once
    }
  }
  git_status_options options = GIT_STATUS_OPTIONS_INIT;
  options.show = GIT_STATUS_SHOW_WORKDIR_ONLY;
  options.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
                  GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
  git_status_list* raw_status = nullptr;
  if (git_status_list_new(&raw_status, repo.get(), &options) != 0) {
    return GitError("listing untracked files");
  }
  std::unique_ptr<git_status_list, Deleter<git_status_list, git_status_list_free>> status(
      raw_status);
  const size_t changes = git_status_list_entrycount(status.get());
  for (size_t i = 0; i < changes; ++i) {
    const git_status_entry* e = git_status_byindex(status.get(), i);
    if (e == nullptr || (e->status & GIT_STATUS_WT_NEW) == 0 || e->index_to_workdir == nullptr) {
      continue;
    }
    if (const char* path = e->index_to_workdir->new_file.path; path != nullptr) {
      out.paths.push_back(path);
    }
  }
  std::erase_if(out.paths, [](const std::string& p) { return UnderHiddenStateDir(p); });
  std::sort(out.paths.begin(), out.paths.end());
  out.paths.erase(std::unique(out.paths.begin(), out.paths.end()), out.paths.end());
  return out;
}

std::vector<core::Tag> CodeTags(const CodeState& code) {
  std::vector<core::Tag> tags;
  if (!code.in_repository) return tags;
  if (!code.commit.empty()) tags.push_back({"mlflow.source.git.commit", code.commit});
  if (!code.branch.empty()) tags.push_back({"mlflow.source.git.branch", code.branch});
  if (!code.remote_url.empty()) tags.push_back({"mlflow.source.git.repoURL", code.remote_url});
  tags.push_back({"cairn.git.root", code.root});
  tags.push_back({"cairn.git.dirty", code.dirty ? "true" : "false"});
  return tags;
}

std::string CodeStateJson(const CodeState& code) {
  JsonWriter w;
  w.BeginObject();
  w.Key("root").String(code.root);
  w.Key("remote_url").String(code.remote_url);
  w.Key("branch").String(code.branch);
  w.Key("commit").String(code.commit);
  w.Key("dirty").Bool(code.dirty);
  w.Key("patch_bytes").Int(static_cast<int64_t>(code.patch.size()));
  w.Key("patch_truncated").Bool(code.patch_truncated);
  w.Key("untracked_skipped").BeginArray();
  for (const std::string& path : code.untracked_skipped) w.String(path);
  w.EndArray();
  w.EndObject();
  return w.Take();
}

void CutPatch(CodeState* code, int64_t max_bytes) {
  if (static_cast<int64_t>(code->patch.size()) <= max_bytes) return;
  // Each file's part starts with "diff --git"; the cut keeps whole parts.
  size_t cut = code->patch.rfind("\ndiff --git ", static_cast<size_t>(max_bytes));
  code->patch.resize(cut == std::string::npos ? 0 : cut + 1);
  code->patch += CutMark(max_bytes);
  code->patch_truncated = true;
}

}  // namespace cairn::capture
