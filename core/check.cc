#include "core/check.h"

#include "core/exceptions.h"

namespace rdmahd {
namespace {

constexpr const char* kReportBug = "a bug in rdma-healthd: report it with this message";

}  // namespace

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

void RunCheck(const std::string& name, const Check& check, const CheckContext& ctx, std::vector<CheckResult>& out) {
  const std::size_t before = out.size();
  try {
    check.EvaluateOverTime(ctx, out);
  } catch (...) {
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
    out.push_back({"", "node", Verdict::kUnknown, "the check failed: " + CurrentExceptionMessage(), kReportBug});
  }
  for (std::size_t i = before; i < out.size(); ++i) out[i].check = name;
}

void RunCheck(const std::string& name, const Check& check, const Snapshot& snapshot, const Config& config,
              std::vector<CheckResult>& out) {
  static const History kNoHistory;
  RunCheck(name, check, CheckContext{snapshot, config, kNoHistory, History::Clock::now()}, out);
}

void RunCheck(const std::string& name, const Check& check, const Snapshot& snapshot, const Config& config,
              History& history, History::TimePoint now, std::vector<CheckResult>& out, Snapshot* derived) {
  try {
    check.Record(snapshot, config, history, now);
  } catch (...) {
    out.push_back({name, "node", Verdict::kUnknown, "the check failed: " + CurrentExceptionMessage(), kReportBug});
    return;
  }
  RunCheck(name, check, CheckContext{snapshot, config, history, now, derived}, out);
}

std::vector<CheckResult> RunRegisteredCheck(std::string_view name, const CheckContext& ctx) {
  std::vector<CheckResult> out;
  if (const auto* reg = CheckRegistry().Find(name)) RunCheck(reg->name, *reg->factory(), ctx, out);
  return out;
}

std::vector<CheckResult> RunRegisteredCheck(std::string_view name, const Snapshot& snapshot, const Config& config) {
  std::vector<CheckResult> out;
  if (const auto* reg = CheckRegistry().Find(name)) RunCheck(reg->name, *reg->factory(), snapshot, config, out);
  return out;
}

}  // namespace rdmahd
