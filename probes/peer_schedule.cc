#include "probes/peer_schedule.h"

#include <algorithm>

namespace rdmahd {

PeerSchedule::PeerSchedule(std::uint64_t seed) : random_(seed != 0 ? seed : std::random_device{}()) {}

std::chrono::milliseconds PeerSchedule::Tick(const PeersPolicy& p) {
  std::chrono::milliseconds shortest = p.interval;
  if (p.bandwidth) shortest = std::min(shortest, p.bandwidth_interval);
  return std::clamp(shortest / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(500));
}

PeerSchedule::Clock::time_point PeerSchedule::FirstDue(Clock::time_point now, std::chrono::milliseconds interval) {
  std::uniform_real_distribution<double> phase(0.0, 1.0);
  return now + std::chrono::duration_cast<Clock::duration>(interval * phase(random_));
}

PeerSchedule::Clock::time_point PeerSchedule::NextDue(Clock::time_point due, std::chrono::milliseconds interval,
                                                      Clock::time_point now) {
  std::uniform_real_distribution<double> jitter(0.9, 1.1);
  const auto step = std::chrono::duration_cast<Clock::duration>(interval * jitter(random_));
  return due + step > now ? due + step : now + step;
}

std::optional<PeerSchedule::Due> PeerSchedule::Earliest(const PeerSet& peers, bool bandwidth) {
  Due next;
  next.at = Clock::time_point::max();
  for (const auto& [name, peer] : peers) {
    if (peer->next_latency < next.at) next = Due{peer.get(), false, peer->next_latency};
    if (bandwidth && peer->next_bandwidth < next.at) next = Due{peer.get(), true, peer->next_bandwidth};
  }
  if (next.peer == nullptr) return std::nullopt;
  return next;
}

}  // namespace rdmahd
