#include "env/simple_index.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "util/hash.h"

namespace cairn::env {
namespace {

using nlohmann::json;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// &lt; &gt; &amp; &quot; &#39; &#NN; &#xNN; decoded (the few an index uses).
std::string DecodeEntities(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    const size_t semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out.push_back('&');
      continue;
    }
    const std::string name = Lower(s.substr(i + 1, semi - i - 1));
    if (name == "lt") {
      out.push_back('<');
    } else if (name == "gt") {
      out.push_back('>');
    } else if (name == "amp") {
      out.push_back('&');
    } else if (name == "quot") {
      out.push_back('"');
    } else if (name == "apos") {
      out.push_back('\'');
    } else if (name.size() > 1 && name[0] == '#') {
      const bool hex = name[1] == 'x';
      const long code = std::strtol(name.c_str() + (hex ? 2 : 1), nullptr, hex ? 16 : 10);
      if (code > 0 && code < 128) {
        out.push_back(static_cast<char>(code));
      } else {
        out.append(s.substr(i, semi - i + 1));
      }
    } else {
      out.append(s.substr(i, semi - i + 1));
      i = semi;
      continue;
    }
    i = semi;
  }
  return out;
}

// "sha256=abc" from a URL fragment or a data-core-metadata value.
std::string Sha256Of(std::string_view spec) {
  const std::string lower = Lower(spec);
  if (lower.starts_with("sha256=")) return lower.substr(7);
  return "";
}

void SplitFragment(IndexFile* f) {
  const size_t hash = f->url.find('#');
  if (hash == std::string::npos) return;
  f->sha256 = Sha256Of(std::string_view(f->url).substr(hash + 1));
  f->url.resize(hash);
}

Result<std::vector<IndexFile>> ParseJson(std::string_view body, const std::string& page_url) {
  json page = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!page.is_object() || !page.contains("files") || !page["files"].is_array()) {
    return InvalidArgument("the index page " + RedactUrl(page_url) + " is not PEP 691 JSON");
  }
  std::vector<IndexFile> out;
  for (const json& f : page["files"]) {
    if (!f.is_object() || !f.contains("filename") || !f.contains("url")) continue;
    IndexFile file;
    file.filename = f.value("filename", "");
    file.url = ResolveUrl(page_url, f.value("url", ""));
    SplitFragment(&file);
    if (auto h = f.find("hashes"); h != f.end() && h->is_object() && h->contains("sha256")) {
      file.sha256 = Lower((*h)["sha256"].get<std::string>());
    }
    if (auto s = f.find("size"); s != f.end() && s->is_number_integer()) file.size = s->get<int64_t>();
    if (auto r = f.find("requires-python"); r != f.end() && r->is_string()) {
      file.requires_python = r->get<std::string>();
    }
    if (auto y = f.find("yanked"); y != f.end()) {
      file.yanked = y->is_string() || (y->is_boolean() && y->get<bool>());
    }
    for (const char* key : {"core-metadata", "dist-info-metadata"}) {
      auto m = f.find(key);
      if (m == f.end()) continue;
      if (m->is_boolean()) {
        file.has_metadata = m->get<bool>();
      } else if (m->is_object()) {
        file.has_metadata = true;
        if (m->contains("sha256")) file.metadata_sha256 = Lower((*m)["sha256"].get<std::string>());
      }
      break;
    }
    out.push_back(std::move(file));
  }
  return out;
}

// The value of attribute `name` in the text of one tag, or nullopt.
std::optional<std::string> Attribute(std::string_view tag, std::string_view name) {
  const std::string lower = Lower(tag);
  size_t at = 0;
  while ((at = lower.find(name, at)) != std::string::npos) {
    const bool starts = at > 0 && std::isspace(static_cast<unsigned char>(lower[at - 1])) != 0;
    size_t after = at + name.size();
    while (after < lower.size() && std::isspace(static_cast<unsigned char>(lower[after])) != 0) ++after;
    if (!starts || (after < lower.size() && lower[after] != '=' && lower[after] != '>' &&
                    std::isspace(static_cast<unsigned char>(lower[after])) == 0 &&
                    lower[after] != '/')) {
      at += name.size();
      continue;
    }
    if (after >= lower.size() || lower[after] != '=') return std::string();  // no value
    size_t v = after + 1;
    while (v < tag.size() && std::isspace(static_cast<unsigned char>(tag[v])) != 0) ++v;
    if (v >= tag.size()) return std::string();
    if (tag[v] == '"' || tag[v] == '\'') {
      const size_t end = tag.find(tag[v], v + 1);
      return DecodeEntities(tag.substr(v + 1, end == std::string_view::npos ? end : end - v - 1));
    }
    size_t end = v;
    while (end < tag.size() && std::isspace(static_cast<unsigned char>(tag[end])) == 0 &&
           tag[end] != '>') {
      ++end;
    }
    return DecodeEntities(tag.substr(v, end - v));
  }
  return std::nullopt;
}

Result<std::vector<IndexFile>> ParseHtml(std::string_view body, const std::string& page_url) {
  std::vector<IndexFile> out;
  const std::string lower = Lower(body);
  size_t at = 0;
  while ((at = lower.find("<a", at)) != std::string::npos) {
    if (at + 2 < lower.size() && std::isspace(static_cast<unsigned char>(lower[at + 2])) == 0 &&
        lower[at + 2] != '>') {
      at += 2;
      continue;
    }
    const size_t tag_end = lower.find('>', at);
    if (tag_end == std::string::npos) break;
    const size_t close = lower.find("</a", tag_end);
    std::string_view tag = body.substr(at, tag_end - at);
    std::optional<std::string> href = Attribute(tag, "href");
    std::string text = DecodeEntities(
        body.substr(tag_end + 1, (close == std::string::npos ? body.size() : close) - tag_end - 1));
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) text.pop_back();
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
      text.erase(0, 1);
    }
    at = tag_end + 1;
    if (!href || href->empty()) continue;
    IndexFile file;
    file.url = ResolveUrl(page_url, *href);
    SplitFragment(&file);
    file.filename = text.empty() ? file.url.substr(file.url.find_last_of('/') + 1) : text;
    if (auto rp = Attribute(tag, "data-requires-python")) file.requires_python = *rp;
    file.yanked = Attribute(tag, "data-yanked").has_value();
    std::optional<std::string> metadata = Attribute(tag, "data-core-metadata");
    if (!metadata) metadata = Attribute(tag, "data-dist-info-metadata");
    if (metadata && Lower(*metadata) != "false") {
      file.has_metadata = true;
      file.metadata_sha256 = Sha256Of(*metadata);
    }
    out.push_back(std::move(file));
  }
  return out;
}

}  // namespace

Result<std::vector<IndexFile>> ParseProjectPage(std::string_view body,
                                                std::string_view content_type,
                                                const std::string& page_url) {
  if (Lower(content_type).find("json") != std::string::npos) return ParseJson(body, page_url);
  return ParseHtml(body, page_url);
}

Result<std::vector<IndexFile>> FetchProjectPage(const std::string& index_url,
                                                const std::string& normalized_project,
                                                const FetchOptions& options) {
  std::string base = index_url;
  if (!base.ends_with("/")) base += "/";
  const std::string url = base + normalized_project + "/";
  FetchOptions o = options;
  o.headers.push_back(
      "Accept: application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
      "text/html;q=0.01");
  CAIRN_ASSIGN_OR_RETURN(HttpResponse r, HttpGet(url, o));
  if (r.status == 404) return std::vector<IndexFile>();
  if (r.status < 200 || r.status >= 300) {
    return FailedPrecondition("the index answered HTTP " + std::to_string(r.status) + " for " +
                              RedactUrl(url));
  }
  return ParseProjectPage(r.body, r.content_type, r.url);
}

Result<std::string> FetchCoreMetadata(const IndexFile& file, const FetchOptions& options) {
  const std::string url = file.url + ".metadata";
  CAIRN_ASSIGN_OR_RETURN(HttpResponse r, HttpGet(url, options));
  if (r.status < 200 || r.status >= 300) {
    return FailedPrecondition("the index answered HTTP " + std::to_string(r.status) + " for " +
                              RedactUrl(url));
  }
  if (!file.metadata_sha256.empty() && Sha256Hex(r.body) != file.metadata_sha256) {
    return FailedPrecondition("the metadata at " + RedactUrl(url) +
                              " does not have the hash the index gave");
  }
  return r.body;
}

}  // namespace cairn::env
