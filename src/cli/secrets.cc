#include "cli/secrets.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>

namespace cairn::cli {
namespace {

// Restores the terminal's echo however the read ends.
class NoEcho {
 public:
  explicit NoEcho(int fd) : fd_(fd) {
    if (tcgetattr(fd_, &saved_) == 0) {
      termios quiet = saved_;
      quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
      active_ = tcsetattr(fd_, TCSAFLUSH, &quiet) == 0;
    }
  }
  ~NoEcho() {
    if (active_) tcsetattr(fd_, TCSAFLUSH, &saved_);
  }

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

Result<std::string> ReadLine(int fd, const std::string& prompt) {
  if (write(fd, prompt.data(), prompt.size()) < 0) return Unavailable("cannot write to the terminal");
  std::string line;
  NoEcho quiet(fd);
  char c = 0;
  while (read(fd, &c, 1) == 1 && c != '\n') {
    if (line.size() > 4096) return InvalidArgument("the password is too long");
    line.push_back(c);
  }
  (void)!write(fd, "\n", 1);
  return line;
}

}  // namespace

Result<std::string> ReadPasswordFromTerminal(const std::string& prompt, bool confirm) {
  const int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return FailedPrecondition("no terminal to ask for a password on: pass --password-file FILE");
  }
  Result<std::string> first = ReadLine(fd, prompt);
  Result<std::string> second = first;
  if (first.ok() && confirm) second = ReadLine(fd, "Again: ");
  close(fd);
  CAIRN_RETURN_IF_ERROR(first.status());
  CAIRN_RETURN_IF_ERROR(second.status());
  if (*first != *second) return InvalidArgument("the two passwords differ");
  return first;
}

Result<std::string> ReadSecretFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return NotFound("cannot read " + path);
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return PermissionDenied(path + " may be read by others (mode " + mode +
                            "): chmod 600 it first");
  }
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return NotFound("cannot read " + path);
  std::string line;
  int c = 0;
  while ((c = std::fgetc(f)) != EOF && c != '\n' && line.size() <= 4096) {
    line.push_back(static_cast<char>(c));
  }
  std::fclose(f);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

Result<std::string> ReadPassword(const std::string& password_file, const std::string& prompt,
                                 bool confirm) {
  if (!password_file.empty()) return ReadSecretFile(password_file);
  return ReadPasswordFromTerminal(prompt, confirm);
}

}  // namespace cairn::cli
