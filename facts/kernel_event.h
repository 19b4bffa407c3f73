// A NIC health event the kernel logged, as parsers/kernel_event_rules.h classifies a kernel log
// record: the rule's name and severity, the device it is about and what the rule captured. Data
// only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace rdmahd {

enum class KernelEventSeverity { kInfo, kWarning, kCritical, kFromLevel };

struct KernelEvent {
  std::string name;
  KernelEventSeverity severity = KernelEventSeverity::kInfo;  // never kFromLevel
  std::string pci_address, ib_device, netdev, driver;
  std::string number;   // as printed: "0x10", "-22", "1"
  std::string text;     // at most KernelEventClassifier::kMaxTextBytes, as printed (printable ASCII; anything else '?')
  std::string excerpt;  // the message, quoted and escaped (QuoteExcerpt), at most KernelEventClassifier::kExcerptBytes
  std::optional<std::uint64_t> monotonic_us, sequence;
  std::optional<std::int64_t> realtime_s;
};

}  // namespace rdmahd
