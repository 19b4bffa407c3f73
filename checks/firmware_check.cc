// firmware_version: each RDMA device's fw_ver against the first matching policy rule
// (config.firmware: hca_type and/or board_id -> min_version). One verdict per device.
#include <algorithm>
#include <cctype>
#include <string>

#include "config/config_section.h"
#include "core/check.h"
#include "checks/version_compare.h"
#include "facts/rdma_device_facts.h"

namespace rdmahd {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Empty rule fields match anything; hca_type/board_id compare case-insensitively (configs are
// typed by hand, sysfs prints "MT4119").
bool RuleMatches(const FirmwareRule& rule, const RdmaDeviceFacts& d) {
  if (!rule.hca_type.empty() && !(d.hca_type && EqualsIgnoreCase(rule.hca_type, *d.hca_type))) return false;
  if (!rule.board_id.empty() && !(d.board_id && EqualsIgnoreCase(rule.board_id, *d.board_id))) return false;
  return true;
}

std::string Identity(const RdmaDeviceFacts& d) {
  return "hca_type " + (d.hca_type ? *d.hca_type : std::string("<none>")) + ", board_id " +
         (d.board_id ? *d.board_id : std::string("<none>"));
}

class FirmwareVersionCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const auto* facts = snapshot.Get<RdmaDevicesFacts>();
    if (facts == nullptr) return;
    for (const RdmaDeviceFacts& d : facts->devices) {
      CheckResult r{"", d.name, Verdict::kUnknown, "", ""};
      const FirmwareRule* rule = nullptr;
      for (const FirmwareRule& candidate : config.Section<FirmwarePolicy>().rules) {
        if (RuleMatches(candidate, d)) {
          rule = &candidate;
          break;
        }
      }
      const std::string fw = d.fw_ver ? *d.fw_ver : std::string("<unreadable>");
      if (rule == nullptr) {
        r.reason = "firmware " + fw + "; no firmware policy for hca_type " +
                   (d.hca_type ? *d.hca_type : std::string("<none>")) + " / board_id " +
                   (d.board_id ? *d.board_id : std::string("<none>"));
        r.fix = "add a rule under `firmware:` in the config (hca_type and/or board_id, min_version)";
      } else if (!d.fw_ver) {
        r.reason = "fw_ver unreadable (" + Identity(d) + ")";
        r.fix = "check that /sys/class/infiniband/" + d.name + "/fw_ver is readable by rdma-healthd";
      } else if (auto cmp = CompareDottedVersions(*d.fw_ver, rule->min_version); !cmp) {
        r.reason = "cannot compare firmware " + fw + " with minimum " + rule->min_version +
                   ": not a dotted numeric version";
        r.fix = "compare by hand, or write min_version in the form the device prints (e.g. 16.35.2000)";
      } else if (*cmp < 0) {
        r.verdict = Verdict::kFailed;
        r.reason = "firmware " + fw + " is older than the minimum " + rule->min_version + " (" + Identity(d) + ")";
        r.fix = "update the firmware to " + rule->min_version +
                " or newer with the vendor's tool (NVIDIA: `mlxfwmanager -u`, which updates every adapter it "
                "finds; Broadcom: niccli; Intel: nvmupdate), then reset the device or reboot";
      } else {
        r.verdict = Verdict::kOk;
        r.reason = "firmware " + fw + " >= minimum " + rule->min_version + " (" + Identity(d) + ")";
      }
      out.push_back(std::move(r));
    }
  }
};
RDMAHD_REGISTER_CHECK("firmware_version", FirmwareVersionCheck,
                      "RDMA device firmware is at least the policy minimum for its hca_type/board_id");

bool IsDottedNumeric(std::string_view s) {
  if (s.empty() || s.front() == '.' || s.back() == '.') return false;
  char previous = '.';
  for (char c : s) {
    if (c == '.' && previous == '.') return false;
    if (c != '.' && !std::isdigit(static_cast<unsigned char>(c))) return false;
    previous = c;
  }
  return true;
}

// True when every device `later` matches is matched by `earlier` too.
bool Covers(const FirmwareRule& earlier, const FirmwareRule& later) {
  return (earlier.hca_type.empty() || earlier.hca_type == later.hca_type) &&
         (earlier.board_id.empty() || earlier.board_id == later.board_id);
}

Status ParseFirmwareRules(const ConfigWalker& w, const ConfigNode& v, FirmwarePolicy& policy) {
  std::vector<FirmwareRule>& out = policy.rules;
  std::vector<YAML::Mark> rule_marks;
  return w.VisitList(v, "a list of rules (- hca_type: ..., min_version: ...)", [&](const ConfigNode& item) {
    FirmwareRule rule;
    bool has_min_version = false;
    if (!item.node.IsMap()) {
      return w.FailAt(item, "must be a rule (hca_type, board_id, min_version), got " + ConfigWalker::Describe(item.node));
    }
    Status st = w.VisitMap(item, {
        {"hca_type", [&](const ConfigNode& f) { return w.ReadString(f, rule.hca_type); }},
        {"board_id", [&](const ConfigNode& f) { return w.ReadString(f, rule.board_id); }},
        {"min_version",
         [&](const ConfigNode& f) {
           has_min_version = !f.node.IsNull();
           if (f.node.IsNull()) return Status::Ok();
           if (!f.node.IsScalar() || !IsDottedNumeric(f.node.Scalar())) {
             return w.FailAt(f, "must be a dotted numeric version such as 16.35.2000, got " +
                                    ConfigWalker::Describe(f.node));
           }
           rule.min_version = f.node.Scalar();
           return Status::Ok();
         }},
    });
    if (!st.ok()) return st;
    if (rule.hca_type.empty() && rule.board_id.empty()) {
      return w.FailAt(item, "a rule needs hca_type, board_id or both (a rule matching every device "
                            "is almost always a mistake)");
    }
    if (!has_min_version) return w.FailAt(item, "a rule needs min_version");
    // The first matching rule wins, so a rule an earlier one covers (same or wider selectors)
    // could never apply: almost certainly the two were written in the wrong order.
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (Covers(out[i], rule)) {
        return w.FailAt(item, "can never apply: firmware[" + std::to_string(i) + "] (line " +
                                  std::to_string(rule_marks[i].line + 1) +
                                  ") matches every device it matches and the first matching rule "
                                  "wins (put the more specific rule first)");
      }
    }
    out.push_back(std::move(rule));
    rule_marks.push_back(item.mark);
    return Status::Ok();
  });
}

RDMAHD_REGISTER_CONFIG_SECTION(FirmwarePolicy, "firmware", 30,
    {{"firmware[i].hca_type", "empty = any"}, {"firmware[i].board_id", "empty = any"},
     {"firmware[i].min_version", "required"}},
    ParseFirmwareRules);

}  // namespace
}  // namespace rdmahd
