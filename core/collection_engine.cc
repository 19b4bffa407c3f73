#include "core/collection_engine.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <set>

#include "common/duration_text.h"
#include "common/mutex.h"
#include "config/config_section.h"
#include "core/exceptions.h"
#include "core/plugin_worker.h"
#include "core/probe_scheduler.h"

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;

// A lane hands a collection over to another one when it has claimed nothing for this long (a
// collector or the topology stage is taking its time), so one slow plug-in never holds up the
// others. Normal collectors take microseconds to a few milliseconds.
Clock::duration HandoffAfter(const Config& config) {
  return std::min<Clock::duration>(std::chrono::milliseconds(50), config.collection_timeout / 4);
}

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
    // Guarded by Shared::mu (a nested struct's field cannot name it to the analysis):
    bool running = false;  // claimed by a lane and not yet returned
    bool stuck = false;    // past a deadline and not yet returned
  };

  // A thread that runs collections' work: the topology stage, then collectors one after another.
  struct Lane {
    PluginWorker worker{"collect"};
    bool busy = false;  // guarded by Shared::mu: a job is posted and has not yet returned
  };

  // One collection's work, shared by the caller and the lanes running it.
  struct Work {
    struct Item {
      CollectorSlot* slot = nullptr;
      std::string not_started;  // why it is not run (empty: runnable)
      bool claimed = false;     // every field from here on is guarded by Shared::mu
      bool done = false;
      Clock::time_point start{};
      Snapshot facts;
      CollectorOutcome outcome;
    };
    std::shared_ptr<const Config> config;
    std::vector<Item> items;               // fixed once the work is handed to a lane
    // From here on guarded by Shared::mu.
    std::shared_ptr<const Topology> topology;  // set once, before any claim
    std::size_t next = 0;                  // the first item not yet claimed
    std::size_t unfinished = 0;            // runnable items not yet done
    Clock::time_point last_claim{};
    bool closed = false;                   // the collection ended, claim nothing more
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
  // Posts a lane job that (first running the topology stage when `with_topology`) claims and runs
  // `work`'s items until none is left; false when no lane could take it.
  bool StartLane(const std::shared_ptr<Shared>& self, const std::shared_ptr<Work>& work, bool with_topology)
      REQUIRES(mu);
  // The lane job's body.
  static void RunLane(const std::shared_ptr<Shared>& self, const std::shared_ptr<Work>& work, Lane* lane,
                      bool with_topology);
  // The last topology, marked with `failure`.
  std::shared_ptr<const Topology> Stale(std::string failure) const REQUIRES(mu);
  // An empty report for `config` (shutdown before any collection).
  std::shared_ptr<const Report> Empty(const std::shared_ptr<const Config>& config) const REQUIRES(mu);

  const NodeFs fs;
  const std::shared_ptr<TopologySource> topology;
  std::vector<std::unique_ptr<CollectorSlot>> collectors;
  const std::vector<Instance<Check>> checks;
  const ProbeScheduler* probes = nullptr;  // the engine's; its boards hold the probes' results
  // Written and read by the collecting caller only, one collection at a time (`collecting`).
  History history;

  mutable Mutex mu;
  // A collection's work all done, a collection ended, or Stop().
  std::condition_variable_any changed;
  // One lane runs a whole collection; more are added only while a plug-in holds one up, and
  // stay for later (at most one per collector, as each holds at most one collector up).
  std::vector<std::unique_ptr<Lane>> lanes GUARDED_BY(mu);
  bool stopping GUARDED_BY(mu) = false;
  bool collecting GUARDED_BY(mu) = false;
  std::uint64_t collection GUARDED_BY(mu) = 0;  // id of the last collection started
  bool topology_running GUARDED_BY(mu) = false;
  bool topology_stuck GUARDED_BY(mu) = false;
  std::shared_ptr<const Topology> last_topology GUARDED_BY(mu);
  std::shared_ptr<const Report> last GUARDED_BY(mu);
  std::uint64_t last_collection GUARDED_BY(mu) = 0;  // the collection `last` belongs to
  std::map<std::string, std::uint64_t> timeouts GUARDED_BY(mu);
};

std::shared_ptr<const Topology> CollectionEngine::Shared::Stale(std::string failure) const {
  auto t = std::make_shared<Topology>(last_topology ? *last_topology : Topology{});
  t->failure = std::move(failure);
  return t;
}

bool CollectionEngine::Shared::StartLane(const std::shared_ptr<Shared>& self, const std::shared_ptr<Work>& work,
                                         bool with_topology) {
  Lane* lane = nullptr;
  for (auto& l : lanes) {
    if (!l->busy) {
      lane = l.get();
      break;
    }
  }
  if (lane == nullptr) lane = lanes.emplace_back(std::make_unique<Lane>()).get();
  lane->busy = true;
  if (lane->worker.Post([self, work, lane, with_topology] { RunLane(self, work, lane, with_topology); })) return true;
  lane->busy = false;  // only while the engine is being destroyed
  return false;
}

void CollectionEngine::Shared::RunLane(const std::shared_ptr<Shared>& self, const std::shared_ptr<Work>& work,
                                       Lane* lane, bool with_topology) {
  const Config& config = *work->config;
  if (with_topology) {
    Topology t;
    try {
      t = self->topology->Discover(self->fs, config);
    } catch (...) {
      t = Topology{};
      t.failure = "device discovery failed: " + CurrentExceptionMessage();
    }
    MutexLock lock(self->mu);
    self->topology_running = false;
    self->topology_stuck = false;
    // Too late when the caller already gave the collectors the last discovery instead.
    if (!work->topology) {
      work->topology = std::make_shared<const Topology>(std::move(t));
      self->last_topology = work->topology;
      if (work->unfinished == 0) self->changed.notify_all();  // no collector to run: done
    }
  }
  MutexLock lock(self->mu);
  for (;;) {
    if (work->closed || self->stopping || work->next == work->items.size()) break;
    Work::Item& item = work->items[work->next++];
    if (!item.not_started.empty()) continue;
    const Clock::time_point start = Clock::now();
    item.claimed = true;
    item.start = start;
    work->last_claim = start;
    item.slot->running = true;
    const std::shared_ptr<Collector> collector = item.slot->collector;
    const std::shared_ptr<const Topology> topo = work->topology;
    lock.unlock();

    CollectorOutcome outcome;
    outcome.collector = item.slot->name;
    Snapshot facts;
    Status st;
    try {
      st = collector->Collect(CollectContext{self->fs, config, *topo}, facts, outcome);
    } catch (...) {
      st = Error{"collector " + item.slot->name + " failed: " + CurrentExceptionMessage()};
      facts = Snapshot{};  // what it stored before throwing is not trusted
    }
    outcome.duration = Clock::now() - start;
    outcome.success = st.ok();
    if (!st.ok()) outcome.errors.push_back(st.error().message);

    lock.lock();
    item.facts = std::move(facts);
    item.outcome = std::move(outcome);
    item.done = true;
    item.slot->running = false;
    item.slot->stuck = false;
    // Only the last item wakes the caller: a wake-up per collector made it run a dozen times a
    // collection for nothing (each a futex round trip and a context switch on a 2-core node).
    if (--work->unfinished == 0) self->changed.notify_all();
  }
  lane->busy = false;
}

std::shared_ptr<const Report> CollectionEngine::Shared::RunCollection(const std::shared_ptr<Shared>& self,
                                                                      const std::shared_ptr<const Config>& config) {
  const Clock::time_point begin = Clock::now();
  const Clock::time_point deadline = begin + config->collection_timeout;
  // The topology stage gets half the time; the collectors always get the other half.
  const Clock::time_point topology_deadline = begin + config->collection_timeout / 2;
  const Clock::duration handoff = HandoffAfter(*config);
  auto report = std::make_shared<Report>();
  report->config = config;
  report->snapshot.taken_at = std::chrono::system_clock::now();

  auto work = std::make_shared<Work>();
  work->config = config;
  MutexLock lock(mu);
  for (auto& slot : collectors) {
    if (!config->CollectorEnabled(slot->name)) continue;
    Work::Item& item = work->items.emplace_back();
    item.slot = slot.get();
    if (stopping) {
      item.not_started = "not run: shutting down";
    } else if (slot->running) {
      item.not_started = "collector " + slot->name + " is still stuck in an earlier collection; not run";
    } else {
      ++work->unfinished;
    }
  }
  bool run_topology = false;
  if (!topology) {
    work->topology = std::make_shared<const Topology>();
  } else if (topology_running) {
    // Collectors go on with what was known last; the devices collector reports the failure.
    work->topology = Stale("device discovery is still stuck in an earlier collection");
  } else {
    run_topology = true;
  }
  work->last_claim = begin;
  if (!stopping && (run_topology || work->unfinished > 0)) {
    if (run_topology) topology_running = true;
    if (!StartLane(self, work, run_topology)) {
      if (run_topology) {
        topology_running = false;
        work->topology = Stale("device discovery could not start");
      }
      work->closed = true;
    }
  } else if (run_topology) {
    work->topology = Stale("device discovery did not start: shutting down");
  }

  for (;;) {
    if (stopping || work->closed || (work->topology && work->unfinished == 0)) break;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) break;
    if (!work->topology && now >= topology_deadline) {
      topology_stuck = true;
      work->topology = Stale("device discovery did not finish within " +
                             FormatDuration(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 config->collection_timeout / 2)));
      // The lane is still in the topology stage: another one runs the collectors now.
      work->last_claim = now;
      if (work->next < work->items.size() && !StartLane(self, work, false)) break;
    }
    // Work left that nobody claimed for a while: a plug-in is holding its lane up.
    const bool waiting_items = work->topology && work->next < work->items.size();
    if (waiting_items && now - work->last_claim >= handoff) {
      work->last_claim = now;
      if (!StartLane(self, work, false)) break;
    }
    Clock::time_point wake = deadline;
    if (!work->topology) wake = std::min(wake, std::min(topology_deadline, now + handoff));
    if (waiting_items) wake = std::min(wake, work->last_claim + handoff);
    changed.wait_until(lock, wake);
  }
  work->closed = true;
  if (!work->topology) work->topology = Stale("device discovery did not finish before shutdown");
  report->snapshot.PutShared(work->topology);

  const Clock::time_point now = Clock::now();
  for (Work::Item& item : work->items) {
    CollectorSlot& slot = *item.slot;
    if (item.done) {
      report->snapshot.Merge(item.facts);
      report->snapshot.outcomes.push_back(std::move(item.outcome));
      continue;
    }
    CollectorOutcome o;
    o.collector = slot.name;
    const bool shutdown = stopping && now < deadline;
    if (!item.not_started.empty()) {
      o.errors.push_back(item.not_started);
    } else if (!item.claimed) {
      o.errors.push_back(shutdown ? "not run: shutting down"
                                  : "collector " + slot.name + " did not start within " +
                                        FormatDuration(config->collection_timeout));
    } else {
      o.duration = now - item.start;
      if (shutdown) {
        o.errors.push_back("collector " + slot.name + " did not finish before shutdown");
      } else {
        o.errors.push_back("collector " + slot.name + " did not finish within " +
                           FormatDuration(config->collection_timeout));
        ++timeouts[slot.name];
      }
      slot.stuck = true;
    }
    report->snapshot.outcomes.push_back(std::move(o));
  }
  report->collection_timeouts = timeouts;
  // Room for about as many verdicts as the last collection gave (tens of thousands on a large
  // node), so that the list is not copied while it grows.
  const std::size_t verdicts_before = last ? last->verdicts.size() : 0;
  lock.unlock();
  report->verdicts.reserve(verdicts_before + verdicts_before / 16);

  if (probes != nullptr) probes->CopyInto(report->snapshot, *config);
  // Each check records what it needs of this collection into the history, then evaluates; what
  // checks derive from the history joins the report for the collectors that render it. A check's
  // verdicts go into the report's compact list as soon as it is done, so that no more than one
  // check's are ever held as CheckResults.
  const Clock::time_point checked_at = Clock::now();
  history.SetMaxSeries(config->Section<HistoryPolicy>().max_series);
  Snapshot derived;
  std::vector<CheckResult> one_check;
  for (const auto& check : checks) {
    if (config->CheckEnabled(check.name)) {
      one_check.clear();
      RunCheck(check.name, *check.impl, report->snapshot, *config, history, checked_at, one_check, &derived);
      for (const CheckResult& r : one_check) report->verdicts.push_back(r);
    }
  }
  report->verdicts.ShrinkToFit();
  history.Evict(checked_at);
  report->history_series = history.series();
  report->history_refused = history.refused();
  report->snapshot.Merge(derived);
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
    MutexLock lock(shared_->mu);
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

const History& CollectionEngine::history() const { return shared_->history; }

std::string CollectionEngine::busy_collector() const {
  std::string out;
  auto add = [&](const std::string& name) { out += (out.empty() ? "" : ", ") + name; };
  {
    MutexLock lock(shared_->mu);
    if (shared_->topology_running) add("topology");
    for (const auto& c : shared_->collectors) {
      if (c->running) add(c->name);
    }
  }
  if (std::string probes = probes_->busy(); !probes.empty()) add(probes);
  return out;
}

bool CollectionEngine::stuck() const {
  MutexLock lock(shared_->mu);
  if (shared_->topology_stuck) return true;
  return std::any_of(shared_->collectors.begin(), shared_->collectors.end(), [](const auto& c) { return c->stuck; });
}

std::shared_ptr<const Report> CollectionEngine::Collect(const std::shared_ptr<const Config>& config) {
  return Collect(config, Clock::time_point::max());
}

std::shared_ptr<const Report> CollectionEngine::Collect(const std::shared_ptr<const Config>& config,
                                                        Clock::time_point asked_at) {
  Shared& s = *shared_;
  MutexLock lock(s.mu);
  for (;;) {
    // max(): asked now, each time round (the plain Collect).
    const Clock::time_point at = asked_at == Clock::time_point::max() ? Clock::now() : asked_at;
    if (s.last && s.last->config == config && at - s.last->finished_at <= config->scrape_cache_window) {
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
    while (!s.stopping && s.collecting && s.collection == id) s.changed.wait(lock);
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
  sink.Gauge("rdma_healthd_history_series", "Series the engine's history holds for the checks that judge change.")
      .Add({}, static_cast<double>(report.history_series));
  sink.Counter("rdma_healthd_history_series_refused_total",
               "New history series refused because the history was full (history.max_series).")
      .Add({}, static_cast<double>(report.history_refused));

  auto status = sink.Gauge("rdma_check_status",
                           "Verdict of a check for a subject: 1 for the current status, 0 for the others.");
  static constexpr std::array kAll = {Verdict::kOk, Verdict::kWarning, Verdict::kFailed, Verdict::kUnknown};
  for (const VerdictView r : report.verdicts) {
    // A third of a node's series: check and subject are formatted once for the four lines.
    const MetricSink::LabelPrefix subject({{"check", r.check}, {"subject", r.subject}});
    for (Verdict v : kAll) status.Add(subject, {{"status", VerdictName(v)}}, r.verdict == v ? 1 : 0);
  }
  return render_errors;
}

std::string CollectionEngine::ScrapeText(const std::shared_ptr<const Config>& config) {
  std::shared_ptr<const Report> report = Collect(config);
  MetricSink sink;
  (void)Render(*report, sink);
  return sink.Serialize();
}

RDMAHD_REGISTER_CONFIG_SECTION(HistoryPolicy, "history", 95, {{"history.max_series", "`262144`"}},
    [](const ConfigWalker& w, const ConfigNode& v, HistoryPolicy& out) {
      return w.VisitMap(v, {{"max_series", [&](const ConfigNode& f) {
                               return w.ReadU32(f, 1024, 16'777'216, out.max_series);
                             }}});
    });

}  // namespace rdmahd
