// A "peers" probe under test: a fake PeerProber that answers from a script (and records every
// call), a fake resolver from a name table, a fake DNS discovery, and a Harness that runs rounds
// the way the scheduler does and renders what the probe published. Shared by the probes/peer_*
// tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/metric_sink.h"
#include "common/node_fs.h"
#include "common/thread_affinity.h"
#include "config/config.h"
#include "core/probe.h"
#include "probes/peer_probe.h"

namespace rdmahd::testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Scripted outcomes shared between a test and the FakeProber the probe owns (and its thread).
struct Script {
  std::mutex mu;
  std::map<std::string, std::deque<ProbeOutcome<LatencySamples>>> latency;  // per peer; then `fallback`
  std::map<std::string, std::deque<ProbeOutcome<BandwidthResult>>> bandwidth;
  std::vector<std::pair<std::string, Clock::time_point>> latency_calls;
  std::vector<std::string> bandwidth_calls;
  std::vector<PeerEndpoint> endpoints;
  std::vector<CpuList> latency_cpus;  // the CPUs the calling thread could run on, per latency call
  milliseconds delay{0};
  int in_call = 0;
  int max_in_call = 0;

  // {1..9, 100} us: perftest stats min 1, typical 4.5, p99 9, p99.9 9, max 9 (latency_stats_test).
  static LatencySamples Default() {
    LatencySamples s;
    s.half_round_trip_us = {5, 3, 9, 1, 7, 2, 8, 4, 6, 100};
    return s;
  }
  std::size_t Calls(const std::string& peer) {
    std::lock_guard lock(mu);
    return static_cast<std::size_t>(std::count_if(latency_calls.begin(), latency_calls.end(),
                                                  [&](const auto& c) { return c.first == peer; }));
  }
};

class FakeProber : public PeerProber {
 public:
  explicit FakeProber(std::shared_ptr<Script> s) : s_(std::move(s)) {}
  ProbeOutcome<LatencySamples> Latency(const PeerEndpoint& peer, const ProbeSource&, const LatencyRequest&,
                                       const std::atomic<bool>&) override {
    ProbeOutcome<LatencySamples> out = Script::Default();
    milliseconds delay;
    {
      std::lock_guard lock(s_->mu);
      s_->latency_calls.emplace_back(peer.name, Clock::now());
      s_->endpoints.push_back(peer);
      s_->latency_cpus.push_back(CallingThreadCpus());
      s_->max_in_call = std::max(s_->max_in_call, ++s_->in_call);
      auto& q = s_->latency[peer.name];
      if (!q.empty()) {
        out = std::move(q.front());
        q.pop_front();
      }
      delay = s_->delay;
    }
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    std::lock_guard lock(s_->mu);
    --s_->in_call;
    return out;
  }
  ProbeOutcome<BandwidthResult> Bandwidth(const PeerEndpoint& peer, const ProbeSource&, const BandwidthRequest&,
                                          const std::atomic<bool>&) override {
    std::lock_guard lock(s_->mu);
    s_->bandwidth_calls.push_back(peer.name);
    s_->max_in_call = std::max(s_->max_in_call, s_->in_call + 1);
    auto& q = s_->bandwidth[peer.name];
    if (!q.empty()) {
      auto out = std::move(q.front());
      q.pop_front();
      return out;
    }
    return BandwidthResult{12'500'000'000, 1.0};  // 100 Gb/s
  }

 private:
  std::shared_ptr<Script> s_;
};

class FakeResolver : public AddressResolver {
 public:
  explicit FakeResolver(std::map<std::string, std::string> names) : names_(std::move(names)) {}
  Result<std::string> Resolve(const std::string& target, milliseconds) override {
    auto it = names_.find(target);
    if (it == names_.end()) return Error{target + ": Name or service not known"};
    return it->second;
  }

 private:
  std::map<std::string, std::string> names_;
};

// What a fake discovery answers, and the names it was asked, shared with the discovery thread.
struct DnsScript {
  std::mutex mu;
  Result<std::vector<std::string>> answer = std::vector<std::string>{};
  std::vector<std::string> asked;  // "name@server"
  std::size_t passes = 0;          // answers given
  std::chrono::milliseconds delay{0};
  bool hang = false;               // lookups wait until released (or 10 s)
  std::condition_variable released;

  DnsDiscoverer Discoverer(std::shared_ptr<DnsScript> self) {
    return [self](const std::string& name, const DnsOptions& o) -> Result<std::vector<std::string>> {
      std::unique_lock lock(self->mu);
      self->asked.push_back(name + "@" + o.server);
      if (self->hang) self->released.wait_for(lock, std::chrono::seconds(10), [&] { return !self->hang; });
      if (self->delay.count() > 0) {
        lock.unlock();
        std::this_thread::sleep_for(self->delay);
        lock.lock();
      }
      ++self->passes;
      return self->answer;
    };
  }
  void Set(Result<std::vector<std::string>> a) {
    std::lock_guard lock(mu);
    answer = std::move(a);
  }
  std::size_t Passes() {
    std::lock_guard lock(mu);
    return passes;
  }
};

// Options for a PeerProbe on `script`'s fake prober and a resolver that knows no name.
inline PeerProbe::Options FakeProbeOptions(std::shared_ptr<Script> script, std::uint64_t seed = 42) {
  return PeerProbe::Options{[script] { return std::make_unique<FakeProber>(script); },
                            [] { return std::make_unique<FakeResolver>(std::map<std::string, std::string>{}); },
                            seed, {}, {}, {}};
}

// `options` with `dns` as discovery, on a node whose only address is 127.0.0.1.
inline PeerProbe::Options WithDiscovery(PeerProbe::Options options, const std::shared_ptr<DnsScript>& dns) {
  options.discover = dns->Discoverer(dns);
  options.local_addresses = [] { return std::vector<std::string>{"127.0.0.1"}; };
  return options;
}

struct Harness {
  std::shared_ptr<Script> script = std::make_shared<Script>();
  PeerProbe probe;
  ProbeBoard board;
  NodeFs fs{"/nonexistent", "/nonexistent"};
  std::atomic<bool> stopping{false};

  explicit Harness(std::map<std::string, std::string> names = {})
      : probe(PeerProbe::Options{[s = script] { return std::make_unique<FakeProber>(s); },
                                 [names] { return std::make_unique<FakeResolver>(names); }, 42, {}, {}, {}}) {}
  // A probe whose discovery is `dns`, on a node whose only address is 127.0.0.1.
  explicit Harness(const std::shared_ptr<DnsScript>& dns) : probe(WithDiscovery(FakeProbeOptions(script), dns)) {}

  void Round(const Config& config) { probe.RunRound(ProbeContext{fs, config, stopping}, board); }

  // Runs rounds (as the scheduler would, every few ms) until `done` or 5 s.
  template <class Pred>
  bool RunUntil(const Config& config, Pred done) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < deadline) {
      Round(config);
      if (done()) return true;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return false;
  }

  std::string Metrics() const {
    Snapshot snap;
    board.CopyInto(snap);
    MetricSink sink;
    probe.Render(snap, sink);
    return sink.Serialize();
  }
  const PeerFacts* Facts(Snapshot& snap) const {
    board.CopyInto(snap);
    return snap.Get<PeerFacts>();
  }
};

inline Config PeersConfig(std::vector<std::string> targets, milliseconds interval = milliseconds(100)) {
  Config c;
  c.Section<PeersPolicy>().targets = std::move(targets);
  c.Section<PeersPolicy>().interval = interval;
  return c;
}

}  // namespace rdmahd::testing
