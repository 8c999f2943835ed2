// `cairn backup DEST` and `cairn restore SRC --data-dir DIR`: a server's stores copied while it
// keeps serving, and a server's data directory rebuilt from the copy. The metadata is copied
// with SQLite's online backup (store/sqlite/backup.h); the blobs it names go along, only those
// the destination lacks (service/backup.h). docs/server.md, "Backup and restore".
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "blob/content_store.h"
#include "cli/commands.h"
#include "report/run_report.h"
#include "service/backup.h"
#include "store/metadata_store.h"
#include "store/sqlite/backup.h"
#include "util/clock.h"
#include "util/file.h"

namespace cairn::cli {
namespace {

namespace fs = std::filesystem;

struct BackupFlags {
  std::string target;  // DEST for backup, SRC for restore
  std::string data_dir;
  std::string backend_store_uri;
  std::string artifacts_destination;
  int threads = 4;
};

constexpr const char* kDatabase = "cairn.db";
constexpr const char* kBlobs = "artifacts";
constexpr const char* kRecord = "backup.json";

int BackupFail(const Status& s, int code = 1) {
  PrintError(s);
  return code;
}

service::BlobCopyOptions CopyOptions(int threads) {
  service::BlobCopyOptions options;
  options.threads = threads;
  if (isatty(STDERR_FILENO) != 0) {
    options.progress = [](const service::BlobCopyProgress& p) {
      std::fprintf(stderr, "\r\033[Kcopying blobs: %lld/%lld, %s", static_cast<long long>(p.done),
                   static_cast<long long>(p.total), report::FormatSize(p.bytes).c_str());
    };
  }
  return options;
}

void EndProgress() {
  if (isatty(STDERR_FILENO) != 0) std::fprintf(stderr, "\r\033[K");
}

// Copies the blobs the database at `db` names from `from` to `to`; prints what went wrong.
Result<service::BlobCopy> CopyBlobs(const std::string& db, const std::string& from,
                                    const std::string& to, int threads) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<store::MetadataStore> snapshot,
                         store::OpenMetadataStore("sqlite:///" + db, store::StoreOptions{}));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<blob::ContentStore> source, blob::OpenContentStore(from));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<blob::ContentStore> dest, blob::OpenContentStore(to));
  Result<service::BlobCopy> copy =
      service::CopyNamedBlobs(*snapshot, *source, *dest, CopyOptions(threads));
  EndProgress();
  if (copy.ok()) {
    for (const std::string& d : copy->lost) {
      std::printf("  %s: named by the copy, gone from %s\n", d.c_str(), from.c_str());
    }
    for (const std::string& c : copy->corrupt) std::printf("  %s\n", c.c_str());
  }
  return copy;
}

int Backup(const BackupFlags& flags) {
  const std::string dir = DataDir(flags.data_dir);
  std::string db = dir + "/" + kDatabase;
  if (!flags.backend_store_uri.empty()) {
    if (!flags.backend_store_uri.starts_with("sqlite:///")) {
      return BackupFail(
          Unimplemented("only a SQLite store can be backed up, not " + flags.backend_store_uri), 2);
    }
    db = flags.backend_store_uri.substr(10);
    db = db.substr(0, db.find('?'));
  }
  const std::string blobs =
      flags.artifacts_destination.empty() ? dir + "/" + kBlobs : flags.artifacts_destination;
  std::error_code ec;
  if (!fs::exists(db, ec)) {
    return BackupFail(NotFound("no store at " + db +
                               " (give the server's --data-dir, or its store "
                               "URIs)"),
                      2);
  }
  if (flags.target.starts_with("s3://")) {
    return BackupFail(Unimplemented("a backup goes to a directory; s3:// destinations are not "
                                    "supported yet"),
                      2);
  }
  const fs::path dest = fs::absolute(flags.target, ec);
  if (Status s = MakeDirs(dest / kBlobs); !s.ok()) return BackupFail(s, 2);
  const int64_t started = SystemClock()->NowMillis();
  // The new copy of the metadata replaces the old one only once every blob it names is in
  // place, so DEST always holds one whole backup.
  const std::string partial = (dest / (std::string(kDatabase) + ".partial")).string();
  std::printf("copying the metadata store %s\n", db.c_str());
  std::fflush(stdout);
  if (Status s = store::sqlite::BackupDatabase(db, partial); !s.ok()) return BackupFail(s);
  Result<service::BlobCopy> copy =
      CopyBlobs(partial, blobs, (dest / kBlobs).string(), flags.threads);
  if (!copy.ok()) return BackupFail(copy.status());
  if (!copy->ok()) {
    fs::remove(partial, ec);
    std::printf(
        "%zu blob(s) named by the copy were removed or damaged while it was taken; "
        "the previous backup in %s is kept. Back up again.\n",
        copy->lost.size() + copy->corrupt.size(), dest.c_str());
    return 1;
  }
  if (::rename(partial.c_str(), (dest / kDatabase).c_str()) != 0) {
    return BackupFail(ErrnoStatus("rename", dest / kDatabase));
  }
  if (Status s = SyncDir(dest); !s.ok()) return BackupFail(s);
  const int64_t took = SystemClock()->NowMillis() - started;
  nlohmann::json record = {
      {"time", started},       {"took_ms", took},        {"source", db},
      {"blobs_source", blobs}, {"files", copy->files},   {"blobs", copy->blobs},
      {"bytes", copy->bytes},  {"copied", copy->copied}, {"bytes_copied", copy->bytes_copied}};
  if (Status s = WriteFileAtomic(dest / kRecord, record.dump(2) + "\n"); !s.ok())
    return BackupFail(s);
  std::printf(
      "backed up to %s: %lld artifact file(s) naming %lld blob(s), %s; copied %lld new "
      "blob(s), %s, in %s\n",
      dest.c_str(), static_cast<long long>(copy->files), static_cast<long long>(copy->blobs),
      report::FormatSize(copy->bytes).c_str(), static_cast<long long>(copy->copied),
      report::FormatSize(copy->bytes_copied).c_str(), report::FormatDuration(took).c_str());
  return 0;
}

int Restore(const BackupFlags& flags) {
  const fs::path src = flags.target;
  std::error_code ec;
  if (!fs::exists(src / kDatabase, ec)) {
    return BackupFail(NotFound("no backup in " + src.string() + " (it has no " + kDatabase + ")"),
                      2);
  }
  if (flags.data_dir.empty()) return BackupFail(InvalidArgument("name the new --data-dir"), 2);
  const fs::path dir = fs::absolute(flags.data_dir, ec);
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
    return BackupFail(
        FailedPrecondition(dir.string() + " is not empty: restore into a new directory"), 2);
  }
  if (Status s = MakeDirs(dir / kBlobs); !s.ok()) return BackupFail(s, 2);
  if (Status s =
          store::sqlite::BackupDatabase((src / kDatabase).string(), (dir / kDatabase).string());
      !s.ok()) {
    return BackupFail(s);
  }
  Result<service::BlobCopy> copy = CopyBlobs((dir / kDatabase).string(), (src / kBlobs).string(),
                                             (dir / kBlobs).string(), flags.threads);
  if (!copy.ok()) return BackupFail(copy.status());
  std::printf("restored %s into %s: %lld artifact file(s) naming %lld blob(s), %s\n", src.c_str(),
              dir.c_str(), static_cast<long long>(copy->files), static_cast<long long>(copy->blobs),
              report::FormatSize(copy->bytes).c_str());
  if (!copy->ok()) {
    std::printf(
        "%zu blob(s) are missing or damaged in the backup; the files that name them "
        "cannot be read\n",
        copy->lost.size() + copy->corrupt.size());
    return 1;
  }
  std::printf("start it with: cairn server --data-dir %s\n", dir.c_str());
  return 0;
}

}  // namespace

void RegisterBackup(CLI::App& app, Action* action) {
  auto [backup, bflags] = AddSubcommand<BackupFlags>(
      &app, action, "backup",
      "Copy a server's stores into the directory DEST while the server keeps serving: the\n"
      "metadata store as one consistent snapshot (SQLite's online backup) and every blob it\n"
      "names that DEST lacks, each checked against its SHA-256 on the way. Blobs never change,\n"
      "so backing up into the same DEST again copies only the new ones. DEST keeps the last\n"
      "whole backup until a new one is complete.\n\n"
      "  cairn backup /mnt/backups/cairn --data-dir /srv/cairn",
      Backup);
  backup->add_option("dest", bflags->target, "The backup directory")->required();
  backup->add_option("--data-dir", bflags->data_dir,
                     "The server's data directory (default $CAIRN_HOME, else ./.cairn)");
  backup->add_option("--backend-store-uri", bflags->backend_store_uri,
                     "The server's metadata store, when not in the data directory "
                     "(sqlite:///PATH)");
  backup->add_option("--artifacts-destination", bflags->artifacts_destination,
                     "The server's blob directory, when not in the data directory");
  backup->add_option("--threads", bflags->threads, "Blobs copied at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));

  auto [restore, rflags] = AddSubcommand<BackupFlags>(
      &app, action, "restore",
      "Rebuild a server's data directory from a backup made by `cairn backup`: the metadata\n"
      "store and every blob it names, each checked against its SHA-256. DIR must be new or\n"
      "empty; start a server on it with `cairn server --data-dir DIR`.\n\n"
      "  cairn restore /mnt/backups/cairn --data-dir /srv/cairn-restored",
      Restore);
  restore->add_option("src", rflags->target, "The backup directory")->required();
  restore->add_option("--data-dir", rflags->data_dir, "The new data directory")->required();
  restore->add_option("--threads", rflags->threads, "Blobs copied at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
}

}  // namespace cairn::cli
