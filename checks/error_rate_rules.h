// The error-rate checks' rules (checks/error_rates.h says what the checks judge): one table per
// check, each rule naming its counters (summed; each driver's name), its test (any increase, a
// limit within an hour or a minute, a share of packets), its verdict, what it means and the fix.
// The tables are constant and shared by every subject of their check; PacketCounters says which
// packet counters a share is taken of.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "checks/error_rates.h"
#include "core/check.h"

namespace rdmahd::error_rates {

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

inline constexpr std::string_view kCableFix =
    "reseat, clean or replace the cable or optic of the port (`ethtool -m NETDEV` for the optic's power, "
    "the switch port's own counters for the other end); if the errors follow the cable, replace it";

// ports/P/counters/: the IB PMA PortCounters (saturating, so a value going down is a clear).
inline constexpr std::array kPortRules = {
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

inline constexpr std::string_view kLossFix =
    "look for packet loss between this host and its peers: the RoCE priority's PFC (`rdma-healthd check` "
    "roce_pfc_priority), the switch ports' drops and error counters, the cables (`ethtool -S NETDEV | grep "
    "err`)";

// mlx5: acknowledgement timeouts, NAK sequence errors received, out-of-sequence requests received,
// implied NAKs, duplicate requests received; rxe: its completer's retransmission timeouts, NAK
// sequence errors received, requests out of sequence, duplicate requests.
inline constexpr std::string_view kLossMeaning =
    "packets were lost and retransmitted (acknowledgement timeouts, sequence errors, duplicates)";

// ports/P/hw_counters/: mlx5's names and Soft-RoCE rxe's (drivers/infiniband/sw/rxe/rxe_hw_counters.c).
inline constexpr std::array kTransportRules = {
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
inline constexpr std::array kNetdevRules = {
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
const std::vector<std::vector<std::string_view>>& PacketCounters(Packets p);
// "received", "sent", "sent and received"; empty for kNone.
std::string_view Direction(Packets p);

}  // namespace rdmahd::error_rates
