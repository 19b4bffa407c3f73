// Excerpts of text read from files, for error messages. A file named on the command line or in a
// config may be one the caller could not read themselves (`sudo rdma-healthd check-config
// /etc/shadow`), and a message goes to a terminal or the log: so a message never carries more of a
// file than a short, escaped excerpt of one key or value, and nothing of a key that does not look
// like a name the schema could have (a shadow line, a PEM body, a hash).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rdmahd {

// The most bytes of a key or value a message quotes.
inline constexpr std::size_t kExcerptBytes = 40;
// The most bytes of any one config message (file name, position and all).
inline constexpr std::size_t kMaxMessageBytes = 512;

// `s` in double quotes, escaped so that it prints as one line of ASCII: \" \\ \n \r \t stay
// readable, every other control byte and every byte >= 0x80 is \xNN. At most `max_bytes` bytes of
// `s` are shown; a longer `s` ends in ..." followed by " (N bytes)".
std::string QuoteExcerpt(std::string_view s, std::size_t max_bytes = kExcerptBytes);

// True when `s` could be a key of a schema: 1 to `max_bytes` bytes of A-Z a-z 0-9 _ - . only.
// Anything else (a ':' or '$', spaces, a long token) is not quoted at all: see DescribeKey.
bool LooksLikeKeyName(std::string_view s, std::size_t max_bytes = kExcerptBytes);

// A key for a message: QuoteExcerpt(s) when LooksLikeKeyName(s, max_bytes), otherwise a
// description that shows none of it: "(a key of 83 bytes, not shown: it is not a name)".
std::string DescribeKey(std::string_view s, std::size_t max_bytes = kExcerptBytes);

// `message` as printable text of at most `max_bytes` bytes: control bytes other than \t become
// \xNN, ill-formed UTF-8 becomes U+FFFD, and a longer message is cut (on a character boundary)
// and ends in " ... (message cut)".
std::string CapMessage(std::string_view message, std::size_t max_bytes = kMaxMessageBytes);

// Appends the ASCII byte `c` so that it prints as itself or as one visible escape: \\ \n \r \t as
// written here, other control bytes and DEL as \xNN.
void AppendAsciiEscaped(std::string& out, unsigned char c);

// `s` on one line whatever it holds, for a terminal or a log line: names and reasons carry text from
// the node or a capture, and a raw newline would print a fake row or record, an escape sequence
// would rewrite the terminal. ASCII as AppendAsciiEscaped writes it, each byte of ill-formed UTF-8
// as \xNN, C1 controls, line/paragraph separators and bidirectional controls as \uNNNN; other
// characters stay as they are. The result is valid UTF-8.
std::string TerminalText(std::string_view s);

}  // namespace rdmahd
