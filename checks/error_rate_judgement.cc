#include "checks/error_rate_judgement.h"

#include <cstdio>

namespace rdmahd::error_rates {

std::string Percent(double fraction) {
  char buf[32];
  const double percent = fraction * 100;
  std::snprintf(buf, sizeof buf, percent >= 100 ? "%.0f%%" : "%.2g%%", percent);
  return buf;
}

History::Clock::duration RuleWindow(const Rule& r, const ErrorRatePolicy& policy) {
  switch (r.test) {
    case Test::kPerHour: return std::chrono::hours(1);
    case Test::kPerMinute: return std::chrono::minutes(1);
    case Test::kAnyIncrease:
    case Test::kShare: break;
  }
  return std::chrono::duration_cast<History::Clock::duration>(policy.window);
}

std::string OkReason(std::size_t counters, const std::string& rose) {
  return "no error counter over its limit (" + std::to_string(counters) + (counters == 1 ? " counter" : " counters") +
         (rose.empty() ? ", none rose)" : "; rose: " + rose + ")");
}

CheckResult QuietVerdict(const std::string& subject, std::size_t counters) {
  return CheckResult{"", subject, Verdict::kOk, OkReason(counters, ""), ""};
}

std::string ReplaceNetdev(std::string_view fix, const std::string& netdev) {
  std::string out(fix);
  if (netdev.empty()) return out;
  for (std::size_t at = out.find("NETDEV"); at != std::string::npos; at = out.find("NETDEV", at + netdev.size())) {
    out.replace(at, 6, netdev);
  }
  return out;
}

}  // namespace rdmahd::error_rates
