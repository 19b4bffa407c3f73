// VerdictTracker: remembers the last verdict of every (check, subject) and logs each change, so the
// journal tells when a port went down or PFC was switched off, not just that it is down now.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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
  struct Key {
    std::string check, subject;
  };
  // Transparent, so a report's verdicts are looked up without copying their strings.
  struct KeyLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::tie(a.check, a.subject) < std::tie(b.check, b.subject);
    }
  };
  struct Entry {
    Verdict verdict;
    std::uint64_t seen_in;  // generation of the last report that had this subject
  };

  std::mutex mu_;
  const Report* last_report_ = nullptr;  // identity only, never dereferenced
  std::shared_ptr<const Report> keep_alive_;
  std::uint64_t generation_ = 0;
  std::map<Key, Entry, KeyLess> last_;
};

}  // namespace rdmahd
