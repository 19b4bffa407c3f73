// Kernel log records into NIC health events, by rules that are data: a name, a severity and an RE2
// pattern matched anywhere in the message. The built-in rules (BuiltinKernelEventRules) and rules a
// user adds later run on the same engine, KernelEventClassifier.
//
// A pattern may name what it captures, and the event takes it:
//   (?P<pci>...)    the PCI address ("0000:af:00.0"), when the line names another device than
//                   its prefix (a root port's AER line about the device below it, a probe failure)
//   (?P<dev>...)    an RDMA device ("efa_0")      (?P<netdev>...) a netdev
//   (?P<num>...)    the number: syndrome, error code, module, severity level ("0x10", "-22", "0")
//   (?P<text>...)   the words: the syndrome's meaning, the command, the error type
// Anything not captured comes from the record (DEVICE=, or the dev_printk prefix). A rule whose
// severity is kFromLevel takes it from `num` read as a kernel log level (mlx5's "Health issue
// observed, ..., severity(N)"): 0-3 critical, 4 warning, 5-7 info.
//
// The event (KernelEvent) is data the facts hold: facts/kernel_event.h.
//
// Cost: one pass of an RE2::Set over the message finds the rules that match (linear in the message,
// whatever the number of rules); only the first matching rule, in rule order, is run again for its
// captures. A message that matches no rule costs that one pass. RE2 neither recurses nor
// backtracks, and each pattern's compiled size is capped, so no rule can make a line expensive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "facts/kernel_event.h"
#include "parsers/kernel_log_record.h"

namespace rdmahd {

// "info", "warning", "critical", "from_level".
std::string_view KernelEventSeverityName(KernelEventSeverity severity);

struct KernelEventRule {
  bool operator==(const KernelEventRule&) const = default;
  std::string name;  // the event's name: [a-z0-9_], 1-64 bytes
  KernelEventSeverity severity = KernelEventSeverity::kWarning;
  std::string pattern;  // RE2 syntax, bytes (Latin-1) semantics, at most kMaxPatternBytes
};

// The rules this project ships: mlx5 firmware health (health compromised, fatal error, syndrome,
// recovery aborted, "Health issue observed"), thermal warnings, port module events, command
// failures and timeouts, probe failures, PCIe slot power, PCIe AER (old and new wording, the
// erring device and the device that received it), link up/down, bnxt firmware reset events and EFA
// command failures. Each rule's comment in the .cc file gives the line it is for.
const std::vector<KernelEventRule>& BuiltinKernelEventRules();

class KernelEventClassifier {
 public:
  static constexpr std::size_t kMaxRules = 256;
  static constexpr std::size_t kMaxPatternBytes = 1024;
  static constexpr std::size_t kMaxTextBytes = 128;
  static constexpr std::size_t kExcerptBytes = 200;

  // Compiles `rules` (built-in first, then a user's). EINVAL naming the rule (by position and name)
  // for: a bad name, a name used twice, an empty or too long pattern, a pattern RE2 refuses or that
  // compiles too large, a capture group other than pci, dev, netdev, num, text, or one numbered past
  // 15 (unnamed groups count: (?:...) does not); more than kMaxRules.
  static Result<KernelEventClassifier> Create(std::vector<KernelEventRule> rules);
  // What Create says of `rule` alone (all but the name used twice and the rule count), without
  // naming the rule: for the config loader, which names it by file, line and column.
  static Status CheckRule(const KernelEventRule& rule);

  // The event of the first rule matching `record.message`, or nothing.
  std::optional<KernelEvent> Classify(const KernelLogRecord& record) const;

  std::size_t rule_count() const;

 private:
  struct Compiled;
  explicit KernelEventClassifier(std::shared_ptr<const Compiled> compiled);
  std::shared_ptr<const Compiled> compiled_;  // immutable: a classifier may be shared across threads
};

}  // namespace rdmahd
