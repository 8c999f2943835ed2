#include "env/index/simple_index.h"

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "util/hash.h"
#include "util/strings.h"
#include "util/utf8.h"

namespace cairn::env {
namespace {

using nlohmann::json;

constexpr std::string_view kAccept =
    "Accept: application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01";

// Case-insensitive find of a lowercase `needle`.
size_t FindNoCase(std::string_view hay, std::string_view needle, size_t from) {
  if (needle.size() > hay.size()) return std::string_view::npos;
  for (size_t i = from; i + needle.size() <= hay.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && AsciiLower(hay[i + k]) == needle[k]) ++k;
    if (k == needle.size()) return i;
  }
  return std::string_view::npos;
}

// Decodes the character references an index uses (&lt; &gt; &amp; &quot; &apos; &nbsp; &#NN;
// &#xNN;); anything else, or a reference without its ';', stays as written.
std::string DecodeEntities(std::string_view s) {
  static const std::map<std::string, uint32_t, std::less<>> kNamed = {
      {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}, {"nbsp", 0xA0}};
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t amp = s.find('&', i);
    out.append(s.substr(i, amp == std::string_view::npos ? s.npos : amp - i));
    if (amp == std::string_view::npos) break;
    i = amp + 1;
    const size_t semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10 || semi == i) {
      out.push_back('&');
      continue;
    }
    const std::string_view name = s.substr(i, semi - i);
    std::optional<uint32_t> cp;
    if (name[0] == '#') {
      const bool hex = name.size() > 1 && (name[1] == 'x' || name[1] == 'X');
      const std::string digits(name.substr(hex ? 2 : 1));
      char* end = nullptr;
      const unsigned long v =
          digits.empty() ? 0 : std::strtoul(digits.c_str(), &end, hex ? 16 : 10);
      const bool surrogate = v >= 0xD800 && v <= 0xDFFF;
      if (!digits.empty() && *end == '\0' && v > 0 && v <= 0x10FFFF && !surrogate) {
        cp = static_cast<uint32_t>(v);
      }
    } else if (auto it = kNamed.find(AsciiLower(name)); it != kNamed.end()) {
      cp = it->second;
    }
    if (!cp) {
      out.push_back('&');
      continue;
    }
    AppendUtf8(&out, *cp);
    i = semi + 1;
  }
  return out;
}

// "sha256=<hex>" (a URL fragment or a metadata attribute) → the lowercase hex; else "".
std::string Sha256From(std::string_view spec) {
  const std::string lower = AsciiLower(Trim(spec));
  return lower.starts_with("sha256=") ? lower.substr(7) : "";
}

void SplitFragment(IndexFile* f) {
  const size_t hash = f->url.find('#');
  if (hash == std::string::npos) return;
  const std::string sha = Sha256From(std::string_view(f->url).substr(hash + 1));
  if (!sha.empty()) f->sha256 = sha;
  f->url.resize(hash);
}

// kFailedPrecondition unless `version` ("1.0", "1.1") has major version 1 (PEP 629/691).
Status CheckApiVersion(std::string_view version, const std::string& page_url) {
  version = Trim(version);
  const size_t dot = version.find('.');
  const std::string_view major = version.substr(0, dot);
  if (major == "1" || version.empty()) return Status::Ok();
  return FailedPrecondition("the index page " + RedactUrl(page_url) +
                            " uses simple repository API version " + std::string(version) +
                            "; cairn reads version 1.x");
}

// ---------------------------------------------------------------------------------------------
// PEP 691 JSON.

std::string StringAt(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<std::vector<IndexFile>> ParseJson(std::string_view body, const std::string& page_url) {
  const json page = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!page.is_object() || !page.contains("files") || !page["files"].is_array()) {
    return InvalidArgument("the index page " + RedactUrl(page_url) +
                           " is not a PEP 691 project page (no \"files\" list)");
  }
  if (auto meta = page.find("meta"); meta != page.end() && meta->is_object()) {
    CAIRN_RETURN_IF_ERROR(CheckApiVersion(StringAt(*meta, "api-version"), page_url));
  }
  std::vector<IndexFile> out;
  for (const json& f : page["files"]) {
    if (!f.is_object()) continue;
    IndexFile file;
    file.filename = StringAt(f, "filename");
    const std::string url = StringAt(f, "url");
    if (file.filename.empty() || url.empty()) continue;
    file.url = ResolveUrl(page_url, url);
    SplitFragment(&file);
    if (auto h = f.find("hashes"); h != f.end() && h->is_object()) {
      if (const std::string sha = StringAt(*h, "sha256"); !sha.empty()) file.sha256 = AsciiLower(sha);
    }
    if (auto s = f.find("size"); s != f.end() && s->is_number_integer() && s->get<int64_t>() >= 0) {
      file.size = s->get<int64_t>();
    }
    file.requires_python = StringAt(f, "requires-python");
    if (auto y = f.find("yanked"); y != f.end()) {
      file.yanked = y->is_string() || (y->is_boolean() && y->get<bool>());
    }
    // PEP 714 renamed the key; the old one is read only when the new one is absent.
    auto m = f.find("core-metadata");
    if (m == f.end()) m = f.find("dist-info-metadata");
    if (m != f.end()) {
      if (m->is_boolean()) {
        file.has_metadata = m->get<bool>();
      } else if (m->is_object()) {
        file.has_metadata = true;
        file.metadata_sha256 = AsciiLower(StringAt(*m, "sha256"));
      }
    }
    out.push_back(std::move(file));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// PEP 503 HTML: a scanner for tags and their attributes, not a parser. It skips comments and
// the contents of <script> and <style>, and reads attribute values quoted or not.

struct Tag {
  std::string name;  // lowercase; empty for something that is not a start tag
  std::map<std::string, std::string> attributes;  // lowercase names, decoded values
  size_t end = 0;                                 // just past the '>'

  const std::string* Find(const std::string& attribute) const {
    auto it = attributes.find(attribute);
    return it == attributes.end() ? nullptr : &it->second;
  }
};

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == ':';
}

// Reads the start tag at body[at] == '<'.
Tag ReadTag(std::string_view body, size_t at) {
  Tag tag;
  size_t i = at + 1;
  while (i < body.size() && IsNameChar(body[i])) tag.name.push_back(AsciiLower(body[i++]));
  while (i < body.size() && body[i] != '>') {
    if (IsAsciiSpace(body[i]) || body[i] == '/') {
      ++i;
      continue;
    }
    std::string name;
    while (i < body.size() && !IsAsciiSpace(body[i]) && body[i] != '=' && body[i] != '>' &&
           body[i] != '/') {
      name.push_back(AsciiLower(body[i++]));
    }
    if (name.empty()) {  // a stray '=': skip it
      ++i;
      continue;
    }
    size_t j = i;
    while (j < body.size() && IsAsciiSpace(body[j])) ++j;
    std::string value;
    if (j < body.size() && body[j] == '=') {
      ++j;
      while (j < body.size() && IsAsciiSpace(body[j])) ++j;
      if (j < body.size() && (body[j] == '"' || body[j] == '\'')) {
        const size_t close = body.find(body[j], j + 1);
        const size_t stop = close == std::string_view::npos ? body.size() : close;
        value = DecodeEntities(body.substr(j + 1, stop - j - 1));
        j = close == std::string_view::npos ? body.size() : close + 1;
      } else {
        const size_t start = j;
        while (j < body.size() && !IsAsciiSpace(body[j]) && body[j] != '>') ++j;
        value = DecodeEntities(body.substr(start, j - start));
      }
      i = j;
    }
    tag.attributes.emplace(std::move(name), std::move(value));  // the first one counts
  }
  tag.end = i < body.size() ? i + 1 : body.size();
  return tag;
}

// The text of an element up to its closing tag, with inner tags dropped.
std::string ElementText(std::string_view body, size_t from, std::string_view closing) {
  const size_t close = FindNoCase(body, closing, from);
  const std::string_view inner =
      body.substr(from, close == std::string_view::npos ? body.npos : close - from);
  std::string text;
  for (size_t i = 0; i < inner.size();) {
    if (inner[i] == '<') {
      const size_t gt = inner.find('>', i);
      i = gt == std::string_view::npos ? inner.size() : gt + 1;
    } else {
      text.push_back(inner[i++]);
    }
  }
  return std::string(Trim(DecodeEntities(text)));
}

Result<std::vector<IndexFile>> ParseHtml(std::string_view body, const std::string& page_url) {
  std::vector<IndexFile> out;
  std::string base = page_url;
  bool base_seen = false;
  size_t at = 0;
  while ((at = body.find('<', at)) != std::string_view::npos) {
    const std::string_view rest = body.substr(at);
    if (rest.starts_with("<!--")) {
      const size_t end = body.find("-->", at + 4);
      at = end == std::string_view::npos ? body.size() : end + 3;
      continue;
    }
    if (rest.starts_with("</") || rest.starts_with("<!") || rest.starts_with("<?")) {
      const size_t end = body.find('>', at);
      at = end == std::string_view::npos ? body.size() : end + 1;
      continue;
    }
    Tag tag = ReadTag(body, at);
    if (tag.name.empty()) {  // a lone '<' in text
      ++at;
      continue;
    }
    at = tag.end;
    if (tag.name == "script" || tag.name == "style") {
      const size_t end = FindNoCase(body, "</" + tag.name, at);
      at = end == std::string_view::npos ? body.size() : end;
    } else if (tag.name == "base") {
      if (const std::string* href = tag.Find("href"); href != nullptr && !base_seen) {
        base = ResolveUrl(page_url, *href);
        base_seen = true;
      }
    } else if (tag.name == "meta") {
      const std::string* name = tag.Find("name");
      const std::string* content = tag.Find("content");
      if (name != nullptr && content != nullptr && AsciiLower(*name) == "pypi:repository-version") {
        CAIRN_RETURN_IF_ERROR(CheckApiVersion(*content, page_url));
      }
    } else if (tag.name == "a") {
      const std::string* href = tag.Find("href");
      if (href == nullptr || Trim(*href).empty()) continue;
      IndexFile file;
      file.url = ResolveUrl(base, *href);
      SplitFragment(&file);
      file.filename = ElementText(body, at, "</a");
      if (file.filename.empty()) file.filename = file.url.substr(file.url.rfind('/') + 1);
      if (const std::string* rp = tag.Find("data-requires-python")) file.requires_python = *rp;
      file.yanked = tag.Find("data-yanked") != nullptr;
      const std::string* metadata = tag.Find("data-core-metadata");
      if (metadata == nullptr) metadata = tag.Find("data-dist-info-metadata");
      if (metadata != nullptr && AsciiLower(Trim(*metadata)) != "false") {
        file.has_metadata = true;
        file.metadata_sha256 = Sha256From(*metadata);
      }
      out.push_back(std::move(file));
    }
  }
  return out;
}

}  // namespace

Result<std::vector<IndexFile>> ParseProjectPage(std::string_view body,
                                                std::string_view content_type,
                                                const std::string& page_url) {
  const std::string type = AsciiLower(content_type.substr(0, content_type.find(';')));
  // A file:// index has no Content-Type; its JSON still starts with '{'.
  const bool json =
      type.find("json") != std::string::npos || (Trim(type).empty() && Trim(body).starts_with("{"));
  try {
    return json ? ParseJson(body, page_url) : ParseHtml(body, page_url);
  } catch (const std::exception& e) {  // nlohmann::json on a type it did not expect
    return InvalidArgument("reading the index page " + RedactUrl(page_url) + ": " + e.what());
  }
}

Result<std::vector<IndexFile>> FetchProjectPage(const std::string& index_url,
                                                const std::string& normalized_project,
                                                const FetchOptions& options) {
  std::string url = index_url;
  if (!url.ends_with("/")) url += "/";
  url += normalized_project + "/";
  FetchOptions o = options;
  o.headers.emplace_back(kAccept);
  CAIRN_ASSIGN_OR_RETURN(HttpResponse r, HttpGet(url, o));
  if (r.status == 404) return std::vector<IndexFile>();
  if (r.status < 200 || r.status >= 300) {
    std::string message =
        "the index answered HTTP " + std::to_string(r.status) + " for " + RedactUrl(url);
    if (r.status >= 500 || r.status == 429) return Unavailable(std::move(message));
    if (r.status == 401 || r.status == 403) message += " (are its credentials missing or wrong?)";
    return FailedPrecondition(std::move(message));
  }
  return ParseProjectPage(r.body, r.content_type, r.url);
}

Result<std::string> FetchCoreMetadata(const IndexFile& file, const FetchOptions& options) {
  const std::string url = file.url + ".metadata";
  CAIRN_ASSIGN_OR_RETURN(HttpResponse r, HttpGet(url, options));
  if (r.status < 200 || r.status >= 300) {
    std::string message =
        "the index answered HTTP " + std::to_string(r.status) + " for " + RedactUrl(url);
    if (r.status == 404) return NotFound(std::move(message));
    if (r.status >= 500 || r.status == 429) return Unavailable(std::move(message));
    return FailedPrecondition(std::move(message));
  }
  if (!file.metadata_sha256.empty()) {
    const std::string actual = Sha256Hex(r.body);
    if (actual != AsciiLower(file.metadata_sha256)) {
      return FailedPrecondition("the metadata at " + RedactUrl(url) + " has sha256 " + actual +
                                "; the index gave " + file.metadata_sha256);
    }
  }
  return std::move(r.body);
}

}  // namespace cairn::env
