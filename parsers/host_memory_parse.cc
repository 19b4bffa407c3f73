#include "parsers/host_memory_parse.h"

#include <limits>

#include "common/parse.h"

namespace rdmahd {
namespace {

constexpr std::uint64_t kKiB = 1024;

std::string Shown(std::string_view s) {
  std::string out(s.substr(0, 80));
  if (s.size() > 80) out += "...";
  return "\"" + out + "\"";
}

// Calls `line(key, value)` for every "Key: value" line of the file `what` (value trimmed). An
// Error naming `what` at the first line with no colon, an empty key, or that `line` refuses
// (returns false), or when there is no such line at all (`shape` says what one looks like).
template <class Fn>
Status ForEachKeyValue(std::string_view text, std::string_view what, std::string_view shape, Fn&& line) {
  std::size_t lines = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view l = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (Trim(l).empty()) continue;
    const std::size_t colon = l.find(':');
    const std::string_view key = Trim(l.substr(0, colon));
    bool ok = colon != std::string_view::npos && !key.empty();
    if (ok) {
      ++lines;
      ok = line(key, Trim(l.substr(colon + 1)));
    }
    if (!ok) return Error{std::string(what) + ": malformed line " + Shown(l)};
  }
  if (lines == 0) return Error{std::string(what) + ": no " + std::string(shape) + " line"};
  return Status::Ok();
}

// "2048 kB" -> bytes; nullopt on anything else (or overflow).
std::optional<std::uint64_t> KibValue(std::string_view v) {
  if (!v.ends_with("kB")) return std::nullopt;
  auto n = ParseU64(v.substr(0, v.size() - 2));
  if (!n || *n > std::numeric_limits<std::uint64_t>::max() / kKiB) return std::nullopt;
  return *n * kKiB;
}

}  // namespace

Result<MeminfoHugepages> ParseMeminfoHugepages(std::string_view text) {
  MeminfoHugepages out;
  const Status st = ForEachKeyValue(
      text, "meminfo", "\"Key: value\"", [&](std::string_view key, std::string_view value) {
        std::optional<std::uint64_t>* count = key == "HugePages_Total"  ? &out.total
                                              : key == "HugePages_Free" ? &out.free
                                              : key == "HugePages_Rsvd" ? &out.reserved
                                              : key == "HugePages_Surp" ? &out.surplus
                                                                        : nullptr;
        if (count != nullptr) {
          *count = ParseU64(value);
          return count->has_value();
        }
        std::optional<std::uint64_t>* bytes = key == "Hugepagesize" ? &out.page_size_bytes
                                              : key == "Hugetlb"    ? &out.hugetlb_bytes
                                                                    : nullptr;
        if (bytes != nullptr) {
          *bytes = KibValue(value);
          return bytes->has_value();
        }
        return true;  // other lines are not ours to judge
      });
  if (!st) return st.error();
  return out;
}

Result<std::map<int, HugepagePool>> ParseNodeMeminfoHugepages(std::string_view text) {
  std::map<int, HugepagePool> out;
  const Status st = ForEachKeyValue(
      text, "node meminfo", "\"Node N Key: value\"", [&](std::string_view key, std::string_view value) {
        // key: "Node 1 HugePages_Total"
        if (!key.starts_with("Node ")) return false;
        key.remove_prefix(5);
        const std::size_t sp = key.find(' ');
        if (sp == std::string_view::npos) return false;
        auto node = ParseU64(key.substr(0, sp));
        if (!node || *node > 65535) return false;
        const std::string_view name = Trim(key.substr(sp + 1));
        HugepagePool& pool = out[static_cast<int>(*node)];
        std::optional<std::uint64_t>* count = name == "HugePages_Total"  ? &pool.total
                                              : name == "HugePages_Free" ? &pool.free
                                              : name == "HugePages_Surp" ? &pool.surplus
                                                                         : nullptr;
        if (count == nullptr) return true;
        *count = ParseU64(value);
        return count->has_value();
      });
  if (!st) return st.error();
  return out;
}

std::optional<std::uint64_t> ParseHugepageDirName(std::string_view name) {
  if (!name.starts_with("hugepages-") || !name.ends_with("kB")) return std::nullopt;
  name.remove_prefix(10);
  name.remove_suffix(2);
  if (name.empty() || name.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  auto kib = ParseU64(name);
  if (!kib || *kib == 0 || *kib > std::numeric_limits<std::uint64_t>::max() / kKiB) return std::nullopt;
  return *kib * kKiB;
}

Result<std::uint64_t> ParseHugepageCount(std::string_view text) {
  auto n = ParseU64(text);
  if (!n) return Error{"not a page count: " + Shown(Trim(text))};
  return *n;
}

Result<std::string> ParseThpMode(std::string_view text) {
  const std::string_view t = Trim(text);
  const std::size_t open = t.find('[');
  const std::size_t close = t.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open + 2 ||
      t.find('[', open + 1) != std::string_view::npos) {
    return Error{"transparent_hugepage/enabled: no single [selected] mode in " + Shown(t)};
  }
  std::string_view mode = t.substr(open + 1, close - open - 1);
  // A label value: the kernel's modes are short lowercase words (always, madvise, never, inherit).
  if (mode.size() > 16 || mode.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string_view::npos) {
    return Error{"transparent_hugepage/enabled: bad mode in " + Shown(t)};
  }
  return std::string(mode);
}

Result<std::uint64_t> ParseNumaBalancing(std::string_view text) {
  auto n = ParseU64(text);
  if (!n) return Error{"numa_balancing: not a number: " + Shown(Trim(text))};
  return *n;
}

}  // namespace rdmahd
