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
  using Map = std::map<Key, Entry, KeyLess>;
  Map last_;
  // The entries of the last report's verdicts, in its order (nodes of last_, which stay put). A
  // report lists its subjects in the same order as the one before while nothing was added or
  // removed, so each verdict is matched by position with two string equalities instead of a map
  // lookup; the first mismatch sends the rest of the report to the map.
  std::vector<Map::value_type*> order_;
};

}  // namespace rdmahd
