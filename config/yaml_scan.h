// ScanFlows: a cheap pass over YAML text that finds its flow collections ([...] and {...}) the way
// a YAML reader tokenizes them, skipping quoted scalars, comments and block scalars. The config
// loader runs it before yaml-cpp for two things yaml-cpp does not give:
//   - an unclosed flow is reported where it opens, not at the end of the file (yaml-cpp only
//     notices at end of input: "end of sequence flow not found" on the line after the last);
//   - flows nested deeper than any configuration needs are refused before the recursive parser
//     sees them.
// It is a heuristic for messages and a bound, not a YAML parser: yaml-cpp still decides validity.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace rdmahd {

struct FlowOpening {
  char bracket = '[';  // '[' (a flow sequence) or '{' (a flow map)
  int line = 0;        // 1-based
  int column = 0;      // 1-based, in bytes
};

// A 1-based line and byte column.
struct TextMark {
  int line = 0;
  int column = 0;
};

struct FlowScan {
  // The innermost flow collection still open at the end of the text (as PyYAML reports it).
  std::optional<FlowOpening> unclosed;
  // The opening that went past `max_depth`; the scan stops there.
  std::optional<FlowOpening> too_deep;
  // The first tab in a line's indentation outside flows and block scalars (YAML indents with
  // spaces; yaml-cpp's messages for it name something else).
  std::optional<TextMark> tab_indentation;
};

FlowScan ScanFlows(std::string_view text, std::size_t max_depth);

// The first byte of `text` that no YAML text may hold, with what is wrong, for a precise message
// where yaml-cpp gives a misleading one (or none): a NUL byte, ill-formed UTF-8, or a carriage
// return not followed by a line feed (CR-only line ends, which yaml-cpp folds into keys). Lines
// are counted by LF, as everywhere else in the loader's messages.
struct TextProblem {
  TextMark at;
  std::string what;
};
std::optional<TextProblem> FindTextProblem(std::string_view text);

}  // namespace rdmahd
