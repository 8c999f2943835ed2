#include "env/install/wheel_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <type_traits>
#include <utility>

#include "util/dynamic_library.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/strings.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

// Members read into memory (RECORD, WHEEL, METADATA, or whatever ReadWheelMember is asked for)
// are bounded so that a hostile archive cannot exhaust memory.
constexpr int64_t kMaxMemberInMemory = 64 << 20;

constexpr std::string_view kDistInfoSuffix = ".dist-info";

// "demo-1.0" for "demo-1.0.dist-info".
std::string DistInfoStem(std::string_view dist_info) {
  return std::string(dist_info.substr(0, dist_info.size() - kDistInfoSuffix.size()));
}

// ---------------------------------------------------------------------------------------------
// Digests named in RECORD.

std::string UrlsafeB64NoPad(std::string_view raw) {
  std::string b64 = Base64Encode(raw);
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  for (char& c : b64) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return b64;
}

// The digest a RECORD hash names. The spec asks for sha256 or stronger; md5, sha1 and sha224
// are refused by name so the message can say why.
Result<const EVP_MD*> DigestFor(std::string_view algorithm) {
  std::string a = AsciiLower(algorithm);
  if (a == "sha256") return EVP_sha256();
  if (a == "sha384") return EVP_sha384();
  if (a == "sha512") return EVP_sha512();
  if (a == "sha3_256") return EVP_sha3_256();
  if (a == "sha3_384") return EVP_sha3_384();
  if (a == "sha3_512") return EVP_sha3_512();
  if (a == "blake2b") return EVP_blake2b512();
  if (a == "md5" || a == "sha1" || a == "sha224" || a == "sha3_224") {
    return InvalidArgument("hash algorithm " + std::string(algorithm) + " is weaker than sha256");
  }
  return InvalidArgument("unsupported hash algorithm \"" + std::string(algorithm) + "\"");
}

class Digester {
 public:
  explicit Digester(const EVP_MD* md) : ctx_(EVP_MD_CTX_new()) {
    CAIRN_CHECK(ctx_ != nullptr);
    CAIRN_CHECK(EVP_DigestInit_ex(ctx_, md, nullptr) == 1);
  }
  ~Digester() { EVP_MD_CTX_free(ctx_); }
  Digester(const Digester&) = delete;
  Digester& operator=(const Digester&) = delete;

  void Update(const void* data, size_t n) { CAIRN_CHECK(EVP_DigestUpdate(ctx_, data, n) == 1); }
  std::string Raw() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    CAIRN_CHECK(EVP_DigestFinal_ex(ctx_, out, &len) == 1);
    return std::string(reinterpret_cast<const char*>(out), len);
  }

 private:
  EVP_MD_CTX* ctx_;
};

// A RECORD hash split into its parts: ("sha256", "<b64>") with any '=' padding dropped.
struct ParsedHash {
  std::string algorithm;
  std::string value;
};

Result<ParsedHash> SplitHash(std::string_view hash) {
  size_t eq = hash.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 >= hash.size()) {
    return InvalidArgument("malformed hash \"" + std::string(hash) + "\"");
  }
  ParsedHash p{std::string(hash.substr(0, eq)), std::string(hash.substr(eq + 1))};
  while (!p.value.empty() && p.value.back() == '=') p.value.pop_back();
  return p;
}

// ---------------------------------------------------------------------------------------------
// libarchive.

// libarchive is loaded when a wheel is first read, not when cairn starts: it brings a dozen
// libraries with it (libxml2, ICU, compressors) that `cairn run` and the server never use.
struct ArchiveApi {
  decltype(&::archive_read_free) read_free = nullptr;
  decltype(&::archive_error_string) error_string = nullptr;
  decltype(&::archive_read_new) read_new = nullptr;
  decltype(&::archive_read_support_format_zip_seekable) read_support_format_zip_seekable = nullptr;
  decltype(&::archive_read_set_options) read_set_options = nullptr;
  decltype(&::archive_read_open_filename) read_open_filename = nullptr;
  decltype(&::archive_read_next_header) read_next_header = nullptr;
  decltype(&::archive_entry_pathname_utf8) entry_pathname_utf8 = nullptr;
  decltype(&::archive_entry_pathname) entry_pathname = nullptr;
  decltype(&::archive_entry_hardlink) entry_hardlink = nullptr;
  decltype(&::archive_entry_filetype) entry_filetype = nullptr;
  decltype(&::archive_read_data) read_data = nullptr;
  decltype(&::archive_entry_perm) entry_perm = nullptr;
  std::string error;  // why it could not be loaded; empty when it was
};

const ArchiveApi& Api() {
  static const ArchiveApi api = [] {
    ArchiveApi a;
    DynamicLibrary lib =
        DynamicLibrary::Open({"libarchive.so.13", "libarchive.so"}, "libarchive");
    lib.Load(&a.read_free, "archive_read_free");
    lib.Load(&a.error_string, "archive_error_string");
    lib.Load(&a.read_new, "archive_read_new");
    lib.Load(&a.read_support_format_zip_seekable, "archive_read_support_format_zip_seekable");
    lib.Load(&a.read_set_options, "archive_read_set_options");
    lib.Load(&a.read_open_filename, "archive_read_open_filename");
    lib.Load(&a.read_next_header, "archive_read_next_header");
    lib.Load(&a.entry_pathname_utf8, "archive_entry_pathname_utf8");
    lib.Load(&a.entry_pathname, "archive_entry_pathname");
    lib.Load(&a.entry_hardlink, "archive_entry_hardlink");
    lib.Load(&a.entry_filetype, "archive_entry_filetype");
    lib.Load(&a.read_data, "archive_read_data");
    lib.Load(&a.entry_perm, "archive_entry_perm");
    a.error = lib.error();
    return a;
  }();
  return api;
}

struct ArchiveFree {
  void operator()(archive* a) const { Api().read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveFree>;

std::string ArchiveError(archive* a) {
  const char* e = Api().error_string(a);
  return e != nullptr ? e : "unknown libarchive error";
}

Result<ArchivePtr> OpenWheel(const std::string& wheel_path) {
  struct stat st;
  if (::stat(wheel_path.c_str(), &st) != 0) return ErrnoStatus("open wheel", wheel_path);
  if (!S_ISREG(st.st_mode)) return InvalidArgument("wheel " + wheel_path + " is not a file");
  if (!Api().error.empty()) return Unavailable(Api().error);
  ArchivePtr a(Api().read_new());
  if (a == nullptr) return Internal("archive_read_new failed");
  // The seekable reader starts from the central directory, the archive's authoritative index.
  Api().read_support_format_zip_seekable(a.get());
  // Wheel member names are UTF-8 whether or not the entry carries the UTF-8 flag.
  Api().read_set_options(a.get(), "zip:hdrcharset=UTF-8");
  if (Api().read_open_filename(a.get(), wheel_path.c_str(), 1 << 16) != ARCHIVE_OK) {
    return InvalidArgument("wheel " + wheel_path +
                           " is not a readable ZIP archive: " + ArchiveError(a.get()));
  }
  return a;
}

// Advances to the next member. Returns false at the end of the archive.
Result<bool> NextEntry(archive* a, archive_entry** entry, const std::string& wheel_path) {
  int rc = Api().read_next_header(a, entry);
  if (rc == ARCHIVE_EOF) return false;
  if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
    return InvalidArgument("wheel " + wheel_path +
                           ": reading the archive index: " + ArchiveError(a));
  }
  return true;
}

Result<std::string> EntryName(archive_entry* entry, const std::string& wheel_path) {
  const char* name = Api().entry_pathname_utf8(entry);
  if (name == nullptr) name = Api().entry_pathname(entry);
  if (name == nullptr) return InvalidArgument("wheel " + wheel_path + ": a member has no name");
  return std::string(name);
}

enum class EntryKind { kFile, kDirectory };

// Files and directories only: a symlink or hard link could point out of the unpack directory,
// and devices, FIFOs and sockets have no place in a wheel.
Result<EntryKind> KindOf(archive_entry* entry, const std::string& wheel_path,
                         const std::string& name) {
  auto refuse = [&](std::string_view what) -> Status {
    return InvalidArgument("wheel " + wheel_path + ": member " + name + " is " + std::string(what) +
                           "; only files and directories are allowed");
  };
  if (Api().entry_hardlink(entry) != nullptr) return refuse("a hard link");
  switch (Api().entry_filetype(entry)) {
    case AE_IFREG:
      return name.ends_with('/') ? EntryKind::kDirectory : EntryKind::kFile;
    case AE_IFDIR:
      return EntryKind::kDirectory;
    case AE_IFLNK:
      return refuse("a symbolic link");
    case AE_IFCHR:
    case AE_IFBLK:
      return refuse("a device");
    case AE_IFIFO:
      return refuse("a FIFO");
    case AE_IFSOCK:
      return refuse("a socket");
    default:
      return refuse("of an unknown type");
  }
}

Result<std::string> ReadEntryData(archive* a, const std::string& wheel_path,
                                  const std::string& name) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    la_ssize_t n = Api().read_data(a, buf, sizeof buf);
    if (n < 0) {
      return InvalidArgument("wheel " + wheel_path + ": member " + name +
                             " cannot be read: " + ArchiveError(a));
    }
    if (n == 0) break;
    if (static_cast<int64_t>(out.size()) + n > kMaxMemberInMemory) {
      return ResourceExhausted("wheel " + wheel_path + ": member " + name + " exceeds " +
                               std::to_string(kMaxMemberInMemory >> 20) + " MiB");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// "demo-1.0.dist-info" for "demo-1.0.dist-info/..." and for "demo-1.0.dist-info" itself;
// empty when the first component does not end in ".dist-info".
std::string TopLevelDistInfo(std::string_view path) {
  std::string_view first = path.substr(0, path.find('/'));
  if (first.size() > kDistInfoSuffix.size() && first.ends_with(kDistInfoSuffix)) {
    return std::string(first);
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// WHEEL.

struct WheelFile {
  std::string version;
  int major = 0;
  int minor = 0;
  bool root_is_purelib = false;
};

bool ParseInt(std::string_view s, int* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// WHEEL is in email-header form ("Key: value" lines).
Result<WheelFile> ParseWheelFile(std::string_view text) {
  WheelFile w;
  bool have_version = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string key = AsciiLower(Trim(line.substr(0, colon)));
    std::string_view value = Trim(line.substr(colon + 1));
    if (key == "wheel-version" && !have_version) {
      have_version = true;
      w.version = std::string(value);
      size_t dot = value.find('.');
      if (dot == std::string_view::npos || !ParseInt(value.substr(0, dot), &w.major) ||
          !ParseInt(value.substr(dot + 1), &w.minor)) {
        return InvalidArgument("malformed Wheel-Version \"" + w.version + "\"");
      }
    } else if (key == "root-is-purelib") {
      w.root_is_purelib = AsciiLower(value) == "true";
    }
  }
  if (!have_version) return InvalidArgument("WHEEL has no Wheel-Version");
  return w;
}

// Applies the spec's compatibility rule to a parsed WHEEL.
Status CheckWheelVersion(const WheelFile& w, std::vector<std::string>* warnings) {
  if (w.major > kWheelVersionMajor) {
    return InvalidArgument("Wheel-Version " + w.version + " is not supported (this installer " +
                           "reads " + std::to_string(kWheelVersionMajor) + ".x)");
  }
  if (w.major == kWheelVersionMajor && w.minor > kWheelVersionMinor) {
    warnings->push_back("Wheel-Version " + w.version + " is newer than " +
                        std::to_string(kWheelVersionMajor) + "." +
                        std::to_string(kWheelVersionMinor) + "; installing it as a 1.0 wheel");
  }
  return Status::Ok();
}

// RECORD and its signatures are the only files RECORD need not list (nor hash).
bool IsRecordOrSignature(std::string_view path, std::string_view dist_info) {
  if (!path.starts_with(dist_info) || path.size() <= dist_info.size() ||
      path[dist_info.size()] != '/') {
    return false;
  }
  std::string_view base = path.substr(dist_info.size() + 1);
  return base == "RECORD" || base == "RECORD.jws" || base == "RECORD.p7s";
}

// ---------------------------------------------------------------------------------------------
// Pass 1: the archive's index, with RECORD and WHEEL read into memory.

struct ArchiveIndex {
  std::set<std::string> files;
  std::set<std::string> dirs;
  std::set<std::string> dist_infos;
  std::map<std::string, std::string> records;  // dist-info -> RECORD text
  std::map<std::string, std::string> wheels;   // dist-info -> WHEEL text
};

Result<ArchiveIndex> IndexWheel(const std::string& wheel_path) {
  CAIRN_ASSIGN_OR_RETURN(ArchivePtr a, OpenWheel(wheel_path));
  ArchiveIndex index;
  archive_entry* entry = nullptr;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(bool more, NextEntry(a.get(), &entry, wheel_path));
    if (!more) break;
    CAIRN_ASSIGN_OR_RETURN(std::string raw, EntryName(entry, wheel_path));
    CAIRN_ASSIGN_OR_RETURN(EntryKind kind, KindOf(entry, wheel_path, raw));
    std::string name = raw;
    while (kind == EntryKind::kDirectory && name.ends_with('/')) name.pop_back();
    if (!IsSafeRelativePath(name)) {
      return InvalidArgument("wheel " + wheel_path + ": unsafe member name \"" + raw + "\"");
    }
    std::string dist_info = TopLevelDistInfo(name);
    if (kind == EntryKind::kDirectory) {
      if (index.files.count(name) != 0) {
        return InvalidArgument("wheel " + wheel_path + ": " + name +
                               " is both a file and a directory");
      }
      index.dirs.insert(name);
      if (!dist_info.empty()) index.dist_infos.insert(dist_info);
      continue;
    }
    if (!index.files.insert(name).second) {
      return InvalidArgument("wheel " + wheel_path + ": duplicate member " + name);
    }
    if (index.dirs.count(name) != 0) {
      return InvalidArgument("wheel " + wheel_path + ": " + name +
                             " is both a file and a directory");
    }
    if (dist_info.empty()) continue;
    index.dist_infos.insert(dist_info);
    if (name == dist_info + "/RECORD" || name == dist_info + "/WHEEL") {
      CAIRN_ASSIGN_OR_RETURN(std::string text, ReadEntryData(a.get(), wheel_path, name));
      (name.ends_with("/RECORD") ? index.records : index.wheels)[dist_info] = std::move(text);
    }
  }
  return index;
}

Result<std::string> SingleDistInfo(const std::set<std::string>& dist_infos,
                                   const std::string& where) {
  if (dist_infos.empty()) return NotFound(where + " has no .dist-info directory");
  if (dist_infos.size() > 1) {
    std::string names;
    for (const std::string& d : dist_infos) names += (names.empty() ? "" : ", ") + d;
    return InvalidArgument(where + " has several .dist-info directories: " + names);
  }
  return *dist_infos.begin();
}

// ---------------------------------------------------------------------------------------------
// Pass 2: extraction with verification against RECORD.

// What a file must turn out to be; unchecked for RECORD and its signatures.
struct Expected {
  const EVP_MD* md = nullptr;
  std::string value;  // urlsafe base64 without padding
  int64_t size = -1;
};

Status ExtractFile(archive* a, archive_entry* entry, const std::string& wheel_path,
                   const std::string& name, const fs::path& target, const Expected* expected,
                   uint64_t* bytes) {
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    return InvalidArgument("wheel " + wheel_path + ": cannot create the directory of " + name +
                           ": " + ec.message());
  }
  mode_t mode = (Api().entry_perm(entry) & 0111) != 0 ? 0755 : 0644;
  int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus("create", target);
  std::unique_ptr<Digester> digester;
  if (expected != nullptr) digester = std::make_unique<Digester>(expected->md);
  int64_t size = 0;
  char buf[1 << 16];
  Status status;
  for (;;) {
    la_ssize_t n = Api().read_data(a, buf, sizeof buf);
    if (n < 0) {
      status = InvalidArgument("wheel " + wheel_path + ": member " + name +
                               " cannot be read: " + ArchiveError(a));
      break;
    }
    if (n == 0) break;
    size += n;
    // Stop as soon as the member outgrows what RECORD promises (a decompression bomb would
    // otherwise fill the disk before the size check at the end).
    if (expected != nullptr && expected->size >= 0 && size > expected->size) {
      status = InvalidArgument("wheel " + wheel_path + ": member " + name + " is larger than the " +
                               std::to_string(expected->size) + " bytes RECORD gives");
      break;
    }
    if (digester) digester->Update(buf, static_cast<size_t>(n));
    status = WriteAll(fd, std::string_view(buf, static_cast<size_t>(n)), target);
    if (!status.ok()) break;
  }
  ::close(fd);
  if (!status.ok()) return status;
  *bytes += static_cast<uint64_t>(size);
  if (expected == nullptr) return Status::Ok();
  if (expected->size >= 0 && size != expected->size) {
    return InvalidArgument("wheel " + wheel_path + ": member " + name + " has " +
                           std::to_string(size) + " bytes but RECORD gives " +
                           std::to_string(expected->size));
  }
  if (UrlsafeB64NoPad(digester->Raw()) != expected->value) {
    return InvalidArgument("wheel " + wheel_path + ": member " + name +
                           " does not match its digest in RECORD");
  }
  return Status::Ok();
}

// Removes a temporary unpack directory unless released.
class TempDirGuard {
 public:
  explicit TempDirGuard(fs::path path) : path_(std::move(path)) {}
  ~TempDirGuard() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  void Release() { path_.clear(); }

 private:
  fs::path path_;
};

Status CountFiles(const fs::path& dir, size_t* count, uint64_t* bytes) {
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(st)) continue;
    if (!fs::is_regular_file(st)) {
      return InvalidArgument("unpacked wheel " + dir.string() + " holds " + it->path().string() +
                             ", which is not a regular file");
    }
    ++*count;
    *bytes += static_cast<uint64_t>(it->file_size(ec));
    if (ec) break;
  }
  if (ec) return Unavailable("listing " + dir.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

bool IsSafeRelativePath(std::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  if (path.find('\\') != std::string_view::npos || path.find('\0') != std::string_view::npos) {
    return false;
  }
  size_t pos = 0;
  for (;;) {
    size_t slash = path.find('/', pos);
    std::string_view part =
        path.substr(pos, slash == std::string_view::npos ? path.npos : slash - pos);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) return true;
    pos = slash + 1;
  }
}

std::string RecordSha256(std::string_view bytes) {
  Digester d(EVP_sha256());
  d.Update(bytes.data(), bytes.size());
  return "sha256=" + UrlsafeB64NoPad(d.Raw());
}

std::string RecordSha256FromHex(std::string_view hex) {
  std::string raw;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
    raw.push_back(static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  }
  return "sha256=" + UrlsafeB64NoPad(raw);
}

Result<std::vector<RecordEntry>> ParseRecord(std::string_view text) {
  // A small CSV reader (RFC 4180 with Python csv's defaults): ',' separates, '"' quotes, '""'
  // inside quotes is one quote, and a quoted field may span lines.
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> row_lines;
  std::vector<std::string> row;
  std::string field;
  bool in_quotes = false;
  bool field_started = false;
  size_t line = 1;
  size_t row_line = 1;
  auto end_row = [&] {
    if (field_started || !row.empty()) {
      row.push_back(std::move(field));
      rows.push_back(std::move(row));
      row_lines.push_back(row_line);
    }
    row.clear();
    field.clear();
    field_started = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field.push_back('"');
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field.push_back(c);
      }
      continue;
    }
    if (c == '"' && field.empty()) {
      in_quotes = true;
      field_started = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      field_started = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_row();
      ++line;
      row_line = line;
    } else {
      field.push_back(c);
      field_started = true;
    }
  }
  if (in_quotes)
    return InvalidArgument("RECORD line " + std::to_string(row_line) +
                           ": unterminated quoted field");
  end_row();

  std::vector<RecordEntry> entries;
  std::set<std::string> seen;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string where = "RECORD line " + std::to_string(row_lines[r]);
    const std::vector<std::string>& f = rows[r];
    if (f.size() != 3) {
      return InvalidArgument(where + ": expected 3 fields (path, hash, size), found " +
                             std::to_string(f.size()));
    }
    RecordEntry e;
    e.path = f[0];
    e.hash = f[1];
    if (e.path.empty()) return InvalidArgument(where + ": empty path");
    if (!f[2].empty()) {
      auto [p, ec] = std::from_chars(f[2].data(), f[2].data() + f[2].size(), e.size);
      if (ec != std::errc() || p != f[2].data() + f[2].size() || e.size < 0) {
        return InvalidArgument(where + ": bad size \"" + f[2] + "\"");
      }
    }
    if (!seen.insert(e.path).second) {
      return InvalidArgument(where + ": " + e.path + " is listed twice");
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

std::string FormatRecord(const std::vector<RecordEntry>& entries) {
  auto field = [](std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
    std::string q = "\"";
    for (char c : s) {
      if (c == '"') q.push_back('"');
      q.push_back(c);
    }
    q.push_back('"');
    return q;
  };
  std::string out;
  for (const RecordEntry& e : entries) {
    out += field(e.path);
    out += ',';
    out += field(e.hash);
    out += ',';
    if (e.size >= 0) out += std::to_string(e.size);
    out += '\n';
  }
  return out;
}

Result<std::string> ReadWheelMember(const std::string& wheel_path, std::string_view member) {
  CAIRN_ASSIGN_OR_RETURN(ArchivePtr a, OpenWheel(wheel_path));
  std::optional<std::string> found;
  archive_entry* entry = nullptr;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(bool more, NextEntry(a.get(), &entry, wheel_path));
    if (!more) break;
    CAIRN_ASSIGN_OR_RETURN(std::string name, EntryName(entry, wheel_path));
    if (name != member) continue;
    if (found.has_value()) {
      return InvalidArgument("wheel " + wheel_path + ": duplicate member " + name);
    }
    CAIRN_ASSIGN_OR_RETURN(EntryKind kind, KindOf(entry, wheel_path, name));
    if (kind != EntryKind::kFile) {
      return InvalidArgument("wheel " + wheel_path + ": member " + name + " is not a file");
    }
    CAIRN_ASSIGN_OR_RETURN(found, ReadEntryData(a.get(), wheel_path, name));
  }
  if (!found.has_value()) {
    return NotFound("wheel " + wheel_path + " has no member " + std::string(member));
  }
  return std::move(*found);
}

Result<std::string> ReadWheelMetadata(const std::string& wheel_path) {
  CAIRN_ASSIGN_OR_RETURN(ArchivePtr a, OpenWheel(wheel_path));
  std::set<std::string> dist_infos;
  std::map<std::string, std::string> metadata;
  archive_entry* entry = nullptr;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(bool more, NextEntry(a.get(), &entry, wheel_path));
    if (!more) break;
    CAIRN_ASSIGN_OR_RETURN(std::string name, EntryName(entry, wheel_path));
    std::string dist_info = TopLevelDistInfo(name);
    if (dist_info.empty()) continue;
    dist_infos.insert(dist_info);
    if (name != dist_info + "/METADATA") continue;
    if (metadata.count(dist_info) != 0) {
      return InvalidArgument("wheel " + wheel_path + ": duplicate member " + name);
    }
    CAIRN_ASSIGN_OR_RETURN(EntryKind kind, KindOf(entry, wheel_path, name));
    if (kind != EntryKind::kFile) {
      return InvalidArgument("wheel " + wheel_path + ": member " + name + " is not a file");
    }
    CAIRN_ASSIGN_OR_RETURN(metadata[dist_info], ReadEntryData(a.get(), wheel_path, name));
  }
  CAIRN_ASSIGN_OR_RETURN(std::string dist_info, SingleDistInfo(dist_infos, "wheel " + wheel_path));
  auto it = metadata.find(dist_info);
  if (it == metadata.end()) {
    return NotFound("wheel " + wheel_path + " has no " + dist_info + "/METADATA");
  }
  return std::move(it->second);
}

Result<UnpackedWheel> LoadUnpackedWheel(const std::string& dir) {
  std::set<std::string> dist_infos;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!TopLevelDistInfo(name).empty() && it->is_directory(ec)) dist_infos.insert(name);
  }
  if (ec) return Unavailable("listing unpacked wheel " + dir + ": " + ec.message());
  std::string where = "unpacked wheel " + dir;
  Result<std::string> single = SingleDistInfo(dist_infos, where);
  if (!single.ok()) return InvalidArgument(single.status().message());
  UnpackedWheel w;
  w.dir = dir;
  w.dist_info = *single;
  w.data_dir = DistInfoStem(w.dist_info) + ".data";
  w.has_data_dir = fs::is_directory(fs::path(dir) / w.data_dir, ec);

  CAIRN_ASSIGN_OR_RETURN(std::string wheel_text, ReadFile(fs::path(dir) / w.dist_info / "WHEEL"));
  Result<WheelFile> wheel = ParseWheelFile(wheel_text);
  if (!wheel.ok()) return wheel.status().WithContext(where + ": " + w.dist_info + "/WHEEL");
  Status version = CheckWheelVersion(*wheel, &w.warnings);
  if (!version.ok()) return version.WithContext(where);
  w.wheel_version = wheel->version;
  w.root_is_purelib = wheel->root_is_purelib;

  CAIRN_ASSIGN_OR_RETURN(std::string record_text, ReadFile(fs::path(dir) / w.dist_info / "RECORD"));
  Result<std::vector<RecordEntry>> record = ParseRecord(record_text);
  if (!record.ok()) return record.status().WithContext(where + ": " + w.dist_info);
  w.record = std::move(record).value();
  CAIRN_RETURN_IF_ERROR(CountFiles(dir, &w.file_count, &w.bytes));
  return w;
}

namespace {

// Pass 1 on the index: the wheel's single .dist-info, its WHEEL (a version this installer
// reads) and its RECORD. `where` names the wheel in messages.
Result<UnpackedWheel> DescribeIndexed(ArchiveIndex& index, const std::string& where) {
  Result<std::string> single = SingleDistInfo(index.dist_infos, where);
  if (!single.ok()) return InvalidArgument(single.status().message());
  UnpackedWheel out;
  out.dist_info = *single;
  out.data_dir = DistInfoStem(out.dist_info) + ".data";
  for (const std::string& f : index.files) {
    if (f.starts_with(out.data_dir + "/")) out.has_data_dir = true;
  }
  if (index.wheels.count(out.dist_info) == 0) {
    return InvalidArgument(where + " has no " + out.dist_info + "/WHEEL");
  }
  if (index.records.count(out.dist_info) == 0) {
    return InvalidArgument(where + " has no " + out.dist_info + "/RECORD");
  }
  Result<WheelFile> wheel = ParseWheelFile(index.wheels[out.dist_info]);
  if (!wheel.ok()) return wheel.status().WithContext(where + ": " + out.dist_info + "/WHEEL");
  CAIRN_RETURN_IF_ERROR(CheckWheelVersion(*wheel, &out.warnings).WithContext(where));
  out.wheel_version = wheel->version;
  out.root_is_purelib = wheel->root_is_purelib;

  Result<std::vector<RecordEntry>> record = ParseRecord(index.records[out.dist_info]);
  if (!record.ok()) return record.status().WithContext(where + ": " + out.dist_info);
  out.record = std::move(record).value();
  return out;
}

// Pass 1 against RECORD: what each member must turn out to be. RECORD and the archive must list
// the same files (RECORD itself and its signatures apart), each with a hash.
Result<std::map<std::string, Expected>> ExpectedFiles(const UnpackedWheel& wheel,
                                                      const ArchiveIndex& index,
                                                      const std::string& where) {
  std::map<std::string, Expected> expected;
  for (const RecordEntry& e : wheel.record) {
    if (!IsSafeRelativePath(e.path)) {
      return InvalidArgument(where + ": RECORD lists unsafe path \"" + e.path + "\"");
    }
    if (IsRecordOrSignature(e.path, wheel.dist_info)) continue;
    if (index.files.count(e.path) == 0) {
      return InvalidArgument(where + ": RECORD lists " + e.path + ", which the wheel lacks");
    }
    if (e.hash.empty()) {
      return InvalidArgument(where + ": RECORD gives no hash for " + e.path);
    }
    Result<ParsedHash> h = SplitHash(e.hash);
    if (!h.ok()) return h.status().WithContext(where + ": RECORD row for " + e.path);
    Result<const EVP_MD*> md = DigestFor(h->algorithm);
    if (!md.ok()) return md.status().WithContext(where + ": RECORD row for " + e.path);
    expected[e.path] = Expected{*md, h->value, e.size};
  }
  for (const std::string& f : index.files) {
    if (expected.count(f) == 0 && !IsRecordOrSignature(f, wheel.dist_info)) {
      return InvalidArgument(where + ": member " + f + " is not listed in RECORD");
    }
  }
  return expected;
}

// Pass 2: extracts every member into `tmp`, verifying each file as it streams. An archive that
// no longer matches its pass-1 index changed underneath and is Unavailable.
Status ExtractVerified(const std::string& wheel_path, const ArchiveIndex& index,
                       const std::map<std::string, Expected>& expected, const fs::path& tmp,
                       UnpackedWheel* out) {
  const std::string where = "wheel " + wheel_path;
  CAIRN_ASSIGN_OR_RETURN(ArchivePtr a, OpenWheel(wheel_path));
  archive_entry* entry = nullptr;
  size_t extracted = 0;
  std::error_code ec;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(bool more, NextEntry(a.get(), &entry, wheel_path));
    if (!more) break;
    CAIRN_ASSIGN_OR_RETURN(std::string name, EntryName(entry, wheel_path));
    CAIRN_ASSIGN_OR_RETURN(EntryKind kind, KindOf(entry, wheel_path, name));
    if (kind == EntryKind::kDirectory) {
      while (name.ends_with('/')) name.pop_back();
      if (index.dirs.count(name) == 0) {
        return Unavailable(where + " changed while it was being unpacked");
      }
      fs::create_directories(tmp / name, ec);
      if (ec) {
        return InvalidArgument(where + ": cannot create directory " + name + ": " + ec.message());
      }
      continue;
    }
    if (index.files.count(name) == 0) {
      return Unavailable(where + " changed while it was being unpacked");
    }
    auto it = expected.find(name);
    CAIRN_RETURN_IF_ERROR(ExtractFile(a.get(), entry, wheel_path, name, tmp / name,
                                      it == expected.end() ? nullptr : &it->second, &out->bytes));
    ++extracted;
  }
  if (extracted != index.files.size()) {
    return Unavailable(where + " changed while it was being unpacked");
  }
  out->file_count = extracted;
  return Status::Ok();
}

}  // namespace

Result<UnpackedWheel> UnpackWheel(const std::string& wheel_path, const std::string& dest_dir) {
  fs::path dest(dest_dir);
  std::error_code ec;
  if (fs::symlink_status(dest, ec).type() != fs::file_type::not_found) {
    return AlreadyExists("cannot unpack wheel " + wheel_path + ": " + dest_dir + " already exists");
  }

  // Pass 1: names, types, RECORD and WHEEL, all checked before anything is written.
  CAIRN_ASSIGN_OR_RETURN(ArchiveIndex index, IndexWheel(wheel_path));
  const std::string where = "wheel " + wheel_path;
  CAIRN_ASSIGN_OR_RETURN(UnpackedWheel out, DescribeIndexed(index, where));
  CAIRN_ASSIGN_OR_RETURN(auto expected, ExpectedFiles(out, index, where));

  // Pass 2: extract into a private directory, verifying every file as it streams.
  fs::path tmp = TempPathFor(dest);
  if (::mkdir(tmp.c_str(), 0755) != 0) return ErrnoStatus("create directory", tmp);
  TempDirGuard guard(tmp);
  CAIRN_RETURN_IF_ERROR(ExtractVerified(wheel_path, index, expected, tmp, &out));

  // One syncfs instead of an fsync per file: wheels such as torch hold tens of thousands of
  // files, and the directory must be durable before the rename publishes it.
  int dfd = ::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return ErrnoStatus("open", tmp);
  int rc = ::syncfs(dfd);
  ::close(dfd);
  if (rc != 0) return ErrnoStatus("syncfs", tmp);

  if (::rename(tmp.c_str(), dest.c_str()) != 0) {
    if (errno == EEXIST || errno == ENOTEMPTY) {
      // Another process unpacked the same wheel first; its directory stands.
      return LoadUnpackedWheel(dest_dir);
    }
    return ErrnoStatus("rename to", dest);
  }
  guard.Release();
  fs::path parent = dest.parent_path();
  CAIRN_RETURN_IF_ERROR(SyncDir(parent.empty() ? fs::path(".") : parent));
  out.dir = dest_dir;
  return out;
}

}  // namespace cairn::env
