// CollectorErrorLog: which collector errors (a file that could not be read, a kernel answer that
// failed) the log has not been told about. A value that fails on every collection is logged once,
// at warn, when it starts failing, and again only after a collection without that error (it read
// again, then failed again), so a broken file costs one log line, not one per evaluation.
//
// An error is identified by its collector and message; collectors name the file (or device, netdev)
// and errno in every message, so this is once per file and cause. Memory is bounded by the errors
// of one collection: only the last one's are kept.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/snapshot.h"

namespace rdmahd {

class CollectorErrorLog {
 public:
  // At most this many new errors are returned per collection (a thousand unreadable counter
  // files must not flood the journal); `suppressed` counts the rest, which are remembered as if
  // logged.
  static constexpr std::size_t kMaxNewPerCollection = 20;

  struct NewErrors {
    std::vector<std::pair<std::string, std::string>> errors;  // (collector, message), in outcome order
    std::size_t suppressed = 0;
  };

  // The errors of `outcomes` (one collection) that were not in the previous collection passed
  // here. Not thread-safe: one caller (the daemon's evaluator thread).
  NewErrors Observe(const std::vector<CollectorOutcome>& outcomes);

 private:
  std::set<std::pair<std::string, std::string>> last_;
};

}  // namespace rdmahd
