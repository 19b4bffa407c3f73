// Snapshot: the typed facts one collection produced. Each collector stores its own facts type
// (declared in a data-only header under facts/) with Put<T>(); checks and renderers read them with
// Get<T>(). The engine adds the collection's Topology and the probes' latest results. A missing
// entry means the collector or probe was disabled or failed outright.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <typeindex>
#include <unordered_map>
#include <vector>

namespace rdmahd {

// How one collector's run went. `errors` lists values or devices that were skipped, each message
// naming the file/device and the reason; a collector with errors can still be successful.
struct CollectorOutcome {
  std::string collector;
  bool success = false;
  std::chrono::duration<double> duration{};
  std::vector<std::string> errors;
};

class Snapshot {
 public:
  template <class Facts>
  void Put(Facts facts) {
    facts_[std::type_index(typeid(Facts))] = std::make_shared<const Facts>(std::move(facts));
  }

  // Put for facts already shared (published by a probe).
  template <class Facts>
  void PutShared(std::shared_ptr<const Facts> facts) {
    facts_[std::type_index(typeid(Facts))] = std::move(facts);
  }

  // nullptr when no collector stored facts of this type.
  template <class Facts>
  const Facts* Get() const {
    auto it = facts_.find(std::type_index(typeid(Facts)));
    return it == facts_.end() ? nullptr : static_cast<const Facts*>(it->second.get());
  }

  // Adds `other`'s facts (shared, not copied; a type both hold takes `other`'s) and outcomes.
  void Merge(const Snapshot& other) {
    for (const auto& [type, facts] : other.facts_) facts_[type] = facts;
    outcomes.insert(outcomes.end(), other.outcomes.begin(), other.outcomes.end());
  }

  std::chrono::system_clock::time_point taken_at{};
  std::vector<CollectorOutcome> outcomes;

 private:
  std::unordered_map<std::type_index, std::shared_ptr<const void>> facts_;
};

}  // namespace rdmahd
