#include "parsers/pcie_aer.h"

#include <array>
#include <utility>

#include "common/parse.h"

namespace rdmahd {
namespace {

// Old long name -> today's short name, from the kernel's AER string tables before and after the
// rename (both are ABI: the sysfs files and the log lines print them).
constexpr std::array<std::pair<std::string_view, std::string_view>, 24> kOldToShort{{
    {"Receiver Error", "RxErr"},
    {"Bad TLP", "BadTLP"},
    {"Bad DLLP", "BadDLLP"},
    {"RELAY_NUM Rollover", "Rollover"},
    {"Replay Timer Timeout", "Timeout"},
    {"Advisory Non-Fatal", "NonFatalErr"},
    {"Corrected Internal Error", "CorrIntErr"},
    {"Header Log Overflow", "HeaderOF"},
    {"Data Link Protocol", "DLP"},
    {"Surprise Down Error", "SDES"},
    {"Poisoned TLP", "TLP"},
    {"Flow Control Protocol", "FCP"},
    {"Completion Timeout", "CmpltTO"},
    {"Completer Abort", "CmpltAbrt"},
    {"Unexpected Completion", "UnxCmplt"},
    {"Receiver Overflow", "RxOF"},
    {"Malformed TLP", "MalfTLP"},
    {"Unsupported Request", "UnsupReq"},
    {"ACS Violation", "ACSViol"},
    {"Uncorrectable Internal Error", "UncorrIntErr"},
    {"MC Blocked TLP", "BlockedTLP"},
    {"AtomicOp Egress Blocked", "AtomicOpBlocked"},
    {"TLP Prefix Blocked Error", "TLPBlockedErr"},
    {"Undefined", "Undefined"},
}};

Error LineError(std::size_t line, const std::string& what) {
  return Error{"line " + std::to_string(line) + ": " + what, EINVAL};
}

bool PrintableName(std::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7F) return false;
  }
  return true;
}

// The severity whose TOTAL line this is, if it is one.
std::optional<AerSeverity> TotalSeverity(std::string_view name) {
  for (AerSeverity s : {AerSeverity::kCorrectable, AerSeverity::kNonFatal, AerSeverity::kFatal}) {
    if (name == AerTotalName(s)) return s;
  }
  return std::nullopt;
}

}  // namespace

std::string_view AerSeverityName(AerSeverity severity) {
  switch (severity) {
    case AerSeverity::kCorrectable: return "correctable";
    case AerSeverity::kNonFatal: return "nonfatal";
    case AerSeverity::kFatal: return "fatal";
  }
  return "unknown";
}

std::string_view AerTotalName(AerSeverity severity) {
  switch (severity) {
    case AerSeverity::kCorrectable: return "TOTAL_ERR_COR";
    case AerSeverity::kNonFatal: return "TOTAL_ERR_NONFATAL";
    case AerSeverity::kFatal: return "TOTAL_ERR_FATAL";
  }
  return "TOTAL_ERR_UNKNOWN";
}

std::string_view CanonicalAerErrorName(std::string_view name) {
  for (const auto& [old_name, short_name] : kOldToShort) {
    if (name == old_name) return short_name;
  }
  return name;
}

Result<AerCounts> ParseAerDevFile(std::string_view text, AerSeverity severity) {
  AerCounts out;
  out.severity = severity;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (line_no > kAerMaxLines) {
      return LineError(line_no, "more than " + std::to_string(kAerMaxLines) + " lines: not an aer_dev file");
    }
    line = Trim(line);
    if (line.empty()) continue;
    const std::size_t space = line.rfind(' ');
    if (space == std::string_view::npos) return LineError(line_no, "no \"NAME COUNT\" (no space)");
    const std::string_view name = Trim(line.substr(0, space));
    const std::string_view count_text = line.substr(space + 1);
    if (name.empty()) return LineError(line_no, "no name before the count");
    if (name.size() > kAerMaxNameBytes) {
      return LineError(line_no, "name of " + std::to_string(name.size()) + " bytes, more than " +
                                    std::to_string(kAerMaxNameBytes));
    }
    if (!PrintableName(name)) return LineError(line_no, "name has a byte outside printable ASCII");
    const auto count = ParseU64(count_text);
    if (!count) return LineError(line_no, "count is not a decimal number below 2^64");
    if (auto total_of = TotalSeverity(name)) {
      if (out.total) return LineError(line_no, "a second TOTAL_ERR_* line");
      out.total = *count;
      out.total_mislabeled = *total_of != severity;
      continue;
    }
    for (const AerCounter& c : out.counters) {
      if (c.name == name) return LineError(line_no, "the same error name twice");
    }
    out.counters.push_back({std::string(name), std::string(CanonicalAerErrorName(name)), *count});
  }
  if (out.counters.empty() && !out.total) return Error{"no \"NAME COUNT\" line: empty or not an aer_dev file", EINVAL};
  return out;
}

}  // namespace rdmahd
