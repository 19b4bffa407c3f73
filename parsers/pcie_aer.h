// PCIe Advanced Error Reporting counters of one PCI function, as the kernel prints them in
// /sys/bus/pci/devices/BDF/aer_dev_correctable, aer_dev_nonfatal and aer_dev_fatal
// (Documentation/ABI/testing/sysfs-bus-pci-devices-aer). Each file is one "NAME COUNT" line per
// error bit the kernel has a name for, then a "TOTAL_ERR_COR", "TOTAL_ERR_NONFATAL" or
// "TOTAL_ERR_FATAL" line. Kernels up to 5.x print long names with spaces ("Receiver Error 2",
// "RELAY_NUM Rollover 0"); later kernels print the short names the AER log lines use ("RxErr 2").
// CanonicalAerErrorName maps the long names to the short ones, so a counter keeps one name across
// a kernel upgrade.
//
// The decoded file (AerCounts) is data the facts hold: facts/pcie_aer_facts.h.
//
// The decoder does no I/O: the caller reads the file (sysfs gives at most a page) and hands over
// its text. Every line is checked: its length, the name's characters, the count's digits and range.
// Errors say "line N: ..." and what is wrong, never the line itself (the caller prefixes the file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "facts/pcie_aer_facts.h"

namespace rdmahd {

// "correctable", "nonfatal", "fatal": the suffix of the file name.
std::string_view AerSeverityName(AerSeverity severity);
// "TOTAL_ERR_COR", "TOTAL_ERR_NONFATAL", "TOTAL_ERR_FATAL".
std::string_view AerTotalName(AerSeverity severity);

// Limits: a kernel file has at most 32 bits of names; anything past these is not one.
inline constexpr std::size_t kAerMaxLines = 64;
inline constexpr std::size_t kAerMaxNameBytes = 64;

// Parses one aer_dev_* file's text. A trailing newline is optional; blank lines are skipped. An
// error (EINVAL) for: no counter line at all, more than kAerMaxLines lines, a line without a space,
// a name longer than kAerMaxNameBytes or with a byte outside printable ASCII, a count that is not
// a decimal u64, the same name twice, two TOTAL lines. Counts are not checked against the total:
// the kernel's total counts error messages, one of which may set several bits.
Result<AerCounts> ParseAerDevFile(std::string_view text, AerSeverity severity);

// The short name the kernel prints today for an old long name ("Receiver Error" -> "RxErr",
// "RELAY_NUM Rollover" -> "Rollover", "Surprise Down Error" -> "SDES"); any other name is returned
// as it is. Used for the counters above and for the names of AER kernel log lines.
std::string_view CanonicalAerErrorName(std::string_view name);

}  // namespace rdmahd
