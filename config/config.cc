#include "config/config.h"

namespace rdmahd {

namespace {
std::vector<std::regex> CompileAll(const std::vector<std::string>& patterns) {
  std::vector<std::regex> out;
  out.reserve(patterns.size());
  for (const auto& p : patterns) out.emplace_back(p, std::regex::ECMAScript);
  return out;
}

bool AnyMatch(const std::vector<std::regex>& res, const std::string& device) {
  for (const auto& re : res) {
    if (std::regex_match(device, re)) return true;
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

bool Config::CollectorEnabled(const std::string& name) const {
  auto it = collectors.find(name);
  return it == collectors.end() || it->second;
}

}  // namespace rdmahd
