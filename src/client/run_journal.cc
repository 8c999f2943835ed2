#include "client/run_journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "client/json_fields.h"
#include "core/mlflow_json.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/json_writer.h"

namespace cairn::client {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kJournalSuffix = ".journal";
constexpr std::string_view kSentSuffix = ".sent";
constexpr std::string_view kFilesSuffix = ".files";
constexpr std::string_view kEndPrefix = R"({"op":"end")";
constexpr std::string_view kHeaderPrefix = R"({"cairn_journal":)";

// Records of a batch: at most this many, and about this many bytes. A larger record goes on
// its own, through the call of its kind (which splits a large log, and uploads a large
// artifact as a file).
constexpr size_t kBatchRecords = 1000;
constexpr size_t kBatchBytes = 4 << 20;
constexpr size_t kBatchRecordBytes = 1 << 20;

// Whether a record the server refused is refused for good (a bad param name, a value too
// long): sending it again cannot help, and holding it would hold back every record after it,
// the run's end included. Refusals of who is asking are not: with the credentials fixed,
// `cairn sync` delivers.
bool RefusedForGood(const Status& s) {
  return !s.ok() && s.code() != StatusCode::kUnavailable && s.code() != StatusCode::kInternal &&
         s.code() != StatusCode::kUnauthenticated && s.code() != StatusCode::kPermissionDenied;
}

void WarnRefused(std::string_view run_id, const Status& s) {
  std::fprintf(stderr, "cairn: warning: the server refused a record of run %.*s: %s\n",
               static_cast<int>(run_id.size()), run_id.data(), s.message().c_str());
}

double Number(const json& v) {
  if (v.is_number()) return v.get<double>();
  const std::string s = v.is_string() ? v.get<std::string>() : "";
  if (s == "NaN") return std::nan("");
  if (s == "Infinity") return INFINITY;
  if (s == "-Infinity") return -INFINITY;
  return std::strtod(s.c_str(), nullptr);
}

template <typename KeyValue>
std::vector<KeyValue> KeyValues(const json& record, const char* name) {
  std::vector<KeyValue> out;
  for (const json& kv : record.value(name, json::array())) {
    out.push_back({kv.value("key", ""), kv.value("value", "")});
  }
  return out;
}

// A journal directory only its owner can write: its records decide which local files are
// uploaded. Created 0700; one that exists must be a real directory of this user that others
// cannot write (the fallback directory lies in the shared temporary directory).
Status PrivateDir(const std::string& dir) {
  std::error_code ec;
  const bool existed = fs::exists(dir, ec);
  CAIRN_RETURN_IF_ERROR(MakeDirs(dir));
  if (!existed && chmod(dir.c_str(), 0700) != 0) return ErrnoStatus("chmod", dir);
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return ErrnoStatus("stat", dir);
  if (!S_ISDIR(st.st_mode))
    return FailedPrecondition("journal directory " + dir + " is not a directory");
  if (st.st_uid != geteuid()) {
    return FailedPrecondition("journal directory " + dir + " belongs to another user");
  }
  if ((st.st_mode & S_IWOTH) != 0) {
    return FailedPrecondition("journal directory " + dir + " can be written by other users");
  }
  return Status::Ok();
}

// What the records of one delivery share.
struct Delivery {
  TrackingClient& client;
  std::string run_id;  // the run of the record being delivered
  fs::path files;      // where artifact_file records' files are kept
  const RunJournal::Notice& notice;
  std::map<std::string, std::string> artifact_uris;  // by run, once looked up
  BlobTotals blobs;                                  // what blobs records came to
};

constexpr std::string_view kRunPrefix = R"({"run_id":")";

// 32 lowercase hex digits: a run id, or the name of a kept file (RandomHex(16)).
bool IsHex32(std::string_view s) {
  return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// The run a journal line is for: the one it names first, else the journal's own.
std::string_view RunOfLine(std::string_view line, std::string_view own) {
  if (!line.starts_with(kRunPrefix) || line.size() < kRunPrefix.size() + 34) return own;
  const std::string_view id = line.substr(kRunPrefix.size(), 32);
  if (line.substr(kRunPrefix.size() + 32, 2) != "\"," || !IsHex32(id)) return own;
  return id;
}

// The line's op, for the kinds a batch carries ("" for the others).
std::string_view BatchOp(std::string_view line) {
  if (line.starts_with(kRunPrefix)) {
    if (line.size() < kRunPrefix.size() + 34) return {};
    line.remove_prefix(kRunPrefix.size() + 34);
  }
  for (std::string_view op : {"create", "batch", "log", "artifact", "start", "end"}) {
    const std::string head = std::string(R"("op":")") + std::string(op) + "\"";
    if (line.substr(line.starts_with('{') ? 1 : 0).starts_with(head)) return op;
  }
  return {};
}

// The artifact URI a record names, or, for one recorded before the run existed on the
// server, the run's (looked up once per delivery).
Result<std::string> ArtifactUriOf(Delivery& d, const json& record) {
  std::string artifact_uri = record.value("artifact_uri", "");
  if (!artifact_uri.empty()) return artifact_uri;
  std::string& known = d.artifact_uris[d.run_id];
  if (known.empty()) {
    CAIRN_ASSIGN_OR_RETURN(core::Run run, d.client.GetRun(d.run_id));
    known = run.info.artifact_uri;
  }
  return known;
}

// A create record's heartbeat, recorded at the start, may be old by now: the server would
// fail the run for it at once.
void RefreshHeartbeat(json& record) {
  for (json& t : record["tags"]) {
    if (t.value("key", "") == "cairn.heartbeat") {
      t["value"] = std::to_string(SystemClock()->NowMillis());
    }
  }
}

Status UploadKeptFile(Delivery& d, const json& record) {
  const std::string path = record.value("path", "");
  const std::string name = record.value("file", "");
  // Kept files are named by RandomHex(16): anything else in a record is not one of ours.
  if (!IsHex32(name)) {
    return InvalidArgument("journal record of run " + d.run_id + " names no kept file");
  }
  const fs::path file = d.files / name;
  struct stat st {};
  if (lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return NotFound("the file kept for artifact " + path + " of run " + d.run_id +
                    " is gone: " + file.string());
  }
  CAIRN_ASSIGN_OR_RETURN(std::string artifact_uri, ArtifactUriOf(d, record));
  return d.client.UploadArtifactFile(artifact_uri, path, file.string());
}

// The run's artifact files under `dir`, with their sizes.
Result<std::map<std::string, int64_t>> ArtifactsUnder(TrackingClient& client,
                                                      const std::string& run_id,
                                                      const std::string& dir) {
  std::map<std::string, int64_t> out;
  std::vector<std::string> dirs = {dir};
  while (!dirs.empty()) {
    const std::string at = dirs.back();
    dirs.pop_back();
    CAIRN_ASSIGN_OR_RETURN(std::vector<TrackingClient::ArtifactFile> listed,
                           client.ListArtifacts(run_id, at));
    for (const TrackingClient::ArtifactFile& f : listed) {
      if (f.is_dir) {
        dirs.push_back(f.path);
      } else {
        out[f.path] = f.file_size;
      }
    }
  }
  return out;
}

// A version of `model` from `source`, made only when every file the record lists reached the
// server: a file refused on the way would otherwise leave a version without it. Delivered
// twice (acknowledged, but the count not yet saved when the process died), the READY version
// the first delivery made is found and kept. The alias moves to the version unless it already
// names a newer one (a later run's, delivered first).
Status Register(Delivery& d, const json& record) {
  TrackingClient& client = d.client;
  const std::string model = record.value("model", "");
  const std::string source = record.value("source", "");
  const std::string alias = record.value("alias", "");
  const std::string prefix = "runs:/" + d.run_id + "/";
  if (!source.starts_with(prefix)) {
    return InvalidArgument("journal record of run " + d.run_id + " registers another run's files");
  }
  const std::string root = source.substr(prefix.size());
  const size_t slash = root.rfind('/');
  using Sizes = std::map<std::string, int64_t>;
  CAIRN_ASSIGN_OR_RETURN(
      Sizes arrived,
      ArtifactsUnder(client, d.run_id, slash == std::string::npos ? "" : root.substr(0, slash)));
  size_t missing = 0;
  std::string first_missing;
  const json files = record.value("files", json::array());
  for (const json& f : files) {
    const std::string path = f.value("path", "");
    auto it = arrived.find(path);
    if (it == arrived.end() || it->second != f.value("size", int64_t{-1})) {
      if (missing++ == 0) first_missing = path;
    }
  }
  if (missing > 0) {
    return InvalidArgument("model " + model + " was not registered from run " + d.run_id + ": " +
                           std::to_string(missing) + " of its " + std::to_string(files.size()) +
                           " files did not reach the server whole (" + first_missing + ")");
  }
  Status made = client.CreateRegisteredModel(model);
  if (!made.ok() && made.code() != StatusCode::kAlreadyExists) return made;
  int64_t version = 0;
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::ModelVersion> earlier,
                         client.SearchModelVersions("run_id = '" + d.run_id + "'", 1000));
  for (const core::ModelVersion& v : earlier) {
    if (v.name == model && v.source == source && v.status == core::ModelVersionStatus::kReady) {
      version = v.version;
    }
  }
  if (version == 0) {
    CAIRN_ASSIGN_OR_RETURN(core::ModelVersion v,
                           client.CreateModelVersion(model, source, d.run_id));
    version = v.version;
  }
  std::string note = "registered model " + model + " version " + std::to_string(version);
  if (!alias.empty()) {
    Result<core::ModelVersion> current = client.GetModelVersionByAlias(model, alias);
    if (current.ok() && current->version > version) {
      note +=
          "; alias " + alias + " stays on the newer version " + std::to_string(current->version);
    } else {
      CAIRN_RETURN_IF_ERROR(client.SetModelAlias(model, alias, std::to_string(version)));
      note += ", alias " + alias;
    }
  }
  if (d.notice) d.notice(note);
  return Status::Ok();
}

// Whether `file` is named by `digest` as a content store lays files out: .../ab/cdef...[.x]. A
// record may send only such a file, so that a journal cannot be made to upload any other.
bool NamedByDigest(const std::string& file, const std::string& digest) {
  if (!IsSha256Hex(digest)) return false;
  const fs::path p(file);
  std::string name = p.filename().string();
  if (name.ends_with(".x")) name.resize(name.size() - 2);
  return p.is_absolute() && p.parent_path().filename().string() + name == digest;
}

// Sends the files of a blobs record the server lacks, then names them all as the run's
// artifacts. A file gone from its place (its cache collected) is left out, with a warning,
// when the server lacks it too.
Status DeliverBlobs(Delivery& d, const json& record) {
  std::vector<BlobFile> files;
  for (const json& f : record.value("files", json::array())) {
    BlobFile b{f.value("path", ""), f.value("sha256", ""), f.value("size", int64_t{0}),
               f.value("file", "")};
    if (!NamedByDigest(b.file, b.sha256)) {
      return InvalidArgument("journal record of run " + d.run_id +
                             " names a file that is not named by its digest");
    }
    files.push_back(std::move(b));
  }
  std::vector<std::string> digests;
  std::map<std::string, const BlobFile*> by_digest;
  for (const BlobFile& f : files) {
    if (by_digest.emplace(f.sha256, &f).second) digests.push_back(f.sha256);
  }
  std::set<std::string> missing, lost;
  constexpr size_t kAsk = 10'000;
  for (size_t i = 0; i < digests.size(); i += kAsk) {
    const std::vector<std::string> part(
        digests.begin() + static_cast<ptrdiff_t>(i),
        digests.begin() + static_cast<ptrdiff_t>(std::min(i + kAsk, digests.size())));
    Result<std::vector<std::string>> lack = d.client.MissingBlobs(part);
    if (!lack.ok() && (lack.status().code() == StatusCode::kNotFound ||
                       lack.status().code() == StatusCode::kUnimplemented)) {
      // A server without content-addressed uploads: each file as an artifact upload.
      for (const BlobFile& f : files) {
        CAIRN_ASSIGN_OR_RETURN(std::string artifact_uri, ArtifactUriOf(d, record));
        CAIRN_RETURN_IF_ERROR(d.client.UploadArtifactFile(artifact_uri, f.path, f.file));
        d.blobs.sent_bytes += f.size;
      }
      d.blobs.files += files.size();
      d.blobs.sent += files.size();
      return Status::Ok();
    }
    CAIRN_RETURN_IF_ERROR(lack.status());
    missing.insert(lack->begin(), lack->end());
  }
  int64_t sent_bytes = 0;
  for (const std::string& digest : missing) {
    const BlobFile& f = *by_digest.at(digest);
    std::error_code ec;
    if (!fs::is_regular_file(f.file, ec)) {
      lost.insert(digest);
      continue;
    }
    CAIRN_RETURN_IF_ERROR(d.client.SendBlob(digest, f.file));
    sent_bytes += f.size;
  }
  std::vector<std::string> links;
  for (const BlobFile& f : files) {
    if (lost.count(f.sha256) != 0) continue;
    links.push_back(
        json({{"run_id", d.run_id}, {"op", "blob"}, {"path", f.path}, {"sha256", f.sha256}})
            .dump());
  }
  for (size_t i = 0; i < links.size(); i += kBatchRecords) {
    const std::vector<std::string> part(
        links.begin() + static_cast<ptrdiff_t>(i),
        links.begin() + static_cast<ptrdiff_t>(std::min(i + kBatchRecords, links.size())));
    CAIRN_ASSIGN_OR_RETURN(std::vector<TrackingClient::RecordFailure> failures,
                           d.client.ApplyRunRecords(part));
    for (const TrackingClient::RecordFailure& f : failures) {
      if (!RefusedForGood(f.status)) return f.status;
      WarnRefused(d.run_id, f.status);
    }
  }
  if (!lost.empty()) {
    std::fprintf(stderr,
                 "cairn: warning: run %s: %zu output file(s) were gone from the cache "
                 "before they reached the server\n",
                 d.run_id.c_str(), lost.size());
  }
  d.blobs.files += static_cast<size_t>(std::count_if(
      files.begin(), files.end(), [&](const BlobFile& f) { return lost.count(f.sha256) == 0; }));
  d.blobs.sent += missing.size() - lost.size();
  d.blobs.sent_bytes += sent_bytes;
  return Status::Ok();
}

// Sends one record; the record was written by this file, so its shape is known.
Status DeliverRecord(Delivery& d, std::string_view line) {
  TrackingClient& client = d.client;
  const std::string& run_id = d.run_id;
  json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object()) return Internal("unreadable journal record for run " + run_id);
  const std::string op = record.value("op", "");
  if (op == "batch") {
    std::vector<core::Metric> metrics;
    for (const json& m : record.value("metrics", json::array())) {
      metrics.push_back({m.value("key", ""), Number(m["value"]), m.value("timestamp", int64_t{0}),
                         m.value("step", int64_t{0})});
    }
    // MLflow takes at most 1000 metrics, 100 params and 100 tags per request.
    const std::vector<core::Param> params = KeyValues<core::Param>(record, "params");
    const std::vector<core::Tag> tags = KeyValues<core::Tag>(record, "tags");
    for (size_t i = 0;
         i < std::max({metrics.size(), params.size() * 10, tags.size() * 10, size_t{1}});
         i += 1000) {
      auto slice = [](const auto& v, size_t from, size_t n) {
        using V = std::decay_t<decltype(v)>;
        const size_t a = std::min(from, v.size());
        const size_t b = std::min(from + n, v.size());
        return V(v.begin() + static_cast<ptrdiff_t>(a), v.begin() + static_cast<ptrdiff_t>(b));
      };
      CAIRN_RETURN_IF_ERROR(client.LogBatch(run_id, slice(metrics, i, 1000),
                                            slice(params, i / 10, 100), slice(tags, i / 10, 100)));
    }
    return Status::Ok();
  }
  if (op == "log") {
    std::vector<core::ConsoleChunk> chunks;
    for (const json& c : record.value("chunks", json::array())) {
      core::ConsoleChunk chunk;
      chunk.offset = c.value("offset", int64_t{0});
      core::ParseConsoleStream(c.value("stream", "stdout"), &chunk.stream);
      chunk.timestamp = c.value("timestamp", int64_t{0});
      chunk.data = c.value("data", "");
      chunks.push_back(std::move(chunk));
    }
    // The server takes at most 8 MiB and 10,000 chunks per request.
    constexpr size_t kRequestBytes = 4 << 20;
    constexpr size_t kRequestChunks = 10000;
    std::vector<core::ConsoleChunk> part;
    size_t bytes = 0;
    for (core::ConsoleChunk& chunk : chunks) {
      while (chunk.data.size() > kRequestBytes) {  // one huge chunk: cut it
        core::ConsoleChunk head = chunk;
        head.data.resize(kRequestBytes);
        chunk.data.erase(0, kRequestBytes);
        chunk.offset += static_cast<int64_t>(kRequestBytes);
        CAIRN_RETURN_IF_ERROR(client.AppendRunLog(run_id, {head}).status());
      }
      if (!part.empty() &&
          (bytes + chunk.data.size() > kRequestBytes || part.size() == kRequestChunks)) {
        CAIRN_RETURN_IF_ERROR(client.AppendRunLog(run_id, part).status());
        part.clear();
        bytes = 0;
      }
      bytes += chunk.data.size();
      part.push_back(std::move(chunk));
    }
    if (part.empty()) return Status::Ok();
    return client.AppendRunLog(run_id, part).status();
  }
  if (op == "artifact") {
    CAIRN_ASSIGN_OR_RETURN(std::string artifact_uri, ArtifactUriOf(d, record));
    return client.UploadArtifact(artifact_uri, record.value("path", ""),
                                 record.value("content", ""));
  }
  if (op == "artifact_file") return UploadKeptFile(d, record);
  if (op == "blobs") return DeliverBlobs(d, record);
  if (op == "register") return Register(d, record);
  if (op == "inputs")
    return client.LogInputs(run_id, DecodeInputs(record.value("datasets", json::array())));
  if (op == "create") {
    RefreshHeartbeat(record);
    return client
        .CreateRunWithId(run_id, "", record.value("experiment_name", ""),
                         record.value("run_name", ""), record.value("start_time", int64_t{0}),
                         KeyValues<core::Tag>(record, "tags"),
                         record.value("status", "") == "SCHEDULED")
        .status();
  }
  if (op == "start") return client.UpdateRun(run_id, core::RunStatus::kRunning, std::nullopt);
  if (op == "end") {
    core::RunStatus status = core::RunStatus::kFinished;
    core::ParseRunStatus(record.value("status", "FINISHED"), &status);
    return client.UpdateRun(run_id, status, record.value("end_time", int64_t{0}));
  }
  return Internal("journal record of unknown kind '" + op + "' for run " + run_id);
}

}  // namespace

RunJournal::RunJournal(std::string dir, std::string run_id)
    : dir_(std::move(dir)), run_id_(std::move(run_id)) {}

RunJournal::~RunJournal() {
  if (fd_ >= 0) close(fd_);
}

Result<std::unique_ptr<RunJournal>> RunJournal::Open(const std::string& dir, std::string run_id,
                                                     const std::string& tracking_uri) {
  CAIRN_RETURN_IF_ERROR(PrivateDir(dir));
  std::unique_ptr<RunJournal> j(new RunJournal(dir, std::move(run_id)));
  const fs::path path = fs::path(dir) / (j->run_id_ + std::string(kJournalSuffix));
  j->fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (j->fd_ < 0) return ErrnoStatus("open", path);
  // The wrapper that writes a journal holds it locked: `cairn sync` or another `cairn run`
  // must not deliver (or trim) it meanwhile.
  if (flock(j->fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return FailedPrecondition("the journal of run " + j->run_id_ + " is in use");
    }
    return ErrnoStatus("lock", path);
  }
  // Every complete line is a record; a partial last line (a crash mid-write) is dropped. The
  // file is scanned in blocks: only where each record starts is kept, and the line starts
  // needed to tell the header and end records.
  // Blocks of up to 1 MiB, no larger than the file (a new journal is empty), not zeroed.
  struct stat st {};
  if (fstat(j->fd_, &st) != 0) return ErrnoStatus("stat", path);
  const size_t block_size = std::clamp<size_t>(static_cast<size_t>(st.st_size), 4096, 1 << 20);
  std::unique_ptr<char[]> block = std::make_unique_for_overwrite<char[]>(block_size);
  std::string head;  // the first bytes of the line being scanned
  uint64_t line_start = 0;
  uint64_t at = 0;
  bool first_line = true;
  for (;;) {
    ssize_t got = pread(j->fd_, block.get(), block_size, static_cast<off_t>(at));
    if (got < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", path);
    }
    if (got == 0) break;
    const size_t n = static_cast<size_t>(got);
    for (size_t i = 0; i < n;) {
      const char* nl = static_cast<const char*>(std::memchr(block.get() + i, '\n', n - i));
      const size_t stop = nl == nullptr ? n : static_cast<size_t>(nl - block.get());
      constexpr size_t kHeadBytes = 4096;
      if (head.size() < kHeadBytes) {
        head.append(block.get() + i, std::min(stop - i, kHeadBytes - head.size()));
      }
      if (nl == nullptr) break;
      const uint64_t line_end = at + stop;
      json header;
      if (first_line && head.starts_with(kHeaderPrefix)) {
        header = json::parse(head, nullptr, /*allow_exceptions=*/false);
      }
      if (header.is_object()) {
        j->tracking_uri_ = header.value("tracking_uri", "");
      } else {
        j->records_.push_back({line_start, static_cast<size_t>(line_end - line_start)});
        if (head.starts_with(kEndPrefix)) j->ended_ = true;
      }
      first_line = false;
      head.clear();
      line_start = line_end + 1;
      i = stop + 1;
    }
    at += static_cast<uint64_t>(got);
  }
  j->end_ = line_start;
  if (line_start < at && ftruncate(j->fd_, static_cast<off_t>(line_start)) != 0) {
    return ErrnoStatus("truncate", path);
  }
  if (line_start == 0 && !tracking_uri.empty()) {
    JsonWriter w;
    w.BeginObject().Key("cairn_journal").Int(1).Key("tracking_uri").String(tracking_uri);
    w.EndObject();
    CAIRN_RETURN_IF_ERROR(j->Write(w.Take() + "\n"));
    j->tracking_uri_ = tracking_uri;
  }
  Result<std::string> sent = ReadFile(fs::path(dir) / (j->run_id_ + std::string(kSentSuffix)));
  if (sent.ok()) {
    j->sent_ = std::min<size_t>(std::strtoull(sent->c_str(), nullptr, 10), j->records_.size());
  }
  return j;
}

Status RunJournal::Write(const std::string& lines) {
  const char* p = lines.data();
  size_t left = lines.size();
  while (left > 0) {
    ssize_t n = write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write", fs::path(dir_) / (run_id_ + std::string(kJournalSuffix)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  synced_ = false;
  end_ += lines.size();
  return Status::Ok();
}

Status RunJournal::Append(const std::string& run, const std::string& record) {
  // Another run's records name it by its id, which delivery reads back as 32 hex digits.
  if (run != run_id_ && !IsHex32(run)) {
    return InvalidArgument("'" + run + "' is not a run id: records of run " + run_id_ +
                           "'s journal name other runs by 32 hex digits");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t offset = end_;
  // Another run's records name it first, so that only the journal's own end looks like one.
  const std::string line =
      run == run_id_ ? record : R"({"run_id":")" + run + "\"," + record.substr(1);
  CAIRN_RETURN_IF_ERROR(Write(line + "\n"));
  records_.push_back({offset, line.size()});
  if (line.starts_with(kEndPrefix)) ended_ = true;
  return Status::Ok();
}

Status RunJournal::Records::AppendBatch(const std::vector<core::Metric>& metrics,
                                        const std::vector<core::Param>& params,
                                        const std::vector<core::Tag>& tags) {
  JsonWriter w;
  w.BeginObject().Key("op").String("batch");
  w.Key("metrics").BeginArray();
  for (const core::Metric& m : metrics) core::WriteMetric(w, m);
  w.EndArray();
  w.Key("params");
  core::WriteParams(w, params);
  w.Key("tags");
  core::WriteTags(w, tags);
  w.EndObject();
  return journal_->Append(run_id_, w.Take());
}

Status RunJournal::Records::AppendLog(const std::vector<core::ConsoleChunk>& chunks) {
  JsonWriter w;
  w.BeginObject().Key("op").String("log").Key("chunks").BeginArray();
  for (const core::ConsoleChunk& c : chunks) core::WriteConsoleChunk(w, c);
  w.EndArray().EndObject();
  return journal_->Append(run_id_, w.Take());
}

Status RunJournal::Records::AppendArtifact(const std::string& artifact_uri, const std::string& path,
                                           const std::string& content) {
  JsonWriter w;
  w.BeginObject().Key("op").String("artifact").Key("artifact_uri").String(artifact_uri);
  w.Key("path").String(path).Key("content").String(content).EndObject();
  return journal_->Append(run_id_, w.Take());
}

Result<int64_t> RunJournal::Records::AppendArtifactFile(const std::string& artifact_uri,
                                                        const std::string& path,
                                                        const std::string& local_path) {
  const RunJournal& j = *journal_;
  const fs::path files = fs::path(j.dir_) / (j.run_id_ + std::string(kFilesSuffix));
  CAIRN_RETURN_IF_ERROR(MakeDirs(files.string()));
  const std::string name = RandomHex(16);
  const fs::path kept = files / name;
  // A hard link costs nothing, and keeps the bytes when the file is removed or replaced (as
  // cairn does with a step's outputs before the step runs again); where the file lies on
  // another filesystem, it is copied.
  if (linkat(AT_FDCWD, local_path.c_str(), AT_FDCWD, kept.c_str(), AT_SYMLINK_FOLLOW) != 0) {
    std::error_code ec;
    fs::copy_file(local_path, kept, ec);
    if (ec) {
      fs::remove(kept, ec);
      return Internal("keeping " + local_path + " for run " + run_id_ + ": " + ec.message());
    }
  }
  std::error_code ec;
  const uintmax_t size = fs::file_size(kept, ec);
  if (ec) return Internal("reading the size of " + kept.string() + ": " + ec.message());
  JsonWriter w;
  w.BeginObject().Key("op").String("artifact_file").Key("artifact_uri").String(artifact_uri);
  w.Key("path").String(path).Key("file").String(name).EndObject();
  CAIRN_RETURN_IF_ERROR(journal_->Append(run_id_, w.Take()));
  return static_cast<int64_t>(size);
}

Status RunJournal::Records::AppendRegister(const std::string& model, const std::string& source,
                                           const std::string& alias,
                                           const std::vector<RegisteredFile>& files) {
  JsonWriter w;
  w.BeginObject().Key("op").String("register").Key("model").String(model);
  w.Key("source").String(source).Key("alias").String(alias).Key("files").BeginArray();
  for (const RegisteredFile& f : files) {
    w.BeginObject().Key("path").String(f.path).Key("size").Int(f.size).EndObject();
  }
  w.EndArray().EndObject();
  return journal_->Append(run_id_, w.Take());
}

Status RunJournal::Records::AppendEnd(core::RunStatus status, int64_t end_time) {
  JsonWriter w;
  w.BeginObject().Key("op").String("end").Key("status").String(core::RunStatusName(status));
  w.Key("end_time").Int(end_time).EndObject();
  return journal_->Append(run_id_, w.Take());
}

Status RunJournal::Records::AppendCreate(const std::string& experiment_name,
                                         const std::string& run_name, int64_t start_time,
                                         const std::vector<core::Tag>& tags, bool scheduled) {
  JsonWriter w;
  w.BeginObject().Key("op").String("create").Key("experiment_name").String(experiment_name);
  w.Key("run_name").String(run_name).Key("start_time").Int(start_time);
  if (scheduled) w.Key("status").String("SCHEDULED");
  w.Key("tags");
  core::WriteTags(w, tags);
  w.EndObject();
  return journal_->Append(run_id_, w.Take());
}

Status RunJournal::Records::AppendBlobs(const std::vector<BlobFile>& files) {
  if (files.empty()) return Status::Ok();
  JsonWriter w;
  w.BeginObject().Key("op").String("blobs").Key("files").BeginArray();
  for (const BlobFile& f : files) {
    w.BeginObject().Key("path").String(f.path).Key("sha256").String(f.sha256);
    w.Key("size").Int(f.size).Key("file").String(f.file).EndObject();
  }
  w.EndArray().EndObject();
  return journal_->Append(run_id_, w.Take());
}

Status RunJournal::Records::AppendStart(int64_t start_time) {
  JsonWriter w;
  w.BeginObject().Key("op").String("start").Key("start_time").Int(start_time).EndObject();
  return journal_->Append(run_id_, w.Take());
}

Status RunJournal::AppendBatch(const std::vector<core::Metric>& metrics,
                               const std::vector<core::Param>& params,
                               const std::vector<core::Tag>& tags) {
  return ForRun(run_id_).AppendBatch(metrics, params, tags);
}

Status RunJournal::AppendLog(const std::vector<core::ConsoleChunk>& chunks) {
  return ForRun(run_id_).AppendLog(chunks);
}

Status RunJournal::AppendArtifact(const std::string& artifact_uri, const std::string& path,
                                  const std::string& content) {
  return ForRun(run_id_).AppendArtifact(artifact_uri, path, content);
}

Result<int64_t> RunJournal::AppendArtifactFile(const std::string& artifact_uri,
                                               const std::string& path,
                                               const std::string& local_path) {
  return ForRun(run_id_).AppendArtifactFile(artifact_uri, path, local_path);
}

Status RunJournal::AppendRegister(const std::string& model, const std::string& source,
                                  const std::string& alias,
                                  const std::vector<RegisteredFile>& files) {
  return ForRun(run_id_).AppendRegister(model, source, alias, files);
}

void RunJournal::SetNotice(Notice notice) {
  std::lock_guard<std::mutex> lock(mu_);
  notice_ = std::move(notice);
}

Status RunJournal::AppendInputs(const std::vector<core::DatasetInput>& inputs) {
  if (inputs.empty()) return Status::Ok();
  return Append(run_id_, json({{"op", "inputs"}, {"datasets", InputsJson(inputs)}}).dump());
}

Status RunJournal::AppendEnd(core::RunStatus status, int64_t end_time) {
  return ForRun(run_id_).AppendEnd(status, end_time);
}

Status RunJournal::AppendCreate(const std::string& experiment_name, const std::string& run_name,
                                int64_t start_time, const std::vector<core::Tag>& tags) {
  return ForRun(run_id_).AppendCreate(experiment_name, run_name, start_time, tags);
}

std::pair<size_t, Status> RunJournal::DeliverBatch(TrackingClient& client, size_t from, size_t to) {
  std::string span;
  std::vector<std::pair<uint64_t, size_t>> places;
  {
    std::lock_guard<std::mutex> lock(mu_);
    places.assign(records_.begin() + static_cast<ptrdiff_t>(from),
                  records_.begin() + static_cast<ptrdiff_t>(to));
  }
  // Records lie one after another in the file: one read takes them all.
  const uint64_t start = places.front().first;
  span.resize(places.back().first + places.back().second - start);
  if (pread(fd_, span.data(), span.size(), static_cast<off_t>(start)) !=
      static_cast<ssize_t>(span.size())) {
    return {0, ErrnoStatus("read", fs::path(dir_) / (run_id_ + std::string(kJournalSuffix)))};
  }
  std::vector<std::string> wire;
  std::vector<std::string> runs;
  wire.reserve(places.size());
  for (const auto& [offset, length] : places) {
    std::string_view line(span.data() + (offset - start), length);
    const std::string run(RunOfLine(line, run_id_));
    std::string out = line.starts_with(kRunPrefix)
                          ? std::string(line)
                          : std::string(kRunPrefix) + run + "\"," + std::string(line.substr(1));
    if (BatchOp(line) == "create" && line.find("cairn.heartbeat") != std::string_view::npos) {
      json record = json::parse(out, nullptr, /*allow_exceptions=*/false);
      if (record.is_object()) {
        RefreshHeartbeat(record);
        out = record.dump();
      }
    }
    wire.push_back(std::move(out));
    runs.push_back(run);
  }
  Result<std::vector<TrackingClient::RecordFailure>> failures = client.ApplyRunRecords(wire);
  if (!failures.ok()) return {0, failures.status()};
  for (const TrackingClient::RecordFailure& f : *failures) {
    if (!RefusedForGood(f.status)) return {f.index, f.status};
    WarnRefused(runs[f.index], f.status);
  }
  return {places.size(), Status::Ok()};
}

Status RunJournal::Deliver(TrackingClient& client) {
  std::lock_guard<std::mutex> delivering(deliver_mu_);
  Status result;
  size_t delivered = 0;
  Notice notice;
  {
    std::lock_guard<std::mutex> lock(mu_);
    notice = notice_;
  }
  Delivery d{client, run_id_, fs::path(dir_) / (run_id_ + std::string(kFilesSuffix)),
             notice, {},      {}};
  for (;;) {
    // The next records: a run of those a batch carries, or one of another kind.
    std::string record;
    size_t from = 0, to = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (sent_ >= records_.size()) break;
      from = to = sent_;
      size_t bytes = 0;
      while (batches_ && to < records_.size() && to - from < kBatchRecords && bytes < kBatchBytes) {
        // Only the line's first bytes are needed to tell its kind.
        std::string head(std::min<size_t>(records_[to].second, 64), '\0');
        if (records_[to].second > kBatchRecordBytes ||
            pread(fd_, head.data(), head.size(), static_cast<off_t>(records_[to].first)) !=
                static_cast<ssize_t>(head.size()) ||
            BatchOp(head).empty()) {
          break;
        }
        bytes += records_[to].second;
        ++to;
      }
      if (to == from) {
        // Records are read back from the file: only their places are kept in memory.
        record.resize(records_[sent_].second);
        ssize_t got =
            pread(fd_, record.data(), record.size(), static_cast<off_t>(records_[sent_].first));
        if (got != static_cast<ssize_t>(record.size())) {
          result = ErrnoStatus("read", fs::path(dir_) / (run_id_ + std::string(kJournalSuffix)));
          break;
        }
      }
    }
    size_t taken = 0;
    if (to > from) {
      std::tie(taken, result) = DeliverBatch(client, from, to);
      // A server without the batch endpoint: one record at a time, as before it.
      if (taken == 0 &&
          (result.code() == StatusCode::kNotFound || result.code() == StatusCode::kUnimplemented)) {
        std::lock_guard<std::mutex> lock(mu_);
        batches_ = false;
        result = Status::Ok();
        continue;
      }
      // A batch refused whole (too large for the server, say): its first record goes on its
      // own, and the rest in the next batch.
      if (taken == 0 && RefusedForGood(result)) {
        std::lock_guard<std::mutex> lock(mu_);
        record.resize(records_[from].second);
        if (pread(fd_, record.data(), record.size(), static_cast<off_t>(records_[from].first)) !=
            static_cast<ssize_t>(record.size())) {
          result = ErrnoStatus("read", fs::path(dir_) / (run_id_ + std::string(kJournalSuffix)));
          break;
        }
        to = from;
        result = Status::Ok();
      }
    }
    if (to == from) {
      d.run_id = std::string(RunOfLine(record, run_id_));
      result = DeliverRecord(d, record);
      if (RefusedForGood(result)) {
        WarnRefused(d.run_id, result);
        result = Status::Ok();
      }
      if (result.ok()) taken = 1;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      sent_ += taken;
      delivered += taken;
      if (!result.ok()) {
        // These records will wait: from now on they must survive a crash of the machine too.
        if (!synced_ && fdatasync(fd_) == 0) synced_ = true;
        break;
      }
    }
  }
  if (delivered > 0) {
    size_t sent;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sent = sent_;
      blob_totals_.files += d.blobs.files;
      blob_totals_.sent += d.blobs.sent;
      blob_totals_.sent_bytes += d.blobs.sent_bytes;
    }
    // Not synced: a count lost in a crash only makes records be delivered again.
    std::ofstream(fs::path(dir_) / (run_id_ + std::string(kSentSuffix)), std::ios::trunc) << sent;
  }
  return result;
}

size_t RunJournal::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size() - sent_;
}

BlobTotals RunJournal::blob_totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blob_totals_;
}

size_t RunJournal::appended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

size_t RunJournal::acknowledged() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_;
}

bool RunJournal::complete() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_ && sent_ == records_.size();
}

Status RunJournal::Remove() {
  std::error_code ec;
  // The kept files first: a journal left behind by a crash is found again, its files not.
  fs::remove_all(fs::path(dir_) / (run_id_ + std::string(kFilesSuffix)), ec);
  if (!ec) fs::remove(fs::path(dir_) / (run_id_ + std::string(kJournalSuffix)), ec);
  if (!ec) fs::remove(fs::path(dir_) / (run_id_ + std::string(kSentSuffix)), ec);
  if (ec) return Internal("removing the journal of run " + run_id_ + ": " + ec.message());
  return Status::Ok();
}

std::vector<std::string> RunJournal::List(const std::string& dir) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(kJournalSuffix)) {
      ids.push_back(name.substr(0, name.size() - kJournalSuffix.size()));
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

Status RunJournal::Keep() {
  std::lock_guard<std::mutex> lock(mu_);
  if (synced_) return Status::Ok();
  if (fdatasync(fd_) != 0) return ErrnoStatus("fdatasync", dir_ + "/" + run_id_ + ".journal");
  synced_ = true;
  return Status::Ok();
}

SyncResult SyncJournals(
    const std::vector<std::string>& dirs, TrackingClient& client,
    const std::function<void(const std::string&, size_t, size_t, const Status&)>& progress) {
  SyncResult result;
  bool away = false;  // the server cannot be reached: the other journals only wait for it too
  for (const std::string& dir : dirs) {
    for (const std::string& run_id : RunJournal::List(dir)) {
      Result<std::unique_ptr<RunJournal>> j = RunJournal::Open(dir, run_id);
      if (!j.ok()) {
        // In use: its own wrapper is running and delivers it.
        if (j.status().code() != StatusCode::kFailedPrecondition) {
          progress(run_id, 0, 0, j.status());
        }
        continue;
      }
      const std::string& server = (*j)->tracking_uri();
      if (!server.empty() && server != client.tracking_uri()) {
        ++result.elsewhere[server];
        continue;
      }
      const size_t before = (*j)->pending();
      if (away) {
        result.pending += before;
        continue;
      }
      Status s = before > 0 ? (*j)->Deliver(client) : Status::Ok();
      const size_t after = (*j)->pending();
      result.pending += after;
      if (before > 0 || !s.ok()) progress(run_id, before - after, after, s);
      if ((*j)->complete()) (void)(*j)->Remove();
      away = s.code() == StatusCode::kUnavailable;
    }
  }
  return result;
}

std::string DefaultJournalDir() {
  const char* home = std::getenv("CAIRN_HOME");
  const std::string data = home != nullptr && *home != '\0' ? home : "./.cairn";
  return data + "/journal";
}

std::string FallbackJournalDir() {
  return (fs::temp_directory_path() / ("cairn-journal-" + std::to_string(getuid()))).string();
}

std::vector<std::string> JournalDirs() { return {DefaultJournalDir(), FallbackJournalDir()}; }

}  // namespace cairn::client
