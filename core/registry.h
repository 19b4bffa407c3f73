// Registry: the plug-ins of one kind (collectors, checks, probe kinds) linked into the binary.
// A plug-in states its name once, when it registers; the name is how the config enables or
// disables it, how its metrics and verdicts are labelled and how the engine reports on it.
// Instances do not carry their name: whoever instantiates one keeps it beside the instance
// (Instance<T> below).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace rdmahd {

template <class Interface>
struct Registration {
  std::string name;         // snake_case, unique within the kind
  std::string description;  // one line, for --help and docs
  std::function<std::unique_ptr<Interface>()> factory;
};

// One instantiated plug-in and the name it registered under.
template <class Interface>
struct Instance {
  std::string name;
  std::unique_ptr<Interface> impl;
};

template <class Interface>
class Registry {
 public:
  // Refuses an empty name, a missing factory and a name registered already.
  Status Add(Registration<Interface> entry) {
    if (entry.name.empty()) return Error{"a plug-in registered without a name"};
    if (!entry.factory) return Error{"plug-in " + entry.name + " registered without a factory"};
    if (Find(entry.name) != nullptr) return Error{"plug-in " + entry.name + " registered twice"};
    auto at = std::lower_bound(entries_.begin(), entries_.end(), entry.name,
                               [](const auto& e, const std::string& n) { return e.name < n; });
    entries_.insert(at, std::move(entry));
    return Status::Ok();
  }

  // In name order.
  const std::vector<Registration<Interface>>& entries() const { return entries_; }

  const Registration<Interface>* Find(std::string_view name) const {
    for (const auto& e : entries_) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e.name);
    return out;
  }

  // One instance of each registered plug-in `enabled(name)` accepts, in name order.
  template <class Pred>
  std::vector<Instance<Interface>> Instantiate(Pred enabled) const {
    std::vector<Instance<Interface>> out;
    for (const auto& e : entries_) {
      if (enabled(e.name)) out.push_back({e.name, e.factory()});
    }
    return out;
  }

 private:
  std::vector<Registration<Interface>> entries_;
};

namespace internal {
// For the RDMAHD_REGISTER_* macros, at static initialisation: a duplicate or empty name is a bug
// in the build, so the binary refuses to start and says which plug-in.
template <class Interface>
bool RegisterOrDie(Registry<Interface>& registry, Registration<Interface> entry) {
  Status st = registry.Add(std::move(entry));
  if (!st.ok()) {
    std::fprintf(stderr, "rdma-healthd: %s\n", st.error().message.c_str());
    std::abort();
  }
  return true;
}
}  // namespace internal

}  // namespace rdmahd
