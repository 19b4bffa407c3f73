#include "daemon/etag.h"

#include <cstdint>
#include <cstdio>

namespace rdmahd {
namespace {

// The opaque-tag of an entity tag, without W/ (RFC 9110, 8.8.3.2: weak comparison).
std::string_view OpaqueTag(std::string_view tag) {
  if (tag.size() >= 2 && tag[0] == 'W' && tag[1] == '/') tag.remove_prefix(2);
  return tag;
}

}  // namespace

std::string WeakEtag(std::string_view body) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : body) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char text[32];
  std::snprintf(text, sizeof text, "W/\"%016llx\"", static_cast<unsigned long long>(h));
  return text;
}

bool IfNoneMatchHits(std::string_view header, std::string_view etag) {
  const std::string_view want = OpaqueTag(etag);
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < header.size() && (header[i] == ' ' || header[i] == '\t' || header[i] == ',')) ++i;
  };
  skip_space();
  if (header.substr(i) == "*") return true;
  while (i < header.size()) {
    std::size_t start = i;
    if (header.compare(i, 2, "W/") == 0) i += 2;
    if (i >= header.size() || header[i] != '"') return false;
    std::size_t close = header.find('"', i + 1);
    if (close == std::string_view::npos) return false;
    if (OpaqueTag(header.substr(start, close + 1 - start)) == want) return true;
    i = close + 1;
    skip_space();
  }
  return false;
}

}  // namespace rdmahd
