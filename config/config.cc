#include "config/config.h"

#include <atomic>
#include <utility>

namespace rdmahd {

namespace {
std::vector<Pattern> CompileAll(const std::vector<std::string>& patterns) {
  std::vector<Pattern> out;
  out.reserve(patterns.size());
  for (const auto& p : patterns) {
    if (auto compiled = Pattern::Compile(p); compiled.ok()) out.push_back(std::move(compiled).value());
  }
  return out;
}

bool AnyMatch(const std::vector<Pattern>& patterns, const std::string& device) {
  for (const auto& p : patterns) {
    if (p.FullMatch(device)) return true;
  }
  return false;
}
}  // namespace

void DeviceFilter::Compile() {
  compiled_ = std::make_shared<const Compiled>(Compiled{include, exclude, CompileAll(include), CompileAll(exclude)});
}

bool DeviceFilter::Matches(const std::string& device) const {
  if (include.empty() && exclude.empty()) return true;
  if (compiled_ && compiled_->include == include && compiled_->exclude == exclude) {
    return !AnyMatch(compiled_->exclude_re, device) &&
           (include.empty() || AnyMatch(compiled_->include_re, device));
  }
  return !AnyMatch(CompileAll(exclude), device) && (include.empty() || AnyMatch(CompileAll(include), device));
}

namespace {
bool Enabled(const std::map<std::string, bool>& switches, const std::string& name) {
  auto it = switches.find(name);
  return it == switches.end() || it->second;
}
}  // namespace

bool Config::CollectorEnabled(const std::string& name) const { return Enabled(collectors, name); }
bool Config::CheckEnabled(const std::string& name) const { return Enabled(checks, name); }
bool Config::ProbeEnabled(const std::string& name) const { return Enabled(probes, name); }

}  // namespace rdmahd

namespace rdmahd::internal {
std::size_t NextConfigSlot() {
  static std::atomic<std::size_t> next{0};
  return next.fetch_add(1);
}
}  // namespace rdmahd::internal
