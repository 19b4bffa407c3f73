#include "config/config_walker.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <sstream>
#include <utility>

#include "common/duration_text.h"
#include "common/excerpt.h"
#include "common/net_address.h"
#include "common/parse.h"
#include "common/pattern.h"

namespace rdmahd {
namespace {

using std::chrono::milliseconds;

// 800 Gb/s is the fastest port in service (XDR, 800GbE); twice that catches Mb/s-for-Gb/s slips.
constexpr double kMaxRateGbps = 1600;

// A value (or a known name) in a message: a short escaped excerpt, never the whole text.
std::string Quote(std::string_view s) { return QuoteExcerpt(s); }

// What the user wrote, in words, for "got ..." in messages.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return Quote(node.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    default: return "nothing";
  }
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Optimal-string-alignment edit distance: Levenshtein where swapping two adjacent letters
// ("prioirty") costs one edit, the most common typo.
std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The valid key closest to `key`, if close enough to be a plausible typo (about one edit per three
// letters, case ignored).
std::optional<std::string> ClosestKey(std::string_view key, const std::vector<std::string>& valid) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  const std::string lower = ToLower(key);
  for (const auto& candidate : valid) {
    std::size_t distance = EditDistance(lower, ToLower(candidate));
    std::size_t allowed = std::max<std::size_t>(1, candidate.size() / 3);
    if (distance <= allowed && (!best || distance < best_distance)) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}



}  // namespace

std::string ConfigPosition(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

std::string ConfigWalker::Quote(std::string_view s) { return rdmahd::Quote(s); }
std::string ConfigWalker::Describe(const YAML::Node& node) { return rdmahd::Describe(node); }
std::optional<std::string> ConfigWalker::ClosestKey(std::string_view key, const std::vector<std::string>& valid) {
  return rdmahd::ClosestKey(key, valid);
}

// A byte size: an integer number of bytes, or a number with kB/KiB, MiB, GiB or TiB (all
// binary, as the kernel's "kB" is).
Status ConfigWalker::ReadBytes(const ConfigNode& v, std::optional<std::uint64_t>& out, std::string_view also) const {
  if (v.node.IsNull()) return Status::Ok();
  const std::string message = "must be a size in bytes (67108864, or with kB, KiB, MiB, GiB, TiB: 64MiB)" +
                              std::string(also) + ", got " + Describe(v.node);
  if (!v.node.IsScalar()) return FailAt(v, message);
  std::string_view text = Trim(v.node.Scalar());
  std::uint64_t unit = 1;
  for (const auto& [suffix, factor] : std::initializer_list<std::pair<std::string_view, std::uint64_t>>{
           {"kB", 1ull << 10}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40}}) {
    if (text.ends_with(suffix)) {
      unit = factor;
      text = Trim(text.substr(0, text.size() - suffix.size()));
      break;
    }
  }
  std::optional<std::uint64_t> n = ParseU64(text);
  if (!n || *n == 0 || *n > UINT64_MAX / unit) return FailAt(v, message);
  out = *n * unit;
  return Status::Ok();
}

// ---- structure ------------------------------------------------------------------------------

// Visits every key of a map node in file order: rejects non-scalar, unknown (with the closest
// valid key) and repeated keys, and hands each value to its handler. A null node (a section
// with everything commented out) is an empty map.
Status ConfigWalker::VisitMap(const ConfigNode& v, const std::vector<Field>& fields, std::string_view noun) const {
  if (v.node.IsNull()) return Status::Ok();
  if (!v.node.IsMap()) return FailAt(v, "must be a map of keys, got " + Describe(v.node));
  const std::string where = v.path.empty() ? "at the top level" : "in " + v.path;
  std::vector<std::pair<std::string, YAML::Mark>> seen;
  for (auto it = v.node.begin(); it != v.node.end(); ++it) {
    const YAML::Node key = it->first;  // a handle copy: it-> yields a temporary proxy
    if (!key.IsScalar()) {
      return Fail(key.Mark(), "keys must be plain names, got " + Describe(key) + " " + where);
    }
    const std::string& name = key.Scalar();
    auto field = std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == name; });
    if (field == fields.end()) return Fail(key.Mark(), UnknownKeyMessage(name, where, fields, noun));
    auto earlier = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == name; });
    if (earlier != seen.end()) {
      return Fail(key.Mark(), "duplicate " + std::string(noun) + " " + Quote(name) + " " + where +
                                  " (first set at line " + std::to_string(earlier->second.line + 1) + ")");
    }
    seen.emplace_back(name, key.Mark());
    const YAML::Node value = it->second;
    ConfigNode child{value, v.path.empty() ? name : v.path + "." + name,
                  value.IsNull() ? key.Mark() : value.Mark()};
    if (CutAtEnd(value)) {
      return FailAt(child, "has no value, and nothing follows it in the file (a file cut mid-write?); write " +
                               Quote(name + ": ~") + " to keep the built-in default on purpose");
    }
    if (Status st = field->handle(child); !st.ok()) return st;
  }
  return Status::Ok();
}

bool ConfigWalker::CutAtEnd(const YAML::Node& node) const {
  if (text_.empty() || !node.IsNull()) return false;
  std::string_view text = text_;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // yaml-cpp counts from after a BOM
  // A null's mark is where its value would start: an explicit "~" or "null", or the next token
  // (the file's end when none follows).
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.pos < 0 || static_cast<std::size_t>(mark.pos) > text.size()) return false;
  for (std::size_t i = static_cast<std::size_t>(mark.pos); i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    if (c != '#') return false;  // a token: here only after blanks, so '#' starts a comment
    while (i < text.size() && text[i] != '\n') ++i;
  }
  return true;
}

std::string ConfigWalker::UnknownKeyMessage(const std::string& name, const std::string& where,
                              const std::vector<Field>& fields, std::string_view noun) const {
  std::vector<std::string> valid;
  std::size_t longest = 0;
  for (const auto& f : fields) {
    valid.push_back(f.key);
    longest = std::max(longest, f.key.size());
  }
  // Quoted only when it could be a mistyped key: a name no longer than the longest valid key
  // plus a few typed letters. A shadow line or a hash is described, not shown.
  const std::size_t shown = std::min(kExcerptBytes, valid.empty() ? kExcerptBytes : longest + 3);
  std::string message = "unknown " + std::string(noun) + " " + DescribeKey(name, shown) + " " + where;
  // (A key far longer than any valid one is no typo of one; nor worth the edit distance.)
  if (auto suggestion = name.size() <= 2 * longest ? ClosestKey(name, valid) : std::nullopt) {
    return message + " (did you mean " + Quote(*suggestion) + "?)";
  }
  if (valid.empty()) return message + " (none are known)";
  return message + " (expected one of: " + Join(valid) + ")";
}

// Visits every item of a list node. Null is an empty list.
Status ConfigWalker::VisitList(const ConfigNode& v, std::string_view expected, const Handler& handle) const {
  if (v.node.IsNull()) return Status::Ok();
  if (!v.node.IsSequence()) {
    return FailAt(v, "must be " + std::string(expected) + ", got " + Describe(v.node));
  }
  for (std::size_t i = 0; i < v.node.size(); ++i) {
    const YAML::Node item = v.node[i];
    ConfigNode child{item, v.path + "[" + std::to_string(i) + "]", item.IsNull() ? v.mark : item.Mark()};
    if (CutAtEnd(item)) {
      return FailAt(child, "is an empty item, and nothing follows it in the file (a file cut mid-write?); "
                           "complete the item or remove its \"-\"");
    }
    if (Status st = handle(child); !st.ok()) return st;
  }
  return Status::Ok();
}

// ---- leaves ---------------------------------------------------------------------------------
// A null value ("key:" with nothing after it) leaves the built-in default in place.

// True/false only: YAML 1.1's yes/no/on/off are ambiguous between parsers and never needed here.
Status ConfigWalker::ReadBool(const ConfigNode& v, bool& out) const {
  if (v.node.IsNull()) return Status::Ok();
  std::string text = v.node.IsScalar() ? ToLower(v.node.Scalar()) : "";
  if (text == "true") {
    out = true;
  } else if (text == "false") {
    out = false;
  } else {
    return FailAt(v, "must be true or false, got " + Describe(v.node));
  }
  return Status::Ok();
}

Status ConfigWalker::ReadInt(const ConfigNode& v, int lo, int hi, std::optional<int>& out,
               std::string_view hint) const {
  if (v.node.IsNull()) return Status::Ok();
  std::optional<std::int64_t> n = v.node.IsScalar() ? ParseI64(v.node.Scalar()) : std::nullopt;
  if (!n || *n < lo || *n > hi) {
    return FailAt(v, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                         ", got " + Describe(v.node) + std::string(hint));
  }
  out = static_cast<int>(*n);
  return Status::Ok();
}


// A positive integer (a count, or bytes), up to 2^64 - 1.
Status ConfigWalker::ReadCount(const ConfigNode& v, std::optional<std::uint64_t>& out) const {
  if (v.node.IsNull()) return Status::Ok();
  std::optional<std::uint64_t> n = v.node.IsScalar() ? ParseU64(Trim(v.node.Scalar())) : std::nullopt;
  if (!n || *n == 0) return FailAt(v, "must be a positive integer, got " + Describe(v.node));
  out = *n;
  return Status::Ok();
}


Status ConfigWalker::ReadRateGbps(const ConfigNode& v, std::optional<double>& out) const {
  if (v.node.IsNull()) return Status::Ok();
  std::optional<double> rate = v.node.IsScalar() ? ParseDouble(v.node.Scalar()) : std::nullopt;
  if (!rate || !std::isfinite(*rate) || *rate <= 0 || *rate > kMaxRateGbps) {
    return FailAt(v, "must be a rate in Gb/s, greater than 0 and at most " +
                         std::to_string(static_cast<int>(kMaxRateGbps)) + ", got " + Describe(v.node));
  }
  out = *rate;
  return Status::Ok();
}


// "250ms", "0.2s", or a bare integer number of milliseconds; whole milliseconds from 0 to `max`.
Status ConfigWalker::ReadDuration(const ConfigNode& v, milliseconds min, milliseconds max, milliseconds& out) const {
  if (v.node.IsNull()) return Status::Ok();
  const std::string bounds = "must be a duration from " + FormatDuration(min) + " to " + FormatDuration(max) +
                             " (\"200ms\", \"0.2s\" or an integer number of milliseconds), got " +
                             Describe(v.node);
  if (!v.node.IsScalar()) return FailAt(v, bounds);
  std::string_view text = Trim(v.node.Scalar());
  std::optional<double> value;
  if (auto integer = ParseU64(text)) {
    value = static_cast<double>(*integer);
  } else if (text.ends_with("ms")) {
    value = ParseDouble(text.substr(0, text.size() - 2));
  } else if (text.ends_with("s")) {
    value = ParseDouble(text.substr(0, text.size() - 1));
    if (value) *value *= 1000;
  } else if (text.ends_with("m") || text.ends_with("h")) {  // peer intervals: "10m", "1h"
    value = ParseDouble(text.substr(0, text.size() - 1));
    if (value) *value *= text.back() == 'm' ? 60'000 : 3'600'000;
  }
  if (!value || !std::isfinite(*value) || *value < static_cast<double>(min.count()) ||
      *value > static_cast<double>(max.count())) {
    return FailAt(v, bounds);
  }
  double whole = std::round(*value);
  if (std::fabs(*value - whole) > 1e-6) {
    return FailAt(v, "must be a whole number of milliseconds, got " + Describe(v.node));
  }
  out = milliseconds(static_cast<std::int64_t>(whole));
  return Status::Ok();
}

Status ConfigWalker::ReadU32(const ConfigNode& v, std::uint32_t lo, std::uint32_t hi, std::uint32_t& out) const {
  if (v.node.IsNull()) return Status::Ok();
  std::optional<std::uint64_t> n = v.node.IsScalar() ? ParseU64(Trim(v.node.Scalar())) : std::nullopt;
  if (!n || *n < lo || *n > hi) {
    return FailAt(v, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                         ", got " + Describe(v.node));
  }
  out = static_cast<std::uint32_t>(*n);
  return Status::Ok();
}

Status ConfigWalker::ReadPort(const ConfigNode& v, std::uint16_t& out) const {
  std::uint32_t port = out;
  Status st = ReadU32(v, 1, 65535, port);
  if (st.ok()) out = static_cast<std::uint16_t>(port);
  return st;
}

Status ConfigWalker::ReadIp(const ConfigNode& v, std::string& out) const {
  if (v.node.IsNull()) return Status::Ok();
  if (!v.node.IsScalar() || !IsIpLiteral(v.node.Scalar())) {
    return FailAt(v, "must be an IP address of this node (10.0.0.1, fd00::1), got " + Describe(v.node));
  }
  out = v.node.Scalar();
  return Status::Ok();
}

// The whole IP ToS byte (DSCP << 2 | ECN), as rdma_set_option(RDMA_OPTION_ID_TOS) and perftest's
// -T take it. The ECN bits are the NIC's to set.
Status ConfigWalker::ReadTos(const ConfigNode& v, std::optional<std::uint8_t>& out) const {
  if (v.node.IsNull()) return Status::Ok();
  std::optional<int> tos;
  if (Status st = ReadInt(v, 0, 255, tos); !st.ok()) return st;
  if (*tos % 4 != 0) {
    return FailAt(v, "must be a ToS byte with the ECN bits clear (DSCP << 2: a multiple of 4, e.g. 106 -> 104 "
                     "for DSCP 26), got " + Describe(v.node));
  }
  out = static_cast<std::uint8_t>(*tos);
  return Status::Ok();
}

Status ConfigWalker::ReadPositive(const ConfigNode& v, double max, std::string_view unit, std::optional<double>& out) const {
  if (v.node.IsNull()) return Status::Ok();
  std::optional<double> x = v.node.IsScalar() ? ParseDouble(v.node.Scalar()) : std::nullopt;
  if (!x || !std::isfinite(*x) || *x <= 0 || *x > max) {
    std::ostringstream bound;
    bound << max;
    return FailAt(v, "must be a number of " + std::string(unit) + ", greater than 0 and at most " + bound.str() +
                         ", got " + Describe(v.node));
  }
  out = *x;
  return Status::Ok();
}

Status ConfigWalker::ReadTargets(const ConfigNode& v, std::vector<std::string>& out) const {
  if (v.node.IsScalar()) {
    return FailAt(v, "must be a list of IP addresses or host names, got " + Describe(v.node) + " (write [" +
                         Quote(v.node.Scalar()) + "] for a list of one)");
  }
  std::vector<std::string> targets;
  std::vector<YAML::Mark> marks;
  Status st = VisitList(v, "a list of IP addresses or host names", [&](const ConfigNode& item) {
    if (!item.node.IsScalar()) return FailAt(item, "must be an IP address or host name, got " + Describe(item.node));
    const std::string& target = item.node.Scalar();
    if (auto why = CheckPeerTarget(target)) return FailAt(item, Quote(target) + " is " + *why);
    auto dup = std::find(targets.begin(), targets.end(), target);
    if (dup != targets.end()) {
      return FailAt(item, Quote(target) + " is listed twice (first at line " +
                              std::to_string(marks[static_cast<std::size_t>(dup - targets.begin())].line + 1) + ")");
    }
    targets.push_back(target);
    marks.push_back(item.mark);
    return Status::Ok();
  });
  if (st.ok() && !v.node.IsNull()) out = std::move(targets);
  return st;
}

Status ConfigWalker::ReadCidrList(const ConfigNode& v, std::vector<std::string>& out) const {
  if (v.node.IsScalar()) {
    return FailAt(v, "must be a list of IP addresses or CIDR blocks, got " + Describe(v.node) + " (write [" +
                         Quote(v.node.Scalar()) + "] for a list of one)");
  }
  std::vector<std::string> blocks;
  Status st = VisitList(v, "a list of IP addresses or CIDR blocks", [&](const ConfigNode& item) {
    if (!item.node.IsScalar()) return FailAt(item, "must be an IP address or CIDR block, got " + Describe(item.node));
    if (auto why = CheckIpOrCidr(item.node.Scalar())) return FailAt(item, Quote(item.node.Scalar()) + ": " + *why);
    blocks.push_back(item.node.Scalar());
    return Status::Ok();
  });
  if (st.ok() && !v.node.IsNull()) out = std::move(blocks);
  return st;
}

// A path; a relative one is relative to the config file's folder (as Prometheus' file_sd does),
// so a config and its targets file can move together.
Status ConfigWalker::ReadPath(const ConfigNode& v, std::string& out) const {
  std::string path;
  if (Status st = ReadString(v, path); !st.ok() || path.empty()) return st;
  if (path.front() != '/') {
    const auto slash = source_.rfind('/');
    if (slash != std::string::npos) path = source_.substr(0, slash + 1) + path;
  }
  out = std::move(path);
  return Status::Ok();
}

Status ConfigWalker::ReadString(const ConfigNode& v, std::string& out) const {
  if (v.node.IsNull()) return Status::Ok();
  if (!v.node.IsScalar() || v.node.Scalar().empty()) {
    return FailAt(v, "must be a non-empty string, got " + Describe(v.node));
  }
  out = v.node.Scalar();
  return Status::Ok();
}

Status ConfigWalker::ReadOptionalString(const ConfigNode& v, std::optional<std::string>& out) const {
  if (v.node.IsNull()) return Status::Ok();
  std::string text;
  if (Status st = ReadString(v, text); !st.ok()) return st;
  out = std::move(text);
  return Status::Ok();
}


// Regular expressions (RE2 syntax, common/pattern.h), compiled here so that a bad or too complex
// one fails the load (and reload), not a scrape.
Status ConfigWalker::ReadRegexList(const ConfigNode& v, std::vector<std::string>& out) const {
  if (v.node.IsScalar()) {
    return FailAt(v, "must be a list of regular expressions, got " + Describe(v.node) + " (write [" +
                         Quote(v.node.Scalar()) + "] for a list of one)");
  }
  std::vector<std::string> patterns;
  Status st = VisitList(v, "a list of regular expressions", [&](const ConfigNode& item) {
    if (!item.node.IsScalar() || item.node.Scalar().empty()) {
      return FailAt(item, "must be a non-empty regular expression, got " + Describe(item.node));
    }
    const std::string& pattern = item.node.Scalar();
    if (Result<Pattern> compiled = Pattern::Compile(pattern); !compiled.ok()) {
      return FailAt(item, "invalid regular expression " + Quote(pattern) + ": " + compiled.error().message);
    }
    patterns.push_back(pattern);
    return Status::Ok();
  });
  if (st.ok() && !v.node.IsNull()) out = std::move(patterns);
  return st;
}

// ---- messages -------------------------------------------------------------------------------

Status ConfigWalker::Fail(const YAML::Mark& mark, const std::string& message) const {
  return Error{ConfigPosition(source_, mark) + ": " + message};
}
Status ConfigWalker::FailAt(const ConfigNode& v, const std::string& message) const {
  return Fail(v.mark, v.path.empty() ? message : v.path + ": " + message);
}

}  // namespace rdmahd
