// libFuzzer target: the ethtool reply-buffer parsers (GSSET_INFO, GSTRINGS, GSTATS, GPAUSEPARAM),
// the `ethtool -S` / `ethtool -a` text parsers and the stat-name classifier. Each parser gets the
// whole input; counts are taken from the input's own header so the parsers go past the first check.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "parsers/ethtool_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> bytes(data, size);
  std::uint32_t header_count = 0;
  if (size >= 12) std::memcpy(&header_count, data + 8, 4);  // ethtool_gstrings.len
  std::uint32_t stats_count = 0;
  if (size >= 8) std::memcpy(&stats_count, data + 4, 4);     // ethtool_stats.n_stats

  (void)rdmahd::ParseSsetInfoReply(bytes);
  if (auto names = rdmahd::ParseGstringsReply(bytes, header_count); names.ok()) {
    for (const auto& n : *names) (void)rdmahd::ClassifyDriverStat(n);
  }
  (void)rdmahd::ParseGstatsReply(bytes, stats_count);
  (void)rdmahd::ParsePauseParamReply(bytes);

  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& s : rdmahd::ParseEthtoolStatsText(text).stats) (void)rdmahd::ClassifyDriverStat(s.name);
  (void)rdmahd::ParseEthtoolPauseText(text);
  (void)rdmahd::ClassifyDriverStat(text);
  return 0;
}
