// VerdictTracker: remembers the last verdict of every (check, subject) and logs each change, so the
// journal tells when a port went down or PFC was switched off, not just that it is down now.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "core/check.h"

namespace rdmahd {

struct Report;

struct VerdictChange {
  CheckResult now;
  std::optional<Verdict> before;  // nullopt: first time this subject was seen
};

class VerdictTracker {
 public:
  // Changes since the previous call; a report already observed yields nothing. Thread-safe.
  std::vector<VerdictChange> Observe(const std::shared_ptr<const Report>& report);
  // Observe and log: first sightings of non-ok verdicts and every later change.
  void ObserveAndLog(const std::shared_ptr<const Report>& report);

 private:
  Mutex mu_;
  // The last report observed: its verdicts are what the next one is compared with, so the tracker
  // keeps no copy of them (the engine keeps the same report as its latest anyway).
  std::shared_ptr<const Report> last_ GUARDED_BY(mu_);
};

}  // namespace rdmahd
