#include "fakes/wheels.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include "util/hash.h"

namespace cairn::fakes {
namespace {

unsigned FileType(ZipEntry::Kind kind) {
  switch (kind) {
    case ZipEntry::Kind::kDirectory: return AE_IFDIR;
    case ZipEntry::Kind::kSymlink: return AE_IFLNK;
    case ZipEntry::Kind::kFile: break;
  }
  return AE_IFREG;
}

}  // namespace

void WriteZip(const std::filesystem::path& path, const std::vector<ZipEntry>& entries) {
  archive* a = archive_write_new();
  ASSERT_EQ(archive_write_set_format_zip(a), ARCHIVE_OK);
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK) << archive_error_string(a);
  for (const ZipEntry& z : entries) {
    const bool file = z.kind == ZipEntry::Kind::kFile;
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, z.name.c_str());
    archive_entry_set_filetype(e, FileType(z.kind));
    archive_entry_set_perm(e, z.perm);
    if (z.kind == ZipEntry::Kind::kSymlink) archive_entry_set_symlink(e, z.symlink.c_str());
    archive_entry_set_size(e, file ? static_cast<la_int64_t>(z.content.size()) : 0);
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (file && !z.content.empty()) {
      ASSERT_EQ(archive_write_data(a, z.content.data(), z.content.size()),
                static_cast<la_ssize_t>(z.content.size()));
    }
    archive_entry_free(e);
  }
  ASSERT_EQ(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
}

std::string TestRecordHash(const std::string& content) {
  std::string hex = Sha256Hex(content), raw;
  for (size_t i = 0; i < hex.size(); i += 2) {
    raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  std::string b64 = Base64Encode(raw);
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  for (char& c : b64) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return "sha256=" + b64;
}

std::string DistInfo(const WheelSpec& spec) {
  return spec.name + "-" + spec.version + ".dist-info";
}

std::filesystem::path BuildWheel(const std::filesystem::path& dir, const WheelSpec& spec) {
  const std::string di = DistInfo(spec);
  std::vector<ZipEntry> files = spec.files;
  files.push_back({di + "/METADATA", "Metadata-Version: 2.1\nName: " + spec.name + "\nVersion: " +
                                         spec.version + "\n\nA test distribution.\n"});
  files.push_back({di + "/WHEEL", "Wheel-Version: " + spec.wheel_version +
                                      "\nGenerator: cairn-test\nRoot-Is-Purelib: " +
                                      (spec.purelib ? "true" : "false") + "\nTag: py3-none-any\n"});
  if (!spec.entry_points.empty()) files.push_back({di + "/entry_points.txt", spec.entry_points});
  std::string record;
  for (const ZipEntry& f : files) {
    if (f.kind != ZipEntry::Kind::kFile || spec.unrecorded.count(f.name) != 0) continue;
    record +=
        f.name + "," + TestRecordHash(f.content) + "," + std::to_string(f.content.size()) + "\n";
  }
  for (const std::string& row : spec.extra_record_rows) record += row + "\n";
  record += di + "/RECORD,,\n";
  for (ZipEntry& f : files) {
    auto t = spec.tamper.find(f.name);
    if (t != spec.tamper.end()) f.content = t->second;
  }
  files.push_back({di + "/RECORD", record});
  for (const ZipEntry& r : spec.raw) files.push_back(r);
  std::filesystem::path path = dir / (spec.name + "-" + spec.version + "-py3-none-any.whl");
  WriteZip(path, files);
  return path;
}

}  // namespace cairn::fakes
