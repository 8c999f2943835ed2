#include "fakes/fake_host_probe.h"

namespace cairn::fakes {

std::string FakeHostProbe::Join(std::span<const std::string> argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

Result<std::string> FakeHostProbe::ReadFile(const std::string& path) {
  auto it = files.find(path);
  if (it == files.end()) return NotFound("open " + path + ": No such file or directory");
  return it->second;
}

Result<std::vector<std::string>> FakeHostProbe::ListDir(const std::string& path) {
  auto it = dirs.find(path);
  if (it == dirs.end()) return NotFound("open " + path + ": No such file or directory");
  return it->second;
}

Result<env::CommandOutput> FakeHostProbe::RunCommand(std::span<const std::string> argv,
                                                     std::chrono::milliseconds timeout) {
  ran.push_back(Join(argv));
  timeouts.push_back(timeout);
  auto it = commands.find(ran.back());
  if (it == commands.end()) it = commands.find("*");
  // What Process::Spawn says for a command that is not on PATH.
  if (it == commands.end()) return NotFound("command not found: " + argv[0]);
  if (!it->second.status.ok()) return it->second.status;
  env::CommandOutput out;
  out.exit_code = it->second.exit_code;
  out.output = it->second.output;
  return out;
}

}  // namespace cairn::fakes
