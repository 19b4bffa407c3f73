// Kernel log records, from the live record stream (/dev/kmsg) or from a saved log, into one shape:
// priority, sequence number, time, message and the device the line is about.
//
// /dev/kmsg (Documentation/ABI/testing/dev-kmsg): each read() returns one record,
//   "PRI,SEQ,TS_USEC,FLAGS[,MORE...];MESSAGE\n" then zero or more " KEY=VALUE\n" lines
// where PRI is (facility << 3) | level, TS_USEC the monotonic time in microseconds, FLAGS "-" or
// "c" (a fragment of a continued line; older kernels also "+"), fields after FLAGS are ignored
// (newer kernels add "caller=T123"). In MESSAGE and VALUE the kernel writes every byte below 0x20
// or from 0x7f up, and the backslash itself, as "\xNN" (a newline inside a message is "\x0a");
// the decoder turns those back into bytes. The KEY=VALUE lines carry SUBSYSTEM= and DEVICE= ("+pci:0000:af:00.0" a bus
// device, "n3" a netdev by ifindex, "b8:0"/"c4:1" a block/char device).
//
// Saved logs, one record per line, the format detected once per file (DetectSavedLogFormat):
//   dmesg            "[   12.925245] mlx5_core 0000:03:00.0: ..."    (monotonic seconds)
//   dmesg -r         "<4>[   12.925245] mlx5_core ..."               (priority and monotonic)
//   dmesg -T         "[Fri Aug 29 20:09:52 2025] ath10k_pci ..."    (wall clock, read as UTC)
//   journalctl -k -o short-monotonic  "[   12.925245] host kernel: ..."
//   journalctl -k (short)             "Dec 02 09:56:04 host kernel: ..." (no year: no time kept)
//   a capture of /dev/kmsg            "6,1234,5678,-;..." with " KEY=VALUE" lines after it
//   no prefix at all (dmesg --notime, or copied text): the line is the message
// Lines of a journal from other programs than "kernel" are skipped. A message a tool or a person
// wrapped over two lines stays two records: nothing is joined.
//
// The device a line is about also comes from the message itself: dev_printk writes
// "DRIVER BUS_ID: ", netdev_printk "DRIVER BUS_ID NETDEV: ", ibdev_printk "infiniband IBDEV: ".
//
// Bounds: a record or line longer than kKernelLogMaxRecordBytes is cut there; the message is at most
// kKernelLogMaxMessageBytes after unescaping (the rest dropped, `truncated` set); at most
// kKernelLogMaxDictLines KEY=VALUE lines are read. Pure functions, no I/O, no exceptions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmahd {

inline constexpr std::size_t kKernelLogMaxRecordBytes = 8192;  // the kernel's own record cap
inline constexpr std::size_t kKernelLogMaxMessageBytes = 1024;
inline constexpr std::size_t kKernelLogMaxDictLines = 16;

// The device a record names, from DEVICE= or from the message's prefix. Empty strings when unknown.
struct KernelLogDevice {
  std::string pci_address;  // "0000:af:00.0"
  std::string netdev;       // "ens1f0np0" (from a netdev_printk prefix)
  std::uint32_t ifindex = 0;  // from DEVICE=nN
  std::string ib_device;    // "mlx5_0", "efa_0"
  std::string driver;       // "mlx5_core", "pcieport", "infiniband"
};

struct KernelLogRecord {
  std::optional<std::uint8_t> level;      // 0 (emerg) .. 7 (debug); absent when the format has none
  std::optional<std::uint32_t> facility;  // 0 is the kernel's
  std::optional<std::uint64_t> sequence;  // /dev/kmsg only
  std::optional<std::uint64_t> monotonic_us;
  std::optional<std::int64_t> realtime_s;  // dmesg -T, read as UTC
  bool continuation = false;               // kmsg flag 'c' or '+'
  std::string message;
  bool truncated = false;
  std::string subsystem;  // SUBSYSTEM= of a kmsg record
  KernelLogDevice device;
};

// One record as read() from /dev/kmsg returned it (the trailing newline optional). EINVAL with the
// reason for anything else: no ';', a header field that is not a number, a level or facility out of
// range. The error never quotes the record.
Result<KernelLogRecord> ParseKmsgRecord(std::string_view record);

enum class SavedLogFormat { kDmesg, kDmesgRaw, kDmesgWallClock, kJournalMonotonic, kJournalShort, kKmsg, kPlain };

// "dmesg", "dmesg -r", "dmesg -T", "journalctl -o short-monotonic", "journalctl", "/dev/kmsg",
// "plain".
std::string_view SavedLogFormatName(SavedLogFormat format);

// The format of a saved log from its first lines (say, 64 KiB of it): the first line that looks like
// one of the formats decides; kPlain when none does.
SavedLogFormat DetectSavedLogFormat(std::string_view head);

// One line of a saved log in `format` (without its newline). Absent for a line that is not a kernel
// record of that format: empty, a journal line of another program, a "-- Logs begin" banner, a
// kmsg " KEY=VALUE" line (fold those in with AddKmsgDictLine).
std::optional<KernelLogRecord> ParseSavedLogLine(std::string_view line, SavedLogFormat format);

// True when `line` carries the prefix of `format` itself (the time of dmesg, the priority of
// dmesg -r, journalctl's date and "kernel:", a /dev/kmsg record header): stricter than
// ParseSavedLogLine, which reads a dmesg line without its time as a message. Never for kPlain, whose
// lines have nothing that tells a kernel record from any other text. For a capture that must carry
// kernel records and nothing else.
bool HasSavedLogPrefix(std::string_view line, SavedLogFormat format);

// True when `line` is a kmsg continuation line (" KEY=VALUE"); its SUBSYSTEM= or DEVICE= goes into
// `record`. For saved /dev/kmsg captures, where the record's lines arrive one by one.
bool AddKmsgDictLine(std::string_view line, KernelLogRecord& record);

// Fills record.device from the message's dev_printk / netdev_printk / ibdev_printk prefix, where
// DEVICE= did not already name a PCI address.
void FillDeviceFromMessage(KernelLogRecord& record);

}  // namespace rdmahd
