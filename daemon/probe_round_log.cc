#include "daemon/probe_round_log.h"

#include "common/mutex.h"

namespace rdmahd {

std::vector<ProbeRoundLog::Line> ProbeRoundLog::Observe(const ProbeRoundFacts& facts,
                                                        std::chrono::steady_clock::time_point now) {
  std::vector<Line> out;
  MutexLock lock(mu_);
  for (const ProbeRoundOutcome& o : facts.probes) {
    Logged& logged = logged_[o.probe];
    if (o.failed <= logged.failed) continue;
    const bool never_logged = logged.failed == 0;
    if (!never_logged && now - logged.at < kMinSpacing) continue;
    out.push_back({o.probe, o.failed - logged.failed, o.last_error});
    logged.failed = o.failed;
    logged.at = now;
  }
  return out;
}

}  // namespace rdmahd
