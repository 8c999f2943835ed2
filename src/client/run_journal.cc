#include "client/run_journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

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

// The artifact URI a record names, or, for one recorded before the run existed on the
// server, the run's.
Result<std::string> ArtifactUriOf(TrackingClient& client, const std::string& run_id,
                                  const json& record) {
  std::string artifact_uri = record.value("artifact_uri", "");
  if (!artifact_uri.empty()) return artifact_uri;
  CAIRN_ASSIGN_OR_RETURN(core::Run run, client.GetRun(run_id));
  return run.info.artifact_uri;
}

// A version of `model` from `source`. Delivered twice (acknowledged, but the count not yet
// saved when the process died), the version the first delivery made is found and kept.
Status Register(TrackingClient& client, const std::string& run_id, const json& record,
                const RunJournal::Notice& notice) {
  const std::string model = record.value("model", "");
  const std::string source = record.value("source", "");
  const std::string alias = record.value("alias", "");
  Status made = client.CreateRegisteredModel(model);
  if (!made.ok() && made.code() != StatusCode::kAlreadyExists) return made;
  std::string version;
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::ModelVersion> earlier,
                         client.SearchModelVersions("run_id = '" + run_id + "'", 1000));
  for (const core::ModelVersion& v : earlier) {
    if (v.name == model && v.source == source) version = std::to_string(v.version);
  }
  if (version.empty()) {
    CAIRN_ASSIGN_OR_RETURN(core::ModelVersion v, client.CreateModelVersion(model, source, run_id));
    version = std::to_string(v.version);
  }
  std::string note = "registered model " + model + " version " + version;
  if (!alias.empty()) {
    CAIRN_RETURN_IF_ERROR(client.SetModelAlias(model, alias, version));
    note += ", alias " + alias;
  }
  if (notice) notice(note);
  return Status::Ok();
}

// Sends one record; the record was written by this file, so its shape is known. Files of
// artifact_file records lie in `files`.
Status DeliverRecord(TrackingClient& client, const std::string& run_id, std::string_view line,
                     const fs::path& files, const RunJournal::Notice& notice) {
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
    CAIRN_ASSIGN_OR_RETURN(std::string artifact_uri, ArtifactUriOf(client, run_id, record));
    return client.UploadArtifact(artifact_uri, record.value("path", ""),
                                 record.value("content", ""));
  }
  if (op == "artifact_file") {
    CAIRN_ASSIGN_OR_RETURN(std::string artifact_uri, ArtifactUriOf(client, run_id, record));
    const fs::path file = files / record.value("file", "");
    if (!fs::is_regular_file(file)) {
      return NotFound("the file kept for artifact " + record.value("path", "") + " of run " +
                      run_id + " is gone: " + file.string());
    }
    return client.UploadArtifactFile(artifact_uri, record.value("path", ""), file.string());
  }
  if (op == "register") return Register(client, run_id, record, notice);
  if (op == "create") {
    std::vector<core::Tag> tags = KeyValues<core::Tag>(record, "tags");
    // The heartbeat recorded at the start may be old by now; the server would fail the run
    // for it at once.
    for (core::Tag& t : tags) {
      if (t.key == "cairn.heartbeat") t.value = std::to_string(SystemClock()->NowMillis());
    }
    return client
        .CreateRunWithId(run_id, "", record.value("experiment_name", ""),
                         record.value("run_name", ""), record.value("start_time", int64_t{0}), tags)
        .status();
  }
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
  CAIRN_RETURN_IF_ERROR(MakeDirs(dir));
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
  std::string block(1 << 20, '\0');
  std::string head;  // the first bytes of the line being scanned
  uint64_t line_start = 0;
  uint64_t at = 0;
  bool first_line = true;
  for (;;) {
    ssize_t got = pread(j->fd_, block.data(), block.size(), static_cast<off_t>(at));
    if (got < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", path);
    }
    if (got == 0) break;
    const size_t n = static_cast<size_t>(got);
    for (size_t i = 0; i < n;) {
      const char* nl = static_cast<const char*>(std::memchr(block.data() + i, '\n', n - i));
      const size_t stop = nl == nullptr ? n : static_cast<size_t>(nl - block.data());
      constexpr size_t kHeadBytes = 4096;
      if (head.size() < kHeadBytes) {
        head.append(block, i, std::min(stop - i, kHeadBytes - head.size()));
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

Status RunJournal::Append(const std::string& record) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t offset = end_;
  CAIRN_RETURN_IF_ERROR(Write(record + "\n"));
  records_.push_back({offset, record.size()});
  if (record.starts_with(kEndPrefix)) ended_ = true;
  return Status::Ok();
}

Status RunJournal::AppendBatch(const std::vector<core::Metric>& metrics,
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
  return Append(w.Take());
}

Status RunJournal::AppendLog(const std::vector<core::ConsoleChunk>& chunks) {
  JsonWriter w;
  w.BeginObject().Key("op").String("log").Key("chunks").BeginArray();
  for (const core::ConsoleChunk& c : chunks) core::WriteConsoleChunk(w, c);
  w.EndArray().EndObject();
  return Append(w.Take());
}

Status RunJournal::AppendArtifact(const std::string& artifact_uri, const std::string& path,
                                  const std::string& content) {
  JsonWriter w;
  w.BeginObject().Key("op").String("artifact").Key("artifact_uri").String(artifact_uri);
  w.Key("path").String(path).Key("content").String(content).EndObject();
  return Append(w.Take());
}

Status RunJournal::AppendArtifactFile(const std::string& artifact_uri, const std::string& path,
                                      const std::string& local_path) {
  const fs::path files = fs::path(dir_) / (run_id_ + std::string(kFilesSuffix));
  CAIRN_RETURN_IF_ERROR(MakeDirs(files.string()));
  const std::string name = RandomHex(16);
  const fs::path kept = files / name;
  // A hard link costs nothing and keeps the bytes even when the file is removed; where the
  // file lies on another filesystem, it is copied.
  if (linkat(AT_FDCWD, local_path.c_str(), AT_FDCWD, kept.c_str(), AT_SYMLINK_FOLLOW) != 0) {
    std::error_code ec;
    fs::copy_file(local_path, kept, ec);
    if (ec) {
      return Internal("keeping " + local_path + " for run " + run_id_ + ": " + ec.message());
    }
  }
  JsonWriter w;
  w.BeginObject().Key("op").String("artifact_file").Key("artifact_uri").String(artifact_uri);
  w.Key("path").String(path).Key("file").String(name).EndObject();
  return Append(w.Take());
}

Status RunJournal::AppendRegister(const std::string& model, const std::string& source,
                                  const std::string& alias) {
  JsonWriter w;
  w.BeginObject().Key("op").String("register").Key("model").String(model);
  w.Key("source").String(source).Key("alias").String(alias).EndObject();
  return Append(w.Take());
}

void RunJournal::SetNotice(Notice notice) {
  std::lock_guard<std::mutex> lock(mu_);
  notice_ = std::move(notice);
}

Status RunJournal::AppendEnd(core::RunStatus status, int64_t end_time) {
  JsonWriter w;
  w.BeginObject().Key("op").String("end").Key("status").String(core::RunStatusName(status));
  w.Key("end_time").Int(end_time).EndObject();
  return Append(w.Take());
}

Status RunJournal::AppendCreate(const std::string& experiment_name, const std::string& run_name,
                                int64_t start_time, const std::vector<core::Tag>& tags) {
  JsonWriter w;
  w.BeginObject().Key("op").String("create").Key("experiment_name").String(experiment_name);
  w.Key("run_name").String(run_name).Key("start_time").Int(start_time);
  w.Key("tags");
  core::WriteTags(w, tags);
  w.EndObject();
  return Append(w.Take());
}

Status RunJournal::Deliver(TrackingClient& client) {
  std::lock_guard<std::mutex> delivering(deliver_mu_);
  Status result;
  size_t delivered = 0;
  for (;;) {
    std::string record;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (sent_ >= records_.size()) break;
      // Records are read back from the file: only their places are kept in memory.
      record.resize(records_[sent_].second);
      ssize_t got =
          pread(fd_, record.data(), record.size(), static_cast<off_t>(records_[sent_].first));
      if (got != static_cast<ssize_t>(record.size())) {
        result = ErrnoStatus("read", fs::path(dir_) / (run_id_ + std::string(kJournalSuffix)));
        break;
      }
    }
    Notice notice;
    {
      std::lock_guard<std::mutex> lock(mu_);
      notice = notice_;
    }
    result = DeliverRecord(client, run_id_, record,
                           fs::path(dir_) / (run_id_ + std::string(kFilesSuffix)), notice);
    // Refusals of who is asking are kept: with the credentials fixed, `cairn sync` delivers.
    if (!result.ok() && result.code() != StatusCode::kUnavailable &&
        result.code() != StatusCode::kInternal && result.code() != StatusCode::kUnauthenticated &&
        result.code() != StatusCode::kPermissionDenied) {
      // Refused for good (a bad param name, a value too long): sending it again cannot help,
      // and holding it would hold back every record after it, the run's end included.
      std::fprintf(stderr, "cairn: warning: the server refused a record of run %s: %s\n",
                   run_id_.c_str(), result.message().c_str());
      result = Status::Ok();
    }
    if (!result.ok()) {
      // These records will wait: from now on they must survive a crash of the machine too.
      std::lock_guard<std::mutex> lock(mu_);
      if (!synced_ && fdatasync(fd_) == 0) synced_ = true;
      break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++sent_;
    ++delivered;
  }
  if (delivered > 0) {
    size_t sent;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sent = sent_;
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

bool RunJournal::complete() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_ && sent_ == records_.size();
}

Status RunJournal::Remove() {
  std::error_code ec;
  fs::remove(fs::path(dir_) / (run_id_ + std::string(kJournalSuffix)), ec);
  fs::remove(fs::path(dir_) / (run_id_ + std::string(kSentSuffix)), ec);
  if (!ec) fs::remove_all(fs::path(dir_) / (run_id_ + std::string(kFilesSuffix)), ec);
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
