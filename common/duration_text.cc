#include "common/duration_text.h"

#include <algorithm>

namespace rdmahd {

std::string FormatDuration(std::chrono::milliseconds d) {
  if (d.count() > 0 && d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

std::string FormatSeconds(double seconds) {
  // Under 10 s a tenth: "+1 in 0.2 s" is what was observed, "+1 in 0 s" is no span at all.
  const long long tenths = static_cast<long long>(seconds * 10 + 0.5);
  if (tenths < 100 && tenths % 10 != 0) {
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
  }
  return std::to_string(static_cast<long long>(seconds + 0.5)) + " s";
}

std::string FormatCoarseDuration(std::int64_t seconds) {
  if (seconds < 120) return std::to_string(std::max<std::int64_t>(seconds, 0)) + " s";
  if (seconds < 7200) return std::to_string(seconds / 60) + " min";
  return std::to_string(seconds / 3600) + " h";
}

std::string FormatUptime(double seconds) {
  const auto s = static_cast<long long>(seconds);
  std::string out;
  if (s >= 86400) out += std::to_string(s / 86400) + "d ";
  if (s >= 3600) out += std::to_string(s % 86400 / 3600) + "h ";
  if (s >= 60) out += std::to_string(s % 3600 / 60) + "m ";
  return out + std::to_string(s % 60) + "s";
}

}  // namespace rdmahd
