// PeerSchedule: when the "peers" probe probes each peer. Every peer has its own due times, spread
// with random jitter (the first round anywhere in the first interval, then interval +-10%), so
// that peers added together, and nodes started together, do not probe in step. Probes run one at
// a time, earliest due first: at most one bandwidth stream per node, never overlapping a latency
// probe it would disturb. The probe's thread wakes every tick (Tick) and a round runs what is due.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

#include "config/config.h"
#include "probes/peer_state.h"

namespace rdmahd {

class PeerSchedule {
 public:
  using Clock = std::chrono::steady_clock;

  // `seed` 0: from std::random_device.
  explicit PeerSchedule(std::uint64_t seed);

  // How often the probe's thread wakes while `p` names peers: a tenth of the shortest interval, 10
  // ms .. 500 ms. A probe starts at most that late (its rate holds: the next due time counts from
  // the due time), and the thread wakes at most 100 times a second when idle.
  static std::chrono::milliseconds Tick(const PeersPolicy& p);

  // A new peer's (or a new interval's) first due time: anywhere in [now, now + interval).
  Clock::time_point FirstDue(Clock::time_point now, std::chrono::milliseconds interval);

  // The due time after a probe due at `due` that starts at `now`: interval +-10% after `due`, so a
  // probe a little late (a busy round, the tick) keeps the rate; one later than a whole interval
  // (the node was suspended, peers timed out in a row) starts a new phase from `now` instead of
  // bursting.
  Clock::time_point NextDue(Clock::time_point due, std::chrono::milliseconds interval, Clock::time_point now);

  // The probe due first in `peers` (their bandwidth streams too when `bandwidth`), latency first
  // at equal times; nullopt for no peers. A scan per probe: 1,000 peers cost microseconds, far
  // below one probe.
  struct Due {
    PeerState* peer = nullptr;
    bool bandwidth = false;
    Clock::time_point at{};
  };
  static std::optional<Due> Earliest(const PeerSet& peers, bool bandwidth);

 private:
  std::mt19937_64 random_;
};

}  // namespace rdmahd
