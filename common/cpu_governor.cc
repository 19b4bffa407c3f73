#include "common/cpu_governor.h"

#include <algorithm>
#include <string_view>

#include "common/parse.h"

namespace rdmahd {
namespace {

std::optional<std::string> GovernorName(std::string_view text) {
  const std::string_view g = Trim(text);
  const bool identifier = !g.empty() && g.size() <= 32 && std::all_of(g.begin(), g.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!identifier) return std::nullopt;
  return std::string(g);
}

}  // namespace

std::optional<std::string> ReadScalingGovernor(const NodeFs& fs, std::uint32_t cpu, HeldFiles* held) {
  const std::string path = fs.Sys("devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor");
  if (held != nullptr) {
    auto text = held->Read(fs, path);
    return text ? GovernorName(*text) : std::nullopt;
  }
  auto text = fs.ReadFile(path);
  return text ? GovernorName(*text) : std::nullopt;
}

}  // namespace rdmahd
