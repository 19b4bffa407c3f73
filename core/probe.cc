#include "core/probe.h"

namespace rdmahd {

Registry<Probe>& ProbeRegistry() {
  static Registry<Probe> registry;
  return registry;
}

void RenderProbeRounds(const Snapshot& snapshot, MetricSink& sink) {
  // The families exist in the sink even while no probe reports, so that they keep their place in
  // a reused sink's exposition (a family without samples is not printed).
  auto success = sink.Gauge("rdma_healthd_probe_success", "1 if the probe's last round ended normally, 0 if it threw.");
  auto duration = sink.Gauge("rdma_healthd_probe_duration_seconds", "Wall time of the probe's last round.");
  auto rounds = sink.Counter("rdma_healthd_probe_rounds_total", "Rounds the probe ended since the daemon started.");
  auto failed = sink.Counter("rdma_healthd_probe_failed_rounds_total",
                             "Rounds of the probe that threw since the daemon started (the log says why).");
  const auto* facts = snapshot.Get<ProbeRoundFacts>();
  if (facts == nullptr) return;
  for (const ProbeRoundOutcome& o : facts->probes) {
    success.Add({{"probe", o.probe}}, o.last_failed ? 0 : 1);
    duration.Add({{"probe", o.probe}}, o.last_duration.count());
    rounds.Add({{"probe", o.probe}}, static_cast<double>(o.rounds));
    failed.Add({{"probe", o.probe}}, static_cast<double>(o.failed));
  }
}

}  // namespace rdmahd
