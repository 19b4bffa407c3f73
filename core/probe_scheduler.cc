#include "core/probe_scheduler.h"

#include <condition_variable>
#include <optional>
#include <thread>

#include "common/mutex.h"
#include "common/thread_name.h"
#include "core/exceptions.h"

namespace rdmahd {

// Everything one probe's thread uses; shared with the thread so a round may outlive the scheduler.
struct ProbeScheduler::Slot {
  std::string name;
  std::shared_ptr<Probe> probe;
  std::shared_ptr<ProbeBoard> board;
  NodeFs fs;
  std::atomic<bool> stopping{false};

  mutable Mutex mu;
  std::condition_variable_any cv;
  std::shared_ptr<const Config> config GUARDED_BY(mu);
  bool in_round GUARDED_BY(mu) = false;
  ProbeRoundOutcome outcome GUARDED_BY(mu);
  std::thread thread;

  Slot(std::string n, std::shared_ptr<Probe> p, std::shared_ptr<ProbeBoard> b, NodeFs f)
      : name(std::move(n)), probe(std::move(p)), board(std::move(b)), fs(std::move(f)) {
    outcome.probe = name;
  }

  static void Loop(const std::shared_ptr<Slot>& self) {
    using Clock = std::chrono::steady_clock;
    MutexLock lock(self->mu);
    for (;;) {
      while (!self->stopping.load() && !(self->config && self->config->ProbeEnabled(self->name))) {
        self->cv.wait(lock);
      }
      if (self->stopping) return;
      std::shared_ptr<const Config> config = self->config;
      self->in_round = true;
      lock.unlock();
      const Clock::time_point start = Clock::now();
      std::optional<std::string> error;
      std::chrono::milliseconds interval{1000};
      try {
        interval = self->probe->Interval(*config);
        self->probe->RunRound(ProbeContext{self->fs, *config, self->stopping}, *self->board);
      } catch (...) {
        error = CurrentExceptionMessage();
      }
      const Clock::time_point end = Clock::now();
      lock.lock();
      self->in_round = false;
      ProbeRoundOutcome& o = self->outcome;
      ++o.rounds;
      o.last_failed = error.has_value();
      o.last_duration = end - start;
      if (error) {
        ++o.failed;
        o.last_error = std::move(*error);
      }
      // Wait out the interval; a new config or a stop ends the wait early.
      const std::shared_ptr<const Config> seen = self->config;
      while (!self->stopping.load() && self->config == seen) {
        if (self->cv.wait_until(lock, start + interval) == std::cv_status::timeout) break;
      }
    }
  }
};

ProbeScheduler::ProbeScheduler(NodeFs fs, std::vector<Instance<Probe>> probes) {
  for (auto& p : probes) {
    std::shared_ptr<Probe> probe(std::move(p.impl));
    views_.emplace_back(p.name, probe);
    slots_.push_back(std::make_shared<Slot>(p.name, std::move(probe), std::make_shared<ProbeBoard>(), fs));
  }
}

ProbeScheduler::~ProbeScheduler() {
  Stop();
  for (auto& slot : slots_) {
    if (!slot->thread.joinable()) continue;
    bool in_round;
    {
      MutexLock lock(slot->mu);
      in_round = slot->in_round;
    }
    if (in_round) {
      slot->thread.detach();
    } else {
      slot->thread.join();
    }
  }
}

void ProbeScheduler::Configure(std::shared_ptr<const Config> config) {
  for (auto& slot : slots_) {
    MutexLock lock(slot->mu);
    slot->config = config;
    if (!slot->thread.joinable() && !slot->stopping) {
      slot->thread = std::thread([s = slot] {
        NameThisThread("probe-" + s->name);
        Slot::Loop(s);
      });
    }
    slot->cv.notify_all();
  }
}

void ProbeScheduler::Stop() {
  for (auto& slot : slots_) {
    MutexLock lock(slot->mu);
    slot->stopping = true;
    slot->cv.notify_all();
  }
}

void ProbeScheduler::CopyInto(Snapshot& snapshot, const Config& config) const {
  ProbeRoundFacts rounds;
  for (const auto& slot : slots_) {
    if (!config.ProbeEnabled(slot->name)) continue;
    slot->board->CopyInto(snapshot);
    if (!slot->probe->HasWork(config)) continue;
    MutexLock lock(slot->mu);
    if (slot->outcome.rounds > 0) rounds.probes.push_back(slot->outcome);
  }
  snapshot.Put(std::move(rounds));
}

std::string ProbeScheduler::busy() const {
  std::string out;
  for (const auto& slot : slots_) {
    MutexLock lock(slot->mu);
    if (!slot->in_round) continue;
    if (!out.empty()) out += ", ";
    out += slot->name;
  }
  return out;
}

ProbeScheduler::Counts ProbeScheduler::counts(const std::string& probe) const {
  for (const auto& slot : slots_) {
    if (slot->name != probe) continue;
    MutexLock lock(slot->mu);
    return slot->outcome;
  }
  return {};
}

}  // namespace rdmahd
