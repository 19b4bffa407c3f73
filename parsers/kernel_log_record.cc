#include "parsers/kernel_log_record.h"

#include <algorithm>
#include <array>
#include <ctime>

#include "common/parse.h"

namespace rdmahd {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

// Whole-string unsigned decimal, no sign, no spaces, no overflow.
std::optional<std::uint64_t> Decimal(std::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
  }
  return ParseU64(s);
}

// The kernel's "\xNN" escapes back into bytes, at most `max` bytes of output.
std::string Unescape(std::string_view in, std::size_t max, bool& truncated) {
  std::string out;
  out.reserve(std::min(in.size(), max));
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (out.size() >= max) {
      truncated = true;
      break;
    }
    if (in[i] == '\\' && i + 3 < in.size() && in[i + 1] == 'x' && IsHex(in[i + 2]) && IsHex(in[i + 3])) {
      out += static_cast<char>(HexValue(in[i + 2]) * 16 + HexValue(in[i + 3]));
      i += 3;
    } else {
      out += in[i];
    }
  }
  return out;
}

std::string Capped(std::string_view in, bool& truncated) {
  if (in.size() > kKernelLogMaxMessageBytes) {
    truncated = true;
    in = in.substr(0, kKernelLogMaxMessageBytes);
  }
  return std::string(in);
}

// A PCI address "DDDD:BB:DD.F" (a VMD domain may have 5 hex digits) at the start of `s`: its length.
std::size_t PciAddressLength(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && i < 5 && IsHex(s[i])) ++i;
  if (i < 4 || i >= s.size() || s[i] != ':') return 0;
  const std::size_t need = i + 8;  // ":BB:DD.F"
  if (s.size() < need) return 0;
  if (!IsHex(s[i + 1]) || !IsHex(s[i + 2]) || s[i + 3] != ':' || !IsHex(s[i + 4]) || !IsHex(s[i + 5]) ||
      s[i + 6] != '.' || s[i + 7] < '0' || s[i + 7] > '7') {
    return 0;
  }
  return need;
}

bool IsNameChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' || c == '.';
}

// A token of name characters at the start of `s`: its length (0 if none, or longer than a name).
std::size_t NameLength(std::string_view s, std::size_t max = 64) {
  std::size_t i = 0;
  while (i < s.size() && i <= max && IsNameChar(s[i])) ++i;
  return i > max ? 0 : i;
}

// "[   12.925245]" at the start of `s`: microseconds and the length through ']'.
std::optional<std::pair<std::uint64_t, std::size_t>> BracketSeconds(std::string_view s) {
  if (s.empty() || s[0] != '[') return std::nullopt;
  std::size_t i = 1;
  while (i < s.size() && s[i] == ' ') ++i;
  const std::size_t int_start = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i == int_start || i - int_start > 12 || i >= s.size() || s[i] != '.') return std::nullopt;
  const auto seconds = Decimal(s.substr(int_start, i - int_start));
  ++i;
  const std::size_t frac_start = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  const std::size_t frac_digits = i - frac_start;
  if (frac_digits == 0 || frac_digits > 9 || i >= s.size() || s[i] != ']' || !seconds) return std::nullopt;
  std::uint64_t frac = *Decimal(s.substr(frac_start, frac_digits));
  for (std::size_t d = frac_digits; d < 6; ++d) frac *= 10;
  for (std::size_t d = 6; d < frac_digits; ++d) frac /= 10;
  return std::make_pair(*seconds * 1000000 + frac, i + 1);
}

constexpr std::array<std::string_view, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

int MonthIndex(std::string_view m) {
  for (std::size_t i = 0; i < kMonths.size(); ++i) {
    if (kMonths[i] == m) return static_cast<int>(i);
  }
  return -1;
}

// "hh:mm:ss" at `s`.
bool ClockAt(std::string_view s, int& h, int& m, int& sec) {
  if (s.size() < 8 || !IsDigit(s[0]) || !IsDigit(s[1]) || s[2] != ':' || !IsDigit(s[3]) || !IsDigit(s[4]) ||
      s[5] != ':' || !IsDigit(s[6]) || !IsDigit(s[7])) {
    return false;
  }
  h = (s[0] - '0') * 10 + (s[1] - '0');
  m = (s[3] - '0') * 10 + (s[4] - '0');
  sec = (s[6] - '0') * 10 + (s[7] - '0');
  return h < 24 && m < 60 && sec < 61;
}

// "Mon dd hh:mm:ss" (day space-padded) at `s`: its length, or 0.
std::size_t SyslogDateLength(std::string_view s) {
  if (s.size() < 15 || MonthIndex(s.substr(0, 3)) < 0 || s[3] != ' ') return 0;
  if (!(s[4] == ' ' || IsDigit(s[4])) || !IsDigit(s[5]) || s[6] != ' ') return 0;
  int h, m, sec;
  return ClockAt(s.substr(7), h, m, sec) ? 15 : 0;
}

// "[Www Mmm dd hh:mm:ss yyyy]" at the start of `s`: seconds since the epoch (as UTC) and length.
std::optional<std::pair<std::int64_t, std::size_t>> BracketWallClock(std::string_view s) {
  // "[Fri Aug 29 20:09:52 2025]" is 26 bytes.
  if (s.size() < 26 || s[0] != '[' || s[4] != ' ' || s[8] != ' ' || s[11] != ' ' || s[20] != ' ' || s[25] != ']') {
    return std::nullopt;
  }
  const int month = MonthIndex(s.substr(5, 3));
  if (month < 0 || !(s[9] == ' ' || IsDigit(s[9])) || !IsDigit(s[10])) return std::nullopt;
  int h, m, sec;
  if (!ClockAt(s.substr(12), h, m, sec)) return std::nullopt;
  const auto year = Decimal(s.substr(21, 4));
  if (!year) return std::nullopt;
  std::tm tm{};
  tm.tm_year = static_cast<int>(*year) - 1900;
  tm.tm_mon = month;
  tm.tm_mday = (s[9] == ' ' ? 0 : (s[9] - '0') * 10) + (s[10] - '0');
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  if (tm.tm_mday < 1 || tm.tm_mday > 31) return std::nullopt;
  return std::make_pair(static_cast<std::int64_t>(timegm(&tm)), std::size_t{26});
}

// "HOST IDENT: " at the start of `s` (a journal line after its date): the rest when IDENT is the
// kernel's, nullopt otherwise.
std::optional<std::string_view> JournalKernelMessage(std::string_view s) {
  const std::size_t host_end = s.find(' ');
  if (host_end == std::string_view::npos || host_end == 0) return std::nullopt;
  std::string_view rest = s.substr(host_end + 1);
  constexpr std::string_view kKernel = "kernel: ";
  if (rest.starts_with(kKernel)) return rest.substr(kKernel.size());
  if (rest == "kernel:") return std::string_view{};
  return std::nullopt;
}

bool IsKmsgHeader(std::string_view line) {
  // "PRI,SEQ,TS,FLAGS;" with digits in the first three.
  std::size_t i = 0;
  for (int field = 0; field < 3; ++field) {
    const std::size_t start = i;
    while (i < line.size() && IsDigit(line[i])) ++i;
    if (i == start || i >= line.size() || line[i] != ',') return false;
    ++i;
  }
  return line.find(';', i) != std::string_view::npos;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

bool AddKmsgDictLine(std::string_view line, KernelLogRecord& record) {
  if (line.empty() || line[0] != ' ') return false;
  line.remove_prefix(1);
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  const std::size_t eq = line.find('=');
  if (eq == std::string_view::npos) return true;  // a continuation line, but nothing we read
  const std::string_view key = line.substr(0, eq);
  bool truncated = false;
  const std::string value = Unescape(line.substr(eq + 1), 256, truncated);
  if (key == "SUBSYSTEM") {
    record.subsystem = value;
  } else if (key == "DEVICE" && !value.empty()) {
    const std::string_view v = value;
    if (v[0] == '+') {  // +SUBSYSTEM:NAME
      const std::size_t colon = v.find(':');
      if (colon != std::string_view::npos) {
        const std::string_view subsystem = v.substr(1, colon - 1), name = v.substr(colon + 1);
        if (subsystem == "pci" && PciAddressLength(name) == name.size()) record.device.pci_address = name;
        if (subsystem == "infiniband" && NameLength(name) == name.size()) record.device.ib_device = name;
      }
    } else if (v[0] == 'n') {
      if (auto ifindex = Decimal(v.substr(1)); ifindex && *ifindex <= 0xFFFFFFFFu) {
        record.device.ifindex = static_cast<std::uint32_t>(*ifindex);
      }
    }
  }
  return true;
}

void FillDeviceFromMessage(KernelLogRecord& record) {
  std::string_view m = record.message;
  const std::size_t driver_len = NameLength(m);
  if (driver_len == 0 || driver_len >= m.size()) return;
  const std::string_view driver = m.substr(0, driver_len);
  if (m[driver_len] == ':') {  // pr_fmt("DRIVER: "): the driver only
    if (record.device.driver.empty()) record.device.driver = driver;
    return;
  }
  if (m[driver_len] != ' ') return;
  const std::string_view rest = m.substr(driver_len + 1);
  if (const std::size_t pci = PciAddressLength(rest); pci > 0 && pci < rest.size()) {
    if (rest[pci] == ':') {  // dev_printk
      if (record.device.pci_address.empty()) record.device.pci_address = rest.substr(0, pci);
      record.device.driver = driver;
    } else if (rest[pci] == ' ') {  // netdev_printk: "DRIVER BUS_ID NETDEV: "
      const std::string_view after = rest.substr(pci + 1);
      const std::size_t n = NameLength(after, 15);
      if (n > 0 && n < after.size() && after[n] == ':') {
        if (record.device.pci_address.empty()) record.device.pci_address = rest.substr(0, pci);
        record.device.netdev = after.substr(0, n);
        record.device.driver = driver;
      }
    }
    return;
  }
  if (driver == "infiniband") {  // ibdev_printk: "infiniband IBDEV: "
    const std::size_t n = NameLength(rest);
    if (n > 0 && n < rest.size() && rest[n] == ':') {
      if (record.device.ib_device.empty()) record.device.ib_device = rest.substr(0, n);
      record.device.driver = driver;
    }
  }
}

Result<KernelLogRecord> ParseKmsgRecord(std::string_view record) {
  if (record.size() > kKernelLogMaxRecordBytes) record = record.substr(0, kKernelLogMaxRecordBytes);
  const std::size_t nl = record.find('\n');
  const std::string_view first = record.substr(0, nl);
  const std::size_t semi = first.find(';');
  if (semi == std::string_view::npos) return Error{"kmsg record without ';' after its header", EINVAL};
  const std::string_view header = first.substr(0, semi);
  std::string_view fields[4];
  std::size_t count = 0, start = 0;
  while (count < 4) {
    const std::size_t comma = header.find(',', start);
    fields[count++] = header.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (count < 4) return Error{"kmsg record header has " + std::to_string(count) + " fields, 4 needed", EINVAL};
  const auto pri = Decimal(fields[0]);
  const auto seq = Decimal(fields[1]);
  const auto ts = Decimal(fields[2]);
  if (!pri || !seq || !ts) return Error{"kmsg record header: priority, sequence or time is not a number", EINVAL};
  if (*pri > 0x7FF) return Error{"kmsg record priority " + std::to_string(*pri) + " above 2047", EINVAL};
  KernelLogRecord out;
  out.level = static_cast<std::uint8_t>(*pri & 7);
  out.facility = static_cast<std::uint32_t>(*pri >> 3);
  out.sequence = *seq;
  out.monotonic_us = *ts;
  const std::string_view flags = fields[3];
  out.continuation = flags.find('c') != std::string_view::npos || flags.find('+') != std::string_view::npos;
  out.message = Unescape(first.substr(semi + 1), kKernelLogMaxMessageBytes, out.truncated);
  if (nl != std::string_view::npos) {
    std::string_view rest = record.substr(nl + 1);
    for (std::size_t lines = 0; !rest.empty() && lines < kKernelLogMaxDictLines; ++lines) {
      const std::size_t end = rest.find('\n');
      AddKmsgDictLine(rest.substr(0, end), out);
      if (end == std::string_view::npos) break;
      rest = rest.substr(end + 1);
    }
  }
  FillDeviceFromMessage(out);
  return out;
}

std::string_view SavedLogFormatName(SavedLogFormat format) {
  switch (format) {
    case SavedLogFormat::kDmesg: return "dmesg";
    case SavedLogFormat::kDmesgRaw: return "dmesg -r";
    case SavedLogFormat::kDmesgWallClock: return "dmesg -T";
    case SavedLogFormat::kJournalMonotonic: return "journalctl -o short-monotonic";
    case SavedLogFormat::kJournalShort: return "journalctl";
    case SavedLogFormat::kKmsg: return "/dev/kmsg";
    case SavedLogFormat::kPlain: return "plain";
  }
  return "plain";
}

SavedLogFormat DetectSavedLogFormat(std::string_view head) {
  while (!head.empty()) {
    const std::size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head = nl == std::string_view::npos ? std::string_view{} : head.substr(nl + 1);
    if (line.size() > kKernelLogMaxRecordBytes) line = line.substr(0, kKernelLogMaxRecordBytes);
    if (line.empty() || line.starts_with("-- ")) continue;
    if (IsKmsgHeader(line)) return SavedLogFormat::kKmsg;
    if (line[0] == '<' && line.size() > 2 && IsDigit(line[1])) return SavedLogFormat::kDmesgRaw;
    if (auto ts = BracketSeconds(line)) {
      std::string_view rest = line.substr(ts->second);
      if (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
      return JournalKernelMessage(rest) ? SavedLogFormat::kJournalMonotonic : SavedLogFormat::kDmesg;
    }
    if (BracketWallClock(line)) return SavedLogFormat::kDmesgWallClock;
    if (SyslogDateLength(line) > 0) return SavedLogFormat::kJournalShort;
  }
  return SavedLogFormat::kPlain;
}

bool HasSavedLogPrefix(std::string_view line, SavedLogFormat format) {
  if (line.size() > kKernelLogMaxRecordBytes) line = line.substr(0, kKernelLogMaxRecordBytes);
  switch (format) {
    case SavedLogFormat::kKmsg: return !line.empty() && line[0] != ' ' && ParseKmsgRecord(line).ok();
    case SavedLogFormat::kDmesgRaw: {
      const std::size_t close = line.find('>');
      return line.size() > 2 && line[0] == '<' && close != std::string_view::npos && close >= 2 && close <= 5 &&
             Decimal(line.substr(1, close - 1)).has_value();
    }
    case SavedLogFormat::kDmesg: return BracketSeconds(line).has_value();
    case SavedLogFormat::kDmesgWallClock: return BracketWallClock(line).has_value();
    case SavedLogFormat::kJournalMonotonic:
    case SavedLogFormat::kJournalShort: return ParseSavedLogLine(line, format).has_value();
    case SavedLogFormat::kPlain: return false;
  }
  return false;
}

std::optional<KernelLogRecord> ParseSavedLogLine(std::string_view line, SavedLogFormat format) {
  if (line.size() > kKernelLogMaxRecordBytes) line = line.substr(0, kKernelLogMaxRecordBytes);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty() || line.starts_with("-- ")) return std::nullopt;
  KernelLogRecord out;
  std::string_view message = line;
  switch (format) {
    case SavedLogFormat::kKmsg: {
      if (line[0] == ' ') return std::nullopt;  // a KEY=VALUE line: AddKmsgDictLine
      auto r = ParseKmsgRecord(line);
      if (!r) return std::nullopt;
      return std::move(*r);
    }
    case SavedLogFormat::kDmesgRaw: {
      if (line[0] == '<') {
        const std::size_t close = line.find('>');
        if (close != std::string_view::npos && close <= 5) {
          if (auto pri = Decimal(line.substr(1, close - 1)); pri && *pri <= 0x7FF) {
            out.level = static_cast<std::uint8_t>(*pri & 7);
            out.facility = static_cast<std::uint32_t>(*pri >> 3);
            message = line.substr(close + 1);
          }
        }
      }
      if (auto ts = BracketSeconds(message)) {
        out.monotonic_us = ts->first;
        message = message.substr(ts->second);
      }
      break;
    }
    case SavedLogFormat::kDmesg:
    case SavedLogFormat::kJournalMonotonic: {
      auto ts = BracketSeconds(line);
      if (!ts) {
        if (format == SavedLogFormat::kJournalMonotonic) return std::nullopt;
        break;  // a dmesg line without its time: the line is the message
      }
      out.monotonic_us = ts->first;
      message = line.substr(ts->second);
      if (format == SavedLogFormat::kJournalMonotonic) {
        if (!message.empty() && message[0] == ' ') message.remove_prefix(1);
        auto kernel = JournalKernelMessage(message);
        if (!kernel) return std::nullopt;
        message = *kernel;
      }
      break;
    }
    case SavedLogFormat::kDmesgWallClock: {
      if (auto wall = BracketWallClock(line)) {
        out.realtime_s = wall->first;
        message = line.substr(wall->second);
      }
      break;
    }
    case SavedLogFormat::kJournalShort: {
      const std::size_t date = SyslogDateLength(line);
      if (date == 0 || date >= line.size()) return std::nullopt;
      auto kernel = JournalKernelMessage(line.substr(date + 1));
      if (!kernel) return std::nullopt;
      message = *kernel;
      break;
    }
    case SavedLogFormat::kPlain: break;
  }
  // dmesg pads after the time with one space; copies of logs add more.
  while (!message.empty() && (message[0] == ' ' || message[0] == '\t')) message.remove_prefix(1);
  if (message.empty()) return std::nullopt;
  out.message = Capped(message, out.truncated);
  FillDeviceFromMessage(out);
  return out;
}

}  // namespace rdmahd
