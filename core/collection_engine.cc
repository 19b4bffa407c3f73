#include "core/collection_engine.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <mutex>
#include <set>

#include "core/exceptions.h"
#include "core/plugin_worker.h"
#include "core/probe_scheduler.h"

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;

// As the config spells a duration: "5s", "1500ms".
std::string FormatDuration(std::chrono::milliseconds d) {
  if (d.count() > 0 && d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

// What one collector's run left behind: written by its job, read by the collection that posted it.
struct CollectorRun {
  bool done = false;  // guarded by Shared::mu
  Snapshot facts;
  CollectorOutcome outcome;
};

struct TopologyRun {
  bool done = false;  // guarded by Shared::mu
  Topology topology;
};

}  // namespace

EnginePlugins EnginePlugins::Registered(const std::vector<std::string>& only_collectors) {
  EnginePlugins p;
  if (const auto& sources = TopologySourceRegistry().entries(); !sources.empty()) {
    p.topology = sources.front().factory();
  }
  p.collectors = CollectorRegistry().Instantiate([&](const std::string& name) {
    return only_collectors.empty() ||
           std::find(only_collectors.begin(), only_collectors.end(), name) != only_collectors.end();
  });
  p.checks = CheckRegistry().Instantiate([](const std::string&) { return true; });
  p.probes = ProbeRegistry().Instantiate([](const std::string&) { return true; });
  return p;
}

PluginNames RegisteredPluginNames() {
  return PluginNames(CollectorRegistry().Names(), CheckRegistry().Names(), ProbeRegistry().Names());
}

struct CollectionEngine::Shared {
  struct CollectorSlot {
    std::string name;
    std::shared_ptr<Collector> collector;
    PluginWorker worker;
    bool running = false;  // guarded by mu: posted and not yet returned
    bool stuck = false;    // guarded by mu: past a deadline and not yet returned
  };

  Shared(NodeFs f, EnginePlugins p) : fs(std::move(f)), topology(std::move(p.topology)), checks(std::move(p.checks)) {
    for (auto& c : p.collectors) {
      auto slot = std::make_unique<CollectorSlot>();
      slot->name = c.name;
      slot->collector = std::move(c.impl);
      collectors.push_back(std::move(slot));
    }
  }

  // Runs one collection for `config`; never waits past its deadline (or past Stop()).
  std::shared_ptr<const Report> RunCollection(const std::shared_ptr<Shared>& self,
                                              const std::shared_ptr<const Config>& config);
  // The topology of this collection: a fresh one, or the last one with `failure` set.
  std::shared_ptr<const Topology> RunTopology(const std::shared_ptr<Shared>& self,
                                              const std::shared_ptr<const Config>& config, Clock::time_point deadline);
  // An empty report for `config` (shutdown before any collection).
  std::shared_ptr<const Report> Empty(const std::shared_ptr<const Config>& config) const;

  const NodeFs fs;
  const std::shared_ptr<TopologySource> topology;
  PluginWorker topology_worker;
  std::vector<std::unique_ptr<CollectorSlot>> collectors;
  const std::vector<Instance<Check>> checks;
  const ProbeScheduler* probes = nullptr;  // the engine's; its boards hold the probes' results

  mutable std::mutex mu;
  // The topology run or a collection's last collector run returned, a collection ended, or Stop().
  std::condition_variable changed;
  // Everything below is guarded by mu.
  bool stopping = false;
  bool collecting = false;
  std::uint64_t collection = 0;  // id of the last collection started
  bool topology_running = false;
  bool topology_stuck = false;
  std::shared_ptr<const Topology> last_topology;
  std::shared_ptr<const Report> last;
  std::uint64_t last_collection = 0;  // the collection `last` belongs to
  std::map<std::string, std::uint64_t> timeouts;
};

std::shared_ptr<const Topology> CollectionEngine::Shared::RunTopology(const std::shared_ptr<Shared>& self,
                                                                      const std::shared_ptr<const Config>& config,
                                                                      Clock::time_point deadline) {
  if (!topology) return std::make_shared<const Topology>();
  // Collectors go on with what was known last; the devices collector reports the failure.
  auto stale = [&](std::string failure) {  // needs mu held
    auto t = std::make_shared<Topology>(last_topology ? *last_topology : Topology{});
    t->failure = std::move(failure);
    return std::shared_ptr<const Topology>(std::move(t));
  };
  auto run = std::make_shared<TopologyRun>();
  std::unique_lock lock(mu);
  if (topology_running) return stale("device discovery is still stuck in an earlier collection");
  topology_running = true;
  lock.unlock();
  const bool posted = topology_worker.Post([self, run, cfg = config] {
    Topology t;
    try {
      t = self->topology->Discover(self->fs, *cfg);
    } catch (...) {
      t = Topology{};
      t.failure = "device discovery failed: " + CurrentExceptionMessage();
    }
    std::lock_guard guard(self->mu);
    run->topology = std::move(t);
    run->done = true;
    self->topology_running = false;
    self->topology_stuck = false;
    self->changed.notify_all();
  });
  lock.lock();
  if (!posted) {  // only while the engine is being destroyed
    topology_running = false;
    return stale("device discovery could not start");
  }
  if (!changed.wait_until(lock, deadline, [&] { return run->done || stopping; })) {
    topology_stuck = true;
    return stale("device discovery did not finish within " + FormatDuration(config->collection_timeout));
  }
  if (!run->done) return stale("device discovery did not finish before shutdown");
  last_topology = std::make_shared<const Topology>(std::move(run->topology));
  return last_topology;
}

std::shared_ptr<const Report> CollectionEngine::Shared::RunCollection(const std::shared_ptr<Shared>& self,
                                                                      const std::shared_ptr<const Config>& config) {
  const Clock::time_point deadline = Clock::now() + config->collection_timeout;
  auto report = std::make_shared<Report>();
  report->config = config;
  report->snapshot.taken_at = std::chrono::system_clock::now();

  std::shared_ptr<const Topology> topo = RunTopology(self, config, deadline);
  report->snapshot.PutShared(topo);

  // Every enabled collector at once, each on its own worker.
  struct Posted {
    CollectorSlot* slot;
    std::shared_ptr<CollectorRun> run;
    Clock::time_point start;
    std::string not_started;  // why it was not run (empty: posted)
  };
  std::vector<Posted> posted;
  // Runs of this collection not yet returned (guarded by mu). Only the last one to return wakes
  // this thread: a wake-up per collector made the waiting thread run ten times a collection for
  // nothing (each a futex round trip and a context switch on a 2-core node).
  auto pending = std::make_shared<std::size_t>(0);
  for (auto& slot : collectors) {
    if (!config->CollectorEnabled(slot->name)) continue;
    Posted p{slot.get(), std::make_shared<CollectorRun>(), Clock::now(), ""};
    {
      std::lock_guard lock(mu);
      if (stopping) {
        p.not_started = "not run: shutting down";
      } else if (slot->running) {
        p.not_started = "collector " + slot->name + " is still stuck in an earlier collection; not run";
      } else {
        slot->running = true;
        ++*pending;
      }
    }
    if (p.not_started.empty()) {
      const bool ok = slot->worker.Post([self, run = p.run, collector = slot->collector, name = slot->name, config,
                                         topo, slot = slot.get(), pending] {
        const Clock::time_point start = Clock::now();
        CollectorOutcome outcome;
        outcome.collector = name;
        Snapshot facts;
        Status st;
        try {
          st = collector->Collect(CollectContext{self->fs, *config, *topo}, facts, outcome);
        } catch (...) {
          st = Error{"collector " + name + " failed: " + CurrentExceptionMessage()};
          facts = Snapshot{};  // what it stored before throwing is not trusted
        }
        outcome.duration = Clock::now() - start;
        outcome.success = st.ok();
        if (!st.ok()) outcome.errors.push_back(st.error().message);
        std::lock_guard lock(self->mu);
        run->facts = std::move(facts);
        run->outcome = std::move(outcome);
        run->done = true;
        slot->running = false;
        slot->stuck = false;
        if (--*pending == 0) self->changed.notify_all();
      });
      if (!ok) {  // only while the engine is being destroyed
        std::lock_guard lock(mu);
        slot->running = false;
        --*pending;
        p.not_started = "collector " + slot->name + " could not start";
      }
    }
    posted.push_back(std::move(p));
  }
  {
    std::unique_lock lock(mu);
    changed.wait_until(lock, deadline, [&] {
      return stopping || std::all_of(posted.begin(), posted.end(),
                                     [](const Posted& p) { return !p.not_started.empty() || p.run->done; });
    });
    const Clock::time_point now = Clock::now();
    for (Posted& p : posted) {
      if (p.run->done) {
        report->snapshot.Merge(p.run->facts);
        report->snapshot.outcomes.push_back(std::move(p.run->outcome));
        continue;
      }
      CollectorOutcome o;
      o.collector = p.slot->name;
      if (!p.not_started.empty()) {
        o.errors.push_back(p.not_started);
      } else {
        o.duration = now - p.start;
        if (stopping && now < deadline) {
          o.errors.push_back("collector " + p.slot->name + " did not finish before shutdown");
        } else {
          o.errors.push_back("collector " + p.slot->name + " did not finish within " +
                             FormatDuration(config->collection_timeout));
          ++timeouts[p.slot->name];
        }
        p.slot->stuck = true;
      }
      report->snapshot.outcomes.push_back(std::move(o));
    }
    report->collection_timeouts = timeouts;
  }

  if (probes != nullptr) probes->CopyInto(report->snapshot, *config);
  for (const auto& check : checks) {
    if (config->CheckEnabled(check.name)) RunCheck(check.name, *check.impl, report->snapshot, *config, report->verdicts);
  }
  report->finished_at = Clock::now();
  return report;
}

std::shared_ptr<const Report> CollectionEngine::Shared::Empty(const std::shared_ptr<const Config>& config) const {
  auto report = std::make_shared<Report>();
  report->config = config;
  report->snapshot.taken_at = std::chrono::system_clock::now();
  report->finished_at = Clock::now();
  report->collection_timeouts = timeouts;
  return report;
}

CollectionEngine::CollectionEngine(NodeFs fs, std::vector<std::string> only_collectors)
    : CollectionEngine(std::move(fs), EnginePlugins::Registered(only_collectors)) {}

CollectionEngine::CollectionEngine(NodeFs fs, EnginePlugins plugins) {
  std::vector<Instance<Probe>> probes = std::move(plugins.probes);
  shared_ = std::make_shared<Shared>(fs, std::move(plugins));
  probes_ = std::make_unique<ProbeScheduler>(std::move(fs), std::move(probes));
  shared_->probes = probes_.get();
}

CollectionEngine::~CollectionEngine() {
  Stop();
  // Workers still inside a collector keep `shared_` alive; none of them reads the board, which
  // goes with probes_ (collections run on callers' threads, all returned by now).
  shared_->probes = nullptr;
  probes_.reset();
}

void CollectionEngine::Stop() {
  {
    std::lock_guard lock(shared_->mu);
    shared_->stopping = true;
    shared_->changed.notify_all();
  }
  probes_->Stop();
}

void CollectionEngine::RunProbes(const std::shared_ptr<const Config>& config) { probes_->Configure(config); }

std::vector<std::string> CollectionEngine::collector_names() const {
  std::vector<std::string> out;
  for (const auto& c : shared_->collectors) out.push_back(c->name);
  return out;
}

std::vector<std::string> CollectionEngine::probe_names() const {
  std::vector<std::string> out;
  for (const auto& [name, probe] : probes_->probes()) out.push_back(name);
  return out;
}

const NodeFs& CollectionEngine::fs() const { return shared_->fs; }

std::string CollectionEngine::busy_collector() const {
  std::string out;
  auto add = [&](const std::string& name) { out += (out.empty() ? "" : ", ") + name; };
  {
    std::lock_guard lock(shared_->mu);
    if (shared_->topology_running) add("topology");
    for (const auto& c : shared_->collectors) {
      if (c->running) add(c->name);
    }
  }
  if (std::string probes = probes_->busy(); !probes.empty()) add(probes);
  return out;
}

bool CollectionEngine::stuck() const {
  std::lock_guard lock(shared_->mu);
  if (shared_->topology_stuck) return true;
  return std::any_of(shared_->collectors.begin(), shared_->collectors.end(), [](const auto& c) { return c->stuck; });
}

std::shared_ptr<const Report> CollectionEngine::Collect(const std::shared_ptr<const Config>& config) {
  Shared& s = *shared_;
  std::unique_lock lock(s.mu);
  for (;;) {
    if (s.last && s.last->config == config &&
        Clock::now() - s.last->finished_at <= config->scrape_cache_window) {
      return s.last;
    }
    if (s.stopping) return s.last ? s.last : s.Empty(config);
    if (!s.collecting) {
      s.collecting = true;
      const std::uint64_t id = ++s.collection;
      lock.unlock();
      std::shared_ptr<const Report> report;
      try {
        report = s.RunCollection(shared_, config);
      } catch (...) {
        // Plug-in exceptions are contained above; this is the engine's own (an allocation failure).
        lock.lock();
        s.collecting = false;
        s.changed.notify_all();
        throw;
      }
      lock.lock();
      s.last = report;
      s.last_collection = id;
      s.collecting = false;
      s.changed.notify_all();
      return report;
    }
    // Another caller is collecting: share its report.
    const std::uint64_t id = s.collection;
    s.changed.wait(lock, [&] { return s.stopping || !s.collecting || s.collection != id; });
    if (s.last && s.last_collection == id && s.last->config == config) return s.last;
  }
}

std::vector<std::string> CollectionEngine::Render(const Report& report, MetricSink& sink) const {
  const Snapshot& snapshot = report.snapshot;
  std::vector<std::string> render_errors;
  std::set<std::string_view> render_failed;
  for (const auto& c : shared_->collectors) {
    try {
      c->collector->Render(snapshot, sink);
    } catch (...) {
      render_failed.insert(c->name);
      render_errors.push_back("collector " + c->name + " failed to render its metrics: " + CurrentExceptionMessage());
    }
  }
  for (const auto& [name, probe] : probes_->probes()) {
    try {
      probe->Render(snapshot, sink);
    } catch (...) {
      render_errors.push_back("probe " + name + " failed to render its metrics: " + CurrentExceptionMessage());
    }
  }

  auto success = sink.Gauge("rdma_healthd_collector_success",
                            "1 if the collector's last run succeeded, 0 if it failed.");
  auto duration = sink.Gauge("rdma_healthd_collector_duration_seconds",
                             "Wall time of the collector's last run.");
  auto errors = sink.Gauge("rdma_healthd_collector_errors",
                           "Values or devices the collector's last run skipped (see the log).");
  auto timeouts = sink.Counter("rdma_healthd_collection_timeouts_total",
                               "Collections that reached scrape.collection_timeout while this collector ran.");
  for (const CollectorOutcome& o : snapshot.outcomes) {
    const bool render_ok = !render_failed.contains(o.collector);
    success.Add({{"collector", o.collector}}, o.success && render_ok ? 1 : 0);
    duration.Add({{"collector", o.collector}}, o.duration.count());
    errors.Add({{"collector", o.collector}}, static_cast<double>(o.errors.size() + (render_ok ? 0 : 1)));
    auto t = report.collection_timeouts.find(o.collector);
    timeouts.Add({{"collector", o.collector}}, t == report.collection_timeouts.end() ? 0 : static_cast<double>(t->second));
  }

  auto status = sink.Gauge("rdma_check_status",
                           "Verdict of a check for a subject: 1 for the current status, 0 for the others.");
  static constexpr std::array kAll = {Verdict::kOk, Verdict::kWarning, Verdict::kFailed, Verdict::kUnknown};
  for (const CheckResult& r : report.verdicts) {
    for (Verdict v : kAll) {
      status.Add({{"check", r.check}, {"subject", r.subject}, {"status", VerdictName(v)}}, r.verdict == v ? 1 : 0);
    }
  }
  return render_errors;
}

std::string CollectionEngine::ScrapeText(const std::shared_ptr<const Config>& config) {
  std::shared_ptr<const Report> report = Collect(config);
  MetricSink sink;
  (void)Render(*report, sink);
  return sink.Serialize();
}

}  // namespace rdmahd
