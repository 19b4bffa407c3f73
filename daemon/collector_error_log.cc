#include "daemon/collector_error_log.h"

namespace rdmahd {

CollectorErrorLog::NewErrors CollectorErrorLog::Observe(const std::vector<CollectorOutcome>& outcomes) {
  NewErrors out;
  std::set<std::pair<std::string, std::string>> now;
  for (const CollectorOutcome& o : outcomes) {
    for (const std::string& e : o.errors) {
      auto key = std::make_pair(o.collector, e);
      if (last_.contains(key) || now.contains(key)) {
        now.insert(std::move(key));
        continue;
      }
      if (out.errors.size() < kMaxNewPerCollection) {
        out.errors.push_back(key);
      } else {
        ++out.suppressed;
      }
      now.insert(std::move(key));
    }
  }
  last_ = std::move(now);
  return out;
}

}  // namespace rdmahd
