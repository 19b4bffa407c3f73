// `rdma-healthd probe PEER`: one measurement against a peer's probe responder, printed the way
// perftest prints it, so an operator can put the daemon's view next to ib_send_lat/ib_write_bw.
// Exit: 0 measured, 1 the probe failed (reason printed), 2 could not run (PEER does not resolve).
#pragma once

#include <iosfwd>
#include <optional>
#include <vector>

#include "daemon/options.h"
#include "probes/peer_prober.h"

namespace rdmahd {

// perftest's latency report figures: a local copy of probes/latency_stats.h's arithmetic (issue #11's
// statistics, not on main when this was written) plus t_stdev; to be replaced by it.
struct ProbeLatencyFigures {
  double min_us = 0, max_us = 0, typical_us = 0, average_us = 0, stdev_us = 0, p99_us = 0, p99_9_us = 0;
};
// nullopt with fewer than 3 samples (nothing left once the 2 largest are set aside).
std::optional<ProbeLatencyFigures> ComputeProbeLatencyFigures(std::vector<double> samples_us);

void PrintLatencyReport(std::uint32_t bytes, std::uint32_t iterations, const ProbeLatencyFigures& f, std::ostream& out);
void PrintBandwidthReport(std::uint32_t bytes, const BandwidthResult& r, std::ostream& out);

int RunProbeCommand(const Options& options, PeerProber& prober, std::ostream& out, std::ostream& err);

}  // namespace rdmahd
