// Snapshot: the typed facts one collection produced. Each collector stores its own facts type
// (declared in its header) with Put<T>(); checks and renderers read them with Get<T>(). A missing
// entry means the collector was disabled or failed outright.
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

  // nullptr when no collector stored facts of this type.
  template <class Facts>
  const Facts* Get() const {
    auto it = facts_.find(std::type_index(typeid(Facts)));
    return it == facts_.end() ? nullptr : static_cast<const Facts*>(it->second.get());
  }

  std::chrono::system_clock::time_point taken_at{};
  std::vector<CollectorOutcome> outcomes;

 private:
  std::unordered_map<std::type_index, std::shared_ptr<const void>> facts_;
};

}  // namespace rdmahd
