#include "collectors/collection_engine.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <set>

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;

// As the config spells a duration: "5s", "1500ms".
std::string FormatDuration(std::chrono::milliseconds d) {
  if (d.count() > 0 && d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

// The message of the exception being handled. Call only inside a catch block.
std::string CurrentExceptionMessage() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

// One check throwing costs its own verdicts only: they are replaced by one "unknown" saying why.
void RunChecks(const std::vector<std::unique_ptr<Check>>& checks, const Snapshot& snapshot,
               const Config& config, std::vector<CheckResult>& out) {
  for (const auto& check : checks) {
    const std::size_t before = out.size();
    try {
      check->Evaluate(snapshot, config, out);
    } catch (...) {
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
      out.push_back({std::string(check->Name()), "node", Verdict::kUnknown,
                     "the check failed: " + CurrentExceptionMessage(),
                     "a bug in rdma-healthd: report it with this message"});
    }
  }
}

}  // namespace

std::vector<std::string> Report::Render(const std::vector<const Collector*>& collectors,
                                        MetricSink& sink) const {
  std::vector<std::string> render_errors;
  std::set<std::string_view> render_failed;
  for (const Collector* c : collectors) {
    try {
      c->Render(snapshot, sink);
    } catch (...) {
      render_failed.insert(c->Name());
      render_errors.push_back("collector " + std::string(c->Name()) +
                              " failed to render its metrics: " + CurrentExceptionMessage());
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
    auto t = collection_timeouts.find(o.collector);
    timeouts.Add({{"collector", o.collector}}, t == collection_timeouts.end() ? 0 : static_cast<double>(t->second));
  }

  auto status = sink.Gauge("rdma_check_status",
                           "Verdict of a check for a subject: 1 for the current status, 0 for the others.");
  static constexpr std::array kAll = {Verdict::kOk, Verdict::kWarning, Verdict::kFailed,
                                      Verdict::kUnknown};
  for (const CheckResult& r : verdicts) {
    for (Verdict v : kAll) {
      status.Add({{"check", r.check}, {"subject", r.subject}, {"status", VerdictName(v)}},
                 r.verdict == v ? 1 : 0);
    }
  }
  return render_errors;
}

// The worker and the callers meet here. A job is one collection: posted by a caller (state
// kRunning), run by the worker, ended by the worker (kIdle) or given up on by a caller at its
// deadline (kStuck, until the worker returns from the collector it is stuck in).
struct CollectionEngine::Shared {
  enum class State { kIdle, kRunning, kStuck };

  Shared(NodeFs f, std::vector<std::unique_ptr<Collector>> c, std::vector<std::unique_ptr<Check>> k)
      : fs(std::move(f)), collectors(std::move(c)), checks(std::move(k)) {}

  // The worker thread's body: runs each posted job until the engine is destroyed.
  void Work();
  // Runs the collectors and checks of job `id`. nullptr when the job was given up on before its
  // end (its result would be stale). Never throws.
  std::shared_ptr<const Report> RunJob(const std::shared_ptr<const Config>& config, std::uint64_t id);
  // A report of `done` (the finished collectors' facts and outcomes), the others failed: the
  // running one with `running_error`, the rest with "not run: <cause>". Needs mu held.
  std::shared_ptr<const Report> Partial(const Snapshot& done, const std::shared_ptr<const Config>& config,
                                        const std::string& running_error, const std::string& cause) const;

  const NodeFs fs;
  const std::vector<std::unique_ptr<Collector>> collectors;
  const std::vector<std::unique_ptr<Check>> checks;

  mutable std::mutex mu;
  std::condition_variable job_posted;  // the worker waits for a job (or the engine's end)
  std::condition_variable job_ended;   // callers wait for their job's end (or stuck, or Stop)
  // Everything below is guarded by mu.
  State state = State::kIdle;
  bool stopping = false;  // Stop() was called
  bool detached = false;  // the engine is gone: the worker leaves once idle
  std::uint64_t job = 0;  // id of the last job posted
  std::shared_ptr<const Config> job_config;
  Clock::time_point job_deadline{};
  Snapshot progress;      // what the collectors of `job` that finished produced
  std::string running;    // the collector of `job` running now; empty between collectors
  Clock::time_point running_since{};
  std::shared_ptr<const Report> last;  // the last report handed out
  std::uint64_t last_job = 0;          // the job `last` belongs to
  std::map<std::string, std::uint64_t> timeouts;
};

void CollectionEngine::Shared::Work() {
  std::unique_lock lock(mu);
  std::uint64_t served = 0;
  for (;;) {
    job_posted.wait(lock, [&] { return detached || job != served; });
    if (detached) return;
    served = job;
    std::shared_ptr<const Config> config = job_config;
    lock.unlock();
    std::shared_ptr<const Report> report = RunJob(config, served);
    lock.lock();
    if (report && state == State::kRunning && job == served) {
      last = std::move(report);
      last_job = served;
    }
    state = State::kIdle;
    running.clear();
    job_ended.notify_all();
  }
}

std::shared_ptr<const Report> CollectionEngine::Shared::RunJob(const std::shared_ptr<const Config>& config,
                                                               std::uint64_t id) {
  Snapshot working;
  working.taken_at = std::chrono::system_clock::now();
  CollectContext ctx{fs, *config};
  try {
    for (const auto& c : collectors) {
      std::string name(c->Name());
      if (!config->CollectorEnabled(name)) continue;
      {
        std::lock_guard lock(mu);
        if (state != State::kRunning || job != id) return nullptr;  // given up on: stop here
        running = name;
        running_since = Clock::now();
      }
      CollectorOutcome outcome;
      outcome.collector = name;
      Status st;
      try {
        st = c->Collect(ctx, working, outcome);
      } catch (...) {
        st = Error{"collector " + name + " failed: " + CurrentExceptionMessage()};
        // What it stored before throwing is not trusted: back to the facts before it ran.
        std::lock_guard lock(mu);
        working = progress;
      }
      outcome.duration = Clock::now() - running_since;  // only this thread writes running_since
      outcome.success = st.ok();
      if (!st.ok()) outcome.errors.push_back(st.error().message);
      working.outcomes.push_back(std::move(outcome));
      std::lock_guard lock(mu);
      progress = working;  // copies pointers to the (immutable) facts, not the facts
      running.clear();
    }
    auto report = std::make_shared<Report>();
    report->config = config;
    report->snapshot = std::move(working);
    RunChecks(checks, report->snapshot, *config, report->verdicts);
    report->finished_at = Clock::now();
    std::lock_guard lock(mu);
    report->collection_timeouts = timeouts;
    return report;
  } catch (...) {
    // Collectors' and checks' own exceptions were handled above; this is the engine's (an
    // allocation failure): the job ends with what was collected, never with state left set.
    std::string error = "the collection failed: " + CurrentExceptionMessage();
    std::lock_guard lock(mu);
    running.clear();
    return Partial(progress, config, error, error);
  }
}

std::shared_ptr<const Report> CollectionEngine::Shared::Partial(const Snapshot& done,
                                                                const std::shared_ptr<const Config>& config,
                                                                const std::string& running_error,
                                                                const std::string& cause) const {
  auto report = std::make_shared<Report>();
  report->config = config;
  report->snapshot = done;
  const Clock::time_point now = Clock::now();
  if (report->snapshot.taken_at == std::chrono::system_clock::time_point{}) {
    report->snapshot.taken_at = std::chrono::system_clock::now();
  }
  for (const auto& c : collectors) {
    std::string name(c->Name());
    if (!config->CollectorEnabled(name)) continue;
    const auto& outcomes = report->snapshot.outcomes;
    if (std::any_of(outcomes.begin(), outcomes.end(), [&](const auto& o) { return o.collector == name; })) {
      continue;
    }
    CollectorOutcome o;
    o.collector = name;
    if (name == running) {
      o.duration = now - running_since;
      o.errors.push_back(running_error);
    } else {
      o.errors.push_back("not run: " + cause);
    }
    report->snapshot.outcomes.push_back(std::move(o));
  }
  RunChecks(checks, report->snapshot, *config, report->verdicts);
  report->finished_at = now;
  report->collection_timeouts = timeouts;
  return report;
}

CollectionEngine::CollectionEngine(NodeFs fs, std::vector<std::string> only_collectors)
    : CollectionEngine(std::move(fs), [&] {
        std::vector<std::unique_ptr<Collector>> out;
        for (const auto& reg : RegisteredCollectors()) {
          if (only_collectors.empty() ||
              std::find(only_collectors.begin(), only_collectors.end(), reg.name) != only_collectors.end()) {
            out.push_back(reg.factory());
          }
        }
        return out;
      }(), [] {
        std::vector<std::unique_ptr<Check>> out;
        for (const auto& reg : RegisteredChecks()) out.push_back(reg.factory());
        return out;
      }()) {}

CollectionEngine::CollectionEngine(NodeFs fs, std::vector<std::unique_ptr<Collector>> collectors,
                                   std::vector<std::unique_ptr<Check>> checks)
    : shared_(std::make_shared<Shared>(std::move(fs), std::move(collectors), std::move(checks))),
      // The thread owns a reference: a worker stuck in a collector keeps what it uses alive.
      worker_([shared = shared_] { shared->Work(); }) {}

CollectionEngine::~CollectionEngine() {
  bool busy;
  {
    std::lock_guard lock(shared_->mu);
    shared_->detached = true;
    shared_->stopping = true;
    busy = shared_->state != Shared::State::kIdle;
    shared_->job_posted.notify_all();
    shared_->job_ended.notify_all();
  }
  // An idle worker leaves at once; a busy one may never return from its collector.
  if (busy) {
    worker_.detach();
  } else {
    worker_.join();
  }
}

std::vector<const Collector*> CollectionEngine::collectors() const {
  std::vector<const Collector*> out;
  for (const auto& c : shared_->collectors) out.push_back(c.get());
  return out;
}

const NodeFs& CollectionEngine::fs() const { return shared_->fs; }

std::string CollectionEngine::busy_collector() const {
  std::lock_guard lock(shared_->mu);
  if (shared_->state == Shared::State::kIdle) return "";
  return shared_->running.empty() ? "(between collectors)" : shared_->running;
}

bool CollectionEngine::stuck() const {
  std::lock_guard lock(shared_->mu);
  return shared_->state == Shared::State::kStuck;
}

void CollectionEngine::Stop() {
  std::lock_guard lock(shared_->mu);
  shared_->stopping = true;
  shared_->job_ended.notify_all();
}

std::shared_ptr<const Report> CollectionEngine::Collect(const std::shared_ptr<const Config>& config) {
  using State = Shared::State;
  Shared& s = *shared_;
  std::unique_lock lock(s.mu);
  for (;;) {
    if (s.last && s.last->config == config &&
        Clock::now() - s.last->finished_at <= config->scrape_cache_window) {
      return s.last;
    }
    if (s.stopping) {
      if (s.last) return s.last;
      const bool idle = s.state == State::kIdle;
      return s.Partial(idle ? Snapshot{} : s.progress, idle ? config : s.job_config,
                       "collector " + s.running + " did not finish before shutdown", "shutting down");
    }
    // The worker is still in the collector that missed the last deadline: answer with that
    // report rather than wait another deadline behind it.
    if (s.state == State::kStuck) return s.last;
    if (s.state == State::kIdle) {
      s.state = State::kRunning;
      ++s.job;
      s.job_config = config;
      s.job_deadline = Clock::now() + config->collection_timeout;
      s.progress = Snapshot{};
      s.running.clear();
      s.job_posted.notify_one();
    }
    // Wait for the job in progress, ours or another caller's.
    const std::uint64_t job = s.job;
    const Clock::time_point deadline = s.job_deadline;
    const bool ended = s.job_ended.wait_until(
        lock, deadline, [&] { return s.stopping || s.state != State::kRunning || s.job != job; });
    if (!ended) {
      // The first caller to see the deadline pass gives the job up.
      s.state = State::kStuck;
      const std::string within = "within " + FormatDuration(s.job_config->collection_timeout);
      if (!s.running.empty()) ++s.timeouts[s.running];
      const std::string cause = s.running.empty()
                                    ? "the collection did not finish " + within
                                    : "collector " + s.running + " did not finish " + within;
      s.last = s.Partial(s.progress, s.job_config, cause, cause);
      s.last_job = job;
      s.job_ended.notify_all();
      return s.last;
    }
    // Ended: callers of the same config share its report whatever the cache window. Otherwise
    // (stuck, stopping, another config) the loop decides.
    if (!s.stopping && s.state == State::kIdle && s.last_job == job && s.last && s.last->config == config) {
      return s.last;
    }
  }
}

std::string CollectionEngine::ScrapeText(const std::shared_ptr<const Config>& config) {
  std::shared_ptr<const Report> report = Collect(config);
  MetricSink sink;
  (void)report->Render(collectors(), sink);
  return sink.Serialize();
}

}  // namespace rdmahd
