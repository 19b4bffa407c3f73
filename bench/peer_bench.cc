// rdmahd_peer_bench: what the "peers" probe costs apart from the probes themselves, with a fake
// prober that answers at once (999 samples per latency round, as 1,000 iterations give).
//
//   rdmahd_peer_bench memory [PEERS]          heap bytes of bookkeeping per peer (mallinfo2 before and
//                                             after every peer had a latency round and a stream;
//                                             the budget is 16 KiB per peer)
//   rdmahd_peer_bench cpu [PEERS] [RATE] [S] [fail]
//                                             CPU time of the probe thread (scheduling, statistics,
//                                             histogram, publishing) with PEERS peers probed RATE
//                                             times a second each, for S seconds, as % of one core;
//                                             "fail": every probe fails at once (no statistics: what
//                                             the probe costs around the rounds' own work)
#include <malloc.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/node_fs.h"
#include "core/probe_scheduler.h"
#include "probes/peer_probe.h"

namespace rdmahd {
namespace {

class InstantProber : public PeerProber {
 public:
  explicit InstantProber(bool fail = false) : fail_(fail) {}
  ProbeOutcome<LatencySamples> Latency(const PeerEndpoint& peer, const ProbeSource&, const LatencyRequest& request,
                                       const std::atomic<bool>&) override {
    ++latency_;
    if (fail_) return ProbeFailure{"connect_timeout", peer.name + ": no answer"};
    LatencySamples s;
    s.half_round_trip_us.reserve(request.iterations - 1);
    for (std::uint32_t i = 1; i < request.iterations; ++i) s.half_round_trip_us.push_back(2.0 + (i * 7919 % 1000) / 1000.0);
    return s;
  }
  ProbeOutcome<BandwidthResult> Bandwidth(const PeerEndpoint&, const ProbeSource&, const BandwidthRequest&,
                                          const std::atomic<bool>&) override {
    return BandwidthResult{12'500'000'000, 1.0};
  }
  std::uint64_t latency_ = 0;
  bool fail_;
};

class NoResolver : public AddressResolver {
 public:
  Result<std::string> Resolve(const std::string& target, std::chrono::milliseconds) override { return target; }
};

std::vector<std::string> Targets(int n) {
  std::vector<std::string> t;
  for (int i = 0; i < n; ++i) t.push_back("10." + std::to_string(i / 65536) + "." + std::to_string(i / 256 % 256) + "." + std::to_string(i % 256));
  return t;
}

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int Memory(int peers) {
  Config config;
  config.Section<PeersPolicy>().targets = Targets(peers);
  config.Section<PeersPolicy>().interval = std::chrono::milliseconds(100);
  config.Section<PeersPolicy>().bandwidth = true;
  config.Section<PeersPolicy>().bandwidth_interval = std::chrono::milliseconds(10000);
  config.Section<PeersPolicy>().bandwidth_duration = std::chrono::milliseconds(100);
  auto* prober = new InstantProber;
  ProbeBoard board;
  NodeFs fs("/nonexistent", "/nonexistent");
  std::atomic<bool> stopping{false};
  PeerProbe::Options options;
  options.prober = [prober] { return std::unique_ptr<PeerProber>(prober); };
  options.resolver = [] { return std::make_unique<NoResolver>(); };
  options.seed = 1;
  const std::size_t before = mallinfo2().uordblks;
  {
    PeerProbe probe(options);
    // Rounds until every peer had several latency rounds and its stream (the first 10 s at most).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(12);
    while (std::chrono::steady_clock::now() < deadline && prober->latency_ < static_cast<std::uint64_t>(peers) * 3) {
      probe.RunRound(ProbeContext{fs, config, stopping}, board);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    malloc_trim(0);
    const std::size_t after = mallinfo2().uordblks;
    const double per_peer = static_cast<double>(after - before) / peers;
    std::printf("peers %d  latency rounds %llu  heap in use +%zu bytes  per peer %.0f bytes (%.2f KiB; budget 16 KiB)\n",
                peers, static_cast<unsigned long long>(prober->latency_), after - before, per_peer, per_peer / 1024);
  }
  return 0;
}

int Cpu(int peers, double rate, int seconds, bool fail) {
  auto config = std::make_shared<Config>();
  config->Section<PeersPolicy>().targets = Targets(peers);
  config->Section<PeersPolicy>().interval = std::chrono::milliseconds(static_cast<int>(1000 / rate));
  auto* prober = new InstantProber(fail);
  PeerProbe::Options options;
  options.prober = [prober] { return std::unique_ptr<PeerProber>(prober); };
  options.resolver = [] { return std::make_unique<NoResolver>(); };
  std::vector<Instance<Probe>> probes;
  probes.push_back({"peers", std::make_unique<PeerProbe>(options)});
  ProbeScheduler scheduler(NodeFs("/nonexistent", "/nonexistent"), std::move(probes));
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  scheduler.Configure(config);
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const double cpu = CpuSeconds() - cpu0;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  scheduler.Stop();
  while (!scheduler.busy().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::printf("peers %d at %.1f probes/s each for %.1f s: %llu latency rounds, CPU %.3f s = %.2f%% of one core "
              "(fake prober: scheduling, %s, publishing)\n",
              peers, rate, wall, static_cast<unsigned long long>(prober->latency_), cpu, 100 * cpu / wall,
              fail ? "every probe failing at once: no statistics" : "999-sample statistics, histogram");
  return 0;
}

}  // namespace
}  // namespace rdmahd

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "memory";
  if (mode == "memory") return rdmahd::Memory(argc > 2 ? std::atoi(argv[2]) : 1000);
  if (mode == "cpu") {
    return rdmahd::Cpu(argc > 2 ? std::atoi(argv[2]) : 32, argc > 3 ? std::atof(argv[3]) : 10,
                       argc > 4 ? std::atoi(argv[4]) : 10, argc > 5 && std::string(argv[5]) == "fail");
  }
  std::fprintf(stderr, "usage: rdmahd_peer_bench memory [PEERS] | cpu [PEERS] [RATE] [SECONDS] [fail]\n");
  return 2;
}
