#include "probes/peer_metrics.h"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace rdmahd {
namespace {

// The `le` label as Prometheus' Go clients print bounds (%g: "1e-06", "0.0001", "+Inf"), so that the
// series match those of other exporters' histograms with the same bounds.
void LeLabel(double bound, char (&out)[32]) {
  if (std::isinf(bound)) {
    std::snprintf(out, sizeof out, "+Inf");
  } else {
    std::snprintf(out, sizeof out, "%g", bound);
  }
}

}  // namespace

void RenderPeerFacts(const PeerFacts& facts, MetricSink& sink) {
  if (facts.peers.empty()) return;
  auto histogram = sink.Family("rdma_peer_latency_seconds",
                               "Half round trips of RC SEND/RECV ping-pongs to the peer (perftest ib_send_lat samples), "
                               "every sample of every round since the peer was added.",
                               MetricType::Histogram);
  auto quantiles = sink.Gauge("rdma_peer_latency_quantile_seconds",
                              "Last latency round to the peer, perftest statistics: quantile 0 = t_min, 0.5 = "
                              "t_typical, 0.99 and 0.999 = perftest's percentiles, 1 = t_max.");
  auto clock = sink.Gauge("rdma_peer_latency_clock_info",
                          "Always 1; clock says what timed the last latency round: steady (CPU clock around posts) "
                          "or completion (NIC completion timestamps).");
  auto bandwidth = sink.Gauge("rdma_peer_bandwidth_bytes_per_second",
                              "Last RDMA WRITE stream to the peer (perftest ib_write_bw style), bytes per second.");
  auto probes = sink.Counter("rdma_peer_probes_total",
                             "Probes of the peer since it was added, by kind (latency, bandwidth), result and reason.");
  std::vector<Label> labels;
  char le[32];
  for (const auto& shared : facts.peers) {
    const PeerStatus& p = *shared;
    labels.clear();
    labels.emplace_back("peer", p.name);
    for (const auto& [k, v] : p.labels) labels.emplace_back(k, v);
    const std::size_t base = labels.size();

    for (const auto& [bound, count] : p.histogram.buckets) {
      LeLabel(bound, le);
      labels.resize(base);
      labels.emplace_back("le", le);
      histogram.AddSuffixed("_bucket", labels, static_cast<double>(count));
    }
    labels.resize(base);
    histogram.AddSuffixed("_sum", labels, p.histogram.sum_seconds);
    histogram.AddSuffixed("_count", labels, static_cast<double>(p.histogram.count));

    if (p.latency) {
      const PeerLatencyRound& r = *p.latency;
      const std::pair<const char*, double> points[] = {
          {"0", r.min_us}, {"0.5", r.typical_us}, {"0.99", r.p99_us}, {"0.999", r.p99_9_us}, {"1", r.max_us}};
      for (const auto& [q, us] : points) {
        labels.resize(base);
        labels.emplace_back("quantile", q);
        quantiles.Add(labels, us * 1e-6);
      }
      labels.resize(base);
      labels.emplace_back("clock", r.clock);
      clock.Add(labels, 1);
    }
    if (p.bandwidth_bytes_per_second) {
      labels.resize(base);
      bandwidth.Add(labels, *p.bandwidth_bytes_per_second);
    }
    for (const PeerProbeCount& c : p.counts) {
      labels.resize(base);
      labels.emplace_back("kind", c.kind);
      labels.emplace_back("result", c.result);
      labels.emplace_back("reason", c.reason);
      probes.Add(labels, static_cast<double>(c.count));
    }
  }
}

}  // namespace rdmahd
