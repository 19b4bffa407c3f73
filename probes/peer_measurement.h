// One probe of one peer, through the PeerProber (probes/peer_prober.h), its outcome recorded in
// the peer's state: a latency probe's samples become perftest's statistics
// (probes/latency_stats.h) and fill the histogram; a bandwidth stream gives bytes per second; every
// probe is counted by kind, result and a bounded reason, and the last failure is kept for the
// checks. A DNS name is resolved before the probe (a name that does not resolve is a failed probe,
// "address_resolution"), again after kPeerResolveTtl and after a failed probe.
#pragma once

#include <atomic>
#include <chrono>
#include <string_view>
#include <string>

#include "config/config.h"
#include "facts/peer_facts.h"
#include "probes/peer_prober.h"
#include "probes/peer_state.h"
#include "probes/peer_targets.h"

namespace rdmahd {

// The `kind` label of the two probes.
inline constexpr const char* kLatencyProbe = "latency";
inline constexpr const char* kBandwidthProbe = "bandwidth";

// A resolved DNS name is looked up again after this long (and after a failed probe).
inline constexpr std::chrono::seconds kPeerResolveTtl{60};

// A latency probe of `peer` (the round started at `now`). A probe cut short by `stop` is not
// counted: the daemon is stopping, which is not the peer's doing. `placement_warning` (the probe
// thread could not be pinned to peers.cpus) goes beside the prober's CPU frequency warning.
void MeasureLatency(PeerState& peer, PeerProber& prober, AddressResolver& resolver, const PeersPolicy& p,
                    const std::atomic<bool>& stop, std::chrono::steady_clock::time_point now,
                    std::string_view placement_warning = {});
// A bandwidth stream to `peer`, likewise.
void MeasureBandwidth(PeerState& peer, PeerProber& prober, AddressResolver& resolver, const PeersPolicy& p,
                      const std::atomic<bool>& stop);

// Starts counting `kind` probes of a peer: its success series exists, at 0, before the first
// probe ends.
void StartCounting(PeerStatus& status, const char* kind);

// The `reason` label for a prober's reason: ProbeFailure's documented reasons and "wc_" + a
// lower-case ibv_wc_status name as they are, anything else "other", so the label stays a small set
// whatever a prober returns (the failure's message keeps the original).
std::string BoundedFailureReason(const std::string& reason);

}  // namespace rdmahd
