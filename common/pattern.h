// Pattern: a regular expression from the configuration, matched against a whole name (a device,
// an ethtool stat). RE2 underneath: matching is linear in the name and neither compiling nor
// matching recurses, so no pattern a user writes can exhaust the stack or take exponential time
// (std::regex did both). The syntax is RE2's: no backreferences, no lookaround.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace re2 {
class RE2;
}

namespace rdmahd {

class Pattern {
 public:
  // Names matched are short (IFNAMSIZ, ethtool's 32-byte stat names); a pattern longer than this
  // is a mistake, and the cap bounds the compile cost of each.
  static constexpr std::size_t kMaxLength = 4096;
  // RE2's memory budget for one compiled program; a pattern that needs more (e.g. nested counted
  // repetitions) is refused as too complex.
  static constexpr std::int64_t kMaxMemBytes = 1 << 20;

  // An Error whose message says what is wrong (RE2's reason and the offending fragment), without
  // the pattern itself: the caller knows where it came from.
  static Result<Pattern> Compile(std::string_view text);

  // True when the whole of `s` matches (as if anchored with ^...$).
  bool FullMatch(std::string_view s) const;
  const std::string& text() const { return text_; }

 private:
  Pattern(std::string text, std::shared_ptr<const re2::RE2> re);

  std::string text_;
  std::shared_ptr<const re2::RE2> re_;  // shared: RE2 is not copyable, a compiled Config is copied
};

}  // namespace rdmahd
