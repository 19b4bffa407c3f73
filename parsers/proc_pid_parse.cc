#include "parsers/proc_pid_parse.h"

#include <limits>
#include <vector>

#include "common/parse.h"

namespace rdmahd {
namespace {

std::string Shown(std::string_view s) {
  std::string out(s.substr(0, 100));
  if (s.size() > 100) out += "...";
  return "\"" + out + "\"";
}

std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    const std::size_t b = s.find_first_not_of(" \t");
    if (b == std::string_view::npos) break;
    s.remove_prefix(b);
    const std::size_t e = s.find_first_of(" \t");
    out.push_back(s.substr(0, e));
    if (e == std::string_view::npos) break;
    s.remove_prefix(e);
  }
  return out;
}

template <class Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    if (!fn(text.substr(0, nl))) return;
    if (nl == std::string_view::npos) return;
    text.remove_prefix(nl + 1);
  }
}

std::optional<LimitValue> ParseLimitValue(std::string_view s) {
  if (s == "unlimited") return LimitValue{true, 0};
  auto n = ParseU64(s);
  if (!n) return std::nullopt;
  return LimitValue{false, *n};
}

}  // namespace

Result<MemlockLimit> ParseMemlockLimit(std::string_view limits_text) {
  constexpr std::string_view kRow = "Max locked memory";
  std::optional<std::string_view> row;
  ForEachLine(limits_text, [&](std::string_view line) {
    if (!line.starts_with(kRow)) return true;
    row = line.substr(kRow.size());
    return false;
  });
  if (!row) return Error{"limits: no \"Max locked memory\" row"};
  const auto f = Fields(*row);
  if (f.size() < 3) return Error{"limits: truncated \"Max locked memory\" row " + Shown(Trim(*row))};
  auto soft = ParseLimitValue(f[0]);
  auto hard = ParseLimitValue(f[1]);
  if (!soft || !hard) {
    return Error{"limits: \"Max locked memory\" is not \"unlimited\" or a 64-bit number: " + Shown(Trim(*row))};
  }
  if (f[2] != "bytes" || f.size() != 3) {
    return Error{"limits: \"Max locked memory\" row not in bytes: " + Shown(Trim(*row))};
  }
  return MemlockLimit{*soft, *hard};
}

Result<ProcStatus> ParseProcStatus(std::string_view text) {
  ProcStatus out;
  bool have_name = false;
  bool have_cpus = false;
  ForEachLine(text, [&](std::string_view line) {
    if (line.starts_with("Name:")) {
      out.name = std::string(Trim(line.substr(5)));
      have_name = true;
    } else if (line.starts_with("State:")) {
      const std::string_view v = Trim(line.substr(6));
      if (!v.empty()) out.state = v[0];
    } else if (line.starts_with("CapEff:")) {
      out.cap_effective = ParseHexU64(line.substr(7));
    } else if (line.starts_with("Cpus_allowed_list:")) {
      have_cpus = true;
      auto cpus = ParseCpuList(line.substr(18));
      if (cpus.ok()) {
        out.cpus_allowed = std::move(*cpus);
      } else {
        out.cpus_note = "Cpus_allowed_list: " + cpus.error().message;
      }
    }
    return true;
  });
  if (!have_name) return Error{"status: no Name line"};
  if (!have_cpus) out.cpus_note = "status has no Cpus_allowed_list line";
  return out;
}

Result<std::map<int, std::uint64_t>> ParseNumaMapsBytesByNode(std::string_view text,
                                                              std::uint64_t default_page_bytes) {
  std::map<int, std::uint64_t> out;
  std::optional<Error> error;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  ForEachLine(text, [&](std::string_view line) {
    const auto f = Fields(line);
    if (f.empty()) return true;
    if (f.size() < 2 || !ParseHexU64(f[0])) {
      error = Error{"numa_maps: malformed line " + Shown(line)};
      return false;
    }
    std::uint64_t page_bytes = default_page_bytes;
    std::vector<std::pair<int, std::uint64_t>> pages;
    for (std::size_t i = 2; i < f.size(); ++i) {
      const std::string_view tok = f[i];
      if (tok.starts_with("kernelpagesize_kB=")) {
        auto k = ParseU64(tok.substr(18));
        if (!k || *k == 0 || *k > kMax / 1024) {
          error = Error{"numa_maps: bad " + Shown(tok) + " in line " + Shown(line)};
          return false;
        }
        page_bytes = *k * 1024;
        continue;
      }
      const std::size_t eq = tok.find('=');
      // "N<digits>=<count>"; other tokens (anon=, dirty=, file=/path, huge, heap, stack) are skipped.
      if (tok.size() < 2 || tok[0] != 'N' || eq == std::string_view::npos || eq < 2 ||
          tok.substr(1, eq - 1).find_first_not_of("0123456789") != std::string_view::npos) {
        continue;
      }
      auto node = ParseU64(tok.substr(1, eq - 1));
      auto count = ParseU64(tok.substr(eq + 1));
      if (!node || *node > 65535 || !count) {
        error = Error{"numa_maps: bad " + Shown(tok) + " in line " + Shown(line)};
        return false;
      }
      pages.emplace_back(static_cast<int>(*node), *count);
    }
    for (const auto& [node, count] : pages) {
      if (count != 0 && page_bytes > kMax / count) {
        error = Error{"numa_maps: page count overflows in line " + Shown(line)};
        return false;
      }
      std::uint64_t& sum = out[node];
      const std::uint64_t add = count * page_bytes;
      sum = add > kMax - sum ? kMax : sum + add;
    }
    return true;
  });
  if (error) return *error;
  return out;
}

}  // namespace rdmahd
