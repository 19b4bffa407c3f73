#include "common/pattern.h"

#include <re2/re2.h>

#include <utility>

namespace rdmahd {

Pattern::Pattern(std::string text, std::shared_ptr<const re2::RE2> re)
    : text_(std::move(text)), re_(std::move(re)) {}

Result<Pattern> Pattern::Compile(std::string_view text) {
  if (text.size() > kMaxLength) {
    return Error{"longer than " + std::to_string(kMaxLength) + " characters (" +
                 std::to_string(text.size()) + ")"};
  }
  re2::RE2::Options options;
  // Byte semantics, as std::regex had: names are bytes, and a name that is not valid UTF-8 must
  // still be matched by ".*".
  options.set_encoding(re2::RE2::Options::EncodingLatin1);
  options.set_max_mem(kMaxMemBytes);
  options.set_log_errors(false);  // the error is returned, not written to stderr
  options.set_never_capture(true);  // groups only group: nothing reads submatches
  auto re = std::make_shared<const re2::RE2>(re2::StringPiece(text.data(), text.size()), options);
  if (!re->ok()) {
    if (re->error_code() == re2::RE2::ErrorPatternTooLarge) {
      return Error{"too complex (needs more than " + std::to_string(kMaxMemBytes >> 10) +
                   " KiB compiled; simplify nested or counted repetitions)"};
    }
    return Error{re->error()};
  }
  return Pattern(std::string(text), std::move(re));
}

bool Pattern::FullMatch(std::string_view s) const {
  return re2::RE2::FullMatch(re2::StringPiece(s.data(), s.size()), *re_);
}

}  // namespace rdmahd
