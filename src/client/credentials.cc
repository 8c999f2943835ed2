#include "client/credentials.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "util/file.h"
#include "util/hash.h"
#include "util/strings.h"

namespace cairn::client {
namespace {

namespace fs = std::filesystem;

// "http://host:5000/" and "http://host:5000" name the same server.
std::string SectionName(std::string uri) {
  while (uri.size() > 1 && uri.back() == '/') uri.pop_back();
  return uri;
}

using Sections = std::vector<std::pair<std::string, std::map<std::string, std::string>>>;

Result<Sections> ParseIni(const std::string& text, const std::string& path) {
  Sections sections;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = std::string(Trim(line));
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') {
        return InvalidArgument(path + ":" + std::to_string(number) + ": a section name ends in ]");
      }
      sections.emplace_back(SectionName(std::string(Trim(line.substr(1, line.size() - 2)))),
                            std::map<std::string, std::string>());
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos || sections.empty()) {
      return InvalidArgument(path + ":" + std::to_string(number) +
                             ": expected [section] or key = value");
    }
    sections.back().second[std::string(Trim(line.substr(0, eq)))] =
        std::string(Trim(line.substr(eq + 1)));
  }
  return sections;
}

std::optional<std::string> HeaderOf(const std::map<std::string, std::string>& section) {
  auto token = section.find("token");
  if (token != section.end() && !token->second.empty()) return "Bearer " + token->second;
  auto user = section.find("username");
  if (user != section.end() && !user->second.empty()) {
    auto password = section.find("password");
    return "Basic " + Base64Encode(user->second + ":" +
                                   (password == section.end() ? "" : password->second));
  }
  return std::nullopt;
}

Result<std::string> ReadPrivateFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return NotFound(path);
  if ((st.st_mode & 077) != 0) {
    return PermissionDenied("refusing the credentials in " + path +
                            ": its group or others may read it; chmod 600 " + path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string CredentialsFilePath() {
  std::string base = EnvOrEmpty("XDG_CONFIG_HOME");
  if (base.empty()) {
    const std::string home = EnvOrEmpty("HOME");
    if (home.empty()) return "";
    base = home + "/.config";
  }
  return base + "/cairn/credentials";
}

Result<std::optional<std::string>> ResolveAuthorization(const std::string& tracking_uri) {
  if (std::string token = EnvOrEmpty("CAIRN_TOKEN"); !token.empty()) {
    return std::optional<std::string>("Bearer " + token);
  }
  if (std::string user = EnvOrEmpty("MLFLOW_TRACKING_USERNAME"); !user.empty()) {
    const std::string password = EnvOrEmpty("MLFLOW_TRACKING_PASSWORD");
    if (!password.empty()) {
      return std::optional<std::string>("Basic " + Base64Encode(user + ":" + password));
    }
  }
  if (std::string token = EnvOrEmpty("MLFLOW_TRACKING_TOKEN"); !token.empty()) {
    return std::optional<std::string>("Bearer " + token);
  }
  const std::string path = CredentialsFilePath();
  if (path.empty()) return std::optional<std::string>();
  Result<std::string> text = ReadPrivateFile(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
    return text.status();
  }
  CAIRN_ASSIGN_OR_RETURN(Sections sections, ParseIni(*text, path));
  const std::string wanted = SectionName(tracking_uri);
  for (const std::string& name : {wanted, std::string("default")}) {
    for (const auto& [section, values] : sections) {
      if (section == name) return HeaderOf(values);
    }
  }
  return std::optional<std::string>();
}

std::optional<std::string> SavedToken(const std::string& tracking_uri) {
  const std::string path = CredentialsFilePath();
  if (path.empty()) return std::nullopt;
  Result<std::string> text = ReadPrivateFile(path);
  if (!text.ok()) return std::nullopt;
  Result<Sections> sections = ParseIni(*text, path);
  if (!sections.ok()) return std::nullopt;
  for (const auto& [name, values] : *sections) {
    if (name != SectionName(tracking_uri)) continue;
    auto token = values.find("token");
    if (token != values.end() && !token->second.empty()) return token->second;
  }
  return std::nullopt;
}

Status SaveToken(const std::string& tracking_uri, const std::string& token) {
  const std::string path = CredentialsFilePath();
  if (path.empty()) return FailedPrecondition("neither XDG_CONFIG_HOME nor HOME is set");
  Sections sections;
  Result<std::string> text = ReadPrivateFile(path);
  if (text.ok()) {
    CAIRN_ASSIGN_OR_RETURN(sections, ParseIni(*text, path));
  } else if (text.status().code() != StatusCode::kNotFound) {
    return text.status();
  }
  const std::string name = SectionName(tracking_uri);
  bool found = false;
  for (auto& [section, values] : sections) {
    if (section != name) continue;
    values = {{"token", token}};
    found = true;
  }
  if (!found) sections.emplace_back(name, std::map<std::string, std::string>{{"token", token}});
  std::string out;
  for (const auto& [section, values] : sections) {
    if (!out.empty()) out += "\n";
    out += "[" + section + "]\n";
    for (const auto& [key, value] : values) out += key + " = " + value + "\n";
  }
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  if (fs::create_directories(dir, ec)) {
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  if (ec) return Unavailable("cannot create " + dir.string());
  // Written with mode 0600 from the start, then renamed over the old file: never readable by
  // others, never torn.
  const fs::path temp = TempPathFor(path);
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus("create", temp);
  const bool written = write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()) &&
                       fsync(fd) == 0;
  close(fd);
  if (!written || rename(temp.c_str(), path.c_str()) != 0) {
    Status s = ErrnoStatus("write", path);
    fs::remove(temp, ec);
    return s;
  }
  return Status::Ok();
}

}  // namespace cairn::client
