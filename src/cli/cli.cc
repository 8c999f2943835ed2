#include "cli/cli.h"

#include "cli/commands.h"
#include "server/server.h"

namespace cairn::cli {

int Main(int argc, char** argv) {
  CLI::App app{
      "cairn: reproducible machine learning. Records runs (MLflow-compatible tracking server),\n"
      "pins environments and runs pipelines."};
  app.set_version_flag("--version", std::string("cairn ") + server::Version());
  app.require_subcommand(1);
  Action action;
  RegisterServer(app, &action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return action ? action() : 0;
}

}  // namespace cairn::cli
