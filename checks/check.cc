#include "checks/check.h"

#include <algorithm>

namespace rdmahd {
namespace {
std::vector<CheckRegistration>& Registry() {
  static std::vector<CheckRegistration> registry;
  return registry;
}
}  // namespace

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk: return "ok";
    case Verdict::kWarning: return "warning";
    case Verdict::kFailed: return "failed";
    case Verdict::kUnknown: return "unknown";
  }
  return "unknown";
}

namespace internal {
bool RegisterCheck(std::string name, CheckFactory factory) {
  auto& r = Registry();
  r.push_back({std::move(name), std::move(factory)});
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return true;
}
}  // namespace internal

const std::vector<CheckRegistration>& RegisteredChecks() { return Registry(); }

}  // namespace rdmahd
