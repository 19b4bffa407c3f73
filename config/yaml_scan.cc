#include "config/yaml_scan.h"

#include <vector>

#include "common/utf8.h"

namespace rdmahd {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsBreak(char c) { return c == '\n' || c == '\r'; }

// A walk over the text with the 1-based line and column of the current byte.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  bool done() const { return i_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const { return i_ + ahead < text_.size() ? text_[i_ + ahead] : '\0'; }
  // True when the byte `ahead` positions on is a blank, a line break or the end.
  bool SpaceAt(std::size_t ahead) const {
    char c = peek(ahead);
    return c == '\0' || IsBlank(c) || IsBreak(c);
  }
  void Next() {
    if (text_[i_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++i_;
  }
  void SkipToLineEnd() {
    while (!done() && !IsBreak(peek())) Next();
  }
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  std::string_view text_;
  std::size_t i_ = 0;
  int line_ = 1;
  int column_ = 1;
};

// After '|' or '>' at the start of a node: true when the rest of the line is a block scalar header
// (chomping/indentation indicators, then nothing or a comment).
bool BlockScalarHeader(const Cursor& c) {
  std::size_t k = 1;
  while (c.peek(k) == '-' || c.peek(k) == '+' || (c.peek(k) >= '1' && c.peek(k) <= '9')) ++k;
  while (IsBlank(c.peek(k))) ++k;
  char end = c.peek(k);
  return end == '\0' || IsBreak(end) || (end == '#' && IsBlank(c.peek(k - 1)));
}

}  // namespace

FlowScan ScanFlows(std::string_view text, std::size_t max_depth) {
  FlowScan out;
  std::vector<FlowOpening> open;
  Cursor c(text);
  bool at_line_start = true;
  bool node_start = true;  // the next non-blank byte may start a node (quote, bracket, indicator)
  int line_indent = 0;
  int block_scalar_parent = -1;  // >= 0: skipping a block scalar's lines indented deeper than this
  while (!c.done()) {
    if (at_line_start) {
      at_line_start = false;
      line_indent = 0;
      while (c.peek() == ' ') {
        c.Next();
        ++line_indent;
      }
      if (block_scalar_parent >= 0) {
        bool blank = c.done() || IsBreak(c.peek()) || IsBlank(c.peek());
        if (blank || line_indent > block_scalar_parent) {
          c.SkipToLineEnd();
          continue;
        }
        block_scalar_parent = -1;
      }
      if (c.peek() == '\t' && open.empty() && !out.tab_indentation) {
        // Indentation, unless only blanks or a comment follow on this line.
        std::size_t k = 0;
        while (IsBlank(c.peek(k))) ++k;
        const char next = c.peek(k);
        if (next != '\0' && !IsBreak(next) && next != '#') out.tab_indentation = TextMark{c.line(), c.column()};
      }
      continue;
    }
    const char ch = c.peek();
    const bool in_flow = !open.empty();
    if (ch == '\n') {
      c.Next();
      at_line_start = true;
      node_start = true;
      continue;
    }
    if (IsBlank(ch) || ch == '\r') {
      c.Next();
      continue;
    }
    if (ch == '#') {
      // Tokens are consumed whole below ("a#b" is one plain scalar), so a '#' seen here follows a
      // blank or starts a line: a comment.
      c.SkipToLineEnd();
      continue;
    }
    if (node_start && (ch == '"' || ch == '\'')) {
      c.Next();
      bool closed = false;
      while (!c.done()) {
        char q = c.peek();
        if (ch == '"' && q == '\\') {
          c.Next();
          if (!c.done()) c.Next();
          continue;
        }
        if (q == ch) {
          if (ch == '\'' && c.peek(1) == '\'') {  // '' is an escaped quote
            c.Next();
            c.Next();
            continue;
          }
          c.Next();
          closed = true;
          break;
        }
        c.Next();
      }
      if (!closed) break;  // an unterminated quote: yaml-cpp reports that one itself
      node_start = false;
      continue;
    }
    if (ch == '[' || ch == '{') {
      if (in_flow || node_start) {
        FlowOpening opening{ch, c.line(), c.column()};
        open.push_back(opening);
        c.Next();
        node_start = true;
        if (open.size() > max_depth) {
          out.too_deep = opening;
          return out;
        }
        continue;
      }
    }
    if (in_flow && (ch == ']' || ch == '}')) {
      if (open.back().bracket != (ch == ']' ? '[' : '{')) break;  // mismatched: yaml-cpp says where
      open.pop_back();
      c.Next();
      node_start = false;
      continue;
    }
    if (in_flow && ch == ',') {
      c.Next();
      node_start = true;
      continue;
    }
    if (c.column() == 1 && (ch == '-' || ch == '.') && c.peek(1) == ch && c.peek(2) == ch && c.SpaceAt(3)) {
      c.Next();  // a document marker (--- or ...): a node may follow on the same line
      c.Next();
      c.Next();
      node_start = true;
      continue;
    }
    if ((ch == '-' || ch == '?' || ch == ':') && c.SpaceAt(1)) {
      c.Next();
      node_start = true;
      continue;
    }
    if (in_flow && ch == ':') {  // "a":b and a:[ in flow: a value indicator
      c.Next();
      node_start = true;
      continue;
    }
    if (!in_flow && node_start && (ch == '|' || ch == '>') && BlockScalarHeader(c)) {
      block_scalar_parent = line_indent;
      c.SkipToLineEnd();
      continue;
    }
    if (node_start && (ch == '&' || ch == '!' || ch == '*')) {
      // An anchor, tag or alias: one token; a node may still follow it.
      while (!c.SpaceAt(0) && !(in_flow && (c.peek() == ',' || c.peek() == ']' || c.peek() == '}'))) c.Next();
      node_start = ch != '*';
      continue;
    }
    // A plain scalar's byte. '#' inside a token ("a#b") is not a comment: consume up to a blank.
    node_start = false;
    c.Next();
    while (!c.done() && !c.SpaceAt(0) && c.peek() != ':' && c.peek() != ',' && c.peek() != ']' &&
           c.peek() != '}' && c.peek() != '[' && c.peek() != '{') {
      c.Next();
    }
  }
  if (!open.empty()) out.unclosed = open.back();
  return out;
}

std::optional<TextProblem> FindTextProblem(std::string_view text) {
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const TextMark at{line, static_cast<int>(i - line_start) + 1};
    if (b == 0) {
      return TextProblem{at, "a NUL byte: a config file is UTF-8 text (is this a binary or UTF-16 file?)"};
    }
    if (b == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n')) {
      return TextProblem{at, "a carriage return (CR) not followed by a line feed: end lines with LF or CRLF, "
                             "not CR alone"};
    }
    if (b >= 0x80) {
      const Utf8Step step = DecodeUtf8Step(text.substr(i));
      if (!step.valid) {
        static constexpr char kHex[] = "0123456789ABCDEF";
        return TextProblem{at, std::string("invalid UTF-8 (byte 0x") + kHex[b >> 4] + kHex[b & 0xF] +
                                   "): YAML text must be UTF-8"};
      }
      i += step.length;
      continue;
    }
    if (b == '\n') {
      ++line;
      line_start = i + 1;
    }
    ++i;
  }
  return std::nullopt;
}

}  // namespace rdmahd
