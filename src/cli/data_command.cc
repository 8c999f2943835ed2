// `cairn data add|ls|get|diff|verify`: versioned datasets (data/dataset_ops.h does the work).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "client/tracking_client.h"
#include "data/dataset_ops.h"
#include "report/run_report.h"
#include "util/clock.h"

namespace cairn::cli {
namespace {

struct DataFlags {
  std::string tracking_uri;
  std::string ref;
  std::string other;
  std::vector<std::string> paths;
  std::string dir;
  std::string message;
  std::vector<std::string> meta;
  std::string run;
  int threads = 0;
  int transfers = 16;
  bool copy = false;
  bool json = false;
};

int DataFail(const Status& s) {
  PrintError(s);
  return 1;
}

// The server, with a way to open more connections to it for transfers; null after printing
// why not.
std::unique_ptr<data::DatasetClient> Connect(const std::string& flag) {
  client::ClientOptions options;
  options.tracking_uri = client::ResolveTrackingUri(flag);
  auto made = data::DatasetClient::Open(options);
  if (!made.ok()) {
    PrintError(made.status());
    return nullptr;
  }
  return std::move(made).value();
}

// A progress line on stderr, on a terminal only.
data::ProgressFn ProgressOnTerminal() {
  if (isatty(STDERR_FILENO) == 0) return nullptr;
  return [](const data::Progress& p) {
    if (p.total > 0) {
      std::fprintf(stderr, "\r\033[K%s %lld/%lld, %s", p.phase, static_cast<long long>(p.done),
                   static_cast<long long>(p.total), report::FormatSize(p.bytes).c_str());
    } else {
      std::fprintf(stderr, "\r\033[K%s…", p.phase);
    }
    std::fflush(stderr);
  };
}

void ClearProgress() {
  if (isatty(STDERR_FILENO) != 0) std::fprintf(stderr, "\r\033[K");
}

std::string ShortDigest(const std::string& d) { return d.substr(0, 12); }

int DataAdd(const DataFlags& flags) {
  nlohmann::json meta = nlohmann::json::object();
  for (const std::string& kv : flags.meta) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      PrintError(InvalidArgument("--meta takes KEY=VALUE, not '" + kv + "'"));
      return 2;
    }
    meta[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto c = Connect(flags.tracking_uri);
  if (c == nullptr) return 2;
  data::AddOptions options;
  options.message = flags.message;
  options.metadata = meta.dump();
  // Inside `cairn run` (or a pipeline step), the run that is running made this version.
  const char* running = std::getenv("CAIRN_RUN_ID");
  options.run_id = !flags.run.empty() ? flags.run : (running != nullptr ? running : "");
  options.threads = flags.threads;
  options.transfers = flags.transfers;
  options.progress = ProgressOnTerminal();
  Result<data::AddResult> r = data::AddVersion(*c, flags.ref, flags.paths, options);
  ClearProgress();
  if (!r.ok()) return DataFail(r.status());
  const core::DataVersion& v = r->created.version;
  if (r->created.unchanged) {
    std::printf("%s is unchanged: its latest version holds these %lld files (%s)\n",
                core::DataRefText(v.name, v.version).c_str(), static_cast<long long>(r->files),
                report::FormatSize(r->bytes).c_str());
    return 0;
  }
  std::printf("%s  %lld files, %s  digest %s\n", core::DataRefText(v.name, v.version).c_str(),
              static_cast<long long>(v.files), report::FormatSize(v.bytes).c_str(),
              ShortDigest(v.digest).c_str());
  std::printf("sent %lld of %lld blob(s), %s\n", static_cast<long long>(r->blobs_sent),
              static_cast<long long>(r->blobs), report::FormatSize(r->bytes_sent).c_str());
  return 0;
}

void PrintVersionJson(const core::DataVersion& v) {
  nlohmann::json j = {{"name", v.name},
                      {"version", v.version},
                      {"digest", v.digest},
                      {"parent", v.parent},
                      {"message", v.message},
                      {"creator", v.creator},
                      {"created_time", v.created_time},
                      {"metadata", nlohmann::json::parse(v.metadata, nullptr, false)},
                      {"files", v.files},
                      {"bytes", v.bytes}};
  std::printf("%s\n", j.dump().c_str());
}

int DataList(const DataFlags& flags) {
  auto c = Connect(flags.tracking_uri);
  if (c == nullptr) return 2;
  const int64_t now = SystemClock()->NowMillis();
  report::Table table;
  if (flags.ref.empty()) {
    auto all = c->List();
    if (!all.ok()) return DataFail(all.status());
    if (flags.json) {
      for (const core::DatasetEntry& d : *all) PrintVersionJson(d.latest);
      return 0;
    }
    table.columns = {{"DATASET"},
                     {"VERSIONS", true, false},
                     {"LATEST", true, false},
                     {"FILES", true, false},
                     {"SIZE", true, false},
                     {"UPDATED"}};
    for (const core::DatasetEntry& d : *all) {
      table.rows.push_back({d.name, std::to_string(d.versions), std::to_string(d.latest.version),
                            std::to_string(d.latest.files), report::FormatSize(d.latest.bytes),
                            report::FormatCompactTime(d.latest.created_time, now)});
    }
    PrintText(report::RenderTable(table, report::DetectOutputStyle()));
    return 0;
  }
  auto ref = core::ParseDataRef(flags.ref, false);
  if (!ref.ok()) return DataFail(ref.status());
  if (ref->version > 0) {
    // One version: its files.
    auto v = c->Get(ref->name, ref->version);
    if (!v.ok()) return DataFail(v.status());
    auto files = c->Files(*v);
    if (!files.ok()) return DataFail(files.status());
    table.columns = {{"PATH"}, {"SIZE", true, false}, {"SHA256", false, false}};
    for (const core::FileEntry& f : *files) {
      table.rows.push_back({f.path, report::FormatSize(f.size), ShortDigest(f.sha256)});
    }
    PrintText(report::RenderTable(table, report::DetectOutputStyle()));
    return 0;
  }
  auto versions = c->Versions(ref->name);
  if (!versions.ok()) return DataFail(versions.status());
  if (flags.json) {
    for (const core::DataVersion& v : *versions) PrintVersionJson(v);
    return 0;
  }
  table.columns = {{"VERSION", true, false},
                   {"DIGEST", false, false},
                   {"FILES", true, false},
                   {"SIZE", true, false},
                   {"CREATED"},
                   {"BY"},
                   {"MESSAGE"}};
  for (const core::DataVersion& v : *versions) {
    table.rows.push_back({std::to_string(v.version), ShortDigest(v.digest), std::to_string(v.files),
                          report::FormatSize(v.bytes),
                          report::FormatCompactTime(v.created_time, now),
                          v.creator.empty() ? "-" : v.creator, v.message});
  }
  PrintText(report::RenderTable(table, report::DetectOutputStyle()));
  return 0;
}

int DataGet(const DataFlags& flags) {
  auto ref = core::ParseDataRef(flags.ref, false);
  if (!ref.ok()) return DataFail(ref.status());
  auto c = Connect(flags.tracking_uri);
  if (c == nullptr) return 2;
  data::GetOptions options;
  options.threads = flags.threads;
  options.transfers = flags.transfers;
  options.copy = flags.copy;
  options.progress = ProgressOnTerminal();
  Result<data::GetResult> r = data::GetVersion(*c, ref->name, ref->version, flags.dir, options);
  ClearProgress();
  if (!r.ok()) return DataFail(r.status());
  const core::DataVersion& v = r->version;
  std::printf("%s -> %s  %lld files, %s (fetched %lld blob(s), %s; placed %lld file(s)",
              core::DataRefText(v.name, v.version).c_str(), flags.dir.c_str(),
              static_cast<long long>(v.files), report::FormatSize(v.bytes).c_str(),
              static_cast<long long>(r->fetched), report::FormatSize(r->bytes_fetched).c_str(),
              static_cast<long long>(r->placed));
  if (r->removed > 0) std::printf("; removed %lld", static_cast<long long>(r->removed));
  std::printf(")\n");
  if (r->refetched > 0) {
    std::printf("%lld file(s) did not match their hash and were fetched again\n",
                static_cast<long long>(r->refetched));
  }
  if (!r->extra.empty()) {
    std::fprintf(stderr, "warning: %zu file(s) in %s are not in %s, e.g. %s; they were left\n",
                 r->extra.size(), flags.dir.c_str(), core::DataRefText(v.name, v.version).c_str(),
                 r->extra[0].c_str());
  }
  return 0;
}

void PrintDiffLines(const core::ManifestDiff& d, const char* added, const char* removed) {
  for (const core::FileEntry& f : d.added) {
    std::printf("%s %s  %s\n", added, f.path.c_str(), report::FormatSize(f.size).c_str());
  }
  for (const core::FileEntry& f : d.removed) {
    std::printf("%s %s  %s\n", removed, f.path.c_str(), report::FormatSize(f.size).c_str());
  }
  for (const auto& [a, b] : d.changed) {
    std::printf("~ %s  %s -> %s%s\n", b.path.c_str(), report::FormatSize(a.size).c_str(),
                report::FormatSize(b.size).c_str(),
                a.sha256 == b.sha256 ? " (executable bit)" : "");
  }
}

int DataDiff(const DataFlags& flags) {
  auto from = core::ParseDataRef(flags.ref, false);
  if (!from.ok()) return DataFail(from.status());
  core::DataRef to{from->name, 0, ""};
  if (!flags.other.empty()) {
    auto parsed = core::ParseDataRef(
        flags.other.starts_with('@') ? from->name + flags.other : flags.other, false);
    if (!parsed.ok()) return DataFail(parsed.status());
    if (parsed->name != from->name) {
      return DataFail(InvalidArgument("compare two versions of one dataset, not " + from->name +
                                      " and " + parsed->name));
    }
    to = *parsed;
  }
  if (from->version == 0) {
    return DataFail(
        InvalidArgument("name the version to compare from: " + from->name + "@VERSION"));
  }
  auto c = Connect(flags.tracking_uri);
  if (c == nullptr) return 2;
  auto d = c->Diff(from->name, from->version, to.version);
  if (!d.ok()) return DataFail(d.status());
  PrintDiffLines(d->files, "+", "-");
  int64_t added = 0, removed = 0;
  for (const core::FileEntry& f : d->files.added) added += f.size;
  for (const core::FileEntry& f : d->files.removed) removed += f.size;
  std::printf("%s -> %s: %zu added (%s), %zu removed (%s), %zu changed\n",
              core::DataRefText(d->from.name, d->from.version).c_str(),
              core::DataRefText(d->to.name, d->to.version).c_str(), d->files.added.size(),
              report::FormatSize(added).c_str(), d->files.removed.size(),
              report::FormatSize(removed).c_str(), d->files.changed.size());
  return 0;
}

int DataVerify(const DataFlags& flags) {
  auto ref = core::ParseDataRef(flags.ref, false);
  if (!ref.ok()) return DataFail(ref.status());
  auto c = Connect(flags.tracking_uri);
  if (c == nullptr) return 2;
  auto r = data::VerifyVersion(*c, ref->name, ref->version, flags.dir, flags.threads, "");
  if (!r.ok()) return DataFail(r.status());
  const std::string name = core::DataRefText(r->version.name, r->version.version);
  if (r->ok()) {
    std::printf("%s holds exactly %s: %lld files, %s\n", flags.dir.c_str(), name.c_str(),
                static_cast<long long>(r->version.files),
                report::FormatSize(r->version.bytes).c_str());
    return 0;
  }
  PrintDiffLines(r->diff, "extra", "missing");
  std::printf("%s differs from %s: %zu missing, %zu changed, %zu extra\n", flags.dir.c_str(),
              name.c_str(), r->diff.removed.size(), r->diff.changed.size(), r->diff.added.size());
  return 1;
}

}  // namespace

void RegisterData(CLI::App& app, Action* action) {
  CLI::App* data = app.add_subcommand(
      "data",
      "Versioned datasets: each version is an immutable set of files named by their SHA-256,\n"
      "stored once on the server however many versions hold them.");
  data->require_subcommand(1);

  auto [add, add_flags] = AddSubcommand<DataFlags>(
      data, action, "add",
      "Add the files under PATH... as a new version of dataset NAME (made if new). One\n"
      "directory adds its files at the version's root; several paths add each under its base\n"
      "name. Only the blobs the server lacks are sent, and a run that is stopped continues\n"
      "where it stopped when run again.\n\n"
      "  cairn data add mnist data/mnist -m 'deduplicated train split'",
      DataAdd);
  add->add_option("name", add_flags->ref, "The dataset")->required();
  add->add_option("paths", add_flags->paths, "Files and directories to add")->required();
  add->add_option("-m,--message", add_flags->message, "What this version changes");
  add->add_option("--meta", add_flags->meta,
                  "KEY=VALUE kept with the version (schema, rows, source URL); repeatable");
  add->add_option("--run", add_flags->run,
                  "The run that made this version, for its lineage (default: $CAIRN_RUN_ID, set "
                  "inside `cairn run`)");
  add->add_option("-j,--threads", add_flags->threads, "Hashing threads (default: all cores)");
  add->add_option("--transfers", add_flags->transfers, "Blobs sent at once (default: 16)")
      ->check(CLI::Range(1, 64));
  AddTrackingUriOption(add, &add_flags->tracking_uri);

  auto [ls, ls_flags] = AddSubcommand<DataFlags>(
      data, action, "ls",
      "List datasets; with NAME, its versions; with NAME@VERSION, that version's files.", DataList);
  ls->add_option("ref", ls_flags->ref, "NAME or NAME@VERSION");
  ls->add_flag("--json", ls_flags->json, "One JSON object per line");
  AddTrackingUriOption(ls, &ls_flags->tracking_uri);

  auto [get, get_flags] = AddSubcommand<DataFlags>(
      data, action, "get",
      "Make DIR hold version VERSION of NAME (the latest without @VERSION). Files come from a\n"
      "local cache ($CAIRN_DATA_CACHE, else ~/.cache/cairn/data), hard-linked and read-only\n"
      "where the file system allows, and every file is checked against its SHA-256. Files a\n"
      "version got before put into DIR and this one lacks are removed; other files are left.\n\n"
      "  cairn data get mnist@3 data/mnist",
      DataGet);
  get->add_option("ref", get_flags->ref, "NAME[@VERSION]")->required();
  get->add_option("dir", get_flags->dir, "The directory")->required();
  get->add_flag("--copy", get_flags->copy, "Copy files instead of linking them (writable)");
  get->add_option("-j,--threads", get_flags->threads, "Hashing threads (default: all cores)");
  get->add_option("--transfers", get_flags->transfers, "Blobs fetched at once (default: 16)")
      ->check(CLI::Range(1, 64));
  AddTrackingUriOption(get, &get_flags->tracking_uri);

  auto [diff, diff_flags] = AddSubcommand<DataFlags>(
      data, action, "diff",
      "List the files added (+), removed (-) and changed (~) from one version to another (the\n"
      "latest without a second one), with their sizes.\n\n"
      "  cairn data diff mnist@2 mnist@3",
      DataDiff);
  diff->add_option("from", diff_flags->ref, "NAME@VERSION")->required();
  diff->add_option("to", diff_flags->other, "NAME@VERSION or @VERSION");
  AddTrackingUriOption(diff, &diff_flags->tracking_uri);

  auto [verify, verify_flags] = AddSubcommand<DataFlags>(
      data, action, "verify",
      "Check DIR against a version: every file there with its SHA-256, none missing, none\n"
      "extra. Exits 1 when they differ, listing how.",
      DataVerify);
  verify->add_option("ref", verify_flags->ref, "NAME[@VERSION]")->required();
  verify->add_option("dir", verify_flags->dir, "The directory")->required();
  verify->add_option("-j,--threads", verify_flags->threads, "Hashing threads");
  AddTrackingUriOption(verify, &verify_flags->tracking_uri);
}

}  // namespace cairn::cli
