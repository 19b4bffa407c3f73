#include "core/verdict_order.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <utility>

namespace rdmahd {
namespace {

struct CostEntry {
  std::string_view check;
  CheckCost cost;
};

// Every check, costliest first. Within a tier the worse comes first: a fatal NIC error before a
// missing device before a port down; errors on the wire before the optics and the bus behind them,
// peers last (the fault may be theirs); among settings, what stops RDMA altogether (no module, no
// device node) before what loses its lossless class (PFC, trust, ToS, ECN) before tuning.
constexpr std::array kCosts = {
    CostEntry{"nic_health", CheckCost::kHardware},
    CostEntry{"devlink_health", CheckCost::kHardware},
    CostEntry{"hardware_present", CheckCost::kHardware},
    CostEntry{"port_active", CheckCost::kHardware},

    CostEntry{"link_flaps", CheckCost::kDegrading},
    CostEntry{"port_errors", CheckCost::kDegrading},
    CostEntry{"netdev_errors", CheckCost::kDegrading},
    CostEntry{"roce_transport_errors", CheckCost::kDegrading},
    CostEntry{"link_margin", CheckCost::kDegrading},
    CostEntry{"module_health", CheckCost::kDegrading},
    CostEntry{"pcie_aer", CheckCost::kDegrading},
    CostEntry{"pcie_link", CheckCost::kDegrading},
    CostEntry{"port_rate", CheckCost::kDegrading},
    CostEntry{"roce_pause_storm", CheckCost::kDegrading},
    CostEntry{"peer_reachable", CheckCost::kDegrading},
    CostEntry{"peer_latency", CheckCost::kDegrading},
    CostEntry{"peer_bandwidth", CheckCost::kDegrading},

    CostEntry{"kernel_modules", CheckCost::kConfiguration},
    CostEntry{"device_access", CheckCost::kConfiguration},
    CostEntry{"firmware_version", CheckCost::kConfiguration},
    CostEntry{"roce_v2_gid", CheckCost::kConfiguration},
    CostEntry{"roce_pfc_priority", CheckCost::kConfiguration},
    CostEntry{"roce_trust", CheckCost::kConfiguration},
    CostEntry{"roce_tos", CheckCost::kConfiguration},
    CostEntry{"roce_ecn", CheckCost::kConfiguration},
    CostEntry{"roce_global_pause", CheckCost::kConfiguration},
    CostEntry{"roce_pfc_other_priorities", CheckCost::kConfiguration},
    CostEntry{"roce_mtu", CheckCost::kConfiguration},
    CostEntry{"port_active_mtu", CheckCost::kConfiguration},
    CostEntry{"device_limits", CheckCost::kConfiguration},
    CostEntry{"memlock", CheckCost::kConfiguration},
    CostEntry{"hugepages_free", CheckCost::kConfiguration},
    CostEntry{"workload_numa", CheckCost::kConfiguration},
    CostEntry{"cpu_governor", CheckCost::kConfiguration},
};

// Ranks: tier * kTier + place in the table; a check the table does not name comes after the
// degrading ones it knows.
constexpr int kTier = 1000;
constexpr int kUnnamed = static_cast<int>(CheckCost::kDegrading) * kTier + kTier - 1;

const CostEntry* Find(std::string_view check) {
  for (const CostEntry& e : kCosts) {
    if (e.check == check) return &e;
  }
  return nullptr;
}

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// `name` stands at `at` in `text` as a whole name.
bool WholeNameAt(std::string_view text, std::size_t at, std::string_view name) {
  if (name.empty() || text.compare(at, name.size(), name) != 0) return false;
  if (at > 0 && NameChar(text[at - 1]) && NameChar(name.front())) return false;
  const std::size_t end = at + name.size();
  return !(end < text.size() && NameChar(text[end]) && NameChar(name.back()));
}

// For "device/port" subjects ("mlx5_0/1"): the device; else empty.
std::string_view DeviceOf(std::string_view subject) {
  const std::size_t slash = subject.rfind('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == subject.size() || subject.front() == '/') {
    return {};
  }
  const std::string_view port = subject.substr(slash + 1);
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) return {};
  return subject.substr(0, slash);
}

}  // namespace

std::string_view CheckCostName(CheckCost cost) {
  switch (cost) {
    case CheckCost::kHardware: return "hardware";
    case CheckCost::kDegrading: return "degrading";
    case CheckCost::kConfiguration: return "configuration";
  }
  return "degrading";
}

CheckCost CostOfCheck(std::string_view check) {
  const CostEntry* e = Find(check);
  return e != nullptr ? e->cost : CheckCost::kDegrading;
}

bool CheckCostKnown(std::string_view check) { return Find(check) != nullptr; }

int CheckRank(std::string_view check) {
  const CostEntry* e = Find(check);
  if (e == nullptr) return kUnnamed;
  return static_cast<int>(e->cost) * kTier + static_cast<int>(e - kCosts.data());
}

int StatusRank(Verdict v) {
  switch (v) {
    case Verdict::kFailed: return 0;
    case Verdict::kWarning: return 1;
    case Verdict::kUnknown: return 2;
    case Verdict::kOk: return 3;
  }
  return 2;
}

std::vector<std::size_t> OrderVerdicts(const VerdictList& verdicts) {
  // Ranked once per verdict, not per comparison.
  struct Key {
    int status, check;
    std::size_t at;
  };
  std::vector<Key> keys;
  keys.reserve(verdicts.size());
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const VerdictView v = verdicts[i];
    keys.push_back(Key{StatusRank(v.verdict), CheckRank(v.check), i});
  }
  std::stable_sort(keys.begin(), keys.end(), [&verdicts](const Key& a, const Key& b) {
    if (a.status != b.status) return a.status < b.status;
    if (a.check != b.check) return a.check < b.check;
    return verdicts[a.at].check < verdicts[b.at].check;  // checks the table does not name
  });
  std::vector<std::size_t> out;
  out.reserve(keys.size());
  for (const Key& k : keys) out.push_back(k.at);
  return out;
}

std::string WithSubjectPlaceholders(std::string_view text, std::string_view subject) {
  if (subject.size() < 3) return std::string(text);
  const std::string_view device = DeviceOf(subject);
  const bool port = !device.empty();
  const std::string_view whole = port ? "<port>" : "<subject>";
  const bool device_too = device.size() >= 3;
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (WholeNameAt(text, i, subject)) {
      out += whole;
      i += subject.size();
    } else if (device_too && WholeNameAt(text, i, device)) {
      out += "<device>";
      i += device.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::vector<VerdictGroup> GroupVerdicts(const VerdictList& verdicts) {
  struct Building {
    VerdictGroup group;
    std::string reason_template, fix_template;
    std::string_view first_reason, first_fix;
    bool same_reason = true, same_fix = true;
  };
  std::vector<Building> groups;
  std::unordered_map<std::string, std::size_t> by_key;
  for (std::size_t at : OrderVerdicts(verdicts)) {
    const VerdictView v = verdicts[at];
    std::string reason = WithSubjectPlaceholders(v.reason, v.subject);
    std::string fix = WithSubjectPlaceholders(v.fix, v.subject);
    std::string key;
    key.reserve(v.check.size() + reason.size() + fix.size() + 4);
    key.append(1, static_cast<char>('0' + StatusRank(v.verdict))).append(1, '\0').append(v.check);
    key.append(1, '\0').append(reason).append(1, '\0').append(fix);
    auto [it, added] = by_key.try_emplace(std::move(key), groups.size());
    if (added) {
      Building& b = groups.emplace_back();
      b.group.verdict = v.verdict;
      b.group.check = std::string(v.check);
      b.reason_template = std::move(reason);
      b.fix_template = std::move(fix);
      b.first_reason = v.reason;
      b.first_fix = v.fix;
    }
    Building& b = groups[it->second];
    b.group.members.push_back(at);
    b.group.subjects.emplace_back(v.subject);
    b.same_reason = b.same_reason && v.reason == b.first_reason;
    b.same_fix = b.same_fix && v.fix == b.first_fix;
  }
  std::vector<VerdictGroup> out;
  out.reserve(groups.size());
  for (Building& b : groups) {
    b.group.reason = b.same_reason ? std::string(b.first_reason) : std::move(b.reason_template);
    b.group.fix = b.same_fix ? std::string(b.first_fix) : std::move(b.fix_template);
    out.push_back(std::move(b.group));
  }
  return out;
}

}  // namespace rdmahd
