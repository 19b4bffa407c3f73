// ConfigWalker: the config loader's generic walker, for the sections the plug-ins register
// (config/config_section.h) and for the loader's own. A section is a small table of key ->
// handler walked by VisitMap, so unknown keys (with the closest valid key suggested), duplicate
// keys, wrong node types and positions are handled in one place; the leaf readers (ReadBool,
// ReadDuration, ...) check one value each. Every message starts with "SOURCE:LINE:COLUMN:"
// (1-based) and names the key path. A null value ("key:" with nothing after it, or "key: ~") leaves
// the built-in default in place, except where a file cut mid-write ends: a key or list item with
// no value and nothing but blanks and comments after it in the whole file is refused (see
// VisitMap), so that a reload of a half-written file keeps the running config.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmahd {

// A node, where it sits in the schema ("roce.priority", "firmware[1]", "" for the top level) and
// the position to report for it (for a null value: its key, since yaml-cpp marks the next token).
struct ConfigNode {
  YAML::Node node;
  std::string path;
  YAML::Mark mark;
};

// "SOURCE:LINE:COLUMN", 1-based; just SOURCE when yaml-cpp has no position.
std::string ConfigPosition(const std::string& source, const YAML::Mark& mark);

class ConfigWalker {
 public:
  using Handler = std::function<Status(const ConfigNode&)>;
  struct Field {
    std::string key;
    Handler handle;
  };

  // `source` names the file in messages; a relative ReadPath is relative to its folder. `text` is
  // the YAML text the nodes were loaded from (kept by the caller for the walker's lifetime): with
  // it, a value cut off by the end of the file is refused; without it (empty), it is not looked for.
  explicit ConfigWalker(std::string source, std::string_view text = {})
      : source_(std::move(source)), text_(text) {}
  const std::string& source() const { return source_; }

  // ---- structure ----
  // Visits every key of a map node in file order: rejects non-scalar, unknown (with the closest
  // valid key) and repeated keys, and hands each value to its handler. A null node (a section
  // with everything commented out) is an empty map. A key with no value after which the file
  // holds nothing but blanks and comments ("roce:" or "roce:\n  priority:" at the end) is what a
  // file cut mid-write looks like: refused, naming the key ("... has no value, and nothing follows
  // it in the file (cut mid-write?)"); "key: ~" or "key: {}" there is taken as written. `noun`
  // names a key in messages.
  Status VisitMap(const ConfigNode& v, const std::vector<Field>& fields, std::string_view noun = "key") const;
  // Visits every item of a list node. Null is an empty list. An empty item with nothing after it
  // in the file ("- " at the end) is refused as VisitMap refuses a cut key.
  Status VisitList(const ConfigNode& v, std::string_view expected, const Handler& handle) const;

  // ---- leaves ----
  // True/false only: YAML 1.1's yes/no/on/off are ambiguous between parsers and never needed here.
  Status ReadBool(const ConfigNode& v, bool& out) const;
  // An integer from lo to hi; `hint` is appended to the message when it is out of range.
  Status ReadInt(const ConfigNode& v, int lo, int hi, std::optional<int>& out, std::string_view hint = "") const;
  // A positive integer (a count, or bytes), up to 2^64 - 1.
  Status ReadCount(const ConfigNode& v, std::optional<std::uint64_t>& out) const;
  Status ReadU32(const ConfigNode& v, std::uint32_t lo, std::uint32_t hi, std::uint32_t& out) const;
  // A rate in Gb/s, greater than 0 and at most 1600.
  Status ReadRateGbps(const ConfigNode& v, std::optional<double>& out) const;
  Status ReadPositive(const ConfigNode& v, double max, std::string_view unit, std::optional<double>& out) const;
  // "250ms", "0.2s", "10m", "1h", or a bare integer number of milliseconds; whole milliseconds
  // from `min` to `max`.
  Status ReadDuration(const ConfigNode& v, std::chrono::milliseconds min, std::chrono::milliseconds max,
                      std::chrono::milliseconds& out) const;
  // A byte size: an integer number of bytes, or a number with kB/KiB, MiB, GiB or TiB (all
  // binary, as the kernel's "kB" is). `also` extends the message's list of what is accepted.
  Status ReadBytes(const ConfigNode& v, std::optional<std::uint64_t>& out, std::string_view also = "") const;
  Status ReadString(const ConfigNode& v, std::string& out) const;  // non-empty
  Status ReadOptionalString(const ConfigNode& v, std::optional<std::string>& out) const;
  // Regular expressions (RE2 syntax, common/pattern.h), compiled here so that a bad or too complex
  // one fails the load (and reload), not a scrape.
  Status ReadRegexList(const ConfigNode& v, std::vector<std::string>& out) const;
  Status ReadPort(const ConfigNode& v, std::uint16_t& out) const;
  Status ReadIp(const ConfigNode& v, std::string& out) const;  // an IP literal
  // The whole IP ToS byte (DSCP << 2 | ECN), ECN bits clear.
  Status ReadTos(const ConfigNode& v, std::optional<std::uint8_t>& out) const;
  Status ReadTargets(const ConfigNode& v, std::vector<std::string>& out) const;   // IPs or host names
  Status ReadCidrList(const ConfigNode& v, std::vector<std::string>& out) const;  // IPs or CIDR blocks
  // A path; a relative one is relative to the config file's folder.
  Status ReadPath(const ConfigNode& v, std::string& out) const;

  // ---- messages ----
  Status Fail(const YAML::Mark& mark, const std::string& message) const;
  // "SOURCE:LINE:COL: PATH: message".
  Status FailAt(const ConfigNode& v, const std::string& message) const;
  // A value (or a known name) in a message: a short escaped excerpt, never the whole text.
  static std::string Quote(std::string_view s);
  // What the user wrote, in words, for "got ..." in messages.
  static std::string Describe(const YAML::Node& node);
  // The valid name closest to `key`, if close enough to be a plausible typo.
  static std::optional<std::string> ClosestKey(std::string_view key, const std::vector<std::string>& valid);

 private:
  std::string UnknownKeyMessage(const std::string& name, const std::string& where, const std::vector<Field>& fields,
                                std::string_view noun) const;

  // True when `node` is a null with nothing but blanks and comments after it in text_: the end of a
  // file cut right after "key:" (an explicit "~" or "null" is text, so it never is).
  bool CutAtEnd(const YAML::Node& node) const;

  std::string source_;
  std::string_view text_;
};

}  // namespace rdmahd
