// The cairn command line: a table of subcommands, each a short function in its own file that
// parses flags and calls a library.
#pragma once

namespace cairn::cli {

// Runs the command line; returns the process exit code.
int Main(int argc, char** argv);

}  // namespace cairn::cli
