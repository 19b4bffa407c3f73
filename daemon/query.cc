#include "daemon/query.h"

#include <charconv>

#include "core/topology.h"
#include "core/verdict_order.h"

namespace rdmahd {

std::string QuotedArgument(std::string_view s) {
  constexpr std::size_t kShown = 64;
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '&' || c == '\'' || c == '<' || c == '>' || c == '\\') {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kShown) out += "...";
  return out + "\"";
}

Result<std::map<std::string, std::string>> QueryArguments(const std::vector<QueryArgument>& query,
                                                          const std::vector<std::string_view>& allowed) {
  std::map<std::string, std::string> args;
  for (const QueryArgument& a : query) {
    bool known = false;
    for (std::string_view name : allowed) known = known || name == a.name;
    if (!known) {
      std::string names;
      for (std::string_view name : allowed) names += (names.empty() ? "" : ", ") + std::string(name);
      return Error{"unknown parameter " + QuotedArgument(a.name) +
                   (allowed.empty() ? std::string(" (this address takes none)") : " (this address takes: " + names + ")")};
    }
    if (!args.emplace(a.name, a.value).second) return Error{"parameter " + QuotedArgument(a.name) + " given twice"};
  }
  return args;
}

Result<std::size_t> ParseCount(std::string_view name, std::string_view value) {
  std::size_t n = 0;
  const char* end = value.data() + value.size();
  if (value.empty() || value.size() > 9 || std::from_chars(value.data(), end, n).ptr != end) {
    return Error{"parameter " + QuotedArgument(name) + " must be a whole number of at most 9 digits"};
  }
  return n;
}

Result<VerdictFilter> ParseVerdictFilter(const std::map<std::string, std::string>& args, std::size_t max_limit) {
  VerdictFilter f;
  if (auto it = args.find("status"); it != args.end()) {
    std::string_view rest = it->second;
    while (true) {
      const std::size_t comma = rest.find(',');
      const std::string_view name = rest.substr(0, comma);
      bool found = false;
      for (Verdict v : {Verdict::kFailed, Verdict::kWarning, Verdict::kUnknown, Verdict::kOk}) {
        if (name == VerdictName(v)) {
          f.statuses.insert(v);
          found = true;
        }
      }
      if (!found) {
        return Error{"parameter \"status\" takes a comma-separated list of failed, warning, unknown, ok"};
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  for (const char* name : {"device", "check"}) {
    auto it = args.find(name);
    if (it == args.end()) continue;
    if (it->second.empty()) return Error{"parameter " + QuotedArgument(name) + " is empty"};
    (std::string_view(name) == "device" ? f.device : f.check) = it->second;
  }
  if (auto it = args.find("offset"); it != args.end()) {
    Result<std::size_t> n = ParseCount("offset", it->second);
    if (!n.ok()) return n.error();
    f.offset = *n;
  }
  if (auto it = args.find("limit"); it != args.end()) {
    Result<std::size_t> n = ParseCount("limit", it->second);
    if (!n.ok()) return n.error();
    if (*n == 0 || *n > max_limit) {
      return Error{"parameter \"limit\" must be between 1 and " + std::to_string(max_limit)};
    }
    f.limit = *n;
  }
  return f;
}

DeviceSubjects::DeviceSubjects(const Report& report, std::string device) : device_(std::move(device)) {
  const auto* topology = report.snapshot.Get<Topology>();
  if (topology == nullptr) return;
  for (const TopologyDevice& d : topology->devices) exists_ = exists_ || d.name == device_;
  for (const RdmaNetdev& link : topology->links) {
    if (link.device == device_) netdevs_.insert(link.netdev);
  }
}

bool DeviceSubjects::Has(std::string_view subject) const {
  if (subject == device_) return true;
  // A port: "mlx5_0/1" (not "mlx5_0x/1").
  if (subject.size() > device_.size() && subject.starts_with(device_) && subject[device_.size()] == '/') return true;
  return netdevs_.contains(subject);
}

std::vector<std::size_t> SelectVerdicts(const Report& report, const VerdictFilter& filter) {
  std::optional<DeviceSubjects> device;
  if (!filter.device.empty()) device.emplace(report, filter.device);
  std::vector<std::size_t> out;
  for (const std::size_t i : OrderVerdicts(report.verdicts)) {
    const VerdictView v = report.verdicts[i];
    if (!filter.statuses.empty() && !filter.statuses.contains(v.verdict)) continue;
    if (!filter.check.empty() && v.check != filter.check) continue;
    if (device && !device->Has(v.subject)) continue;
    out.push_back(i);
  }
  return out;
}

}  // namespace rdmahd
