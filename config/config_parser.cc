// ParseConfig / LoadConfigFile: YAML text -> validated Config.
//
// The schema is written as small tables (one per section) of key -> handler, walked by VisitMap, so
// that unknown keys, duplicate keys, wrong node types and positions are handled in one place. Every
// message starts with "SOURCE:LINE:COLUMN:" (1-based) so an editor can jump to it. yaml-cpp throws;
// nothing here lets an exception out of ParseConfig (the edge catches them all).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <chrono>
#include <cmath>
#include <exception>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/excerpt.h"
#include "common/net_address.h"
#include "common/parse.h"
#include "common/pattern.h"
#include "config/config.h"
#include "config/yaml_document.h"
#include "config/yaml_scan.h"

namespace rdmahd {
namespace {

using std::chrono::milliseconds;

// Longer would serve stale data to a scrape that arrives just before the window closes.
constexpr milliseconds kMaxScrapeCacheWindow{250};
// Below 100ms a busy node would fail healthy collectors; above 60s a scrape would outlast
// Prometheus' usual scrape timeout many times over.
constexpr milliseconds kMinCollectionTimeout{100};
constexpr milliseconds kMaxCollectionTimeout{60'000};
// Typo guards rather than physics: 1280 is the IPv6 minimum link MTU (nothing running RoCE at a
// 1024-byte RoCE MTU has less); 9978 is the largest netdev max_mtu among supported NICs (mlx5).
constexpr int kMinMtuLowest = 1280;
constexpr int kMinMtuHighest = 9978;
// 800 Gb/s is the fastest port in service (XDR, 800GbE); twice that catches Mb/s-for-Gb/s slips.
constexpr double kMaxRateGbps = 1600;

// Peer probes. An interval under 100ms would be a load test, not a probe; over a day, no probe.
constexpr milliseconds kMinPeerInterval{100};
constexpr milliseconds kMaxPeerInterval{86'400'000};
// DNS discovery and selection (issue #12).
constexpr milliseconds kMinDnsInterval{1000};
constexpr milliseconds kMinRotation{60000};
constexpr std::uint32_t kMaxSelectedPeers = 4096;
constexpr milliseconds kMinStepTimeout{10};
constexpr milliseconds kMaxStepTimeout{60'000};
constexpr milliseconds kMinBandwidthInterval{10'000};
constexpr milliseconds kMaxBandwidthInterval{86'400'000};
constexpr milliseconds kMinBandwidthDuration{100};
constexpr milliseconds kMaxBandwidthDuration{60'000};
// perftest refuses fewer than 5 iterations; its statistics need 3 samples after the first.
constexpr std::uint32_t kMinLatencyIterations = 5;
constexpr std::uint32_t kMaxLatencyIterations = 1'000'000;
constexpr std::uint32_t kMaxProbeMessage = 1u << 24;  // 16 MiB: ib_write_bw's usual largest size is 8 MiB
constexpr std::uint32_t kMaxQueueDepth = 8192;
constexpr double kMaxLatencyPolicyUs = 1e6;  // a second: beyond that the value is surely in the wrong unit
constexpr std::uint32_t kMaxResponderSessions = 1024;
constexpr std::uint32_t kMaxResponderMessage = 1u << 30;

// A node, where it sits in the schema ("roce.priority", "firmware[1]", "" for the top level) and
// the position to report for it (for a null value: its key, since yaml-cpp marks the next token).
struct Located {
  YAML::Node node;
  std::string path;
  YAML::Mark mark;
};

// A value (or a known name) in a message: a short escaped excerpt, never the whole text.
std::string Quote(std::string_view s) { return QuoteExcerpt(s); }

// What the user wrote, in words, for "got ..." in messages.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return Quote(node.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    default: return "nothing";
  }
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Optimal-string-alignment edit distance: Levenshtein where swapping two adjacent letters
// ("prioirty") costs one edit, the most common typo.
std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The valid key closest to `key`, if close enough to be a plausible typo (about one edit per three
// letters, case ignored).
std::optional<std::string> ClosestKey(std::string_view key, const std::vector<std::string>& valid) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  const std::string lower = ToLower(key);
  for (const auto& candidate : valid) {
    std::size_t distance = EditDistance(lower, ToLower(candidate));
    std::size_t allowed = std::max<std::size_t>(1, candidate.size() / 3);
    if (distance <= allowed && (!best || distance < best_distance)) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

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

// "SOURCE:LINE:COLUMN", 1-based; just SOURCE when yaml-cpp has no position.
std::string Position(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// True when every device `later` matches is matched by `earlier` too.
bool Covers(const FirmwareRule& earlier, const FirmwareRule& later) {
  return (earlier.hca_type.empty() || earlier.hca_type == later.hca_type) &&
         (earlier.board_id.empty() || earlier.board_id == later.board_id);
}

class ConfigParser {
 public:
  ConfigParser(std::string source, const PluginNames& known)
      : source_(std::move(source)), known_(known) {}

  Status Parse(const YAML::Node& root, Config& config) const {
    Located top{root, "", root.Mark()};
    if (!root.IsMap()) {
      const std::string sections = "the top level must be a map of sections (collectors, checks, probes, devices, "
                                   "scrape, ports, limits, firmware, roce, host, peers)";
      if (root.IsScalar()) {
        // The whole file is one scalar (a PEM key, /etc/passwd): none of it is shown.
        return Fail(top.mark, "not a YAML mapping: the file is one scalar of " + std::to_string(root.Scalar().size()) +
                                  " bytes (not shown); " + sections);
      }
      return Fail(top.mark, sections + ", got " + Describe(root));
    }
    return VisitMap(top, {
        {"collectors", [&](const Located& v) { return ParseSwitches(v, known_.collectors, "collector", config.collectors); }},
        {"checks", [&](const Located& v) { return ParseSwitches(v, known_.checks, "check", config.checks); }},
        {"probes", [&](const Located& v) { return ParseSwitches(v, known_.probes, "probe", config.probes); }},
        {"devices", [&](const Located& v) { return ParseDevices(v, config.devices); }},
        {"scrape", [&](const Located& v) { return ParseScrape(v, config); }},
        {"ports", [&](const Located& v) { return ParsePorts(v, config.ports); }},
        {"limits", [&](const Located& v) { return ParseLimits(v, config.limits); }},
        {"firmware", [&](const Located& v) { return ParseFirmware(v, config.firmware); }},
        {"roce", [&](const Located& v) { return ParseRoce(v, config.roce); }},
        {"host", [&](const Located& v) { return ParseHost(v, config.host); }},
        {"peers", [&](const Located& v) { return ParsePeers(v, config.peers); }},
    });
  }

 private:
  using Handler = std::function<Status(const Located&)>;
  struct Field {
    std::string key;
    Handler handle;
  };

  // ---- sections -------------------------------------------------------------------------------

  // `kind:` maps a plug-in name to true/false.
  Status ParseSwitches(const Located& v, const std::vector<std::string>& known, const char* kind,
                       std::map<std::string, bool>& out) const {
    std::vector<Field> fields;
    for (const auto& name : known) {
      fields.push_back({name, [&out, name, this](const Located& f) {
                          bool enabled = true;
                          Status st = ReadBool(f, enabled);
                          if (st.ok() && !f.node.IsNull()) out[name] = enabled;
                          return st;
                        }});
    }
    return VisitMap(v, fields, kind);
  }

  Status ParseDevices(const Located& v, DeviceFilter& out) const {
    Status st = VisitMap(v, {
        {"include", [&](const Located& f) { return ReadRegexList(f, out.include); }},
        {"exclude", [&](const Located& f) { return ReadRegexList(f, out.exclude); }},
    });
    if (st.ok()) out.Compile();  // every pattern was just checked to compile
    return st;
  }

  Status ParseScrape(const Located& v, Config& out) const {
    return VisitMap(v, {
        {"cache_window",
         [&](const Located& f) { return ReadDuration(f, milliseconds{0}, kMaxScrapeCacheWindow, out.scrape_cache_window); }},
        {"collection_timeout",
         [&](const Located& f) {
           return ReadDuration(f, kMinCollectionTimeout, kMaxCollectionTimeout, out.collection_timeout);
         }},
    });
  }

  Status ParsePorts(const Located& v, PortPolicy& out) const {
    return VisitMap(v, {
        {"require_active", [&](const Located& f) { return ReadBool(f, out.require_active); }},
        {"min_rate_gbps", [&](const Located& f) { return ReadRateGbps(f, out.min_rate_gbps); }},
        {"require_roce_v2_gid", [&](const Located& f) { return ReadBool(f, out.require_roce_v2_gid); }},
        {"min_active_mtu", [&](const Located& f) { return ReadIbMtu(f, out.min_active_mtu); }},
    });
  }

  Status ParseLimits(const Located& v, DeviceLimitsPolicy& out) const {
    return VisitMap(v, {
        {"min_max_qp", [&](const Located& f) { return ReadCount(f, out.min_max_qp); }},
        {"min_max_cq", [&](const Located& f) { return ReadCount(f, out.min_max_cq); }},
        {"min_max_cqe", [&](const Located& f) { return ReadCount(f, out.min_max_cqe); }},
        {"min_max_mr", [&](const Located& f) { return ReadCount(f, out.min_max_mr); }},
        {"min_max_mr_size", [&](const Located& f) { return ReadCount(f, out.min_max_mr_size); }},
    });
  }

  Status ParseFirmware(const Located& v, std::vector<FirmwareRule>& out) const {
    std::vector<YAML::Mark> rule_marks;
    return VisitList(v, "a list of rules (- hca_type: ..., min_version: ...)", [&](const Located& item) {
      FirmwareRule rule;
      bool has_min_version = false;
      if (!item.node.IsMap()) {
        return FailAt(item, "must be a rule (hca_type, board_id, min_version), got " + Describe(item.node));
      }
      Status st = VisitMap(item, {
          {"hca_type", [&](const Located& f) { return ReadString(f, rule.hca_type); }},
          {"board_id", [&](const Located& f) { return ReadString(f, rule.board_id); }},
          {"min_version",
           [&](const Located& f) {
             has_min_version = !f.node.IsNull();
             return ReadVersion(f, rule.min_version);
           }},
      });
      if (!st.ok()) return st;
      if (rule.hca_type.empty() && rule.board_id.empty()) {
        return FailAt(item, "a rule needs hca_type, board_id or both (a rule matching every device "
                            "is almost always a mistake)");
      }
      if (!has_min_version) return FailAt(item, "a rule needs min_version");
      // The first matching rule wins, so a rule an earlier one covers (same or wider selectors)
      // could never apply: almost certainly the two were written in the wrong order.
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (Covers(out[i], rule)) {
          return FailAt(item, "can never apply: firmware[" + std::to_string(i) + "] (line " +
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

  Status ParseRoce(const Located& v, RocePolicy& out) const {
    return VisitMap(v, {
        {"priority", [&](const Located& f) { return ReadInt(f, 0, 7, out.priority); }},
        {"dscp", [&](const Located& f) { return ReadDscp(f, out.dscp); }},
        {"trust", [&](const Located& f) { return ReadTrust(f, out.trust); }},
        {"require_ecn", [&](const Located& f) { return ReadBool(f, out.require_ecn); }},
        {"min_mtu", [&](const Located& f) { return ReadInt(f, kMinMtuLowest, kMinMtuHighest, out.min_mtu); }},
        {"extra_ethtool_stats", [&](const Located& f) { return ReadRegexList(f, out.extra_ethtool_stats); }},
    });
  }

  Status ParsePeers(const Located& v, PeersPolicy& out) const {
    Status st = VisitMap(v, {
        {"targets", [&](const Located& f) { return ReadTargets(f, out.targets); }},
        {"file", [&](const Located& f) { return ReadPath(f, out.file); }},
        {"port", [&](const Located& f) { return ReadPort(f, out.port); }},
        {"source_address", [&](const Located& f) { return ReadIp(f, out.source_address); }},
        {"tos", [&](const Located& f) { return ReadTos(f, out.tos); }},
        {"interval", [&](const Located& f) { return ReadDuration(f, kMinPeerInterval, kMaxPeerInterval, out.interval); }},
        {"step_timeout", [&](const Located& f) { return ReadDuration(f, kMinStepTimeout, kMaxStepTimeout, out.step_timeout); }},
        {"latency_message_size", [&](const Located& f) { return ReadU32(f, 1, kMaxProbeMessage, out.latency_message_size); }},
        {"latency_iterations", [&](const Located& f) { return ReadU32(f, kMinLatencyIterations, kMaxLatencyIterations, out.latency_iterations); }},
        {"bandwidth", [&](const Located& f) { return ReadBool(f, out.bandwidth); }},
        {"bandwidth_interval", [&](const Located& f) { return ReadDuration(f, kMinBandwidthInterval, kMaxBandwidthInterval, out.bandwidth_interval); }},
        {"bandwidth_duration", [&](const Located& f) { return ReadDuration(f, kMinBandwidthDuration, kMaxBandwidthDuration, out.bandwidth_duration); }},
        {"bandwidth_message_size", [&](const Located& f) { return ReadU32(f, 1, kMaxProbeMessage, out.bandwidth_message_size); }},
        {"bandwidth_queue_depth", [&](const Located& f) { return ReadU32(f, 1, kMaxQueueDepth, out.bandwidth_queue_depth); }},
        {"max_latency_p99_us", [&](const Located& f) { return ReadPositive(f, kMaxLatencyPolicyUs, "microseconds", out.max_latency_p99_us); }},
        {"min_bandwidth_gbps", [&](const Located& f) { return ReadRateGbps(f, out.min_bandwidth_gbps); }},
        {"responder", [&](const Located& f) { return ParseResponder(f, out.responder); }},
        {"discovery", [&](const Located& f) { return ParsePeerDiscovery(f, out.discovery); }},
        {"selection", [&](const Located& f) { return ParsePeerSelection(f, out.selection); }},
    });
    if (!st.ok()) return st;
    // One stream at a time per node, each bandwidth_duration long: a duration that is not well
    // inside the interval would keep the link saturated.
    if (out.bandwidth_duration * 2 > out.bandwidth_interval) {
      return FailAt(v, "bandwidth_duration (" + std::to_string(out.bandwidth_duration.count()) +
                           "ms) must be at most half of bandwidth_interval (" +
                           std::to_string(out.bandwidth_interval.count()) + "ms)");
    }
    return Status::Ok();
  }

  Status ParsePeerDiscovery(const Located& v, PeerDiscoveryPolicy& out) const {
    return VisitMap(v, {
        {"dns", [&](const Located& f) { return ReadTargets(f, out.dns); }},
        {"dns_server", [&](const Located& f) { return ReadString(f, out.dns_server); }},
        {"dns_interval", [&](const Located& f) { return ReadDuration(f, kMinDnsInterval, kMaxPeerInterval, out.dns_interval); }},
    });
  }

  Status ParsePeerSelection(const Located& v, PeerSelectionPolicy& out) const {
    return VisitMap(v, {
        {"max_peers", [&](const Located& f) { return ReadU32(f, 1, kMaxSelectedPeers, out.max_peers); }},
        {"same_tor_cap", [&](const Located& f) { return ReadU32(f, 0, kMaxSelectedPeers, out.same_tor_cap); }},
        {"tor_label", [&](const Located& f) { return ReadString(f, out.tor_label); }},
        {"rotation", [&](const Located& f) { return ReadDuration(f, kMinRotation, kMaxPeerInterval, out.rotation); }},
        {"self", [&](const Located& f) { return ReadString(f, out.self); }},
    });
  }

  Status ParseResponder(const Located& v, PeerResponderPolicy& out) const {
    Status st = VisitMap(v, {
        {"enabled", [&](const Located& f) { return ReadBool(f, out.enabled); }},
        {"listen_address", [&](const Located& f) { return ReadIp(f, out.listen_address); }},
        {"port", [&](const Located& f) { return ReadPort(f, out.port); }},
        {"allow", [&](const Located& f) { return ReadCidrList(f, out.allow); }},
        {"max_sessions", [&](const Located& f) { return ReadU32(f, 1, kMaxResponderSessions, out.max_sessions); }},
        {"max_message_size", [&](const Located& f) { return ReadU32(f, 1, kMaxResponderMessage, out.max_message_size); }},
        {"max_registered_bytes", [&](const Located& f) {
           std::optional<std::uint64_t> n;
           Status s = ReadCount(f, n);
           if (s.ok() && n) out.max_registered_bytes = *n;
           return s;
         }},
    });
    if (!st.ok()) return st;
    if (out.enabled && out.allow.empty()) {
      return FailAt(v, "enabled is true but allow is empty, so no peer could connect (list the peers' "
                       "addresses or CIDR blocks under allow)");
    }
    if (out.max_registered_bytes < out.max_message_size) {
      return FailAt(v, "max_registered_bytes (" + std::to_string(out.max_registered_bytes) +
                           ") is below max_message_size (" + std::to_string(out.max_message_size) +
                           "): not even one probe of the largest size would fit");
    }
    return Status::Ok();
  }

  // host: one list of keys; each helper area adds its own fields (ParseHostMemoryFields).
  Status ParseHost(const Located& v, HostPolicy& out) const {
    std::vector<Field> fields;
    AppendHostMemoryFields(fields, out);
    AppendHostDeviceFields(fields, out);
    return VisitMap(v, fields);
  }

  void AppendHostMemoryFields(std::vector<Field>& fields, HostPolicy& out) const {
    fields.push_back({"hugepages", [&](const Located& f) { return ParseHostHugepages(f, out.hugepages); }});
    fields.push_back({"memlock", [&](const Located& f) { return ParseHostMemlock(f, out.memlock); }});
    fields.push_back({"workload_numa", [&](const Located& f) { return ParseHostWorkloadNuma(f, out.workload_numa); }});
    fields.push_back({"workloads", [&](const Located& f) { return ParseHostWorkloads(f, out.workloads); }});
  }

  Status ParseHostHugepages(const Located& v, HugepagesPolicy& out) const {
    return VisitMap(v, {
        {"page_size", [&](const Located& f) { return ReadHugepageSize(f, out.page_size_bytes); }},
        {"min_free", [&](const Located& f) { return ReadCount(f, out.min_free); }},
    });
  }

  Status ParseHostMemlock(const Located& v, MemlockPolicy& out) const {
    return VisitMap(v, {
        {"min_bytes",
         [&](const Located& f) {
           if (f.node.IsScalar() && f.node.Scalar() == "unlimited") {
             out.require_unlimited = true;
             return Status::Ok();
           }
           std::optional<std::uint64_t> bytes;
           Status st = ReadBytes(f, bytes, " or \"unlimited\"");
           if (st.ok() && bytes) {
             out.min_bytes = *bytes;
             out.require_unlimited = false;
           }
           return st;
         }},
    });
  }

  Status ParseHostWorkloadNuma(const Located& v, WorkloadNumaPolicy& out) const {
    return VisitMap(v, {
        {"min_local_memory_share",
         [&](const Located& f) {
           if (f.node.IsNull()) return Status::Ok();
           std::optional<double> share = f.node.IsScalar() ? ParseDouble(f.node.Scalar()) : std::nullopt;
           if (!share || !std::isfinite(*share) || *share <= 0 || *share > 1) {
             return FailAt(f, "must be a share greater than 0 and at most 1 (0.9 = 90%), got " + Describe(f.node));
           }
           out.min_local_memory_share = *share;
           return Status::Ok();
         }},
    });
  }

  // Workload names become label values, so they are short and plain, and their number is bounded.
  static constexpr std::size_t kMaxWorkloads = 32;
  // The kernel keeps 15 bytes of a process name (TASK_COMM_LEN - 1).
  static constexpr std::size_t kMaxCommBytes = 15;

  Status ParseHostWorkloads(const Located& v, std::vector<WorkloadSpec>& out) const {
    std::vector<WorkloadSpec> workloads;
    Status st = VisitList(v, "a list of workloads (- name: ..., process: ...)", [&](const Located& item) {
      if (!item.node.IsMap()) {
        return FailAt(item, "must be a workload (name, and one of process, pid_file, systemd_unit), got " +
                                Describe(item.node));
      }
      if (workloads.size() == kMaxWorkloads) {
        return FailAt(item, "at most " + std::to_string(kMaxWorkloads) + " workloads (they are metric labels)");
      }
      WorkloadSpec w;
      std::string device;
      Status inner = VisitMap(item, {
          {"name", [&](const Located& f) { return ReadString(f, w.name); }},
          {"process", [&](const Located& f) { return ReadString(f, w.process); }},
          {"pid_file", [&](const Located& f) { return ReadString(f, w.pid_file); }},
          {"systemd_unit", [&](const Located& f) { return ReadString(f, w.systemd_unit); }},
          {"device", [&](const Located& f) { return ReadString(f, device); }},
      });
      if (!inner.ok()) return inner;
      if (!device.empty()) w.device = device;
      if (w.name.empty()) return FailAt(item, "a workload needs a name");
      if (w.name.size() > 64 || w.name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                         "0123456789_.-") != std::string::npos) {
        return FailAt(item, "name " + Quote(w.name) + " must be 1 to 64 of A-Z a-z 0-9 _ . - (it is a label value)");
      }
      for (const auto& earlier : workloads) {
        if (earlier.name == w.name) return FailAt(item, "duplicate workload name " + Quote(w.name));
      }
      const int selectors = !w.process.empty() + !w.pid_file.empty() + !w.systemd_unit.empty();
      if (selectors != 1) {
        return FailAt(item, "workload " + Quote(w.name) + " needs exactly one of process, pid_file, systemd_unit");
      }
      if (w.process.find('/') != std::string::npos) {
        return FailAt(item, "process " + Quote(w.process) + " is a path; give the process name (comm), e.g. " +
                                Quote(w.process.substr(w.process.rfind('/') + 1).substr(0, kMaxCommBytes)));
      }
      if (w.process.size() > kMaxCommBytes) {
        return FailAt(item, "process " + Quote(w.process) + " is longer than the 15 bytes the kernel keeps of a "
                            "process name: it would never match (use " + Quote(w.process.substr(0, kMaxCommBytes)) + ")");
      }
      if (!w.pid_file.empty() && w.pid_file[0] != '/') {
        return FailAt(item, "pid_file " + Quote(w.pid_file) + " must be an absolute path");
      }
      if (!w.systemd_unit.empty()) {
        const std::string& u = w.systemd_unit;
        const std::size_t dot = u.rfind('.');
        if (u.find('/') != std::string::npos || u[0] == '.' || dot == std::string::npos || dot == 0 ||
            dot + 1 == u.size()) {
          return FailAt(item, "systemd_unit " + Quote(u) + " must be a unit name with its type, e.g. trainer.service");
        }
      }
      workloads.push_back(std::move(w));
      return Status::Ok();
    });
    if (st.ok() && !v.node.IsNull()) out = std::move(workloads);
    return st;
  }

  // A byte size: an integer number of bytes, or a number with kB/KiB, MiB, GiB or TiB (all
  // binary, as the kernel's "kB" is).
  Status ReadBytes(const Located& v, std::optional<std::uint64_t>& out, std::string_view also = "") const {
    if (v.node.IsNull()) return Status::Ok();
    const std::string message = "must be a size in bytes (67108864, or with kB, KiB, MiB, GiB, TiB: 64MiB)" +
                                std::string(also) + ", got " + Describe(v.node);
    if (!v.node.IsScalar()) return FailAt(v, message);
    std::string_view text = Trim(v.node.Scalar());
    std::uint64_t unit = 1;
    for (const auto& [suffix, factor] : std::initializer_list<std::pair<std::string_view, std::uint64_t>>{
             {"kB", 1ull << 10}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40}}) {
      if (text.ends_with(suffix)) {
        unit = factor;
        text = Trim(text.substr(0, text.size() - suffix.size()));
        break;
      }
    }
    std::optional<std::uint64_t> n = ParseU64(text);
    if (!n || *n == 0 || *n > UINT64_MAX / unit) return FailAt(v, message);
    out = *n * unit;
    return Status::Ok();
  }

  // A hugepage size the kernel can have: a power of two from 64 KiB (arm64's smallest) to 16 GiB.
  Status ReadHugepageSize(const Located& v, std::optional<std::uint64_t>& out) const {
    std::optional<std::uint64_t> bytes;
    Status st = ReadBytes(v, bytes);
    if (!st.ok() || !bytes) return st;
    if ((*bytes & (*bytes - 1)) != 0 || *bytes < (1ull << 16) || *bytes > (1ull << 34)) {
      return FailAt(v, "must be a hugepage size (a power of two from 64KiB to 16GiB: 2MiB, 1GiB), got " +
                           Describe(v.node));
    }
    out = bytes;
    return Status::Ok();
  }


  // host: device side (PCIe, ToS, plumbing, link flaps).
  void AppendHostDeviceFields(std::vector<Field>& fields, HostPolicy& out) const {
    fields.push_back({"device_access", [&](const Located& f) {
                        return VisitMap(f, {
                            {"user", [&](const Located& g) { return ReadOptionalString(g, out.device_access.user); }},
                            {"group", [&](const Located& g) { return ReadOptionalString(g, out.device_access.group); }},
                        });
                      }});
    fields.push_back({"cpu_governor", [&](const Located& f) { return ReadOptionalString(f, out.cpu_governor); }});
    fields.push_back({"link_flaps", [&](const Located& f) { return ParseHostLinkFlaps(f, out.link_flaps); }});
  }

  Status ParseHostLinkFlaps(const Located& v, HostLinkFlapPolicy& out) const {
    Status st = VisitMap(v, {
        {"drop_window",
         [&](const Located& f) { return ReadDuration(f, milliseconds{1000}, milliseconds{3'600'000}, out.drop_window); }},
        {"window",
         [&](const Located& f) { return ReadDuration(f, milliseconds{1000}, milliseconds{86'400'000}, out.window); }},
        {"threshold",
         [&](const Located& f) {
           std::optional<int> n;
           Status s = ReadInt(f, 1, 1000, n);
           if (s.ok() && n) out.threshold = static_cast<std::uint32_t>(*n);
           return s;
         }},
        {"recovery",
         [&](const Located& f) { return ReadDuration(f, milliseconds{0}, milliseconds{86'400'000}, out.recovery); }},
    });
    if (st.ok() && out.window < out.drop_window) {
      return FailAt(v, "window (" + std::to_string(out.window.count()) + "ms) must not be shorter than drop_window (" +
                           std::to_string(out.drop_window.count()) + "ms): a flap lasts up to drop_window");
    }
    return st;
  }

  // ---- structure ------------------------------------------------------------------------------

  // Visits every key of a map node in file order: rejects non-scalar, unknown (with the closest
  // valid key) and repeated keys, and hands each value to its handler. A null node (a section
  // with everything commented out) is an empty map.
  Status VisitMap(const Located& v, const std::vector<Field>& fields, std::string_view noun = "key") const {
    if (v.node.IsNull()) return Status::Ok();
    if (!v.node.IsMap()) return FailAt(v, "must be a map of keys, got " + Describe(v.node));
    const std::string where = v.path.empty() ? "at the top level" : "in " + v.path;
    std::vector<std::pair<std::string, YAML::Mark>> seen;
    for (auto it = v.node.begin(); it != v.node.end(); ++it) {
      const YAML::Node key = it->first;  // a handle copy: it-> yields a temporary proxy
      if (!key.IsScalar()) {
        return Fail(key.Mark(), "keys must be plain names, got " + Describe(key) + " " + where);
      }
      const std::string& name = key.Scalar();
      auto field = std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == name; });
      if (field == fields.end()) return Fail(key.Mark(), UnknownKeyMessage(name, where, fields, noun));
      auto earlier = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == name; });
      if (earlier != seen.end()) {
        return Fail(key.Mark(), "duplicate " + std::string(noun) + " " + Quote(name) + " " + where +
                                    " (first set at line " + std::to_string(earlier->second.line + 1) + ")");
      }
      seen.emplace_back(name, key.Mark());
      const YAML::Node value = it->second;
      Located child{value, v.path.empty() ? name : v.path + "." + name,
                    value.IsNull() ? key.Mark() : value.Mark()};
      if (Status st = field->handle(child); !st.ok()) return st;
    }
    return Status::Ok();
  }

  std::string UnknownKeyMessage(const std::string& name, const std::string& where,
                                const std::vector<Field>& fields, std::string_view noun) const {
    std::vector<std::string> valid;
    std::size_t longest = 0;
    for (const auto& f : fields) {
      valid.push_back(f.key);
      longest = std::max(longest, f.key.size());
    }
    // Quoted only when it could be a mistyped key: a name no longer than the longest valid key
    // plus a few typed letters. A shadow line or a hash is described, not shown.
    const std::size_t shown = std::min(kExcerptBytes, valid.empty() ? kExcerptBytes : longest + 3);
    std::string message = "unknown " + std::string(noun) + " " + DescribeKey(name, shown) + " " + where;
    // (A key far longer than any valid one is no typo of one; nor worth the edit distance.)
    if (auto suggestion = name.size() <= 2 * longest ? ClosestKey(name, valid) : std::nullopt) {
      return message + " (did you mean " + Quote(*suggestion) + "?)";
    }
    if (valid.empty()) return message + " (none are known)";
    return message + " (expected one of: " + Join(valid) + ")";
  }

  // Visits every item of a list node. Null is an empty list.
  Status VisitList(const Located& v, std::string_view expected, const Handler& handle) const {
    if (v.node.IsNull()) return Status::Ok();
    if (!v.node.IsSequence()) {
      return FailAt(v, "must be " + std::string(expected) + ", got " + Describe(v.node));
    }
    for (std::size_t i = 0; i < v.node.size(); ++i) {
      const YAML::Node item = v.node[i];
      Located child{item, v.path + "[" + std::to_string(i) + "]", item.IsNull() ? v.mark : item.Mark()};
      if (Status st = handle(child); !st.ok()) return st;
    }
    return Status::Ok();
  }

  // ---- leaves ---------------------------------------------------------------------------------
  // A null value ("key:" with nothing after it) leaves the built-in default in place.

  // True/false only: YAML 1.1's yes/no/on/off are ambiguous between parsers and never needed here.
  Status ReadBool(const Located& v, bool& out) const {
    if (v.node.IsNull()) return Status::Ok();
    std::string text = v.node.IsScalar() ? ToLower(v.node.Scalar()) : "";
    if (text == "true") {
      out = true;
    } else if (text == "false") {
      out = false;
    } else {
      return FailAt(v, "must be true or false, got " + Describe(v.node));
    }
    return Status::Ok();
  }

  Status ReadInt(const Located& v, int lo, int hi, std::optional<int>& out,
                 std::string_view hint = "") const {
    if (v.node.IsNull()) return Status::Ok();
    std::optional<std::int64_t> n = v.node.IsScalar() ? ParseI64(v.node.Scalar()) : std::nullopt;
    if (!n || *n < lo || *n > hi) {
      return FailAt(v, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                           ", got " + Describe(v.node) + std::string(hint));
    }
    out = static_cast<int>(*n);
    return Status::Ok();
  }

  // An InfiniBand MTU (what ibv_query_port's active_mtu can be): 256, 512, 1024, 2048 or 4096. A
  // netdev MTU (1500, 4200, 9000) is the usual slip: it belongs in roce.min_mtu.
  Status ReadIbMtu(const Located& v, std::optional<int>& out) const {
    if (v.node.IsNull()) return Status::Ok();
    std::optional<std::int64_t> n = v.node.IsScalar() ? ParseI64(v.node.Scalar()) : std::nullopt;
    if (!n || (*n != 256 && *n != 512 && *n != 1024 && *n != 2048 && *n != 4096)) {
      std::string hint;
      if (n && *n > 4096) hint = " (that looks like a netdev MTU; it belongs in roce.min_mtu)";
      return FailAt(v, "must be an RDMA MTU: 256, 512, 1024, 2048 or 4096, got " + Describe(v.node) + hint);
    }
    out = static_cast<int>(*n);
    return Status::Ok();
  }

  // A positive integer (a count, or bytes), up to 2^64 - 1.
  Status ReadCount(const Located& v, std::optional<std::uint64_t>& out) const {
    if (v.node.IsNull()) return Status::Ok();
    std::optional<std::uint64_t> n = v.node.IsScalar() ? ParseU64(Trim(v.node.Scalar())) : std::nullopt;
    if (!n || *n == 0) return FailAt(v, "must be a positive integer, got " + Describe(v.node));
    out = *n;
    return Status::Ok();
  }

  // A TOS byte (DSCP << 2, what `tc`/`cma_roce_tos` take) is the usual slip.
  Status ReadDscp(const Located& v, std::optional<int>& out) const {
    std::string hint;
    if (v.node.IsScalar()) {
      if (auto n = ParseI64(v.node.Scalar()); n && *n > 63 && *n <= 255 && *n % 4 == 0) {
        hint = " (that looks like a TOS byte; the DSCP is TOS / 4 = " + std::to_string(*n / 4) + ")";
      }
    }
    return ReadInt(v, 0, 63, out, hint);
  }

  Status ReadRateGbps(const Located& v, std::optional<double>& out) const {
    if (v.node.IsNull()) return Status::Ok();
    std::optional<double> rate = v.node.IsScalar() ? ParseDouble(v.node.Scalar()) : std::nullopt;
    if (!rate || !std::isfinite(*rate) || *rate <= 0 || *rate > kMaxRateGbps) {
      return FailAt(v, "must be a rate in Gb/s, greater than 0 and at most " +
                           std::to_string(static_cast<int>(kMaxRateGbps)) + ", got " + Describe(v.node));
    }
    out = *rate;
    return Status::Ok();
  }

  Status ReadTrust(const Located& v, std::optional<TrustMode>& out) const {
    if (v.node.IsNull()) return Status::Ok();
    std::string text = v.node.IsScalar() ? v.node.Scalar() : "";
    if (text == "dscp") {
      out = TrustMode::kDscp;
    } else if (text == "pcp") {
      out = TrustMode::kPcp;
    } else {
      std::string message = "must be \"dscp\" or \"pcp\", got " + Describe(v.node);
      if (auto suggestion = ClosestKey(text, {"dscp", "pcp"}); suggestion && !text.empty()) {
        message += " (did you mean " + Quote(*suggestion) + "?)";
      }
      return FailAt(v, message);
    }
    return Status::Ok();
  }

  // "250ms", "0.2s", or a bare integer number of milliseconds; whole milliseconds from 0 to `max`.
  Status ReadDuration(const Located& v, milliseconds min, milliseconds max, milliseconds& out) const {
    if (v.node.IsNull()) return Status::Ok();
    auto spell = [](milliseconds d) {  // as written in the docs: "250ms", "60s"
      return d.count() > 0 && d.count() % 1000 == 0 ? std::to_string(d.count() / 1000) + "s"
                                                    : std::to_string(d.count()) + "ms";
    };
    const std::string bounds = "must be a duration from " + spell(min) + " to " + spell(max) +
                               " (\"200ms\", \"0.2s\" or an integer number of milliseconds), got " +
                               Describe(v.node);
    if (!v.node.IsScalar()) return FailAt(v, bounds);
    std::string_view text = Trim(v.node.Scalar());
    std::optional<double> value;
    if (auto integer = ParseU64(text)) {
      value = static_cast<double>(*integer);
    } else if (text.ends_with("ms")) {
      value = ParseDouble(text.substr(0, text.size() - 2));
    } else if (text.ends_with("s")) {
      value = ParseDouble(text.substr(0, text.size() - 1));
      if (value) *value *= 1000;
    } else if (text.ends_with("m") || text.ends_with("h")) {  // peer intervals: "10m", "1h"
      value = ParseDouble(text.substr(0, text.size() - 1));
      if (value) *value *= text.back() == 'm' ? 60'000 : 3'600'000;
    }
    if (!value || !std::isfinite(*value) || *value < static_cast<double>(min.count()) ||
        *value > static_cast<double>(max.count())) {
      return FailAt(v, bounds);
    }
    double whole = std::round(*value);
    if (std::fabs(*value - whole) > 1e-6) {
      return FailAt(v, "must be a whole number of milliseconds, got " + Describe(v.node));
    }
    out = milliseconds(static_cast<std::int64_t>(whole));
    return Status::Ok();
  }

  Status ReadU32(const Located& v, std::uint32_t lo, std::uint32_t hi, std::uint32_t& out) const {
    if (v.node.IsNull()) return Status::Ok();
    std::optional<std::uint64_t> n = v.node.IsScalar() ? ParseU64(Trim(v.node.Scalar())) : std::nullopt;
    if (!n || *n < lo || *n > hi) {
      return FailAt(v, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                           ", got " + Describe(v.node));
    }
    out = static_cast<std::uint32_t>(*n);
    return Status::Ok();
  }

  Status ReadPort(const Located& v, std::uint16_t& out) const {
    std::uint32_t port = out;
    Status st = ReadU32(v, 1, 65535, port);
    if (st.ok()) out = static_cast<std::uint16_t>(port);
    return st;
  }

  Status ReadIp(const Located& v, std::string& out) const {
    if (v.node.IsNull()) return Status::Ok();
    if (!v.node.IsScalar() || !IsIpLiteral(v.node.Scalar())) {
      return FailAt(v, "must be an IP address of this node (10.0.0.1, fd00::1), got " + Describe(v.node));
    }
    out = v.node.Scalar();
    return Status::Ok();
  }

  // The whole IP ToS byte (DSCP << 2 | ECN), as rdma_set_option(RDMA_OPTION_ID_TOS) and perftest's
  // -T take it. The ECN bits are the NIC's to set.
  Status ReadTos(const Located& v, std::optional<std::uint8_t>& out) const {
    if (v.node.IsNull()) return Status::Ok();
    std::optional<int> tos;
    if (Status st = ReadInt(v, 0, 255, tos); !st.ok()) return st;
    if (*tos % 4 != 0) {
      return FailAt(v, "must be a ToS byte with the ECN bits clear (DSCP << 2: a multiple of 4, e.g. 106 -> 104 "
                       "for DSCP 26), got " + Describe(v.node));
    }
    out = static_cast<std::uint8_t>(*tos);
    return Status::Ok();
  }

  Status ReadPositive(const Located& v, double max, std::string_view unit, std::optional<double>& out) const {
    if (v.node.IsNull()) return Status::Ok();
    std::optional<double> x = v.node.IsScalar() ? ParseDouble(v.node.Scalar()) : std::nullopt;
    if (!x || !std::isfinite(*x) || *x <= 0 || *x > max) {
      std::ostringstream bound;
      bound << max;
      return FailAt(v, "must be a number of " + std::string(unit) + ", greater than 0 and at most " + bound.str() +
                           ", got " + Describe(v.node));
    }
    out = *x;
    return Status::Ok();
  }

  Status ReadTargets(const Located& v, std::vector<std::string>& out) const {
    if (v.node.IsScalar()) {
      return FailAt(v, "must be a list of IP addresses or host names, got " + Describe(v.node) + " (write [" +
                           Quote(v.node.Scalar()) + "] for a list of one)");
    }
    std::vector<std::string> targets;
    std::vector<YAML::Mark> marks;
    Status st = VisitList(v, "a list of IP addresses or host names", [&](const Located& item) {
      if (!item.node.IsScalar()) return FailAt(item, "must be an IP address or host name, got " + Describe(item.node));
      const std::string& target = item.node.Scalar();
      if (auto why = CheckPeerTarget(target)) return FailAt(item, Quote(target) + " is " + *why);
      auto dup = std::find(targets.begin(), targets.end(), target);
      if (dup != targets.end()) {
        return FailAt(item, Quote(target) + " is listed twice (first at line " +
                                std::to_string(marks[static_cast<std::size_t>(dup - targets.begin())].line + 1) + ")");
      }
      targets.push_back(target);
      marks.push_back(item.mark);
      return Status::Ok();
    });
    if (st.ok() && !v.node.IsNull()) out = std::move(targets);
    return st;
  }

  Status ReadCidrList(const Located& v, std::vector<std::string>& out) const {
    if (v.node.IsScalar()) {
      return FailAt(v, "must be a list of IP addresses or CIDR blocks, got " + Describe(v.node) + " (write [" +
                           Quote(v.node.Scalar()) + "] for a list of one)");
    }
    std::vector<std::string> blocks;
    Status st = VisitList(v, "a list of IP addresses or CIDR blocks", [&](const Located& item) {
      if (!item.node.IsScalar()) return FailAt(item, "must be an IP address or CIDR block, got " + Describe(item.node));
      if (auto why = CheckIpOrCidr(item.node.Scalar())) return FailAt(item, Quote(item.node.Scalar()) + ": " + *why);
      blocks.push_back(item.node.Scalar());
      return Status::Ok();
    });
    if (st.ok() && !v.node.IsNull()) out = std::move(blocks);
    return st;
  }

  // A path; a relative one is relative to the config file's folder (as Prometheus' file_sd does),
  // so a config and its targets file can move together.
  Status ReadPath(const Located& v, std::string& out) const {
    std::string path;
    if (Status st = ReadString(v, path); !st.ok() || path.empty()) return st;
    if (path.front() != '/') {
      const auto slash = source_.rfind('/');
      if (slash != std::string::npos) path = source_.substr(0, slash + 1) + path;
    }
    out = std::move(path);
    return Status::Ok();
  }

  Status ReadString(const Located& v, std::string& out) const {
    if (v.node.IsNull()) return Status::Ok();
    if (!v.node.IsScalar() || v.node.Scalar().empty()) {
      return FailAt(v, "must be a non-empty string, got " + Describe(v.node));
    }
    out = v.node.Scalar();
    return Status::Ok();
  }

  Status ReadOptionalString(const Located& v, std::optional<std::string>& out) const {
    if (v.node.IsNull()) return Status::Ok();
    std::string text;
    if (Status st = ReadString(v, text); !st.ok()) return st;
    out = std::move(text);
    return Status::Ok();
  }

  Status ReadVersion(const Located& v, std::string& out) const {
    if (v.node.IsNull()) return Status::Ok();
    if (!v.node.IsScalar() || !IsDottedNumeric(v.node.Scalar())) {
      return FailAt(v, "must be a dotted numeric version such as 16.35.2000, got " + Describe(v.node));
    }
    out = v.node.Scalar();
    return Status::Ok();
  }

  // Regular expressions (RE2 syntax, common/pattern.h), compiled here so that a bad or too complex
  // one fails the load (and reload), not a scrape.
  Status ReadRegexList(const Located& v, std::vector<std::string>& out) const {
    if (v.node.IsScalar()) {
      return FailAt(v, "must be a list of regular expressions, got " + Describe(v.node) + " (write [" +
                           Quote(v.node.Scalar()) + "] for a list of one)");
    }
    std::vector<std::string> patterns;
    Status st = VisitList(v, "a list of regular expressions", [&](const Located& item) {
      if (!item.node.IsScalar() || item.node.Scalar().empty()) {
        return FailAt(item, "must be a non-empty regular expression, got " + Describe(item.node));
      }
      const std::string& pattern = item.node.Scalar();
      if (Result<Pattern> compiled = Pattern::Compile(pattern); !compiled.ok()) {
        return FailAt(item, "invalid regular expression " + Quote(pattern) + ": " + compiled.error().message);
      }
      patterns.push_back(pattern);
      return Status::Ok();
    });
    if (st.ok() && !v.node.IsNull()) out = std::move(patterns);
    return st;
  }

  // ---- messages -------------------------------------------------------------------------------

  Status Fail(const YAML::Mark& mark, const std::string& message) const {
    return Error{Position(source_, mark) + ": " + message};
  }
  Status FailAt(const Located& v, const std::string& message) const {
    return Fail(v.mark, v.path.empty() ? message : v.path + ": " + message);
  }

  std::string source_;
  const PluginNames& known_;
};

// yaml-cpp's mark for an error found at end of input lies past the text (the line after the last
// one); DeepRecursion's has line and column 0. Recomputed from the offset where it is usable, then
// clamped so that every position printed is 1-based and inside the file.
YAML::Mark MarkInText(YAML::Mark mark, std::string_view text) {
  if (mark.is_null()) return mark;
  if (mark.pos >= 0 && static_cast<std::size_t>(mark.pos) <= text.size()) {
    std::size_t pos = static_cast<std::size_t>(mark.pos);
    // At the very end after a final newline: the end of the last line, not a line that is not there.
    while (pos > 0 && pos == text.size() && (text[pos - 1] == '\n' || text[pos - 1] == '\r')) --pos;
    mark.line = 0;
    mark.column = 0;
    for (std::size_t i = 0; i < pos; ++i) {
      if (text[i] == '\n') {
        ++mark.line;
        mark.column = 0;
      } else {
        ++mark.column;
      }
    }
    return mark;
  }
  // No usable offset: clamp line and column to the text.
  std::vector<std::string_view> lines;
  for (std::size_t start = 0;;) {
    std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (lines.size() > 1 && lines.back().empty()) lines.pop_back();  // the final newline ends a line
  if (mark.line < 0) mark.line = 0;
  if (static_cast<std::size_t>(mark.line) >= lines.size()) {
    mark.line = static_cast<int>(lines.size()) - 1;
    mark.column = static_cast<int>(lines.back().size());
  }
  const int width = static_cast<int>(lines[static_cast<std::size_t>(mark.line)].size());
  mark.column = std::clamp(mark.column, 0, width);
  return mark;
}

std::string FlowName(const FlowOpening& f) {
  return f.bracket == '[' ? "flow sequence '['" : "flow map '{'";
}

std::string OpeningPosition(const std::string& source, const FlowOpening& f) {
  return source + ":" + std::to_string(f.line) + ":" + std::to_string(f.column);
}

// yaml-cpp's message for a parse error, pointing at where an unclosed flow opened when that is
// what yaml-cpp ran into at the end of the input.
std::string YamlErrorMessage(const std::string& source, std::string_view text, const FlowScan& scan,
                             const YAML::ParserException& e) {
  const bool flow_end = e.msg == YAML::ErrorMsg::END_OF_SEQ_FLOW || e.msg == YAML::ErrorMsg::END_OF_MAP_FLOW;
  std::size_t significant = text.find_last_not_of(" \t\r\n");
  significant = significant == std::string_view::npos ? 0 : significant + 1;
  const bool at_end = e.mark.pos >= 0 && static_cast<std::size_t>(e.mark.pos) >= significant;
  if (scan.unclosed && (flow_end || at_end)) {
    const FlowOpening& f = *scan.unclosed;
    return OpeningPosition(source, f) + ": invalid YAML: this " + FlowName(f) +
           " is never closed (the file ends first)";
  }
  if (const auto* deep = dynamic_cast<const YAML::DeepRecursion*>(&e)) {
    return Position(source, MarkInText(e.mark, text)) + ": invalid YAML: nested more than " +
           std::to_string(deep->depth() - 1) + " levels deep";
  }
  return Position(source, MarkInText(e.mark, text)) + ": invalid YAML: " + e.msg;
}

// Counts documents from parser events, building nothing. YAML::LoadAll is not used: yaml-cpp 0.7
// returns an empty document without consuming a stray ',' at document level ("," or "[1], x"), so
// LoadAll loops forever, allocating (found by fuzz/config_fuzz.cc).
class DocumentCounter : public YAML::EventHandler {
 public:
  struct Document {
    YAML::Mark start;              // where the parser stood when the document began
    std::optional<YAML::Mark> node;  // its first node
  };
  std::vector<Document> documents;

  void OnDocumentStart(const YAML::Mark& mark) override { documents.push_back({mark, std::nullopt}); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    Node(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(mark);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& mark) {
    if (!documents.empty() && !documents.back().node) documents.back().node = mark;
  }
};

// An error message when the text is not exactly one YAML document (zero is fine: defaults). Reads
// at most three documents, so a parser that stops advancing cannot keep it busy.
std::optional<std::string> CheckOneDocument(const std::string& source, const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentCounter counter;
  while (counter.documents.size() < 3 && parser.HandleNextDocument(counter)) {
    const auto& docs = counter.documents;
    if (docs.size() >= 2 && docs[docs.size() - 1].start.pos == docs[docs.size() - 2].start.pos) {
      // No progress: the parser is stuck on a token no document can start with.
      const YAML::Mark at = MarkInText(docs.back().start, text);
      const std::size_t pos = static_cast<std::size_t>(std::max(0, docs.back().start.pos));
      const std::string what = pos < text.size() ? "'" + std::string(1, text[pos]) + "'" : "text";
      return Position(source, at) + ": invalid YAML: unexpected " + what +
             (what == "','" ? " outside a flow collection ('[...]' or '{...}')" : "");
    }
  }
  if (counter.documents.size() > 1) {
    const auto& second = counter.documents[1];
    return Position(source, MarkInText(second.node.value_or(second.start), text)) +
           ": a second YAML document; a config file holds exactly one";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> YamlTextProblem(std::string_view text, const std::string& source) {
  if (std::optional<TextProblem> problem = FindTextProblem(text)) {
    return source + ":" + std::to_string(problem->at.line) + ":" + std::to_string(problem->at.column) + ": " +
           problem->what;
  }
  const FlowScan scan = ScanFlows(text, kMaxFlowDepth);
  if (scan.tab_indentation) {
    return source + ":" + std::to_string(scan.tab_indentation->line) + ":" +
           std::to_string(scan.tab_indentation->column) +
           ": a tab in the indentation: YAML indents with spaces only";
  }
  return std::nullopt;
}

namespace {

Result<YAML::Node> LoadSingleYamlDocumentUncapped(const std::string& text, const std::string& source) {
  if (std::optional<std::string> problem = YamlTextProblem(text, source)) return Error{*problem};
  const FlowScan scan = ScanFlows(text, kMaxFlowDepth);
  if (scan.too_deep) {
    return Error{OpeningPosition(source, *scan.too_deep) + ": invalid YAML: flow collections ('[', '{') "
                 "nested more than " + std::to_string(kMaxFlowDepth) + " deep"};
  }
  try {
    try {
      if (std::optional<std::string> problem = CheckOneDocument(source, text)) return Error{*problem};
      return YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      return Error{YamlErrorMessage(source, text, scan, e)};
    }
  } catch (const YAML::Exception& e) {
    return Error{Position(source, MarkInText(e.mark, text)) + ": " + e.msg};
  } catch (const std::exception& e) {
    return Error{source + ": " + e.what()};
  }
}

Result<Config> ParseConfigUncapped(const std::string& yaml_text, const std::string& source_name,
                                   const PluginNames& known) {
  const std::string source = source_name.empty() ? "<config>" : source_name;
  if (yaml_text.size() > kMaxConfigBytes) {
    return Error{source + ": " + std::to_string(yaml_text.size()) + " bytes, more than the " +
                     std::to_string(kMaxConfigBytes >> 20) + " MiB a config file may hold",
                 EFBIG};
  }
  Result<YAML::Node> loaded = LoadSingleYamlDocument(yaml_text, source);
  if (!loaded.ok()) return loaded.error();
  try {
    const YAML::Node& document = *loaded;
    Config config;
    config.source = source;
    // Empty text or only comments: no document, or a null one. Built-in defaults, marked as such.
    if (!document.IsDefined() || document.IsNull()) {
      config.no_settings = true;
      return config;
    }
    Status st = ConfigParser(source, known).Parse(document, config);
    if (!st.ok()) return st.error();
    return config;
  } catch (const YAML::Exception& e) {
    return Error{Position(source, MarkInText(e.mark, yaml_text)) + ": " + e.msg};
  } catch (const std::exception& e) {
    return Error{source + ": " + e.what()};
  }
}

}  // namespace

Result<YAML::Node> LoadSingleYamlDocument(const std::string& text, const std::string& source) {
  Result<YAML::Node> loaded = LoadSingleYamlDocumentUncapped(text, source);
  if (!loaded.ok()) return Error{CapMessage(loaded.error().message), loaded.error().errno_value};
  return loaded;
}

Result<Config> ParseConfig(const std::string& yaml_text, const std::string& source_name,
                           const PluginNames& known) {
  Result<Config> parsed = ParseConfigUncapped(yaml_text, source_name, known);
  if (!parsed.ok()) return Error{CapMessage(parsed.error().message), parsed.error().errno_value};
  return parsed;
}

namespace {

// The whole of a config file, read so that no path can block or exhaust the reader: opened
// non-blocking (a FIFO with no writer returns at once instead of waiting for one), only a regular
// file is read (not /dev/zero, a FIFO, a socket or a directory), and at most kMaxConfigBytes + 1
// bytes (the file may grow between fstat and read).
Result<std::string> ReadConfigText(const std::string& path) {
  if (path.empty()) return Error{"name is empty: give the path of a YAML file"};
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Error::FromErrno("open " + path, errno);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::FromErrno("fstat " + path, errno);
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return Error{path + ": is " + std::string(kind) + ", not a regular file",
                 S_ISDIR(st.st_mode) ? EISDIR : EINVAL};
  }
  const std::string too_big = " a config file may hold at most " + std::to_string(kMaxConfigBytes >> 20) +
                              " MiB (" + std::to_string(kMaxConfigBytes) + " bytes)";
  if (static_cast<std::uint64_t>(st.st_size) > kMaxConfigBytes) {
    return Error{path + ": is " + std::to_string(st.st_size) + " bytes;" + too_big, EFBIG};
  }
  std::string text(kMaxConfigBytes + 1, '\0');
  std::size_t used = 0;
  while (used < text.size()) {
    const ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("read " + path, errno);
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  if (used > kMaxConfigBytes) return Error{path + ": grew past the limit while being read;" + too_big, EFBIG};
  text.resize(used);
  return text;
}

}  // namespace

Result<Config> LoadConfigFile(const std::string& path, const PluginNames& known) {
  Result<std::string> text = ReadConfigText(path);
  if (!text.ok()) {
    return Error{CapMessage("config file " + text.error().message), text.error().errno_value};
  }
  return ParseConfig(*text, path, known);
}

}  // namespace rdmahd
