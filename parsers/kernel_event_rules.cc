#include "parsers/kernel_event_rules.h"

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <array>
#include <set>

#include "common/excerpt.h"
#include "common/parse.h"

namespace rdmahd {
namespace {

// RE2's memory budget for one rule, and for the set of all of them.
constexpr std::int64_t kRuleMaxMem = 1 << 20;
constexpr std::int64_t kSetMaxMem = 32 << 20;

constexpr std::array<std::string_view, 5> kGroups{"pci", "dev", "netdev", "num", "text"};
// Submatches Classify reads (the whole match and 15 groups): a named group must be among them.
constexpr int kMaxSubmatches = 16;

// A PCI address, "0000:af:00.0" (a VMD domain has 5 hex digits).
constexpr std::string_view kBdf = R"([0-9a-fA-F]{4,5}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])";

re2::RE2::Options RuleOptions(std::int64_t max_mem) {
  re2::RE2::Options o;
  o.set_encoding(re2::RE2::Options::EncodingLatin1);  // messages are bytes
  o.set_max_mem(max_mem);
  o.set_log_errors(false);
  return o;
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

std::string Printable(std::string_view s, std::size_t max) {
  std::string out;
  for (char ch : s.substr(0, max)) {
    const auto c = static_cast<unsigned char>(ch);
    out += (c >= 0x20 && c < 0x7F) ? ch : '?';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

KernelEventSeverity FromLevel(std::string_view num) {
  const auto level = ParseU64(num);
  if (!level) return KernelEventSeverity::kWarning;
  if (*level <= 3) return KernelEventSeverity::kCritical;
  if (*level == 4) return KernelEventSeverity::kWarning;
  return KernelEventSeverity::kInfo;
}

}  // namespace

struct KernelEventClassifier::Compiled {
  std::vector<KernelEventRule> rules;
  std::vector<std::unique_ptr<re2::RE2>> patterns;
  std::vector<std::array<int, kGroups.size()>> group_of;  // submatch index per kGroups entry, or -1
  std::vector<int> group_count;
  std::unique_ptr<re2::RE2::Set> set;
};

std::string_view KernelEventSeverityName(KernelEventSeverity severity) {
  switch (severity) {
    case KernelEventSeverity::kInfo: return "info";
    case KernelEventSeverity::kWarning: return "warning";
    case KernelEventSeverity::kCritical: return "critical";
    case KernelEventSeverity::kFromLevel: return "from_level";
  }
  return "info";
}

const std::vector<KernelEventRule>& BuiltinKernelEventRules() {
  using S = KernelEventSeverity;
  static const std::vector<KernelEventRule> kRules{
      // mlx5 firmware health (health.c). "poll_health:471:(pid 0): device's health compromised -
      // reached miss count", then print_health_info's "synd 0x10: High temperature".
      {"mlx5_health_compromised", S::kCritical, R"(health compromised)"},
      // "poll_health:478:(pid 0): Fatal error 1 detected"
      {"mlx5_fw_fatal", S::kCritical, R"(Fatal error (?P<num>\d+) detected)"},
      // "print_health_info:421:(pid 0): synd 0x10: High temperature" (not "ext_synd", not
      // "syndrome (0x..)" of a command failure)
      {"mlx5_health_syndrome", S::kCritical, R"(\bsynd (?P<num>0x[0-9a-fA-F]+): (?P<text>.*))"},
      // "health recovery flow aborted, PCI reads still not working"
      {"mlx5_health_recovery_aborted", S::kCritical, R"(health recovery flow aborted)"},
      // Newer kernels: "Health issue observed, High temperature, severity(4) WARNING:"
      {"mlx5_health_issue", S::kFromLevel, R"(Health issue observed, (?P<text>[^,]*), severity\((?P<num>\d+)\))"},
      // events.c temp_warn: "High temperature on sensors with bit set 0 1" ("%llx %llx" or "%#llx")
      {"mlx5_temperature_warning", S::kWarning, R"(High temperature on sensors with bit set (?P<text>.*))"},
      // events.c port_module: "Port module event[error]: module 0, Cable error, Power budget exceeded"
      {"module_error", S::kWarning, R"(Port module event\[error\]: module (?P<num>\d+), (?P<text>.*))"},
      // "Port module event: module 1, Cable unplugged" / "..., Cable plugged"
      {"module_unplugged", S::kWarning, R"(Port module event: module (?P<num>\d+), Cable unplugged)"},
      {"module_plugged", S::kInfo, R"(Port module event: module (?P<num>\d+), Cable plugged)"},
      // cmd.c: "wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command
      // resource", and the async form "cmd[0]: ACCESS_REG(0x805) Async, timeout. Will cause ..."
      {"command_timeout", S::kWarning,
       R"((?P<text>[A-Z][A-Z0-9_]*)\(0x[0-9a-fA-F]+\)[^.]*timeout\. Will cause a leak)"},
      // cmd.c mlx5_cmd_out_err / mlx5_cmd_check: "ACCESS_REG(0x805) op_mod(0x1) failed, status bad
      // operation(0x2), syndrome (0x9a6171), err(-22)". One per read of a restricted PF's counters:
      // counted, low severity.
      {"command_failed", S::kInfo,
       R"((?P<text>[A-Z][A-Z0-9_]*)\(0x[0-9a-fA-F]+\)(?: op_mod\(0x[0-9a-fA-F]+\))? failed, status [^,]*, syndrome \((?P<num>0x[0-9a-fA-F]+)\))"},
      // EFA: "infiniband efa_0: Failed to process command ALLOC_PD (opcode 14) comp_status 1 err -12"
      {"efa_command_failed", S::kWarning,
       R"(Failed to process command (?P<text>[A-Z][A-Z0-9_]*) \(opcode \d+\) comp_status (?P<num>\d+))"},
      // Driver core: "mlx5_core: probe of 0000:03:00.0 failed with error -22"; newer kernels
      // "mlx5_core 0000:03:00.0: probe with driver mlx5_core failed with error -22".
      {"probe_failed", S::kCritical,
       R"(probe (?:of (?P<pci>)" + std::string(kBdf) + R"() |with driver \S+ )failed with error (?P<num>-?\d+))"},
      // "mlx5_core 0000:03:00.0: mlx5_load_one failed with error code -22"
      {"mlx5_load_failed", S::kCritical, R"(mlx5_load_one failed with error code (?P<num>-?\d+))"},
      // events.c mlx5_pcie_event: "Detected insufficient power on the PCIe slot (27W)."
      {"pcie_slot_power_insufficient", S::kWarning, R"(Detected insufficient power on the PCIe slot \((?P<num>\d+)W\))"},
      {"pcie_slot_power_not_advertised", S::kInfo, R"(PCIe slot power capability was not advertised)"},
      // AER, on the erring device's line: "PCIe Bus Error: severity=Corrected, type=Physical Layer,
      // (Receiver ID)"; older kernels "..., id=00e8(Receiver ID)", newer "severity=Correctable"
      // and "Uncorrectable (Non-Fatal)".
      {"aer_fatal", S::kCritical, R"(PCIe Bus Error: severity=Uncorrect(?:ed|able) \(Fatal\), type=(?P<text>[^,]*))"},
      {"aer_nonfatal", S::kWarning,
       R"(PCIe Bus Error: severity=Uncorrect(?:ed|able) \(Non-Fatal\), type=(?P<text>[^,]*))"},
      {"aer_corrected", S::kInfo, R"(PCIe Bus Error: severity=Correct(?:ed|able), type=(?P<text>[^,]*))"},
      // The port that received it, naming the source: "AER: Multiple Corrected error received:
      // 0000:03:00.0", "AER: Correctable error message received from 0000:06:00.0", old "...
      // received: id=00e8".
      {"aer_received", S::kInfo,
       R"(AER: (?:Multiple )?(?P<text>(?:Un)?[Cc]orrect(?:ed|able)(?: \((?:Non-)?Fatal\))?) error (?:message )?received(?::| from) (?:(?P<pci>)" +
           std::string(kBdf) + R"()|id=(?P<num>[0-9a-fA-F]+)))"},
      // The error bits under a "PCIe Bus Error" line: "AER: [ 0] RxErr", "   [ 7] BadDLLP", old
      // "   [ 0] Receiver Error" (CanonicalAerErrorName maps old names to new).
      {"aer_error_bit", S::kInfo, R"((?:AER: |: +)\[ ?(?P<num>\d{1,2})\] (?P<text>[A-Za-z][A-Za-z ]*[A-Za-z]))"},
      // bnxt_en: "Firmware fatal reset event received" / "Firmware non-fatal reset event received, ..."
      {"bnxt_fw_fatal_reset", S::kCritical, R"(Firmware fatal reset event received)"},
      {"bnxt_fw_reset", S::kWarning, R"(Firmware non-fatal reset event received)"},
      // Link state: mlx5e "mlx5_core 0000:af:00.0 ens1f0np0: Link down", bnxt/ice/i40e "NIC Link is
      // Down".
      {"link_down", S::kWarning, R"(: (?:NIC )?Link (?:is )?[Dd]own\b)"},
      {"link_up", S::kInfo, R"(: (?:NIC )?Link (?:is )?[Uu]p\b)"},
  };
  return kRules;
}

KernelEventClassifier::KernelEventClassifier(std::shared_ptr<const Compiled> compiled)
    : compiled_(std::move(compiled)) {}

std::size_t KernelEventClassifier::rule_count() const { return compiled_->rules.size(); }

namespace {
// One rule compiled alone: its pattern and which submatch holds each of kGroups; the error names
// what is wrong with the rule (not which rule: callers say that).
struct CompiledRule {
  std::unique_ptr<re2::RE2> re;
  std::array<int, kGroups.size()> group_of;
};

Result<CompiledRule> CompileRule(const KernelEventRule& r) {
  if (!ValidName(r.name)) return Error{"a name is 1-64 of a-z 0-9 _", EINVAL};
  if (r.pattern.empty()) return Error{"empty pattern", EINVAL};
  if (r.pattern.size() > KernelEventClassifier::kMaxPatternBytes) {
    return Error{"pattern of " + std::to_string(r.pattern.size()) + " bytes, at most " +
                     std::to_string(KernelEventClassifier::kMaxPatternBytes),
                 EINVAL};
  }
  CompiledRule out;
  out.re = std::make_unique<re2::RE2>(re2::StringPiece(r.pattern.data(), r.pattern.size()), RuleOptions(kRuleMaxMem));
  if (!out.re->ok()) {
    if (out.re->error_code() == re2::RE2::ErrorPatternTooLarge) return Error{"pattern too complex", EINVAL};
    return Error{CapMessage(out.re->error(), 200), EINVAL};
  }
  out.group_of.fill(-1);
  for (const auto& [name, index] : out.re->NamedCapturingGroups()) {
    const auto it = std::find(kGroups.begin(), kGroups.end(), name);
    if (it == kGroups.end()) {
      return Error{"capture group " + DescribeKey(name) + " is not one of pci, dev, netdev, num, text", EINVAL};
    }
    if (index >= kMaxSubmatches) {
      return Error{"capture group " + DescribeKey(name) + " is group " + std::to_string(index) + ", past the " +
                       std::to_string(kMaxSubmatches - 1) + "th: write (?:...) for groups that only group",
                   EINVAL};
    }
    out.group_of[static_cast<std::size_t>(it - kGroups.begin())] = index;
  }
  return out;
}
}  // namespace

Status KernelEventClassifier::CheckRule(const KernelEventRule& rule) {
  Result<CompiledRule> r = CompileRule(rule);
  if (!r.ok()) return r.error();
  return Status::Ok();
}

Result<KernelEventClassifier> KernelEventClassifier::Create(std::vector<KernelEventRule> rules) {
  if (rules.size() > kMaxRules) {
    return Error{"kernel event rules: " + std::to_string(rules.size()) + " rules, at most " + std::to_string(kMaxRules),
                 EINVAL};
  }
  auto c = std::make_shared<Compiled>();
  c->set = std::make_unique<re2::RE2::Set>(RuleOptions(kSetMaxMem), re2::RE2::UNANCHORED);
  std::set<std::string> names;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const KernelEventRule& r = rules[i];
    const std::string where = "kernel event rule " + std::to_string(i + 1) + " (" + DescribeKey(r.name, 64) + "): ";
    Result<CompiledRule> rule = CompileRule(r);
    if (!rule.ok()) return Error{where + rule.error().message, EINVAL};
    if (!names.insert(r.name).second) return Error{where + "the name is used by an earlier rule", EINVAL};
    std::string set_error;
    if (c->set->Add(re2::StringPiece(r.pattern.data(), r.pattern.size()), &set_error) != static_cast<int>(i)) {
      return Error{where + CapMessage(set_error, 200), EINVAL};
    }
    c->group_count.push_back(rule->re->NumberOfCapturingGroups());
    c->patterns.push_back(std::move(rule->re));
    c->group_of.push_back(rule->group_of);
  }
  if (!c->set->Compile()) return Error{"kernel event rules: together they compile too large", EINVAL};
  c->rules = std::move(rules);
  return KernelEventClassifier(std::move(c));
}

std::optional<KernelEvent> KernelEventClassifier::Classify(const KernelLogRecord& record) const {
  const Compiled& c = *compiled_;
  if (c.rules.empty()) return std::nullopt;
  const re2::StringPiece text(record.message.data(), record.message.size());
  std::vector<int> matched;
  if (!c.set->Match(text, &matched) || matched.empty()) return std::nullopt;
  const auto first = static_cast<std::size_t>(*std::min_element(matched.begin(), matched.end()));
  const KernelEventRule& rule = c.rules[first];
  const re2::RE2& re = *c.patterns[first];
  std::array<re2::StringPiece, kMaxSubmatches> sub{};
  const int groups = std::min<int>(c.group_count[first] + 1, static_cast<int>(sub.size()));
  if (!re.Match(text, 0, text.size(), re2::RE2::UNANCHORED, sub.data(), groups)) return std::nullopt;
  auto group = [&](std::size_t which) -> std::string_view {
    const int index = c.group_of[first][which];
    if (index < 0 || index >= groups || sub[static_cast<std::size_t>(index)].data() == nullptr) return {};
    return {sub[static_cast<std::size_t>(index)].data(), sub[static_cast<std::size_t>(index)].size()};
  };
  KernelEvent e;
  e.name = rule.name;
  // A user's pattern may capture anything: names are kept printable and short.
  e.pci_address = Printable(group(0).empty() ? std::string_view(record.device.pci_address) : group(0), 64);
  e.ib_device = Printable(group(1).empty() ? std::string_view(record.device.ib_device) : group(1), 64);
  e.netdev = Printable(group(2).empty() ? std::string_view(record.device.netdev) : group(2), 64);
  e.driver = record.device.driver;
  e.number = Printable(group(3), 32);
  e.text = Printable(group(4), kMaxTextBytes);
  e.severity = rule.severity == KernelEventSeverity::kFromLevel ? FromLevel(e.number) : rule.severity;
  e.excerpt = QuoteExcerpt(record.message, kExcerptBytes);
  e.monotonic_us = record.monotonic_us;
  e.sequence = record.sequence;
  e.realtime_s = record.realtime_s;
  return e;
}

}  // namespace rdmahd
