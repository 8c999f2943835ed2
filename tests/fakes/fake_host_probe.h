// A host for tests made of given file contents and command answers, recording the commands it
// was asked to run: what env::CollectHostFacts and the system metrics sampler read, without
// the machine's own /proc or nvidia-smi.
#pragma once

#include <chrono>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "env/host_facts.h"
#include "util/status.h"

namespace cairn::fakes {

class FakeHostProbe : public env::HostProbe {
 public:
  struct Command {
    int exit_code = 0;
    std::string output;  // stdout
    Status status;       // when not OK, RunCommand returns it instead
  };

  std::map<std::string, std::string> files;               // path -> content
  std::map<std::string, std::vector<std::string>> dirs;   // path -> entry names
  // The answer to a command, by its argv joined with single spaces; "*" answers any command
  // not listed. A command with no answer is NotFound, as one that is not on PATH.
  std::map<std::string, Command> commands;
  std::vector<std::string> ran;                     // commands run, in order
  std::vector<std::chrono::milliseconds> timeouts;  // the timeout each was given
  Result<env::UnameInfo> uname = env::UnameInfo{"Linux", "5.15.0-105-generic", "x86_64"};
  Result<std::string> glibc = std::string("2.35");
  Result<std::string> hostname = std::string("dgx-07");

  static std::string Join(std::span<const std::string> argv);

  Result<std::string> ReadFile(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override;
  Result<env::CommandOutput> RunCommand(std::span<const std::string> argv,
                                        std::chrono::milliseconds timeout) override;
  Result<env::UnameInfo> Uname() override { return uname; }
  Result<std::string> GlibcVersion() override { return glibc; }
  Result<std::string> Hostname() override { return hostname; }
};

}  // namespace cairn::fakes
