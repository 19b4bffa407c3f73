// BlockingCollector: a collector stuck the way a hung netlink peer or a blocking read would leave
// one, until the test opens its Gate. For the engine's deadline, the daemon's shutdown and
// `check`'s exit code. The Gate is shared, so it outlives a collector the engine's worker frees late.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "core/collector.h"

namespace rdmahd::testing {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;                 // runs started
  std::chrono::steady_clock::time_point entered_at{};  // when the last run started
  int inside = 0, max_inside = 0;  // runs in progress; the engine must keep this at most 1
  bool collector_destroyed = false;

  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  // Waits until pred() (called with mu held) or the timeout; returns pred().
  template <class Pred>
  bool WaitFor(Pred pred, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, pred);
  }
};

// Facts the BlockingCollector stores when released: the number of its run.
struct BlockingFacts {
  int run = 0;
};

class BlockingCollector : public Collector {
 public:
  explicit BlockingCollector(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  ~BlockingCollector() override {
    std::lock_guard lock(gate_->mu);
    gate_->collector_destroyed = true;
    gate_->cv.notify_all();
  }
  Status Collect(const CollectContext&, Snapshot& snapshot, CollectorOutcome&) override {
    std::unique_lock lock(gate_->mu);
    const int run = ++gate_->entered;
    gate_->entered_at = std::chrono::steady_clock::now();
    gate_->max_inside = std::max(gate_->max_inside, ++gate_->inside);
    gate_->cv.notify_all();
    gate_->cv.wait(lock, [&] { return gate_->open; });
    --gate_->inside;
    snapshot.Put(BlockingFacts{run});
    return Status::Ok();
  }
  void Render(const Snapshot&, MetricSink&) const override {}

 private:
  std::shared_ptr<Gate> gate_;
};

}  // namespace rdmahd::testing
