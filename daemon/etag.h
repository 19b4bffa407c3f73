// Entity tags of response bodies (RFC 9110, 8.8.3): WeakEtag makes one for a body, and
// IfNoneMatchHits says whether a request's If-None-Match names it, so that the server can answer
// 304 without the body (HttpResponse::etag).
#pragma once

#include <string>
#include <string_view>

namespace rdmahd {

// A weak entity tag for `body`: W/"<16 hex digits>" (a 64-bit FNV-1a of the bytes). Weak, as one
// body goes out gzip-compressed or not.
std::string WeakEtag(std::string_view body);

// Whether an If-None-Match header value names `etag` (weak comparison: W/ ignored on both sides;
// "*" names any). A malformed list matches nothing past the point it stops parsing.
bool IfNoneMatchHits(std::string_view if_none_match, std::string_view etag);

}  // namespace rdmahd
