// The peers' latency histogram (rdma_peer_latency_seconds): its bucket bounds, and every sample of
// a round added in one update. prometheus-cpp's Histogram does the accumulation; its Collect()
// gives the cumulative counts a round publishes (probes/peer_publication.h).
#pragma once

#include <vector>

namespace prometheus {
class Histogram;
}

namespace rdmahd {

// The bucket bounds, in seconds: 1 us .. 100 ms in 1-2-5 steps.
const std::vector<double>& PeerLatencyBuckets();

// Adds one round's samples (microseconds, sorted ascending) to a histogram with PeerLatencyBuckets,
// counting exactly as prometheus::Histogram::Observe would sample by sample, in one update.
void ObserveSortedSamples(const std::vector<double>& sorted_us, prometheus::Histogram& histogram);

}  // namespace rdmahd
