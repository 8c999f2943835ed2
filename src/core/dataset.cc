#include "core/dataset.h"

#include <cctype>
#include <charconv>

#include "util/json_writer.h"

namespace cairn::core {

Status ValidateDatasetName(std::string_view name) {
  auto bad = [&] {
    return InvalidArgument("Invalid dataset name '" + std::string(name) +
                           "': use 1 to 128 letters, digits and '._-', starting with a letter "
                           "or digit.");
  };
  if (name.empty() || name.size() > 128) return bad();
  if (!std::isalnum(static_cast<unsigned char>(name[0]))) return bad();
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return bad();
  }
  return Status::Ok();
}

Result<DataRef> ParseDataRef(std::string_view text, bool allow_dir) {
  DataRef ref;
  if (allow_dir) {
    const size_t colon = text.find(':');
    if (colon != std::string_view::npos) {
      ref.dir = std::string(text.substr(colon + 1));
      text = text.substr(0, colon);
      if (ref.dir.empty()) {
        return InvalidArgument("'" + std::string(text) + ":' names no directory after ':'");
      }
    }
  }
  const size_t at = text.find('@');
  ref.name = std::string(text.substr(0, at));
  CAIRN_RETURN_IF_ERROR(ValidateDatasetName(ref.name));
  if (at != std::string_view::npos) {
    std::string_view v = text.substr(at + 1);
    if (v.starts_with('v')) v.remove_prefix(1);
    if (v != "latest") {
      const char* end = v.data() + v.size();
      auto [p, ec] = std::from_chars(v.data(), end, ref.version);
      if (v.empty() || ec != std::errc() || p != end || ref.version < 1) {
        return InvalidArgument("'" + std::string(text.substr(at + 1)) +
                               "' is not a version of dataset " + ref.name +
                               ": use a number from 1, or 'latest'");
      }
    }
  }
  return ref;
}

std::string DataRefText(std::string_view name, int64_t version) {
  std::string out(name);
  if (version > 0) out += "@" + std::to_string(version);
  return out;
}

std::string DataInputDigest(std::string_view version_digest) {
  return std::string(version_digest.substr(0, 32));
}

DatasetInput DataVersionInput(const DataVersion& v, std::string_view context) {
  DatasetInput in;
  in.dataset.name = v.name;
  in.dataset.digest = DataInputDigest(v.digest);
  in.dataset.source_type = std::string(kDataSourceType);
  JsonWriter source;
  source.BeginObject()
      .Key("uri")
      .String("cairn-data:" + DataRefText(v.name, v.version))
      .Key("name")
      .String(v.name)
      .Key("version")
      .Int(v.version)
      .Key("digest")
      .String(v.digest)
      .EndObject();
  in.dataset.source = source.Take();
  JsonWriter profile;
  profile.BeginObject().Key("files").Int(v.files).Key("bytes").Int(v.bytes).EndObject();
  in.dataset.profile = profile.Take();
  if (!context.empty())
    in.tags.push_back(Tag{std::string(kDatasetContextTag), std::string(context)});
  return in;
}

}  // namespace cairn::core
