#include "checks/error_rates.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/duration_text.h"
#include "common/mutex.h"
#include "config/config_section.h"
#include "core/check.h"
#include "core/topology.h"
#include "facts/ethtool_std_stats_facts.h"
#include "facts/netdev_facts.h"
#include "facts/rdma_device_facts.h"
#include "facts/read_backoff_reason.h"

namespace rdmahd {
namespace {

using std::chrono::milliseconds;

enum class Test {
  kAnyIncrease,  // any increase trips the rule
  kPerHour,      // more than the limit within the last hour
  kPerMinute,    // more than the limit within the last minute
  kShare,        // more than a share of the packets within policy.window
};
enum class Packets { kNone, kRx, kTx, kAll };
using Share = double ErrorRatePolicy::*;
using Limit = std::uint32_t ErrorRatePolicy::*;

struct Rule {
  std::string_view key;  // the reason's name for the rule, and its hold series
  // Summed; the names of each driver that has the counter (absent ones are skipped).
  std::array<std::string_view, 8> counters;
  Test test;
  Verdict verdict;
  Share share = nullptr;  // kShare
  Limit limit = nullptr;  // kPerHour, kPerMinute
  Packets packets = Packets::kNone;
  std::string_view meaning;
  std::string_view fix;
};

constexpr std::string_view kCableFix =
    "reseat, clean or replace the cable or optic of the port (`ethtool -m NETDEV` for the optic's power, "
    "the switch port's own counters for the other end); if the errors follow the cable, replace it";

// ports/P/counters/: the IB PMA PortCounters (saturating, so a value going down is a clear).
constexpr std::array kPortRules = {
    Rule{"excessive_buffer_overrun_errors", {"excessive_buffer_overrun_errors"}, Test::kAnyIncrease,
         Verdict::kFailed, nullptr, nullptr, Packets::kNone,
         "the port's receive buffer overran in consecutive flow-control periods: the link partner ignores the "
         "credits, or the link corrupts flow-control packets",
         "look at the link partner (switch port) and the cable; a count that keeps growing points at a faulty "
         "HCA or switch port"},
    Rule{"local_link_integrity_errors", {"local_link_integrity_errors"}, Test::kAnyIncrease, Verdict::kFailed,
         nullptr, nullptr, Packets::kNone,
         "the physical link's error rate went past the port's LocalPhyErrors threshold", kCableFix},
    Rule{"symbol_error", {"symbol_error"}, Test::kPerHour, Verdict::kFailed, nullptr,
         &ErrorRatePolicy::symbol_errors_per_hour, Packets::kNone, "bit errors on the physical link", kCableFix},
    Rule{"link_error_recovery", {"link_error_recovery"}, Test::kPerMinute, Verdict::kFailed, nullptr,
         &ErrorRatePolicy::link_error_recoveries_per_minute, Packets::kNone,
         "the link retrained to recover from errors (traffic stalls each time)", kCableFix},
    Rule{"port_rcv_errors", {"port_rcv_errors"}, Test::kShare, Verdict::kWarning, &ErrorRatePolicy::port_error_share,
         nullptr, Packets::kRx, "packets received with errors (bad CRC, malformed, buffer overrun)",
         "look at the cable and the sending side (the switch port's transmit counters); reseat or replace the "
         "cable or optic if the share stays"},
    Rule{"port_rcv_remote_physical_errors", {"port_rcv_remote_physical_errors"}, Test::kShare, Verdict::kWarning,
         &ErrorRatePolicy::port_error_share, nullptr, Packets::kRx,
         "packets another link of the fabric marked bad on the way (EBP): the fault is upstream",
         "find the upstream link with the errors (`ibqueryerrors` over the fabric) and fix its cable"},
    Rule{"port_xmit_discards", {"port_xmit_discards"}, Test::kShare, Verdict::kWarning,
         &ErrorRatePolicy::port_error_share, nullptr, Packets::kTx,
         "packets the port dropped instead of sending (link down, congestion, head-of-line timeout)",
         "look for congestion in the fabric (`perfquery -x` PortXmitWait, the switches' discards) and at the "
         "link's state"},
};

constexpr std::string_view kLossFix =
    "look for packet loss between this host and its peers: the RoCE priority's PFC (`rdma-healthd check` "
    "roce_pfc_priority), the switch ports' drops and error counters, the cables (`ethtool -S NETDEV | grep "
    "err`)";

// mlx5: acknowledgement timeouts, NAK sequence errors received, out-of-sequence requests received,
// implied NAKs, duplicate requests received; rxe: its completer's retransmission timeouts, NAK
// sequence errors received, requests out of sequence, duplicate requests.
constexpr std::string_view kLossMeaning =
    "packets were lost and retransmitted (acknowledgement timeouts, sequence errors, duplicates)";

// ports/P/hw_counters/: mlx5's names and Soft-RoCE rxe's (drivers/infiniband/sw/rxe/rxe_hw_counters.c).
constexpr std::array kTransportRules = {
    // mlx5's req_rnr_retries_exceeded (kernel commit b339e0a, 2024) and rxe's retry_rnr_exceeded_err:
    // the requester ran out of RNR retries, and the queue pair went to the error state.
    Rule{"rnr_retries_exceeded", {"req_rnr_retries_exceeded", "retry_rnr_exceeded_err"},
         Test::kAnyIncrease, Verdict::kFailed, nullptr, nullptr, Packets::kNone,
         "a queue pair ran out of RNR retries (the receiver had no receive buffer posted) and went to the error "
         "state",
         "the receiving application posts receives too slowly or too few: raise its receive queue depth, use an "
         "SRQ, or set rnr_retry to 7 (retry forever)"},
    // mlx5's rnr_nak_retry_err ("received RNR NAK packets; the QP retry limit was not exceeded",
    // kernel commit 0ad17a8) and rxe's rcvd_rnr_err (RNR NAKs its completer received): flow
    // control, a receiver briefly without a posted receive that asked this sender to wait and
    // retry. No queue pair failed, so never a failure; a warning only when they are a large share
    // of the packets sent (the peer's application keeps the sender waiting).
    Rule{"rnr_naks_received", {"rnr_nak_retry_err", "rcvd_rnr_err"}, Test::kShare, Verdict::kWarning,
         &ErrorRatePolicy::out_of_buffer_share, nullptr, Packets::kTx,
         "RNR NAKs received: a peer's receive queue was empty and the sender waited and retried (flow control, "
         "within the queue pair's RNR retry limit: no queue pair failed; the peer's application posts receives "
         "slower than this host sends)",
         "look at the receiving application on the peers: post receives earlier or deeper (receive queue depth, "
         "an SRQ); this slows the traffic but loses nothing, unless rnr_retries_exceeded rises too"},
    Rule{"transport_retries_exceeded", {"req_transport_retries_exceeded", "retry_exceeded_err"}, Test::kAnyIncrease,
         Verdict::kFailed, nullptr, nullptr, Packets::kNone,
         "a queue pair got no acknowledgement within its retries and went to the error state (sustained loss or "
         "an unreachable peer)",
         kLossFix},
    Rule{"loss", {"local_ack_timeout_err", "packet_seq_err", "out_of_sequence", "implied_nak_seq_err",
                  "duplicate_request", "completer_retry_err", "rcvd_seq_err", "out_of_seq_request"},
         Test::kShare, Verdict::kFailed, &ErrorRatePolicy::loss_share_failed, nullptr, Packets::kAll, kLossMeaning,
         kLossFix},
    Rule{"loss", {"local_ack_timeout_err", "packet_seq_err", "out_of_sequence", "implied_nak_seq_err",
                  "duplicate_request", "completer_retry_err", "rcvd_seq_err", "out_of_seq_request"},
         Test::kShare, Verdict::kWarning, &ErrorRatePolicy::loss_share_warning, nullptr, Packets::kAll, kLossMeaning,
         kLossFix},
    Rule{"out_of_buffer", {"out_of_buffer"}, Test::kShare, Verdict::kWarning, &ErrorRatePolicy::out_of_buffer_share,
         nullptr, Packets::kRx, "packets dropped because a queue pair had no receive buffer posted",
         "the receiving application posts receives too slowly: raise its receive queue depth or use an SRQ"},
    Rule{"application_errors", {"req_cqe_error", "resp_cqe_error", "req_remote_access_errors",
                                "resp_remote_access_errors", "req_remote_invalid_request", "resp_local_length_error"},
         Test::kAnyIncrease, Verdict::kWarning, nullptr, nullptr, Packets::kNone,
         "work requests completed in error: an application's own mistakes (keys, lengths, access rights) or its "
         "peer's",
         "look at the applications' completion errors (ibv_wc status) and `rdma resource show qp` for queue pairs "
         "in the error state; the NIC is not at fault"},
};

// `ethtool -S` driver statistics (mlx5's names), and the driver-neutral standard statistics
// (ethtool_std_stats collector, "<group>-<name>") where the driver has no mlx5 equivalent.
constexpr std::array kNetdevRules = {
    Rule{"rx_symbol_err_phy", {"rx_symbol_err_phy", "eth-phy-SymbolErrorDuringCarrier"}, Test::kPerHour, Verdict::kFailed, nullptr,
         &ErrorRatePolicy::symbol_errors_per_hour, Packets::kNone,
         "the PHY received symbols it could not decode (bit errors on the link)", kCableFix},
    Rule{"rx_crc_errors_phy", {"rx_crc_errors_phy", "eth-mac-FrameCheckSequenceErrors"}, Test::kShare, Verdict::kWarning,
         &ErrorRatePolicy::port_error_share, nullptr, Packets::kRx, "frames received with a bad CRC", kCableFix},
    Rule{"rx_discards_phy", {"rx_discards_phy"}, Test::kShare, Verdict::kWarning, &ErrorRatePolicy::port_error_share,
         nullptr, Packets::kRx,
         "frames the port dropped for lack of NIC buffer (congestion, or PFC not protecting the traffic)",
         "look at PFC on the RoCE priority (`rdma-healthd check` roce_pfc_priority) and at congestion; a host "
         "too slow to drain the NIC drops here too"},
    Rule{"rx_out_of_buffer", {"rx_out_of_buffer"}, Test::kShare, Verdict::kWarning,
         &ErrorRatePolicy::out_of_buffer_share, nullptr, Packets::kRx,
         "packets dropped because the host posted no receive buffer in time",
         "the host drains the receive rings too slowly: look at the interrupt and CPU load of the netdev's queues "
         "and the ring sizes (`ethtool -g`)"},
    Rule{"pci_signal_integrity", {"rx_pci_signal_integrity", "tx_pci_signal_integrity"}, Test::kAnyIncrease,
         Verdict::kWarning, nullptr, nullptr, Packets::kNone,
         "the NIC counted PCIe physical-layer errors on its link to the host",
         "reseat the NIC, check its riser and slot (`lspci -vvv` LnkSta, the pcie_aer check)"},
    Rule{"alignment_errors", {"eth-mac-AlignmentErrors"}, Test::kShare, Verdict::kWarning,
         &ErrorRatePolicy::port_error_share, nullptr, Packets::kRx,
         "frames received that were not a whole number of octets and failed the CRC (IEEE 802.3 AlignmentErrors)",
         kCableFix},
    Rule{"rmon_errors", {"rmon-etherStatsUndersizePkts", "rmon-etherStatsFragments", "rmon-etherStatsJabbers"},
         Test::kShare, Verdict::kWarning, &ErrorRatePolicy::port_error_share, nullptr, Packets::kRx,
         "malformed frames received: runts, fragments or jabbers (RFC 2819): a faulty link or link partner",
         kCableFix},
    Rule{"mac_internal_errors", {"eth-mac-FramesLostDueToIntMACRcvError", "eth-mac-FramesLostDueToIntMACXmitError"},
         Test::kShare, Verdict::kWarning, &ErrorRatePolicy::port_error_share, nullptr, Packets::kAll,
         "frames the NIC's MAC lost to internal errors (IEEE 802.3 FramesLostDueToIntMAC*)",
         "look at the NIC (`devlink health show`, the driver's log lines in `dmesg`) and update its firmware; "
         "replace it if the count keeps growing"},
};

// The packet counters a share is taken of, per direction: each alternative summed, the first whose
// counters are all present used (rxe's hw_counters, the PMA counters, mlx5's PHY statistics).
const std::vector<std::vector<std::string_view>>& PacketCounters(Packets p) {
  static const std::vector<std::vector<std::string_view>> kRx = {
      {"rcvd_pkts"}, {"port_rcv_packets"}, {"rx_packets_phy"}, {"eth-mac-FramesReceivedOK"}};
  static const std::vector<std::vector<std::string_view>> kTx = {
      {"sent_pkts"}, {"port_xmit_packets"}, {"tx_packets_phy"}, {"eth-mac-FramesTransmittedOK"}};
  static const std::vector<std::vector<std::string_view>> kAll = {
      {"rcvd_pkts", "sent_pkts"}, {"port_rcv_packets", "port_xmit_packets"}, {"rx_packets_phy", "tx_packets_phy"},
      {"eth-mac-FramesReceivedOK", "eth-mac-FramesTransmittedOK"}};
  static const std::vector<std::vector<std::string_view>> kNone;
  switch (p) {
    case Packets::kRx: return kRx;
    case Packets::kTx: return kTx;
    case Packets::kAll: return kAll;
    case Packets::kNone: break;
  }
  return kNone;
}

std::string_view Direction(Packets p) {
  switch (p) {
    case Packets::kRx: return "received";
    case Packets::kTx: return "sent";
    case Packets::kAll: return "sent and received";
    case Packets::kNone: break;
  }
  return "";
}

// a + b, or the largest count when that does not fit: two counters of one rule that rose by 2^63
// each (a driver's garbage, a wrapped read) must not sum to 0 and read as nothing counted.
constexpr std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) {
  return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

// "0.05%", "1.2%", "250%": a share as a percentage, two significant digits below 100.
std::string Percent(double fraction) {
  char buf[32];
  const double percent = fraction * 100;
  std::snprintf(buf, sizeof buf, percent >= 100 ? "%.0f%%" : "%.2g%%", percent);
  return buf;
}

using ValueOf = std::function<std::optional<std::uint64_t>(std::string_view)>;

// One subject (a port, a netdev) of one check.
struct Subject {
  std::string_view check;  // the series' prefix is "<check>/<name>/"
  std::string name;         // "mlx5_0/1", "ens1f0np0"
  std::uint64_t instance = 0;
  // A port's values: `counters`, else `fallback`'s (read by slot, see SubjectHandles::Load); a
  // netdev's: `value`.
  const CounterValues* counters = nullptr;
  const CounterValues* fallback = nullptr;
  ValueOf value;
  std::string netdev;  // for the fix's NETDEV; empty when unknown
  // The port's files in read backoff, and the folder prefixes ("counters/") the subject's values
  // come from: a rule's counter among them is unknown, not 0.
  const std::vector<BackedOffRead>* backoff = nullptr;
  std::array<std::string_view, 2> backoff_dirs{};
  // The port's counter files whose text is not a number (RdmaPortFacts::unparseable), in the same
  // folders' names: a rule's counter among them is unknown, not 0.
  const std::vector<std::string>* unparseable = nullptr;
  // Neither: every value the subject's rules need was read.
  bool AllRead() const {
    return (backoff == nullptr || backoff->empty()) && (unparseable == nullptr || unparseable->empty());
  }
};

struct Finding {
  Verdict verdict = Verdict::kOk;
  std::string_view key;
  std::string text;
  std::string_view fix;
};

struct Judgement {
  std::vector<Finding> findings;  // rules that tripped now
  std::vector<std::string_view> unknown;  // rules whose window has fewer than two samples
  std::size_t counters = 0;       // counters judged
  std::string rose;               // "port_rcv_errors +3, ..." for counters that grew but tripped nothing
};

// Where each of a check's counters is among a CounterValues' slots, per name list. A name list is
// shared by the ports of a driver and by every collection until the device is discovered anew: its
// slots are found once for all of them, not searched by name for every counter of every port.
// Holding a list keeps it from being freed, so another list cannot take its address.
class SlotMaps {
 public:
  static constexpr std::uint32_t kAbsent = UINT32_MAX;
  using Map = std::vector<std::uint32_t>;  // per counter; kAbsent when the list lacks it

  // The slots of `counters` in `values`' name list; nullptr when it has none. Valid until the
  // next call.
  const Map* Of(const CounterValues& values, const std::vector<std::string_view>& counters) {
    if (!values.names()) return nullptr;
    auto it = maps_.find(values.names().get());
    if (it == maps_.end()) {
      Map of;
      for (std::string_view c : counters) {
        const std::optional<std::size_t> slot = values.SlotOf(c);
        of.push_back(slot && *slot < kAbsent ? static_cast<std::uint32_t>(*slot) : kAbsent);
      }
      it = maps_.emplace(values.names().get(), Entry{values.names(), std::move(of)}).first;
    }
    return &it->second.of;
  }
  static std::optional<std::uint64_t> Value(const CounterValues& values, const Map& of, std::size_t i) {
    return of[i] != kAbsent ? values.value(of[i]) : std::nullopt;
  }
  // Drops the maps of lists that only these maps still hold (their devices were discovered anew).
  void Prune() {
    std::erase_if(maps_, [](const auto& m) { return m.second.names.use_count() == 1; });
  }

 private:
  struct Entry {
    std::shared_ptr<const CounterValues::Names> names;
    Map of;
  };
  std::map<const CounterValues::Names*, Entry> maps_;
};

// The rules' counters, each once: first the error counters (a counter's place among them is its
// bit in the steady gauge), then the packet counters of the shares. The same for every subject of a
// check: made once per rule table.
struct RuleCounters {
  std::vector<std::string_view> names;
  std::size_t errors = 0;  // names[0, errors) are the error counters
};

template <std::size_t N>
RuleCounters CountersOf(const std::array<Rule, N>& rules) {
  RuleCounters out;
  auto add = [&out](std::string_view c) {
    if (!c.empty() && std::find(out.names.begin(), out.names.end(), c) == out.names.end()) out.names.push_back(c);
  };
  for (const Rule& r : rules) {
    for (std::string_view c : r.counters) add(c);
  }
  out.errors = out.names.size();
  for (const Rule& r : rules) {
    for (const auto& alternative : PacketCounters(r.packets)) {
      for (std::string_view c : alternative) add(c);
    }
  }
  return out;
}

// The history handles of one subject's series, kept by its check from one collection to the next:
// a port records and asks some twenty counters per collection, and formatting and looking up each
// name every time costs more than judging them.
struct SubjectHandles {
  std::uint64_t instance = 0;
  std::string prefix;  // "<check>/<subject>/"
  const RuleCounters* rule_counters = nullptr;  // the check's (static)
  const std::vector<std::string_view>& counters() const { return rule_counters->names; }
  std::size_t error_counters() const { return rule_counters->errors; }
  // counters()[i]'s, named prefix + counters()[i] (KeyOf), and last the steady gauge's, named
  // prefix + "steady@<instance>" (SteadyKey; in the subject's own dir, beside its counters' series,
  // and no counter is named so): no name kept per series, for each subject of thousands.
  History::Refs series;
  History::Key KeyOf(std::size_t i) const { return {prefix, counters()[i]}; }
  std::size_t steady() const { return counters().size(); }
  struct Leaf {
    std::array<char, 32> chars;  // "steady@" and 20 digits at most
    std::size_t size = 0;
  };
  History::Key SteadyKey(Leaf& leaf) const {
    constexpr std::string_view kTag = "steady@";
    char* at = std::copy(kTag.begin(), kTag.end(), leaf.chars.begin());
    leaf.size = static_cast<std::size_t>(std::to_chars(at, leaf.chars.data() + leaf.chars.size(), instance).ptr -
                                         leaf.chars.data());
    return {prefix, std::string_view(leaf.chars.data(), leaf.size)};
  }
  // counters[i]'s in this collection (Load): the check's one buffer, lent to the subject being
  // judged (HandlesOf) and handed back (Lent), not a copy kept per subject between collections.
  std::vector<std::optional<std::uint64_t>> values;
  std::vector<std::pair<std::string_view, History::Handle>> held;  // hold series by rule key (Held)
  bool seen = false;  // a subject of the latest collection
  // The history had no room for one of these series in the latest collection.
  bool history_full = false;
  // Quiet: the last judgement found every rule known and no error counter risen, nothing held and
  // nothing in read backoff, under the check's policy (a new policy judges every subject anew).
  // While the error counters stay at the `kept` values, no window can hold an increase of one (and
  // a share of packets is only taken of an increase), so the verdict is ok again (QuietVerdict, of
  // `quiet_counters` counters; none when 0) without asking the history, however the packets move.
  bool quiet = false;
  std::uint32_t quiet_counters = 0;
  // The first kMaxKeptCounters error counters' values (values[0, error_counters)): a steady
  // counter's (its bit set in the steady gauge) is the value its steady run stands at; the others'
  // are as of the last quiet judgement, where bit i of quiet_present says whether counter i had
  // one. A check of more error counters is never quiet.
  std::unique_ptr<std::uint64_t[]> kept;
  std::uint64_t quiet_present = 0;
  static constexpr std::size_t kMaxKeptCounters = 64;
  std::uint64_t* Kept() {
    if (!kept) kept = std::make_unique<std::uint64_t[]>(error_counters());
    return kept.get();
  }
  void KeepQuietValues() {
    std::uint64_t* out = Kept();
    quiet_present = 0;
    for (std::size_t i = 0; i < error_counters(); ++i) {
      out[i] = values[i].value_or(0);
      if (values[i]) quiet_present |= std::uint64_t{1} << i;
    }
  }
  bool QuietValuesHold() const {
    if (!kept) return false;
    for (std::size_t i = 0; i < error_counters(); ++i) {
      const bool present = ((quiet_present >> i) & 1) != 0;
      if (values[i].has_value() != present || (present && *values[i] != kept[i])) return false;
    }
    return true;
  }

  std::size_t IndexOf(std::string_view counter) const {
    const std::vector<std::string_view>& counters = this->counters();
    if (counter.empty()) return counters.size();  // a rule's unused place
    // The rules' names are the very string_views `counters` was made of: their addresses match.
    for (std::size_t i = 0; i < counters.size(); ++i) {
      if (counters[i].data() == counter.data() && counters[i].size() == counter.size()) return i;
    }
    return static_cast<std::size_t>(std::find(counters.begin(), counters.end(), counter) - counters.begin());
  }
  // The subject's value of one of the rules' counters, as Load found it.
  std::optional<std::uint64_t> Value(std::string_view counter) const {
    const std::size_t i = IndexOf(counter);
    return i < values.size() ? values[i] : std::nullopt;
  }
  // Reads the subject's counters once for recording and judging; a port's by the slots of its
  // counters' name lists in `maps`.
  void Load(const Subject& s, SlotMaps& maps) {
    const std::vector<std::string_view>& counters = this->counters();
    values.resize(counters.size());
    if (s.counters == nullptr) {
      for (std::size_t i = 0; i < counters.size(); ++i) values[i] = s.value(counters[i]);
      return;
    }
    const SlotMaps::Map* of = maps.Of(*s.counters, counters);
    for (std::size_t i = 0; i < counters.size(); ++i) {
      values[i] = of != nullptr ? SlotMaps::Value(*s.counters, *of, i) : std::nullopt;
    }
    if (s.fallback == nullptr) return;
    const SlotMaps::Map* fallback = maps.Of(*s.fallback, counters);
    for (std::size_t i = 0; fallback != nullptr && i < counters.size(); ++i) {
      if (!values[i]) values[i] = SlotMaps::Value(*s.fallback, *fallback, i);
    }
  }
  // Whether a hold series of this subject may exist: one was there when the handles were made (a
  // failure held across a re-created device), or one was recorded since. Most ports never fail a
  // rule, and asking for each failed-kind rule's hold series would make a named handle for each.
  bool holds_possible = false;
  // The hold series of rule `key` (made at its first use: a handle is made before its series is).
  History::Handle& Held(std::string_view key) {
    for (auto& [k, h] : held) {
      if (k == key) return h;
    }
    return held.emplace_back(key, History::Handle(prefix + "failing/" + std::string(key))).second;
  }
};

SubjectHandles MakeHandles(const RuleCounters& counters, const Subject& s) {
  SubjectHandles h;
  h.instance = s.instance;
  h.rule_counters = &counters;
  h.prefix = std::string(s.check) + "/" + s.name + "/";
  h.series = History::Refs(counters.names.size() + 1);  // and the steady gauge
  return h;
}

// The subject's handles in `cache` (by subject name), made anew for a new subject or instance,
// with its values loaded (by `maps`) into `buffer`, which they hold until the caller's Lent hands it
// back.
SubjectHandles& HandlesOf(std::map<std::string, SubjectHandles, std::less<>>& cache, const RuleCounters& counters,
                          const Subject& s, const History& history, SlotMaps& maps,
                          std::vector<std::optional<std::uint64_t>>& buffer) {
  auto it = cache.find(s.name);
  if (it == cache.end() || it->second.instance != s.instance) {
    SubjectHandles made = MakeHandles(counters, s);
    made.holds_possible = !history.Names(made.prefix + "failing/").empty();
    if (it == cache.end()) {
      it = cache.emplace(s.name, std::move(made)).first;
    } else {
      it->second = std::move(made);
    }
  }
  it->second.seen = true;
  it->second.values.swap(buffer);
  it->second.Load(s, maps);
  return it->second;
}

// Hands a subject's values buffer back to its check when the subject is done.
class Lent {
 public:
  Lent(SubjectHandles& h, std::vector<std::optional<std::uint64_t>>& buffer) : h_(h), buffer_(buffer) {}
  ~Lent() { h_.values.swap(buffer_); }
  Lent(const Lent&) = delete;
  Lent& operator=(const Lent&) = delete;

 private:
  SubjectHandles& h_;
  std::vector<std::optional<std::uint64_t>>& buffer_;
};

// The collections from the newest sample of `steady` back that had `bit` set: [first, last].
std::pair<History::TimePoint, History::TimePoint> SteadyRun(const std::vector<History::Sample>& steady, unsigned bit) {
  std::size_t i = steady.size() - 1;
  while (i > 0 && ((steady[i - 1].value >> bit) & 1) != 0) --i;
  return {steady[i].first, steady.back().last};
}

// Records the subject's counters. An error counter that has not moved since the subject was first
// seen gets no series (most error counters of a port stay where they were at boot: 0, or a count
// from a link event long ago; and a series costs memory and a history lookup at every collection):
// one gauge per subject and device instance, "steady@<instance>", holds a bit per such counter
// (its place among the rules' counters), whose value stands in SubjectHandles::kept. When the
// counter moves, its series starts with the collections the gauge saw it steady, so the increase
// is judged as if it had been recorded. Returns whether every error counter's series continued its
// baseline (none new, reset or re-created; a steady run that starts at a count is a new one).
bool RecordSubject(const Subject& s, SubjectHandles& h, History::Batch& history, History::TimePoint now) {
  SubjectHandles::Leaf leaf;
  const History::Key steady_key = h.SteadyKey(leaf);
  const std::optional<History::Sample> steady = history.Newest(h.series, h.steady(), steady_key);
  const bool seen_before = steady && steady->last < now;
  const std::uint64_t steady_before = seen_before ? steady->value : 0;
  std::uint64_t steady_now = 0;
  bool continued = true;
  h.history_full = false;
  const auto record_one = [&](std::size_t i, std::uint64_t value, History::TimePoint at) {
    const History::Baseline b = history.RecordCounter(h.series, i, h.KeyOf(i), s.instance, value, at);
    if (b == History::Baseline::kRefused) h.history_full = true;
    return b;
  };
  const auto record = [&](std::size_t i, std::uint64_t value, History::TimePoint at) {
    continued = record_one(i, value, at) == History::Baseline::kContinued && continued;
  };
  for (std::size_t i = 0; i < h.counters().size(); ++i) {
    const auto& v = h.values[i];
    if (!v) continue;
    if (i >= h.error_counters()) {  // a packet counter: always recorded
      record_one(i, *v, now);
      continue;
    }
    const auto bit = static_cast<unsigned>(i);
    if (bit >= SubjectHandles::kMaxKeptCounters) {
      record(i, *v, now);
      continue;
    }
    if (!seen_before) {  // a steady run starts
      h.Kept()[i] = *v;
      steady_now |= std::uint64_t{1} << bit;
      if (*v != 0) continued = false;  // a count of unknown age: as a new series' first sample
      continue;
    }
    if (((steady_before >> bit) & 1) != 0) {
      const std::uint64_t kept = h.Kept()[i];
      if (*v == kept) {
        steady_now |= std::uint64_t{1} << bit;
        continue;
      }
      const auto [from, to] = SteadyRun(history.Samples(h.series, h.steady(), steady_key), bit);
      record(i, kept, from);
      record(i, kept, to);
    }
    record(i, *v, now);
  }
  if (!history.RecordGauge(h.series, h.steady(), steady_key, steady_now, now)) h.history_full = true;
  return continued && !h.history_full;
}

History::Clock::duration RuleWindow(const Rule& r, const ErrorRatePolicy& policy) {
  switch (r.test) {
    case Test::kPerHour: return std::chrono::hours(1);
    case Test::kPerMinute: return std::chrono::minutes(1);
    case Test::kAnyIncrease:
    case Test::kShare: break;
  }
  return std::chrono::duration_cast<History::Clock::duration>(policy.window);
}

// `Hist`: a History, or a History::Batch holding its lock.
template <std::size_t N, class Hist>
Judgement Judge(const std::array<Rule, N>& rules, SubjectHandles& h, const Hist& history,
                History::TimePoint now, const ErrorRatePolicy& policy) {
  Judgement j;
  std::vector<std::string_view> seen;  // counters already counted in j.counters / j.rose
  // Each counter's increase over each window, asked of the history once (rules share counters).
  struct Known {
    std::string_view counter;
    History::Clock::duration window;
    std::optional<History::Growth> growth;
  };
  std::vector<Known> known_increases;
  // The steady gauge as the last Record left it, asked once: an error counter whose bit is set has
  // no series and stood at one value over the run of collections the gauge saw the bit in.
  SubjectHandles::Leaf leaf;
  const History::Key steady_key = h.SteadyKey(leaf);
  const std::optional<History::Sample> steady = history.Newest(h.series, h.steady(), steady_key);
  std::vector<History::Sample> steady_samples;  // asked only when a run may start within a window
  auto steady_increase = [&](unsigned bit, History::Clock::duration window) {
    // What History::Increase gives a series of that one value over the run.
    const History::TimePoint start = now - window;
    History::TimePoint from = steady->first;
    if (from > start) {  // the run may have begun before the gauge's newest sample
      if (steady_samples.empty()) steady_samples = history.Samples(h.series, h.steady(), steady_key);
      from = SteadyRun(steady_samples, bit).first;
    }
    const History::Sample run{from, steady->last, 0, 0};
    return History::Between(run, run, start);
  };
  auto increase_of = [&](std::string_view c, History::Clock::duration window) {
    for (const Known& k : known_increases) {
      if (k.counter == c && k.window == window) return k.growth;
    }
    const std::size_t i = h.IndexOf(c);
    const bool is_steady = i < h.error_counters() && i < SubjectHandles::kMaxKeptCounters && steady &&
                           ((steady->value >> i) & 1) != 0;
    known_increases.push_back({c, window,
                               is_steady ? steady_increase(static_cast<unsigned>(i), window)
                                         : history.Increase(h.series, i, h.KeyOf(i), window, now)});
    return known_increases.back().growth;
  };
  for (const Rule& r : rules) {
    const auto window = RuleWindow(r, policy);
    std::uint64_t increase = 0;
    double seconds = 0;
    bool present = false, known = true;
    std::string parts;  // "local_ack_timeout_err +3, packet_seq_err +1"
    for (std::string_view c : r.counters) {
      const std::optional<std::uint64_t> value = h.Value(c);
      if (!value) continue;
      present = true;
      // A counter at 0 counted nothing since it was cleared, so nothing in any window: no need
      // to ask the history (most error counters of a healthy port are 0).
      const auto g = *value == 0 ? std::optional<History::Growth>(History::Growth{}) : increase_of(c, window);
      if (!g) {
        known = false;
        continue;
      }
      increase = SaturatingAdd(increase, g->increase);
      seconds = std::max(seconds, g->seconds);
      if (g->increase > 0) parts += (parts.empty() ? "" : ", ") + std::string(c) + " +" + std::to_string(g->increase);
      if (std::find(seen.begin(), seen.end(), c) == seen.end()) {
        seen.push_back(c);
        ++j.counters;
        if (g->increase > 0) j.rose += (j.rose.empty() ? "" : ", ") + std::string(c) + " +" + std::to_string(g->increase);
      }
    }
    if (!present) continue;
    if (!known) {
      if (std::find(j.unknown.begin(), j.unknown.end(), r.key) == j.unknown.end()) j.unknown.push_back(r.key);
      continue;
    }
    if (increase == 0) continue;
    const std::string what = (parts.find(',') == std::string::npos && parts.starts_with(r.key))
                                 ? parts
                                 : std::string(r.key) + " (" + parts + ")";
    std::string text = what + " in " + FormatSeconds(seconds);
    bool tripped = false;
    switch (r.test) {
      case Test::kAnyIncrease:
        tripped = true;
        break;
      case Test::kPerHour:
      case Test::kPerMinute: {
        // A limit of N within the window is judged on the increase observed within it, whatever
        // the span that observed it: more than N has happened (however short the span), N or fewer
        // is not more than N (however short the span). A short span is never scaled up to a rate.
        const std::uint32_t limit = policy.*(r.limit);
        tripped = increase > limit;
        text += ", more than " + std::to_string(limit) + (r.test == Test::kPerHour ? " within an hour" : " within a minute");
        break;
      }
      case Test::kShare: {
        const double threshold = policy.*(r.share);
        std::optional<std::uint64_t> packets;
        bool packets_known = true;
        for (const auto& alternative : PacketCounters(r.packets)) {
          if (!std::all_of(alternative.begin(), alternative.end(), [&](std::string_view c) { return h.Value(c).has_value(); })) {
            continue;
          }
          std::uint64_t sum = 0;
          for (std::string_view c : alternative) {
            const auto g = increase_of(c, window);
            if (!g) packets_known = false;
            if (g) sum = SaturatingAdd(sum, g->increase);
          }
          packets = sum;
          break;
        }
        if (!packets) {
          tripped = true;
          text += " (no packet counter to take a share of)";
        } else if (!packets_known) {
          if (std::find(j.unknown.begin(), j.unknown.end(), r.key) == j.unknown.end()) j.unknown.push_back(r.key);
        } else if (*packets >= policy.min_packets) {
          const double share = static_cast<double>(increase) / static_cast<double>(*packets);
          tripped = share > threshold;
          text += ", " + Percent(share) + " of the " + std::to_string(*packets) + " packets " +
                  std::string(Direction(r.packets)) + " (limit " + Percent(threshold) + ")";
        }
        break;
      }
    }
    if (!tripped) continue;
    text += ": ";
    text += r.meaning;
    // A warning of a rule whose failed level tripped too says nothing more.
    const bool covered = std::any_of(j.findings.begin(), j.findings.end(), [&](const Finding& f) {
      return f.key == r.key && f.verdict == Verdict::kFailed;
    });
    if (!covered) j.findings.push_back({r.verdict, r.key, std::move(text), r.fix});
  }
  return j;
}

// The reason of an ok verdict: `counters` error counters judged, those in `rose` ("symbol_error
// +2, ...") grew without tripping a rule.
std::string OkReason(std::size_t counters, const std::string& rose) {
  return "no error counter over its limit (" + std::to_string(counters) + (counters == 1 ? " counter" : " counters") +
         (rose.empty() ? ", none rose)" : "; rose: " + rose + ")");
}

// The files of `files` that `needed(file)` selects, as "counters/symbol_error holds no count (...)" (at
// most four named, then "and N more"); empty when none is. Names only: never what the files hold.
template <class Needed>
std::string NotNumbersReason(const std::vector<std::string>& files, const Needed& needed) {
  std::string out;
  std::size_t named = 0, more = 0;
  for (const std::string& f : files) {
    if (!needed(f)) continue;
    if (named == 4) {
      ++more;
      continue;
    }
    out += (named++ == 0 ? "" : ", ") + f;
  }
  if (named == 0) return out;
  if (more != 0) out += " and " + std::to_string(more) + " more";
  return out + (named + more == 1 ? " holds no count (not a number, or unreadable)"
                                  : " hold no count (not numbers, or unreadable)");
}

// The verdict of a subject whose `counters` error counters were judged and none rose.
CheckResult QuietVerdict(const std::string& subject, std::size_t counters) {
  return CheckResult{"", subject, Verdict::kOk, OkReason(counters, ""), ""};
}

std::string ReplaceNetdev(std::string_view fix, const std::string& netdev) {
  std::string out(fix);
  if (netdev.empty()) return out;
  for (std::size_t at = out.find("NETDEV"); at != std::string::npos; at = out.find("NETDEV", at + netdev.size())) {
    out.replace(at, 6, netdev);
  }
  return out;
}

// The verdict of one subject: the rules that tripped now, those held failed, else unknown or ok.
// Nothing for a subject without any of the rules' counters (another driver, no PMA).
template <std::size_t N, class Hist>
std::optional<CheckResult> Verdicts(const std::array<Rule, N>& rules, const Subject& s, SubjectHandles& h,
                                    const Hist& history, History::TimePoint now, const ErrorRatePolicy& policy,
                                    Judgement j) {
  CheckResult r{"", s.name, Verdict::kOk, "", ""};
  const auto hold = std::chrono::duration_cast<History::Clock::duration>(policy.hold);
  std::vector<std::string_view> held_keys;
  // The rules that failed within the hold.
  for (const Rule& rule : rules) {
    if (rule.verdict != Verdict::kFailed) continue;
    if (std::find(held_keys.begin(), held_keys.end(), rule.key) != held_keys.end()) continue;
    const bool now_failing = std::any_of(j.findings.begin(), j.findings.end(), [&](const Finding& f) {
      return f.key == rule.key && f.verdict == Verdict::kFailed;
    });
    if (now_failing || !h.holds_possible) continue;
    const std::optional<History::Sample> failed = history.Newest(h.Held(rule.key));
    if (!failed || now - failed->last >= hold) continue;
    held_keys.push_back(rule.key);
    const double ago = std::chrono::duration<double>(now - failed->last).count();
    // The rule's warning level, if it tripped now, is part of the held failure.
    std::erase_if(j.findings, [&](const Finding& f) { return f.key == rule.key; });
    j.findings.push_back({Verdict::kFailed, rule.key,
                          std::string(rule.key) + " was over its limit until " + FormatSeconds(ago) + " ago (held failed for " +
                              FormatSeconds(std::chrono::duration<double>(hold).count()) + " after it falls back)",
                          rule.fix});
  }
  // The files of the rules' counters (and of the packet counters of shares): "counters/symbol_error".
  const auto needed = [&](const std::string& file) {
    const auto slash = file.find('/');
    if (slash == std::string::npos) return false;
    const std::string_view dir = std::string_view(file).substr(0, slash + 1), name = std::string_view(file).substr(slash + 1);
    if (std::find(s.backoff_dirs.begin(), s.backoff_dirs.end(), dir) == s.backoff_dirs.end()) return false;
    return std::any_of(rules.begin(), rules.end(), [&](const Rule& rule) {
      if (std::find(rule.counters.begin(), rule.counters.end(), name) != rule.counters.end()) return true;
      for (const auto& alternative : PacketCounters(rule.packets)) {
        if (std::find(alternative.begin(), alternative.end(), name) != alternative.end()) return true;
      }
      return false;
    });
  };
  // Those whose reads are in backoff, and those whose text is not a number.
  std::string backoff;
  if (s.backoff != nullptr && !s.backoff->empty()) backoff = BackedOffReason(*s.backoff, needed);
  const std::string not_numbers = s.unparseable != nullptr ? NotNumbersReason(*s.unparseable, needed) : "";
  if (j.findings.empty() && j.counters == 0 && j.unknown.empty() && backoff.empty() && not_numbers.empty()) {
    return std::nullopt;
  }
  if (!j.findings.empty()) {
    std::stable_sort(j.findings.begin(), j.findings.end(), [](const Finding& a, const Finding& b) {
      return (a.verdict == Verdict::kFailed) > (b.verdict == Verdict::kFailed);
    });
    r.verdict = j.findings.front().verdict;
    std::vector<std::string_view> fixes;
    for (const Finding& f : j.findings) {
      r.reason += (r.reason.empty() ? "" : "; ") + f.text;
      if (std::find(fixes.begin(), fixes.end(), f.fix) == fixes.end()) fixes.push_back(f.fix);
    }
    for (std::string_view f : fixes) r.fix += (r.fix.empty() ? "" : "; ") + ReplaceNetdev(f, s.netdev);
    return r;
  }
  if (!backoff.empty() || !not_numbers.empty()) {
    // A counter that cannot be read, or whose file holds no number, is not a counter that did not rise.
    r.verdict = Verdict::kUnknown;
    r.reason = "cannot judge every error counter: " + not_numbers + (not_numbers.empty() || backoff.empty() ? "" : "; ") +
               backoff;
    if (!not_numbers.empty()) {
      r.fix = "the driver wrote something other than a count into these files (od -c shows what they hold): update "
              "the driver and the NIC's firmware, and report it to their maintainers";
    }
    if (!backoff.empty()) {
      r.fix += std::string(r.fix.empty() ? "" : "; ") +
               "a port in switch mode or a restricted PF (DGX/HGX) refuses these reads; read the counters where the "
               "port is managed, or let the retries find them readable again";
    }
    return r;
  }
  if (!j.unknown.empty() && h.history_full) {
    r.verdict = Verdict::kUnknown;
    r.reason = "no increase known: the engine's history is full (it keeps at most " +
               std::to_string(history.limits().max_series) +
               " series, and every one was recorded in this collection), so it has no room for this subject's "
               "counters";
    r.fix = "raise history.max_series in the configuration (each series costs about 150 bytes while its counter "
            "does not move, at most 2.2 KB)";
    return r;
  }
  if (!j.unknown.empty()) {
    r.verdict = Verdict::kUnknown;
    // Named when some rules were judged: the others' windows missed a sample.
    r.reason = "no increase known yet";
    for (std::size_t i = 0; j.counters > 0 && i < j.unknown.size(); ++i) {
      r.reason += (i ? ", " : " for ") + std::string(j.unknown[i]);
    }
    r.reason += ": a rate needs two samples within its window (`rdma-healthd check --sample-interval=10s` takes two)";
    // What the counters hold since they were last cleared, for the operator's first look.
    std::string totals;
    std::size_t shown = 0;
    for (const Rule& rule : rules) {
      for (std::string_view c : rule.counters) {
        if (c.empty() || totals.find(std::string(c) + " ") != std::string::npos) continue;
        const auto v = h.Value(c);
        if (!v || *v == 0 || shown == 8) continue;
        totals += (totals.empty() ? "" : ", ") + std::string(c) + " " + std::to_string(*v);
        ++shown;
      }
    }
    if (!totals.empty()) r.reason += "; counted since the last clear: " + totals;
    return r;
  }
  r.reason = OkReason(j.counters, j.rose);
  return r;
}

using SubjectFn = std::function<void(const Subject&)>;

// The ports of the devices collector's facts as subjects of `check`, with the device's generation
// as the counters' instance; `hw`: their hw_counters (then counters/, for the packet counts).
void ForEachPort(const Snapshot& snapshot, std::string_view check, bool hw, const SubjectFn& fn) {
  const auto* devices = snapshot.Get<RdmaDevicesFacts>();
  if (devices == nullptr) return;
  const auto* topology = snapshot.Get<Topology>();
  std::map<std::string_view, std::uint64_t> generation;
  if (topology != nullptr) {
    for (const TopologyDevice& d : topology->devices) generation[d.name] = d.generation;
  }
  for (const RdmaDeviceFacts& d : devices->devices) {
    const auto g = generation.find(d.name);
    for (const RdmaPortFacts& p : d.ports) {
      Subject s;
      s.name = p.Subject();
      s.check = check;
      s.instance = g == generation.end() ? 0 : g->second;
      s.counters = hw ? &p.hw_counters : &p.counters;
      s.fallback = hw ? &p.counters : nullptr;
      s.netdev = p.netdev;
      s.backoff = &p.read_backoff;
      s.unparseable = &p.unparseable;
      s.backoff_dirs = hw ? std::array<std::string_view, 2>{"hw_counters/", "counters/"}
                          : std::array<std::string_view, 2>{"counters/", "counters/"};
      fn(s);
    }
  }
}

void PortCounterSubjects(const Snapshot& snapshot, const SubjectFn& fn) {
  ForEachPort(snapshot, "port_errors", false, fn);
}
void PortHwCounterSubjects(const Snapshot& snapshot, const SubjectFn& fn) {
  ForEachPort(snapshot, "roce_transport_errors", true, fn);
}

// A standard statistic that counts what a driver statistic counts (mlx5 reports the same PPCNT
// registers both ways): hidden where the driver has the latter, so an error counts once.
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kStandardTwins = {{
    {"eth-phy-SymbolErrorDuringCarrier", "rx_symbol_err_phy"},
    {"eth-mac-FrameCheckSequenceErrors", "rx_crc_errors_phy"},
    {"eth-mac-FramesReceivedOK", "rx_packets_phy"},
    {"eth-mac-FramesTransmittedOK", "tx_packets_phy"},
}};

// The netdevs whose driver statistics or standard statistics were read, as subjects; a netdev's
// instance follows the generation of the RDMA device behind it (a driver reload re-creates both).
void NetdevSubjects(const Snapshot& snapshot, const SubjectFn& fn) {
  const auto* netdevs = snapshot.Get<RdmaNetdevFacts>();
  if (netdevs == nullptr) return;
  const auto* topology = snapshot.Get<Topology>();
  const auto* standard = snapshot.Get<EthtoolStdStatsFacts>();
  for (const NetdevFacts& n : netdevs->netdevs) {
    const EthtoolStdStatsNetdevFacts* std_stats = standard == nullptr ? nullptr : standard->Find(n.netdev);
    if (std_stats != nullptr && !std_stats->read) std_stats = nullptr;
    if (!n.stats_read && std_stats == nullptr) continue;
    Subject s;
    s.name = n.netdev;
    s.netdev = n.netdev;
    s.check = "netdev_errors";
    s.instance = std::hash<std::string>{}(n.netdev);
    if (topology != nullptr) {
      for (const RdmaNetdev& l : netdevs->links) {
        if (l.netdev != n.netdev) continue;
        for (const TopologyDevice& d : topology->devices) {
          if (d.name == l.device) s.instance ^= d.generation << 1;
        }
        break;
      }
    }
    auto driver_stat = [&n](std::string_view name) -> std::optional<std::uint64_t> {
      for (const DriverStat& st : n.classified_stats) {
        if (st.name == name) return st.value;
      }
      return std::nullopt;
    };
    s.value = [driver_stat, std_stats](std::string_view name) -> std::optional<std::uint64_t> {
      if (std_stats == nullptr || (!name.starts_with("eth-") && !name.starts_with("rmon-"))) return driver_stat(name);
      for (const auto& [standard_name, driver_name] : kStandardTwins) {
        if (standard_name == name && driver_stat(driver_name)) return std::nullopt;
      }
      return std_stats->stats.Find(name);
    };
    fn(s);
  }
}

// One check: `kRules` over the subjects `kSubjects` lists. Record judges each subject (it must:
// a failed rule is recorded for the hold) and keeps the verdicts for EvaluateOverTime of the same
// collection, so that a scrape judges once; evaluated without its Record (no history), it judges
// afresh.
template <const auto& kRules, void (*kSubjects)(const Snapshot&, const SubjectFn&)>
class RuleCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config& config, History& history, History::TimePoint now) const override {
    const auto& policy = config.Section<ErrorRatePolicy>();
    std::vector<CheckResult> results;
    {
      MutexLock lock(handles_mu_);
      const bool same_policy = policy_ && *policy_ == policy;
      policy_ = policy;
      kSubjects(snapshot, [&](const Subject& s) {
        handles_mu_.AssertHeld();  // kSubjects calls it before it returns, in this scope
        SubjectHandles& h = HandlesOf(handles_, Counters(), s, history, slot_maps_, values_);
        const Lent lent(h, values_);
        // The history's lock once for the subject's few dozen calls, not once per call.
        History::Batch batch(history);
        const bool continued = RecordSubject(s, h, batch, now);
        const bool all_read = s.AllRead();
        if (h.quiet && continued && all_read && h.QuietValuesHold() && same_policy) {
          if (h.quiet_counters > 0) results.push_back(QuietVerdict(s.name, h.quiet_counters));
          return;
        }
        Judgement j = Judge(kRules, h, batch, now, policy);
        for (const Finding& f : j.findings) {
          if (f.verdict != Verdict::kFailed) continue;
          batch.RecordGauge(h.Held(f.key), 1, now);
          h.holds_possible = true;
        }
        const bool quiet = all_read && j.findings.empty() && j.unknown.empty() && j.rose.empty();
        const std::size_t judged = j.counters;
        std::optional<CheckResult> r = Verdicts(kRules, s, h, batch, now, policy, std::move(j));
        h.quiet = quiet && (!r || r->verdict == Verdict::kOk) &&
                  h.error_counters() <= SubjectHandles::kMaxKeptCounters;
        if (h.quiet) {
          h.KeepQuietValues();
          h.quiet_counters = r ? static_cast<std::uint32_t>(judged) : 0;
        }
        if (r) results.push_back(std::move(*r));
      });
      // The handles of subjects gone from this collection go too: the cache holds this node's subjects.
      for (auto it = handles_.begin(); it != handles_.end();) {
        it = std::exchange(it->second.seen, false) ? std::next(it) : handles_.erase(it);
      }
      slot_maps_.Prune();
    }
    MutexLock lock(mu_);
    recorded_at_ = now;
    recorded_ = std::move(results);
  }
  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    {
      MutexLock lock(mu_);
      if (recorded_at_ && *recorded_at_ == ctx.now) {
        // Once: the next collection records anew.
        std::move(recorded_.begin(), recorded_.end(), std::back_inserter(out));
        recorded_ = std::vector<CheckResult>();  // and its room: a verdict per subject
        recorded_at_.reset();
        return;
      }
    }
    const auto& policy = ctx.config.Section<ErrorRatePolicy>();
    // Handles for this evaluation only: the kept ones are Record's (its subjects, its history).
    std::map<std::string, SubjectHandles, std::less<>> handles;
    SlotMaps maps;
    std::vector<std::optional<std::uint64_t>> values;
    kSubjects(ctx.snapshot, [&](const Subject& s) {
      SubjectHandles& h = HandlesOf(handles, Counters(), s, ctx.history, maps, values);
      const Lent lent(h, values);
      if (auto r = Verdicts(kRules, s, h, ctx.history, ctx.now, policy,
                            Judge(kRules, h, ctx.history, ctx.now, policy))) {
        out.push_back(std::move(*r));
      }
    });
  }

 private:
  static const RuleCounters& Counters() {
    static const RuleCounters counters = CountersOf(kRules);
    return counters;
  }
  mutable Mutex handles_mu_;
  mutable std::map<std::string, SubjectHandles, std::less<>> handles_ GUARDED_BY(handles_mu_);
  mutable SlotMaps slot_maps_ GUARDED_BY(handles_mu_);
  mutable std::vector<std::optional<std::uint64_t>> values_ GUARDED_BY(handles_mu_);  // lent (HandlesOf)
  mutable std::optional<ErrorRatePolicy> policy_ GUARDED_BY(handles_mu_);  // the last Record's
  mutable Mutex mu_;
  mutable std::optional<History::TimePoint> recorded_at_ GUARDED_BY(mu_);
  mutable std::vector<CheckResult> recorded_ GUARDED_BY(mu_);
};

using PortErrorsCheck = RuleCheck<kPortRules, PortCounterSubjects>;
using RoceTransportErrorsCheck = RuleCheck<kTransportRules, PortHwCounterSubjects>;
using NetdevErrorsCheck = RuleCheck<kNetdevRules, NetdevSubjects>;

Status ParseErrorRates(const ConfigWalker& w, const ConfigNode& v, ErrorRatePolicy& out) {
  auto count = [&](std::uint32_t& field) {
    return [&w, &field](const ConfigNode& f) { return w.ReadU32(f, 1, 1'000'000'000, field); };
  };
  auto share = [&](double& field) {
    return [&w, &field](const ConfigNode& f) {
      std::optional<double> x;
      Status s = w.ReadPositive(f, 1.0, "a fraction of packets (0.001 = 0.1%)", x);
      if (s.ok() && x) field = *x;
      return s;
    };
  };
  Status st = w.VisitMap(v, {
      {"window", [&](const ConfigNode& f) { return w.ReadDuration(f, milliseconds{10'000}, milliseconds{3'600'000}, out.window); }},
      {"hold", [&](const ConfigNode& f) { return w.ReadDuration(f, milliseconds{0}, milliseconds{3'600'000}, out.hold); }},
      {"symbol_errors_per_hour", count(out.symbol_errors_per_hour)},
      {"link_error_recoveries_per_minute", count(out.link_error_recoveries_per_minute)},
      {"port_error_share", share(out.port_error_share)},
      {"loss_share_warning", share(out.loss_share_warning)},
      {"loss_share_failed", share(out.loss_share_failed)},
      {"out_of_buffer_share", share(out.out_of_buffer_share)},
      {"min_packets",
       [&](const ConfigNode& f) {
         std::optional<std::uint64_t> n;
         Status s = w.ReadCount(f, n);
         if (s.ok() && n) out.min_packets = *n;
         return s;
       }},
  });
  if (st.ok() && out.loss_share_failed < out.loss_share_warning) {
    return w.FailAt(v, "loss_share_failed must not be below loss_share_warning");
  }
  return st;
}

}  // namespace

RDMAHD_REGISTER_CHECK("port_errors", PortErrorsCheck,
                      "no IB PMA error counter of a port rising above its limit (symbol errors, link recoveries, "
                      "receive errors, discards)");
RDMAHD_REGISTER_CHECK("roce_transport_errors", RoceTransportErrorsCheck,
                      "no RDMA transport error counter (hw_counters) rising above its limit: retries exceeded, "
                      "loss and retransmission, receive queues empty, application errors");
RDMAHD_REGISTER_CHECK("netdev_errors", NetdevErrorsCheck,
                      "no PHY, buffer or PCIe error statistic of a port's netdev rising above its limit");

RDMAHD_REGISTER_CONFIG_SECTION(ErrorRatePolicy, "host.error_rates", 90,
    {{"host.error_rates.window", "`600s`"},
     {"host.error_rates.hold", "`900s`"},
     {"host.error_rates.symbol_errors_per_hour", "`120`"},
     {"host.error_rates.link_error_recoveries_per_minute", "`5`"},
     {"host.error_rates.port_error_share", "`0.0001`"},
     {"host.error_rates.loss_share_warning", "`0.001`"},
     {"host.error_rates.loss_share_failed", "`0.01`"},
     {"host.error_rates.out_of_buffer_share", "`0.001`"},
     {"host.error_rates.min_packets", "`1000`"}},
    ParseErrorRates);

}  // namespace rdmahd
