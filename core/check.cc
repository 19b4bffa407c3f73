#include "core/check.h"

#include "core/exceptions.h"

namespace rdmahd {

Registry<Check>& CheckRegistry() {
  static Registry<Check> registry;
  return registry;
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk: return "ok";
    case Verdict::kWarning: return "warning";
    case Verdict::kFailed: return "failed";
    case Verdict::kUnknown: return "unknown";
  }
  return "unknown";
}

void RunCheck(const std::string& name, const Check& check, const Snapshot& snapshot, const Config& config,
              std::vector<CheckResult>& out) {
  const std::size_t before = out.size();
  try {
    check.Evaluate(snapshot, config, out);
  } catch (...) {
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
    out.push_back({"", "node", Verdict::kUnknown, "the check failed: " + CurrentExceptionMessage(),
                   "a bug in rdma-healthd: report it with this message"});
  }
  for (std::size_t i = before; i < out.size(); ++i) out[i].check = name;
}

std::vector<CheckResult> RunRegisteredCheck(std::string_view name, const Snapshot& snapshot, const Config& config) {
  std::vector<CheckResult> out;
  if (const auto* reg = CheckRegistry().Find(name)) RunCheck(reg->name, *reg->factory(), snapshot, config, out);
  return out;
}

}  // namespace rdmahd
