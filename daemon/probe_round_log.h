// ProbeRoundLog: which failed probe rounds the log has not been told about. The scheduler counts a
// probe's failed rounds and keeps the last one's message; every report carries them
// (ProbeRoundFacts). The first failure of a probe is logged at once; while its rounds keep failing
// (a `peers` round runs up to 100 times a second) at most one line per probe follows per
// kMinSpacing, saying how many rounds failed since the line before and the last message, so a
// broken probe costs a line a minute, never one per round or per scrape.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "core/probe.h"

namespace rdmahd {

class ProbeRoundLog {
 public:
  static constexpr std::chrono::seconds kMinSpacing{60};

  struct Line {
    std::string probe;
    std::uint64_t failed_rounds = 0;  // since the probe's previous line (or the start)
    std::string error;                // the last failed round's message
  };

  // The lines to log for `facts` (one report), seen at `now`. Thread-safe: scrapes and the
  // evaluator observe their reports concurrently; a report older than one already observed adds
  // nothing.
  std::vector<Line> Observe(const ProbeRoundFacts& facts, std::chrono::steady_clock::time_point now);

 private:
  struct Logged {
    std::uint64_t failed = 0;  // failed rounds accounted for by lines so far
    std::chrono::steady_clock::time_point at{};
  };
  Mutex mu_;
  std::map<std::string, Logged> logged_ GUARDED_BY(mu_);  // by probe
};

}  // namespace rdmahd
