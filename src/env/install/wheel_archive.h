// Reading wheels (.whl, the binary distribution format): a ZIP archive holding one distribution
// laid out nearly as installed, with `{name}-{version}.dist-info/` (METADATA, WHEEL, RECORD)
// and optionally `{name}-{version}.data/<scheme>/` trees that the installer spreads out.
//
// A wheel is unpacked once into an immutable cache directory and then linked into every
// environment that needs it (see wheel_install.h). Unpacking is where the archive is checked:
// the archive's names are confined to the directory, entries other than files and
// directories are refused, and every file must be listed in the wheel's RECORD with a digest
// (sha256 or stronger) and size that match. An unpacked directory therefore holds exactly the
// files RECORD lists (plus RECORD and its optional signatures), with the contents it states.
//
// Archives are read with libarchive's seekable ZIP reader, which follows the central
// directory (as Python's zipfile does), not the local headers a streaming reader would trust.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace cairn::env {

// The highest Wheel-Version this reader understands. A wheel with a higher major version is
// refused; one with a higher minor version is read with a warning (the spec's rule).
inline constexpr int kWheelVersionMajor = 1;
inline constexpr int kWheelVersionMinor = 0;

// One row of a RECORD file.
struct RecordEntry {
  std::string path;   // '/'-separated, relative to the directory holding the .dist-info
  std::string hash;   // "<algorithm>=<urlsafe base64, no padding>", e.g. "sha256=..."; or empty
  int64_t size = -1;  // bytes; -1 when the row leaves it empty
};

// What unpacking found; also what LoadUnpackedWheel reads back from an unpacked directory.
struct UnpackedWheel {
  std::string dir;        // the unpacked directory
  std::string dist_info;  // "demo-1.0.dist-info"
  std::string data_dir;   // "demo-1.0.data" (the name the wheel would use; it may be absent)
  bool has_data_dir = false;
  std::string wheel_version;  // WHEEL's Wheel-Version, e.g. "1.0"
  bool root_is_purelib = false;
  size_t file_count = 0;              // regular files, RECORD included
  uint64_t bytes = 0;                 // their total size
  std::vector<RecordEntry> record;    // the wheel's RECORD, in file order
  std::vector<std::string> warnings;  // e.g. a newer minor Wheel-Version
};

// Unpacks `wheel_path` into `dest_dir` and verifies it (see the top of this file).
//
// `dest_dir` must not exist (AlreadyExists otherwise) but its parent must. The files are
// written into `dest_dir` + ".tmp-<random>", synced to disk, and the directory is renamed into
// place, so a crash or an error leaves no `dest_dir` (a crash may leave the temporary
// directory, which the cache's owner may delete). If another process publishes `dest_dir`
// while this one unpacks, that counts as success: the temporary copy is removed and the
// directory that won is described.
//
// Errors name the wheel and the member: InvalidArgument for a malformed or unsafe archive
// (absolute or ".." names, backslashes that libarchive has not already read as '/', symlinks,
// hard links, devices, duplicate names, a member not in RECORD or a RECORD row without a
// member, a digest or size mismatch, a digest weaker than sha256, a missing or ambiguous
// .dist-info, a bad WHEEL file or an unsupported Wheel-Version major); NotFound when the wheel
// does not exist; Unavailable for I/O failures.
// Thread-safe; different calls may unpack into the same cache directory.
Result<UnpackedWheel> UnpackWheel(const std::string& wheel_path, const std::string& dest_dir);

// Describes a directory made by UnpackWheel: finds its single top-level .dist-info, parses
// WHEEL and RECORD and counts the files. Does not re-hash file contents (the cache is trusted
// to be immutable). InvalidArgument when the directory does not look like an unpacked wheel.
Result<UnpackedWheel> LoadUnpackedWheel(const std::string& dir);

// Reads one member (e.g. "demo-1.0.dist-info/METADATA") without unpacking the rest. NotFound
// when absent, InvalidArgument when the name occurs twice or the member is not a regular file,
// ResourceExhausted above 64 MiB.
Result<std::string> ReadWheelMember(const std::string& wheel_path, std::string_view member);

// Reads `<x>.dist-info/METADATA` where `<x>.dist-info` is the wheel's single top-level
// .dist-info directory. NotFound when there is none; InvalidArgument when there are several.
Result<std::string> ReadWheelMetadata(const std::string& wheel_path);

// Parses RECORD text (CSV: path, hash, size; quoted fields allowed; LF or CRLF). Syntax only:
// paths are not checked (an installed RECORD has "../../../bin/x" rows; UnpackWheel checks a
// wheel's own rows). InvalidArgument, naming the line, for a row without exactly three fields,
// an empty path, a bad size or a path listed twice.
Result<std::vector<RecordEntry>> ParseRecord(std::string_view text);

// Formats rows as RECORD text: one "path,hash,size\n" line each, quoting fields as CSV needs.
std::string FormatRecord(const std::vector<RecordEntry>& entries);

// "sha256=" followed by the urlsafe base64 (no padding) SHA-256 of `bytes`: RECORD's form.
std::string RecordSha256(std::string_view bytes);
// The same form from a lowercase hex SHA-256 digest.
std::string RecordSha256FromHex(std::string_view hex);

// Whether `path` is a safe relative member name: not empty, not absolute, no backslash or NUL,
// no empty, "." or ".." components.
bool IsSafeRelativePath(std::string_view path);

}  // namespace cairn::env
