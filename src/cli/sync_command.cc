// `cairn sync`: upload what `cairn run` could not deliver (its journal, see
// client/run_journal.h).
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "client/run_journal.h"
#include "client/tracking_client.h"

namespace cairn::cli {
namespace {

struct SyncFlags {
  std::string tracking_uri;
};

int RunSync(const SyncFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  const std::vector<std::string> dirs = client::JournalDirs();
  size_t runs = 0;
  const client::SyncResult result = client::SyncJournals(
      dirs, *client,
      [&runs](const std::string& run_id, size_t delivered, size_t pending, const Status& s) {
        ++runs;
        std::printf("run %s: %zu record(s) uploaded", run_id.c_str(), delivered);
        if (pending > 0) std::printf(", %zu pending (%s)", pending, s.message().c_str());
        std::printf("\n");
      });
  if (runs == 0) {
    std::printf("nothing to upload to %s in %s\n", client->tracking_uri().c_str(),
                dirs.front().c_str());
  }
  for (const auto& [uri, count] : result.elsewhere) {
    std::printf("%zu run(s) wait for the tracking server at %s: cairn sync --tracking-uri %s\n",
                count, uri.c_str(), uri.c_str());
  }
  return result.pending == 0 ? 0 : 1;
}

}  // namespace

void RegisterSync(CLI::App& app, Action* action) {
  auto flags = std::make_shared<SyncFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sync",
      "Upload what `cairn run` recorded while the tracking server was unreachable: the\n"
      "journals in $CAIRN_HOME/journal (else ./.cairn/journal), each in order. A run's\n"
      "records go only to the server it was started against; runs of other servers are\n"
      "listed. Every `cairn run` does this first on its own. Exits 1 when something is\n"
      "still pending.");
  AddTrackingUriOption(cmd, &flags->tracking_uri);
  cmd->callback([flags, action] { *action = [flags] { return RunSync(*flags); }; });
}

}  // namespace cairn::cli
