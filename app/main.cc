#include "cli/cli.h"

int main(int argc, char** argv) { return cairn::cli::Main(argc, argv); }
