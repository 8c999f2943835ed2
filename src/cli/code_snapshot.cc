#include "cli/code_snapshot.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "capture/code_state.h"
#include "client/tracking_client.h"
#include "core/tree_manifest.h"
#include "util/file.h"
#include "util/hash.h"

namespace cairn::cli {
namespace {

namespace fs = std::filesystem;

std::string MiB(int64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

// What to do about a snapshot that is too large.
std::string Advice(bool in_repository) {
  return in_repository ? "; keep data and outputs out of the snapshot with .gitignore, or put "
                         "them in a dataset"
                       : "; run from a git repository, whose .gitignore says what is not code";
}

Status WriteNewFile(const fs::path& path, std::string_view bytes, bool executable) {
  CAIRN_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  executable ? 0755 : 0644);
  if (fd < 0) return ErrnoStatus("creating", path);
  if (Status s = WriteAll(fd, bytes, path); !s.ok()) {
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0) return ErrnoStatus("closing", path);
  return Status::Ok();
}

}  // namespace

Result<CodeSnapshot> TakeCodeSnapshot(const std::string& cwd, const SnapshotLimits& limits,
                                      const std::string& root) {
  CAIRN_ASSIGN_OR_RETURN(capture::WorkingFiles files,
                         root.empty() ? capture::ListWorkingFiles(cwd, limits.max_files)
                                      : capture::ListDirectoryFiles(root, limits.max_files));
  if (static_cast<int64_t>(files.paths.size()) > limits.max_files) {
    return FailedPrecondition("the code at " + files.root + " has " +
                              std::to_string(files.paths.size()) + " files, more than the " +
                              std::to_string(limits.max_files) + " a snapshot takes" +
                              Advice(files.in_repository));
  }
  CodeSnapshot snapshot;
  snapshot.root = files.root;
  snapshot.in_repository = files.in_repository;
  std::error_code ec;
  fs::path rel = fs::absolute(cwd, ec).lexically_normal().lexically_relative(files.root);
  snapshot.cwd = rel.empty() || rel == "." ? "" : rel.generic_string();
  if (snapshot.cwd.starts_with("..")) snapshot.cwd.clear();
  CAIRN_ASSIGN_OR_RETURN(snapshot.tree, pipeline::HashFiles(files.root, files.paths, {}));
  const auto largest = std::max_element(
      snapshot.tree.files.begin(), snapshot.tree.files.end(),
      [](const pipeline::FileEntry& a, const pipeline::FileEntry& b) { return a.size < b.size; });
  if (largest != snapshot.tree.files.end() && largest->size > limits.max_file_bytes) {
    return FailedPrecondition(largest->path + " is " + MiB(largest->size) +
                              ", more than the " + MiB(limits.max_file_bytes) +
                              " a file of a code snapshot may be" +
                              Advice(files.in_repository));
  }
  if (snapshot.tree.bytes > limits.max_total_bytes) {
    return FailedPrecondition("the code at " + files.root + " is " + MiB(snapshot.tree.bytes) +
                              ", more than the " + MiB(limits.max_total_bytes) +
                              " a snapshot takes (the largest file is " +
                              (largest != snapshot.tree.files.end() ? largest->path : "") + ")" +
                              Advice(files.in_repository));
  }
  return snapshot;
}

Status UploadCodeSnapshot(client::TrackingClient& client, const std::string& artifact_uri,
                          const CodeSnapshot& snapshot,
                          const std::function<void(size_t, size_t)>& progress) {
  const std::string files_dir = std::string(kSnapshotFilesArtifact) + "/";
  const std::string root = snapshot.root.ends_with('/') ? snapshot.root : snapshot.root + "/";
  const size_t total = snapshot.tree.files.size();
  for (size_t i = 0; i < total; ++i) {
    const pipeline::FileEntry& f = snapshot.tree.files[i];
    Status s;
    if (f.mode == pipeline::kModeSymlink) {
      std::error_code ec;
      const std::string target = fs::read_symlink(root + f.path, ec).string();
      if (ec) return Unavailable("reading the link " + f.path + ": " + ec.message());
      if (Sha256Hex(target) != f.sha256) {
        return Unavailable(f.path + " changed since it was hashed; queue the task again");
      }
      s = client.UploadArtifact(artifact_uri, files_dir + f.path, target);
    } else {
      // Read whole (a file is at most SnapshotLimits::max_file_bytes) so that what goes up is
      // what was hashed.
      Result<std::string> bytes = ReadFile(root + f.path);
      if (!bytes.ok()) return bytes.status().WithContext("reading " + f.path);
      if (Sha256Hex(*bytes) != f.sha256) {
        return Unavailable(f.path +
                           " changed while the snapshot was taken; queue the task again when "
                           "nothing writes to it (or keep it out with .gitignore)");
      }
      s = client.UploadArtifact(artifact_uri, files_dir + f.path, *bytes);
    }
    if (!s.ok()) return s.WithContext("uploading " + f.path);
    if (progress) progress(i + 1, total);
  }
  // The manifest last: a snapshot whose manifest is there has all its files.
  return client.UploadArtifact(artifact_uri, std::string(kSnapshotManifestArtifact),
                               pipeline::ManifestJson(snapshot.tree.files));
}

Result<int64_t> MaterialiseCodeSnapshot(client::TrackingClient& client,
                                        const std::string& artifact_uri,
                                        const std::string& digest, const std::string& dir) {
  CAIRN_ASSIGN_OR_RETURN(
      std::string manifest,
      client.DownloadArtifact(artifact_uri, std::string(kSnapshotManifestArtifact)));
  if (Sha256Hex(manifest) != digest) {
    return Internal("the code snapshot's manifest does not hash to " + digest +
                    "; it was changed after the task was queued");
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<pipeline::FileEntry> entries,
                         pipeline::ParseManifestJson(manifest));
  CAIRN_RETURN_IF_ERROR(MakeDirs(dir));
  const fs::path base(dir);
  const std::string files_dir = std::string(kSnapshotFilesArtifact) + "/";
  // Regular files first, links last: no file is written through a link the snapshot made.
  std::stable_partition(entries.begin(), entries.end(), [](const pipeline::FileEntry& e) {
    return e.mode != pipeline::kModeSymlink;
  });
  for (const pipeline::FileEntry& e : entries) {
    CAIRN_ASSIGN_OR_RETURN(std::string bytes,
                           client.DownloadArtifact(artifact_uri, files_dir + e.path));
    if (static_cast<int64_t>(bytes.size()) != e.size || Sha256Hex(bytes) != e.sha256) {
      return Internal("the code snapshot's " + e.path + " does not match its manifest");
    }
    const fs::path path = base / e.path;
    if (e.mode == pipeline::kModeSymlink) {
      CAIRN_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
      if (::symlink(bytes.c_str(), path.c_str()) != 0) return ErrnoStatus("linking", path);
    } else {
      CAIRN_RETURN_IF_ERROR(WriteNewFile(path, bytes, e.mode == pipeline::kModeExecutable));
    }
  }
  return static_cast<int64_t>(entries.size());
}

}  // namespace cairn::cli
