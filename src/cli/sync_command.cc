// `cairn sync`: upload what `cairn run` could not deliver (its journal, see
// client/run_journal.h).
#include <cstdio>

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
  const std::string dir = client::DefaultJournalDir();
  size_t runs = 0;
  const size_t left = client::SyncJournals(
      dir, *client,
      [&runs](const std::string& run_id, size_t delivered, size_t pending, const Status& s) {
        ++runs;
        std::printf("run %s: %zu record(s) uploaded", run_id.c_str(), delivered);
        if (pending > 0) std::printf(", %zu pending (%s)", pending, s.message().c_str());
        std::printf("\n");
      });
  if (runs == 0) std::printf("nothing to upload in %s\n", dir.c_str());
  return left == 0 ? 0 : 1;
}

}  // namespace

void RegisterSync(CLI::App& app, Action* action) {
  auto flags = std::make_shared<SyncFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sync",
      "Upload what `cairn run` recorded while the tracking server was unreachable: the\n"
      "journals in $CAIRN_HOME/journal (else ./.cairn/journal), each in order. Every\n"
      "`cairn run` does this first on its own. Exits 1 when something is still pending.");
  AddTrackingUriOption(cmd, &flags->tracking_uri);
  cmd->callback([flags, action] { *action = [flags] { return RunSync(*flags); }; });
}

}  // namespace cairn::cli
