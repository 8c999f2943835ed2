// `cairn logs RUN [-f]`: print a run's console log, or follow it until the run ends.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "client/tracking_client.h"

namespace cairn::cli {
namespace {

struct LogsFlags {
  std::string run_id;
  bool follow = false;
  std::string tracking_uri;
};

int RunLogs(const LogsFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  int64_t offset = 0;
  for (;;) {
    auto page = client->ReadRunLog(flags.run_id, offset);
    if (!page.ok()) {
      std::fprintf(stderr, "error: %s\n", page.status().message().c_str());
      return 1;
    }
    if (!page->text.empty()) {
      std::fwrite(page->text.data(), 1, page->text.size(), stdout);
      std::fflush(stdout);
      offset = page->next_offset;
      continue;  // more may be there already
    }
    // At the end: done, unless following a run that is still going.
    if (!flags.follow || page->run_status != core::RunStatus::kRunning) return 0;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

}  // namespace

void RegisterLogs(CLI::App& app, Action* action) {
  auto flags = std::make_shared<LogsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "logs",
      "Print the console log (stdout and stderr) of a run recorded by `cairn run`. With -f,\n"
      "keep printing new output until the run ends.");
  cmd->add_option("run", flags->run_id, "Run id")->required();
  cmd->add_flag("-f,--follow", flags->follow, "Follow the log until the run ends");
  AddTrackingUriOption(cmd, &flags->tracking_uri);
  cmd->callback([flags, action] { *action = [flags] { return RunLogs(*flags); }; });
}

}  // namespace cairn::cli
