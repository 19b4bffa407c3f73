// `rdma-healthd probe PEER`: one measurement against a peer's probe responder, printed the way
// perftest prints it, so an operator can put the daemon's view next to ib_send_lat/ib_write_bw.
// Exit: 0 measured, 1 the probe failed (reason printed), 2 could not run (PEER does not resolve).
#pragma once

#include <iosfwd>
#include <optional>
#include <vector>

#include "daemon/options.h"
#include "probes/latency_stats.h"
#include "probes/peer_prober.h"

namespace rdmahd {

// perftest's report line over probes/latency_stats.h's figures (the daemon's probes use the same).
void PrintLatencyReport(std::uint32_t bytes, std::uint32_t iterations, const LatencyStats& f, std::ostream& out);
void PrintBandwidthReport(std::uint32_t bytes, const BandwidthResult& r, std::ostream& out);

int RunProbeCommand(const Options& options, PeerProber& prober, std::ostream& out, std::ostream& err);

}  // namespace rdmahd
