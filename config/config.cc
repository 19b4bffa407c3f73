#include "config/config.h"

namespace rdmahd {

bool DeviceFilter::Matches(const std::string& device) const {
  auto any = [&](const std::vector<std::string>& patterns) {
    for (const auto& p : patterns) {
      if (std::regex_match(device, std::regex(p, std::regex::ECMAScript))) return true;
    }
    return false;
  };
  if (any(exclude)) return false;
  return include.empty() || any(include);
}

bool Config::CollectorEnabled(const std::string& name) const {
  auto it = collectors.find(name);
  return it == collectors.end() || it->second;
}

}  // namespace rdmahd
