// `cairn verify-store`: a server's stores checked against each other (service/store_check.h):
// every blob hashed against its name, every artifact file found among the blobs. Reads the
// stores directly, so it needs the server's data directory (or its store URIs), not a running
// server; a running one may keep serving. `cairn gc`: a running server asked to collect the
// blobs nothing names (POST /api/cairn/v1/gc). `cairn storage`: where a server's bytes are
// (GET /api/cairn/v1/storage).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "blob/content_store.h"
#include "cli/commands.h"
#include "client/tracking_client.h"
#include "data/dataset_ops.h"
#include "env/env_store.h"
#include "env/index/wheel_cache.h"
#include "pipeline/step_cache.h"
#include "report/run_report.h"
#include "service/store_check.h"
#include "store/metadata_store.h"
#include "util/file.h"

namespace cairn::cli {
namespace {

struct StoreFlags {
  std::string data_dir;
  std::string backend_store_uri;
  std::string artifacts_destination;
  int64_t max_listed = 100;
};

// At most `max` lines of a problem list, then how many more there were.
template <typename T, typename F>
void PrintSome(const std::vector<T>& items, int64_t max, F line) {
  int64_t shown = 0;
  for (const T& item : items) {
    if (shown++ == max) {
      std::printf("  ... and %lld more\n", static_cast<long long>(items.size()) - max);
      return;
    }
    std::printf("  %s\n", line(item).c_str());
  }
}

int VerifyStore(const StoreFlags& flags) {
  const std::string dir = DataDir(flags.data_dir);
  const std::string metadata_uri = flags.backend_store_uri.empty()
                                       ? "sqlite:///" + dir + "/cairn.db"
                                       : flags.backend_store_uri;
  const std::string blobs_uri =
      flags.artifacts_destination.empty() ? dir + "/artifacts" : flags.artifacts_destination;
  // Opening a store makes it when it is missing: a check must not.
  std::error_code ec;
  const std::string db_file =
      metadata_uri.starts_with("sqlite:///") ? metadata_uri.substr(10) : std::string();
  const std::string blob_dir =
      blobs_uri.starts_with("file://") ? blobs_uri.substr(7) : blobs_uri;
  for (const std::string& path : {db_file, blob_dir}) {
    if (!path.empty() && !std::filesystem::exists(path, ec)) {
      PrintError(NotFound("no store at " + path +
                          " (give the server's --data-dir, or its store URIs)"));
      return 2;
    }
  }
  Result<std::unique_ptr<store::MetadataStore>> metadata =
      store::OpenMetadataStore(metadata_uri, store::StoreOptions{});
  if (!metadata.ok()) {
    PrintError(metadata.status().WithContext("opening " + metadata_uri));
    return 2;
  }
  Result<std::unique_ptr<blob::ContentStore>> blobs = blob::OpenContentStore(blobs_uri);
  if (!blobs.ok()) {
    PrintError(blobs.status().WithContext("opening " + blobs_uri));
    return 2;
  }
  std::printf("checking the blobs in %s against the artifact index in %s\n", blobs_uri.c_str(),
              metadata_uri.c_str());
  std::fflush(stdout);
  service::StoreCheckOptions options;
  const bool terminal = isatty(STDERR_FILENO) != 0;
  options.progress = [terminal](const service::StoreCheckProgress& p) {
    if (!terminal) return;
    if (p.phase == "blobs") {
      std::fprintf(stderr, "\r\033[Khashing blobs: %lld (%s)", static_cast<long long>(p.done),
                   report::FormatSize(p.bytes).c_str());
    } else {
      std::fprintf(stderr, "\r\033[Kchecking artifact files: %lld",
                   static_cast<long long>(p.done));
    }
  };
  Result<service::StoreCheck> check = service::CheckStores(**metadata, **blobs, options);
  if (terminal) std::fprintf(stderr, "\r\033[K");
  if (!check.ok()) {
    PrintError(check.status());
    return 2;
  }
  std::printf("blobs: %lld hashed (%s), %zu corrupt\n", static_cast<long long>(check->blobs),
              report::FormatSize(check->bytes).c_str(), check->corrupt.size());
  PrintSome(check->corrupt, flags.max_listed, [](const service::BlobProblem& b) {
    return b.digest + ": " + b.what;
  });
  std::printf("artifact files: %lld, %zu without their blob\n",
              static_cast<long long>(check->references), check->missing.size());
  PrintSome(check->missing, flags.max_listed, [](const service::MissingBlob& m) {
    return m.file.path + " (" + m.file.digest.substr(0, 12) + "): " + m.what;
  });
  if (check->unreferenced > 0) {
    std::printf("unreferenced: %lld blob(s) (%s) that no artifact file names\n",
                static_cast<long long>(check->unreferenced),
                report::FormatSize(check->unreferenced_bytes).c_str());
  }
  const size_t problems = check->corrupt.size() + check->missing.size();
  if (problems == 0) {
    std::printf("the stores agree\n");
    return 0;
  }
  std::printf("%zu problem(s) found\n", problems);
  return 1;
}

// The server's JSON object answer to a request of cairn's API; nullopt, with the error
// printed and `exit_code` set (2: the tracking URI is unusable, 1: the request failed), when
// there is none.
std::optional<nlohmann::json> AskServer(const std::string& tracking_uri, const char* method,
                                        const std::string& path, const std::string& body,
                                        int* exit_code) {
  *exit_code = 2;
  auto client = ConnectOrExplain(tracking_uri);
  if (client == nullptr) return std::nullopt;
  *exit_code = 1;
  Result<std::string> answer = client->CallJson(method, "/api/cairn/v1/" + path, body);
  if (!answer.ok()) {
    PrintError(answer.status());
    return std::nullopt;
  }
  nlohmann::json r = nlohmann::json::parse(*answer, nullptr, false);
  if (!r.is_object()) {
    PrintError(Internal("the server's answer to " + path + " is not a JSON object"));
    return std::nullopt;
  }
  return r;
}

// What retention rules removed (or would remove): a line per rule that has something, and the
// experiments whose rules cannot be read.
void PrintRetention(const nlohmann::json& r, const char* verb) {
  if (!r.is_object()) return;
  for (const nlohmann::json& rule : r.value("rules", nlohmann::json::array())) {
    if (!rule.is_object()) continue;
    const std::string scope = rule.value("scope", std::string());
    std::printf("rule %s (%s): %s %lld file(s), %s, of %lld run(s)",
                rule.value("rule", nlohmann::json::object()).dump().c_str(),
                scope == "server" ? "server-wide" : ("experiment " + scope).c_str(), verb,
                static_cast<long long>(rule.value("files", int64_t{0})),
                report::FormatSize(rule.value("bytes", int64_t{0})).c_str(),
                static_cast<long long>(rule.value("runs", int64_t{0})));
    if (const int64_t freed = rule.value("bytes_freed", int64_t{0}); freed > 0) {
      std::printf("; freed %s", report::FormatSize(freed).c_str());
    }
    std::printf("\n");
  }
  for (const nlohmann::json& p : r.value("problems", nlohmann::json::array())) {
    if (p.is_string())
      std::printf("warning: retention rules of %s\n", p.get<std::string>().c_str());
  }
}

struct GcFlags {
  std::string tracking_uri;
  bool dry_run = false;
  int64_t grace_seconds = 3600;
};

int CollectGarbage(const GcFlags& flags) {
  const nlohmann::json body = {{"dry_run", flags.dry_run}, {"grace_seconds", flags.grace_seconds}};
  int failed = 0;
  std::optional<nlohmann::json> answer =
      AskServer(flags.tracking_uri, "POST", "gc", body.dump(), &failed);
  if (!answer) return failed;
  const nlohmann::json& r = *answer;
  PrintRetention(r.value("retention", nlohmann::json::object()),
                 flags.dry_run ? "would remove" : "removed");
  const int64_t collected = r.value("collected", int64_t{0});
  std::printf("%s %lld unreferenced blob(s), %s, of %lld blob(s)",
              flags.dry_run ? "would collect" : "collected", static_cast<long long>(collected),
              report::FormatSize(r.value("bytes_freed", int64_t{0})).c_str(),
              static_cast<long long>(r.value("blobs", int64_t{0})));
  if (const int64_t young = r.value("in_grace", int64_t{0}); young > 0) {
    std::printf("; %lld kept, written in the last %lld s", static_cast<long long>(young),
                static_cast<long long>(flags.grace_seconds));
  }
  std::printf("\n");
  return 0;
}

struct StorageFlags {
  std::string tracking_uri;
};

// This machine's caches, which the server's report cannot see.
void PrintLocalCaches() {
  const std::string cache = pipeline::StepCache::DefaultRoot();
  const std::string wheels = env::DefaultCacheRoot();
  struct Kind {
    const char* name;
    std::vector<std::string> paths;
    const char* shrink;
  };
  const std::vector<Kind> kinds = {
      {"step cache",
       {cache + "/objects", cache + "/steps", cache + "/stat-cache"},
       "cairn pipeline gc"},
      {"wheel cache", {wheels + "/wheels", wheels + "/unpacked"}, "cairn env gc"},
      {"environments", {env::EnvStore::DefaultRoot()}, "cairn env gc"},
      {"dataset cache", {data::DataCacheDir()}, "removable"},
  };
  report::Table table;
  table.columns = {{"THIS MACHINE"}, {"WHERE"}, {"BYTES", true, false}, {"SHRUNK BY"}};
  for (const Kind& k : kinds) {
    std::error_code ec;
    if (std::none_of(k.paths.begin(), k.paths.end(),
                     [&](const std::string& p) { return std::filesystem::exists(p, ec); })) {
      continue;
    }
    const int64_t bytes = BytesUnder(k.paths);
    std::string where = k.paths.front();
    if (k.paths.size() > 1) {
      where = where.substr(0, where.rfind('/')) + " (";
      for (size_t i = 0; i < k.paths.size(); ++i) {
        where += (i > 0 ? ", " : "") + k.paths[i].substr(k.paths[i].rfind('/') + 1);
      }
      where += ")";
    }
    table.rows.push_back({k.name, where, report::FormatSize(bytes), k.shrink});
  }
  if (table.rows.empty()) return;
  std::printf("\n");
  PrintText(report::RenderTable(table, report::DetectOutputStyle()));
}

int ShowStorage(const StorageFlags& flags) {
  int failed = 0;
  std::optional<nlohmann::json> answer =
      AskServer(flags.tracking_uri, "GET", "storage", "", &failed);
  if (!answer) return failed;
  const nlohmann::json& r = *answer;
  auto count = [](const nlohmann::json& o, const char* key) {
    return o.is_object() ? o.value(key, int64_t{0}) : int64_t{0};
  };
  std::vector<nlohmann::json> experiments;
  for (const nlohmann::json& e : r.value("experiments", nlohmann::json::array())) {
    if (e.is_object()) experiments.push_back(e);
  }
  std::stable_sort(experiments.begin(), experiments.end(), [&](const auto& a, const auto& b) {
    return count(a, "bytes") > count(b, "bytes");
  });
  report::Table table;
  table.columns = {{"EXPERIMENT"}, {"NAME"}, {"FILES", true, false}, {"BYTES", true, false}};
  for (const nlohmann::json& e : experiments) {
    table.rows.push_back({e.value("experiment_id", std::string()),
                          e.value("name", std::string()), std::to_string(count(e, "files")),
                          report::FormatSize(count(e, "bytes"))});
  }
  const nlohmann::json registry = r.value("registry", nlohmann::json::object());
  table.rows.push_back({"-", "(model registry)", std::to_string(count(registry, "files")),
                        report::FormatSize(count(registry, "bytes"))});
  PrintText(report::RenderTable(table, report::DetectOutputStyle()));
  const nlohmann::json datasets = r.value("datasets", nlohmann::json::array());
  if (datasets.is_array() && !datasets.empty()) {
    report::Table data;
    data.columns = {{"DATASET"}, {"BLOBS", true, false}, {"BYTES", true, false}};
    for (const nlohmann::json& d : datasets) {
      if (!d.is_object()) continue;
      data.rows.push_back({d.value("name", std::string()), std::to_string(count(d, "blobs")),
                           report::FormatSize(count(d, "bytes"))});
    }
    std::printf("\n");
    PrintText(report::RenderTable(data, report::DetectOutputStyle()));
  }
  const nlohmann::json kinds = r.value("kinds", nlohmann::json::object());
  if (kinds.is_object()) {
    report::Table by_kind;
    by_kind.columns = {{"KIND"}, {"FILES", true, false}, {"BYTES", true, false}};
    for (const char* kind : {"artifacts", "models", "datasets"}) {
      const nlohmann::json k = kinds.value(kind, nlohmann::json::object());
      by_kind.rows.push_back(
          {kind, std::to_string(count(k, "files")), report::FormatSize(count(k, "bytes"))});
    }
    const int64_t metadata = count(kinds.value("metadata", nlohmann::json::object()), "bytes");
    by_kind.rows.push_back(
        {"metadata", "-", metadata >= 0 ? report::FormatSize(metadata) : std::string("-")});
    std::printf("\n");
    PrintText(report::RenderTable(by_kind, report::DetectOutputStyle()));
  }
  const nlohmann::json blobs = r.value("blobs", nlohmann::json::object());
  const nlohmann::json unreferenced = r.value("unreferenced", nlohmann::json::object());
  std::printf("blobs: %lld, %s stored (a file's bytes are stored once however many name them)\n",
              static_cast<long long>(count(blobs, "count")),
              report::FormatSize(count(blobs, "bytes")).c_str());
  std::printf("unreferenced: %lld blob(s), %s, which `cairn gc` removes\n",
              static_cast<long long>(count(unreferenced, "count")),
              report::FormatSize(count(unreferenced, "bytes")).c_str());
  PrintRetention(r.value("retention", nlohmann::json::object()), "would remove");
  PrintLocalCaches();
  return 0;
}

}  // namespace

void RegisterStorage(CLI::App& app, Action* action) {
  auto [cmd, flags] = AddSubcommand<StorageFlags>(
      &app, action, "storage",
      "Show where a server's bytes are: each experiment's artifact files and the model\n"
      "registry's files (their sizes as listed), each dataset's blobs (all its versions, each\n"
      "blob once), the same by kind with the metadata store's own bytes, then the content\n"
      "store's blobs, each stored once, and those no file names, and what the retention rules\n"
      "would remove. Then this machine's caches: step cache, wheel cache, environments and\n"
      "dataset cache. Needs an admin.\n\n"
      "  cairn storage",
      ShowStorage);
  AddTrackingUriOption(cmd, &flags->tracking_uri);
}

void RegisterGc(CLI::App& app, Action* action) {
  auto [cmd, flags] = AddSubcommand<GcFlags>(
      &app, action, "gc",
      "Have the server apply its retention rules (docs/retention.md), then remove the blobs\n"
      "that no artifact file names (mark and sweep), but those written in the last --grace\n"
      "seconds, which may belong to uploads on their way. Needs an admin. The server also does\n"
      "this every --gc-interval.\n\n"
      "  cairn gc --dry-run",
      CollectGarbage);
  AddTrackingUriOption(cmd, &flags->tracking_uri);
  cmd->add_flag("--dry-run", flags->dry_run, "Count what would be removed, and remove nothing");
  cmd->add_option("--grace", flags->grace_seconds,
                  "Keep unreferenced blobs written in the last this many seconds")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{365} * 86400));
}

void RegisterVerifyStore(CLI::App& app, Action* action) {
  auto [cmd, flags] = AddSubcommand<StoreFlags>(
      &app, action, "verify-store",
      "Check a server's stores against each other: read every blob of the content store and\n"
      "hash it against its name, and find every artifact file of the metadata store among the\n"
      "blobs, with its size. Reports corrupt blobs, files whose blob is missing or of another\n"
      "size, and blobs no file names. Changes nothing; a running server may keep serving.\n"
      "Exits 0 when the stores agree, 1 when problems were found, 2 when a store cannot be\n"
      "opened.\n\n"
      "  cairn verify-store --data-dir /var/lib/cairn",
      VerifyStore);
  cmd->add_option("--data-dir", flags->data_dir,
                  "The server's data directory (default $CAIRN_HOME, else ./.cairn)");
  cmd->add_option("--backend-store-uri", flags->backend_store_uri,
                  "The server's metadata store (default sqlite:///<data-dir>/cairn.db)");
  cmd->add_option("--artifacts-destination", flags->artifacts_destination,
                  "The server's blob directory (default <data-dir>/artifacts)");
  cmd->add_option("--max-listed", flags->max_listed,
                  "List at most this many problems of each kind")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
}

}  // namespace cairn::cli
