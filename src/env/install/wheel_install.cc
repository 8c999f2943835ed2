#include "env/install/wheel_install.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <system_error>
#include <utility>

#include "env/install/wheel_archive.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/strings.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

// A Python identifier as far as a launcher needs: ASCII letters, digits and '_' (not first),
// or any non-ASCII byte (UTF-8 identifiers are left for Python to judge). What matters is that
// nothing else (quotes, parentheses, newlines) can reach the generated code.
bool IsIdentifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (unsigned char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c >= 0x80;
    if (!ok) return false;
  }
  return true;
}

bool IsDottedName(std::string_view s) {
  size_t pos = 0;
  for (;;) {
    size_t dot = s.find('.', pos);
    if (!IsIdentifier(s.substr(pos, dot == std::string_view::npos ? s.npos : dot - pos))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    pos = dot + 1;
  }
}

// ---------------------------------------------------------------------------------------------
// Files.

// Creates every missing directory of `dir`. Another install may create the same directories
// at the same moment, so EEXIST on a directory counts as success.
Status MakeSharedDirs(const fs::path& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::Ok();
    return FailedPrecondition(dir.string() + " exists and is not a directory");
  }
  fs::path parent = dir.parent_path();
  if (!parent.empty() && parent != dir) CAIRN_RETURN_IF_ERROR(MakeSharedDirs(parent));
  if (::mkdir(dir.c_str(), 0755) == 0) return Status::Ok();
  if (errno == EEXIST && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Status::Ok();
  }
  return ErrnoStatus("create directory", dir);
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Creates `path` exclusively. AlreadyExists when something is there (the caller turns that into
// a conflict message).
Result<int> CreateExclusive(const fs::path& path, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0) {
    ::fchmod(fd, mode);  // not narrowed by the umask: scripts must end up executable
    return fd;
  }
  if (errno == EEXIST) return AlreadyExists(path.string());
  return ErrnoStatus("create", path);
}

Status WriteNewFile(const fs::path& path, std::string_view bytes, mode_t mode) {
  CAIRN_ASSIGN_OR_RETURN(int raw, CreateExclusive(path, mode));
  Fd fd(raw);
  Status s = WriteAll(fd.get(), bytes, path);
  if (!s.ok()) ::unlink(path.c_str());
  return s;
}

Status CopyContents(int in, int out, const fs::path& src, const fs::path& dst) {
  // copy_file_range lets the kernel copy (and some filesystems share extents); fall back to
  // read/write where it is not supported.
  for (;;) {
    ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, 1 << 30, 0);
    if (n == 0) return Status::Ok();
    if (n > 0) continue;
    if (errno == EINTR) continue;
    if (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP) break;
    return ErrnoStatus("copy to", dst);
  }
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", src);
    }
    if (n == 0) return Status::Ok();
    CAIRN_RETURN_IF_ERROR(WriteAll(out, std::string_view(buf, static_cast<size_t>(n)), dst));
  }
}

int Rank(LinkMode m) {
  switch (m) {
    case LinkMode::kReflink:
      return 3;
    case LinkMode::kHardlink:
      return 2;
    default:
      return 1;
  }
}

// Places cache files into the environment, remembering across calls which mode works so that
// kAuto probes each fallback at most once per install.
class Linker {
 public:
  explicit Linker(LinkMode requested)
      : requested_(requested),
        next_(requested == LinkMode::kAuto ? LinkMode::kReflink : requested) {}

  // Places `src` at `dst` (which must not exist) with permissions `mode` (used when copying).
  // Returns the mode used; AlreadyExists when `dst` exists.
  Result<LinkMode> Place(const fs::path& src, const fs::path& dst, mode_t mode) {
    for (;;) {
      Result<bool> done = Try(next_, src, dst, mode);
      if (!done.ok()) return done.status();
      if (*done) return next_;
      // Not supported here: fall back, or fail when a specific mode was asked for.
      if (requested_ != LinkMode::kAuto) {
        return FailedPrecondition(std::string(LinkModeName(next_)) + " is not possible from " +
                                  src.string() + " to " + dst.string() + ": " + why_);
      }
      next_ = next_ == LinkMode::kReflink ? LinkMode::kHardlink : LinkMode::kCopy;
    }
  }

 private:
  // true: placed; false: this mode does not work between these paths (why_ says why).
  Result<bool> Try(LinkMode mode, const fs::path& src, const fs::path& dst, mode_t perm) {
    if (mode == LinkMode::kHardlink) {
      if (::link(src.c_str(), dst.c_str()) == 0) return true;
      if (errno == EEXIST) return AlreadyExists(dst.string());
      if (errno == EXDEV || errno == EPERM || errno == EMLINK || errno == EOPNOTSUPP) {
        why_ = std::strerror(errno);
        return false;
      }
      return ErrnoStatus("link to", dst);
    }
    Fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.get() < 0) return ErrnoStatus("open", src);
    CAIRN_ASSIGN_OR_RETURN(int raw, CreateExclusive(dst, perm));
    Fd out(raw);
    if (mode == LinkMode::kReflink) {
      if (::ioctl(out.get(), FICLONE, in.get()) == 0) return true;
      int err = errno;
      why_ = std::strerror(err);
      ::unlink(dst.c_str());
      if (err == EOPNOTSUPP || err == EXDEV || err == EINVAL || err == ENOTTY || err == EPERM ||
          err == ENOSYS) {
        return false;
      }
      return Unavailable("reflink " + src.string() + " to " + dst.string() + ": " + why_);
    }
    Status s = CopyContents(in.get(), out.get(), src, dst);
    if (!s.ok()) {
      ::unlink(dst.c_str());
      return s;
    }
    return true;
  }

  LinkMode requested_;
  LinkMode next_;
  std::string why_;
};

// ---------------------------------------------------------------------------------------------
// The plan: every file this install creates, decided before anything is written.

enum class Action {
  kPlace,          // link (or copy) from the cache unchanged
  kRewriteScript,  // a `#!python` script: new file with the environment's shebang
  kExecCopy,       // a script without its execute bits in the cache: new executable copy
  kWrite,          // generated content (launchers, metadata)
};

struct Op {
  Action action;
  fs::path src;         // in the cache (all but kWrite)
  fs::path dst;         // absolute, in the environment
  std::string content;  // kWrite and kRewriteScript
  mode_t mode = 0644;
  std::string record_hash;  // sha256 from the wheel's RECORD, when it has one (kPlace)
  int64_t record_size = -1;
  bool is_script = false;  // counts towards scripts_written
};

std::string Stem(std::string_view dist_info) {
  return std::string(dist_info.substr(0, dist_info.size() - std::string_view(".dist-info").size()));
}

// The Name field of METADATA (used for the headers directory, as pip does); the dist-info
// stem's name part when METADATA has none.
std::string DistributionName(const fs::path& dist_info_dir, const std::string& stem) {
  Result<std::string> text = ReadFile(dist_info_dir / "METADATA");
  if (text.ok()) {
    size_t pos = 0;
    while (pos < text->size()) {
      size_t nl = text->find('\n', pos);
      std::string_view line(text->data() + pos,
                            (nl == std::string::npos ? text->size() : nl) - pos);
      pos = nl == std::string::npos ? text->size() : nl + 1;
      if (Trim(line).empty()) break;  // end of the headers
      if (line.size() > 5 && (line.substr(0, 5) == "Name:" || line.substr(0, 5) == "name:")) {
        std::string name(Trim(line.substr(5)));
        if (IsSafeRelativePath(name) && name.find('/') == std::string::npos) return name;
      }
    }
  }
  return stem.substr(0, stem.find('-'));
}

// Who owns `target`, by the RECORDs of the distributions installed next to `site_packages`:
// "other-2.0 (other-2.0.dist-info)". Unreadable RECORDs (one being written by a concurrent
// install) are skipped.
std::string OwnerOf(const fs::path& target, const fs::path& site_packages,
                    const std::string& self) {
  fs::path want = target.lexically_normal();
  std::error_code ec;
  for (fs::directory_iterator it(site_packages, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.ends_with(".dist-info") || name == self) continue;
    Result<std::string> text = ReadFile(it->path() / "RECORD");
    if (!text.ok()) continue;
    Result<std::vector<RecordEntry>> rows = ParseRecord(*text);
    if (!rows.ok()) continue;
    for (const RecordEntry& r : *rows) {
      if ((site_packages / r.path).lexically_normal() == want) {
        return Stem(name) + " (" + name + ")";
      }
    }
  }
  return "";
}

// Sha256 of a file in RECORD form.
Result<std::string> RecordHashOfFile(const fs::path& path, int64_t* size) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus("open", path);
  Sha256Hasher h;
  char buf[1 << 16];
  int64_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", path);
    }
    if (n == 0) break;
    total += n;
    h.Update(std::string_view(buf, static_cast<size_t>(n)));
  }
  *size = total;
  return RecordSha256FromHex(h.HexDigest());
}

// Rewrites a `#!python...` first line to the environment's interpreter, keeping arguments.
Result<std::string> RewriteShebang(std::string_view script, const std::string& python) {
  size_t nl = script.find('\n');
  std::string_view first = script.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? std::string_view() : script.substr(nl + 1);
  if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
  // "#!python", "#!pythonw", "#!python3.11 -u": the interpreter word is replaced, the
  // arguments after it are kept.
  std::string_view after = first.substr(2);
  size_t space = after.find_first_of(" \t");
  std::string_view args =
      space == std::string_view::npos ? std::string_view() : after.substr(space);
  CAIRN_ASSIGN_OR_RETURN(std::string shebang, ShebangFor(python, args));
  return shebang + std::string(rest);
}

std::string LauncherText(const std::string& shebang, const ScriptEntryPoint& ep) {
  size_t dot = ep.attr.find('.');
  std::string head = ep.attr.substr(0, dot);
  std::string tail = dot == std::string::npos ? "" : ep.attr.substr(dot);
  // The attribute is imported under a private name so that an attribute called `sys` cannot
  // shadow the module used to exit.
  std::string s = shebang;
  s += "# -*- coding: utf-8 -*-\n";
  s += "# Launcher for the " + std::string(ep.gui ? "gui" : "console") + " script entry point " +
       ep.module + ":" + ep.attr + ", written by cairn.\n";
  s += "import sys\n";
  s += "from " + ep.module + " import " + head + " as _cairn_entry_point\n";
  s += "if __name__ == \"__main__\":\n";
  s += "    sys.exit(_cairn_entry_point" + tail + "())\n";
  return s;
}

// One installation. Errors from its steps are plain; Run puts "installing <name> (<dir>)" in
// front of them.
class Installer {
 public:
  Installer(const VenvLayout& layout, const InstallOptions& options)
      : layout_(layout), options_(options), linker_(options.link) {}

  Result<InstallReport> Run(const std::string& unpacked_dir) {
    Result<UnpackedWheel> wheel = LoadUnpackedWheel(unpacked_dir);
    if (!wheel.ok()) return wheel.status().WithContext("installing " + unpacked_dir);
    wheel_ = std::move(wheel).value();
    name_ = Stem(wheel_.dist_info);
    site_ = fs::path(layout_.purelib());
    root_ = wheel_.root_is_purelib ? fs::path(layout_.purelib()) : fs::path(layout_.platlib());
    dist_info_dst_ = root_ / wheel_.dist_info;
    report_.dist_info = dist_info_dst_.string();
    report_.warnings = wheel_.warnings;

    Status s = Plan();
    if (s.ok()) s = Execute();
    if (!s.ok()) {
      Rollback();
      return s.WithContext("installing " + name_ + " (" + wheel_.dir + ")");
    }
    return report_;
  }

 private:
  // Every step of the install, decided and checked before anything is written.
  Status Plan() {
    struct stat dist_info_st;
    if (::lstat(dist_info_dst_.c_str(), &dist_info_st) == 0) {
      return AlreadyInstalled();
    }
    for (const RecordEntry& e : wheel_.record) {
      if (e.hash.starts_with("sha256=")) {
        std::string h = e.hash;
        while (h.size() > 7 && h.back() == '=') h.pop_back();
        record_[e.path] = {h, e.size};
      }
    }
    const std::string env_python = layout_.env_python();
    CAIRN_RETURN_IF_ERROR(PlanWheelFiles(env_python));
    CAIRN_RETURN_IF_ERROR(PlanLaunchers(env_python));
    PlanInstallerMetadata();
    return CheckDistinctDestinations();
  }

  // Every file of the unpacked wheel, with whether it is executable, sorted by path.
  Result<std::vector<std::pair<std::string, bool>>> ListWheelFiles() const {
    std::vector<std::pair<std::string, bool>> files;
    std::error_code ec;
    fs::path base(wheel_.dir);
    for (fs::recursive_directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
      fs::file_status st = it->symlink_status(ec);
      if (ec) break;
      if (fs::is_directory(st)) continue;
      std::string rel = it->path().lexically_relative(base).generic_string();
      if (!fs::is_regular_file(st)) {
        return InvalidArgument(rel + " in the cache is not a regular file");
      }
      const bool executable = (st.permissions() & fs::perms::owner_exec) != fs::perms::none;
      files.emplace_back(std::move(rel), executable);
    }
    if (ec) return Unavailable("listing the cache: " + ec.message());
    std::sort(files.begin(), files.end());
    return files;
  }

  // The wheel's own files, each to its scheme directory; scripts made executable and, for
  // `#!python` ones, pointed at the environment's interpreter.
  Status PlanWheelFiles(const std::string& env_python) {
    // Files the installer writes itself replace the wheel's copies, if it has any.
    std::set<std::string> generated = {"RECORD", "RECORD.jws", "RECORD.p7s", "INSTALLER"};
    if (options_.requested) generated.insert("REQUESTED");
    if (!options_.direct_url_json.empty()) generated.insert("direct_url.json");
    const std::string dist_info_prefix = wheel_.dist_info + "/";
    CAIRN_ASSIGN_OR_RETURN(auto files, ListWheelFiles());
    for (const auto& [rel, executable] : files) {
      if (rel.starts_with(dist_info_prefix) &&
          generated.count(rel.substr(dist_info_prefix.size())) != 0) {
        continue;
      }
      CAIRN_ASSIGN_OR_RETURN(Op op, PlaceOp(rel, executable, env_python));
      ops_.push_back(std::move(op));
    }
    return Status::Ok();
  }

  // How the wheel file `rel` is installed: to its scheme directory (<name>.data/<scheme>/...,
  // else the wheel's root scheme), checked against its RECORD hash.
  Result<Op> PlaceOp(const std::string& rel, bool executable, const std::string& env_python) {
    const std::string data_prefix = wheel_.data_dir + "/";
    Op op;
    op.action = Action::kPlace;
    op.src = fs::path(wheel_.dir) / rel;
    std::string scheme = wheel_.root_is_purelib ? "purelib" : "platlib";
    std::string inner = rel;
    if (rel.starts_with(data_prefix)) {
      std::string sub = rel.substr(data_prefix.size());
      size_t slash = sub.find('/');
      if (slash == std::string::npos) {
        return InvalidArgument(rel + " is not inside a scheme directory of " + wheel_.data_dir);
      }
      scheme = sub.substr(0, slash);
      inner = sub.substr(slash + 1);
    }
    CAIRN_ASSIGN_OR_RETURN(fs::path dir, SchemeDir(scheme, rel));
    op.dst = dir / inner;
    op.mode = executable ? 0755 : 0644;
    auto rec = record_.find(rel);
    if (rec != record_.end()) {
      op.record_hash = rec->second.first;
      op.record_size = rec->second.second;
    }
    if (scheme != "scripts") return op;
    op.mode = 0755;
    CAIRN_ASSIGN_OR_RETURN(bool python_script, StartsWithPythonShebang(op.src));
    if (python_script) {
      CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(op.src));
      Result<std::string> rewritten = RewriteShebang(text, env_python);
      if (!rewritten.ok()) {
        return InvalidArgument(rel + ": " + rewritten.status().message());
      }
      op.action = Action::kRewriteScript;
      op.content = std::move(rewritten).value();
      op.is_script = true;
    } else if (!executable) {
      op.action = Action::kExecCopy;  // +x must not be set on the shared cache file
    }
    return op;
  }

  // Launchers for the console and GUI entry points.
  Status PlanLaunchers(const std::string& env_python) {
    const fs::path ep_file = fs::path(wheel_.dir) / wheel_.dist_info / "entry_points.txt";
    std::error_code ec;
    if (!fs::exists(ep_file, ec)) return Status::Ok();
    CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(ep_file));
    Result<std::vector<ScriptEntryPoint>> eps = ParseScriptEntryPoints(text);
    if (!eps.ok()) {
      return InvalidArgument(wheel_.dist_info + "/entry_points.txt: " + eps.status().message());
    }
    Result<std::string> shebang = ShebangFor(env_python);
    if (!shebang.ok()) return InvalidArgument(shebang.status().message());
    for (const ScriptEntryPoint& ep : *eps) {
      Op op;
      op.action = Action::kWrite;
      op.dst = fs::path(layout_.scripts()) / ep.name;
      op.content = LauncherText(*shebang, ep);
      op.mode = 0755;
      op.is_script = true;
      ops_.push_back(std::move(op));
    }
    return Status::Ok();
  }

  // The .dist-info files an installer writes (PEP 376, PEP 610).
  void PlanInstallerMetadata() {
    auto metadata = [&](const char* file, std::string content) {
      Op op;
      op.action = Action::kWrite;
      op.dst = dist_info_dst_ / file;
      op.content = std::move(content);
      ops_.push_back(std::move(op));
    };
    metadata("INSTALLER", options_.installer + "\n");
    if (options_.requested) metadata("REQUESTED", "");
    if (!options_.direct_url_json.empty()) metadata("direct_url.json", options_.direct_url_json);
  }

  // Two files of this wheel at one path (a launcher named like a script, say) are refused. A
  // file that exists already is found by the exclusive create of Execute, which then removes
  // what this install wrote.
  Status CheckDistinctDestinations() const {
    std::set<fs::path> seen;
    for (const Op& op : ops_) {
      if (!seen.insert(op.dst.lexically_normal()).second) {
        return InvalidArgument("two of its files would be installed as " + op.dst.string());
      }
    }
    return Status::Ok();
  }

  Result<fs::path> SchemeDir(const std::string& scheme, const std::string& rel) const {
    if (scheme == "purelib") return fs::path(layout_.purelib());
    if (scheme == "platlib") return fs::path(layout_.platlib());
    if (scheme == "scripts") return fs::path(layout_.scripts());
    if (scheme == "data") return fs::path(layout_.data());
    if (scheme == "headers") {
      if (headers_name_.empty()) {
        headers_name_ = DistributionName(fs::path(wheel_.dir) / wheel_.dist_info, name_);
      }
      return fs::path(layout_.headers(headers_name_));
    }
    return InvalidArgument(rel + ": \"" + scheme +
                           "\" is not an install scheme (purelib, platlib, " +
                           "scripts, data, headers)");
  }

  static Result<bool> StartsWithPythonShebang(const fs::path& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return ErrnoStatus("open", path);
    char buf[8];
    size_t got = 0;
    while (got < sizeof buf) {
      ssize_t n = ::read(fd.get(), buf + got, sizeof buf - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoStatus("read", path);
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    return std::string_view(buf, got) == "#!python";
  }

  Status AlreadyInstalled() const {
    return AlreadyExists(wheel_.dist_info + " is already installed in " + root_.string());
  }

  Status Conflict(const fs::path& dst) const {
    std::string owner = OwnerOf(dst, site_, wheel_.dist_info);
    if (owner.empty()) {
      return AlreadyExists("refusing to overwrite " + dst.string() +
                           ", which exists but no installed distribution's RECORD lists (another "
                           "install may be writing it)");
    }
    return AlreadyExists("refusing to overwrite " + dst.string() + ", which belongs to " + owner);
  }

  Status Execute() {
    CAIRN_RETURN_IF_ERROR(MakeSharedDirs(root_));
    // Claiming the .dist-info directory first makes a second install of the same
    // distribution (concurrent or later) fail here rather than half-way.
    if (::mkdir(dist_info_dst_.c_str(), 0755) != 0) {
      if (errno == EEXIST) return AlreadyInstalled();
      return ErrnoStatus("create directory", dist_info_dst_);
    }
    claimed_dist_info_ = true;

    std::set<std::string> made;  // directories known to exist: one check each
    for (const Op& op : ops_) {
      if (made.insert(op.dst.parent_path().string()).second) {
        CAIRN_RETURN_IF_ERROR(MakeSharedDirs(op.dst.parent_path()));
      }
      CAIRN_RETURN_IF_ERROR(Apply(op));
    }

    // RECORD last, written beside and renamed in, so that another install looking for the
    // owner of a file never reads half of it.
    std::vector<RecordEntry> rows = std::move(rows_);
    rows.push_back({(wheel_.dist_info + "/RECORD"), "", -1});
    std::sort(rows.begin(), rows.end(),
              [](const RecordEntry& a, const RecordEntry& b) { return a.path < b.path; });
    fs::path record = dist_info_dst_ / "RECORD";
    fs::path tmp = TempPathFor(record);
    Status s = WriteNewFile(tmp, FormatRecord(rows), 0644);
    if (!s.ok()) return s;
    if (::rename(tmp.c_str(), record.c_str()) != 0) {
      Status r = ErrnoStatus("rename to", record);
      ::unlink(tmp.c_str());
      return r;
    }
    ++report_.files_written;
    return Status::Ok();
  }

  Status Apply(const Op& op) {
    RecordEntry row;
    row.path = op.dst.lexically_relative(site_).generic_string();
    Status s;
    switch (op.action) {
      case Action::kPlace: {
        Result<LinkMode> used = linker_.Place(op.src, op.dst, op.mode);
        if (!used.ok()) {
          if (used.status().code() == StatusCode::kAlreadyExists) return Conflict(op.dst);
          return used.status();
        }
        created_.push_back(op.dst);
        if (*used == LinkMode::kCopy) {
          ++report_.files_copied;
        } else {
          ++report_.files_linked;
        }
        if (!took_from_cache_ || Rank(*used) < Rank(report_.used)) report_.used = *used;
        took_from_cache_ = true;
        if (!op.record_hash.empty() && op.record_size >= 0) {
          row.hash = op.record_hash;
          row.size = op.record_size;
        } else {
          CAIRN_ASSIGN_OR_RETURN(row.hash, RecordHashOfFile(op.dst, &row.size));
        }
        break;
      }
      case Action::kExecCopy: {
        Linker copier(LinkMode::kCopy);
        Result<LinkMode> used = copier.Place(op.src, op.dst, op.mode);
        if (!used.ok()) {
          if (used.status().code() == StatusCode::kAlreadyExists) return Conflict(op.dst);
          return used.status();
        }
        created_.push_back(op.dst);
        ++report_.files_copied;
        CAIRN_ASSIGN_OR_RETURN(row.hash, RecordHashOfFile(op.dst, &row.size));
        break;
      }
      case Action::kRewriteScript:
      case Action::kWrite: {
        s = WriteNewFile(op.dst, op.content, op.mode);
        if (!s.ok()) {
          if (s.code() == StatusCode::kAlreadyExists) return Conflict(op.dst);
          return s;
        }
        created_.push_back(op.dst);
        ++report_.files_written;
        if (op.is_script) ++report_.scripts_written;
        row.hash = RecordSha256(op.content);
        row.size = static_cast<int64_t>(op.content.size());
        break;
      }
    }
    rows_.push_back(std::move(row));
    return Status::Ok();
  }

  void Rollback() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::unlink(it->c_str());
    if (claimed_dist_info_) {
      std::error_code ec;
      fs::remove_all(dist_info_dst_, ec);
    }
  }

  const VenvLayout& layout_;
  const InstallOptions& options_;
  Linker linker_;
  UnpackedWheel wheel_;
  std::string name_;  // "demo-1.0"
  mutable std::string headers_name_;
  fs::path site_;           // purelib: RECORD paths are relative to it
  fs::path root_;           // where the archive root goes
  fs::path dist_info_dst_;  // root_/<dist-info>
  std::map<std::string, std::pair<std::string, int64_t>> record_;  // sha256 rows of the wheel
  std::vector<Op> ops_;
  std::vector<RecordEntry> rows_;
  std::vector<fs::path> created_;
  bool claimed_dist_info_ = false;
  bool took_from_cache_ = false;
  InstallReport report_;
};

}  // namespace

std::string_view LinkModeName(LinkMode mode) {
  switch (mode) {
    case LinkMode::kAuto:
      return "auto";
    case LinkMode::kReflink:
      return "reflink";
    case LinkMode::kHardlink:
      return "hardlink";
    case LinkMode::kCopy:
      return "copy";
  }
  return "unknown";
}

Result<InstallReport> InstallWheel(const std::string& unpacked_dir, const VenvLayout& layout,
                                   const InstallOptions& options) {
  Installer installer(layout, options);
  return installer.Run(unpacked_dir);
}

Result<std::string> ShebangFor(const std::string& python, std::string_view args) {
  if (python.find_first_of("\n\r") != std::string::npos ||
      args.find_first_of("\n\r") != std::string_view::npos) {
    return InvalidArgument("interpreter path or arguments contain a line break: " + python);
  }
  std::string line = "#!" + python + std::string(args);
  // The kernel reads at most 127 bytes of a shebang (BINPRM_BUF_SIZE 128, newline included)
  // and splits at the first space, so such paths need the trampoline.
  if (python.find_first_of(" \t") == std::string::npos && line.size() + 1 <= 127) {
    return line + "\n";
  }
  if (python.find('\\') != std::string::npos) {
    return InvalidArgument("interpreter path " + python +
                           " needs a /bin/sh trampoline but holds a backslash");
  }
  // sh reads line 2 as `exec '<python>' <args> "$0" "$@"` (the leading '' is an empty word
  // glued to 'exec'); Python reads lines 2-3 as one triple-quoted string and carries on with
  // the script. The path is quoted with '"'"' for embedded quotes, which never forms the '''
  // that would end Python's string early.
  std::string quoted = "'";
  for (char c : python) {
    if (c == '\'') {
      quoted += "'\"'\"'";
    } else {
      quoted.push_back(c);
    }
  }
  quoted += "'";
  return "#!/bin/sh\n'''exec' " + quoted + std::string(args) + " \"$0\" \"$@\"\n' '''\n";
}

Result<std::vector<ScriptEntryPoint>> ParseScriptEntryPoints(std::string_view text) {
  std::vector<ScriptEntryPoint> out;
  std::set<std::pair<std::string, std::string>> seen;  // (section, name)
  std::string section;
  size_t pos = 0;
  size_t line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view raw = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    std::string where = "line " + std::to_string(line_no);
    std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      if (line.back() != ']') return InvalidArgument(where + ": malformed section header");
      section = std::string(Trim(line.substr(1, line.size() - 2)));
      continue;
    }
    bool scripts = section == "console_scripts" || section == "gui_scripts";
    if (!scripts) continue;
    if (raw[0] == ' ' || raw[0] == '\t') {
      return InvalidArgument(where + ": unexpected continuation line in [" + section + "]");
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return InvalidArgument(where + ": expected name = value");
    ScriptEntryPoint ep;
    ep.gui = section == "gui_scripts";
    ep.name = std::string(Trim(line.substr(0, eq)));
    std::string_view value = Trim(line.substr(eq + 1));
    if (ep.name.empty() || ep.name == "." || ep.name == ".." ||
        ep.name.find_first_of(std::string_view("/\\\0", 3)) != std::string::npos ||
        ep.name[0] == '[') {
      return InvalidArgument(where + ": \"" + ep.name + "\" cannot name a script");
    }
    if (!seen.emplace(section, ep.name).second) {
      return InvalidArgument(where + ": " + ep.name + " is defined twice in [" + section + "]");
    }
    size_t bracket = value.find('[');
    if (bracket != std::string_view::npos) {
      if (value.back() != ']') return InvalidArgument(where + ": malformed extras");
      value = Trim(value.substr(0, bracket));
    }
    size_t colon = value.find(':');
    if (colon == std::string_view::npos) {
      return InvalidArgument(where + ": " + ep.name + " = " + std::string(value) +
                             " names no function (expected module:attr)");
    }
    ep.module = std::string(Trim(value.substr(0, colon)));
    ep.attr = std::string(Trim(value.substr(colon + 1)));
    if (!IsDottedName(ep.module) || !IsDottedName(ep.attr)) {
      return InvalidArgument(where + ": \"" + std::string(value) +
                             "\" is not a module:attr reference");
    }
    out.push_back(std::move(ep));
  }
  return out;
}

}  // namespace cairn::env
