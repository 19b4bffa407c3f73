// Error-rate checks: verdicts from how fast a port's error counters grow, over the engine's
// History (core/history.h). Three checks share the policy below and the judging
// (error_rate_judgement.h) of their rules (error_rate_rules.h):
//  - port_errors: the IB PMA counters of ports/P/counters/ (InfiniBand and RoCE ports alike);
//  - roce_transport_errors: ports/P/hw_counters/ (mlx5's and Soft-RoCE rxe's names, mapped);
//  - netdev_errors: the driver statistics of each port's netdev (`ethtool -S`: mlx5's PHY symbol
//    and CRC errors, PCIe signal integrity, port buffer discards, out-of-buffer drops).
// Each records its counters once per collection (a device's generation as the instance, so a
// re-created device or a cleared counter starts a new baseline, never a negative increase) and
// judges each rule over its window: `unknown` until the window holds two samples, `failed` or
// `warning` naming the counter, its increase, the span it was observed over, what it means and the
// fix. A limit of N within an hour or a minute is judged on the increase observed within it, never
// on a short span scaled up. A failed rule stays failed for `hold` after it falls back (so that
// alerts see it), named as held. A counter file in read backoff or whose text is not a number
// makes the subject `unknown`, naming the file.
// CNP and ECN-marked counters are congestion signals, not errors: no rule reads them. RNR NAKs
// received are flow control: at most a warning (docs/checks.md, "Counter audit").
#pragma once

#include <chrono>
#include <cstdint>

namespace rdmahd {

// The host.error_rates config section (docs/configuration.md).
struct ErrorRatePolicy {
  // Window of the share and loss rules; the per-hour and per-minute limits use their own hour
  // and minute.
  std::chrono::milliseconds window{600'000};
  // How long a failed rule stays failed after it falls back.
  std::chrono::milliseconds hold{900'000};
  // NVIDIA NVSentinel's NIC health monitor: 120 symbol errors an hour, 5 link error recoveries a
  // minute.
  std::uint32_t symbol_errors_per_hour = 120;
  std::uint32_t link_error_recoveries_per_minute = 5;
  // Shares of packets (fractions, 1e-4 = 0.01 %): receive errors and transmit discards (warning),
  // loss and retransmission (warning, failed), receive-queue-empty drops (warning).
  double port_error_share = 1e-4;
  double loss_share_warning = 1e-3;
  double loss_share_failed = 1e-2;
  double out_of_buffer_share = 1e-3;
  // Fewer packets than this in the window: no share is judged (one error among ten packets says
  // little about a link).
  std::uint64_t min_packets = 1000;

  bool operator==(const ErrorRatePolicy&) const = default;
};

}  // namespace rdmahd
