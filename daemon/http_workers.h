// WorkerPool: the HTTP server's threads for jobs of routes that may be slow (RouteKind::kScrape and
// kPage, http_server.h), run while their connection is suspended so the event thread never waits.
// A job runs with cancelled=true when the pool stops before it
// started, so that its suspended connection is still resumed (libmicrohttpd cannot stop with
// suspended connections). Scrape jobs go first; page jobs (/, /api/*) run at most `page_limit` at
// once, so with more threads than that a scrape never waits behind a page, however many are
// queued. Post and Stop may be called from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace rdmahd {

class WorkerPool {
 public:
  using Job = std::function<void(bool cancelled)>;

  WorkerPool(int threads, int page_limit);
  ~WorkerPool() { Stop(); }

  // Queues `job` (a page job when `page`), or runs it at once, cancelled, when the pool stops.
  void Post(bool page, Job job);
  // Jobs running finish; queued ones run cancelled; then the threads are joined.
  void Stop();

 private:
  bool PageMayStart() const REQUIRES(mu_) { return !page_jobs_.empty() && (stopping_ || pages_running_ < page_limit_); }

  void Loop();

  const int page_limit_;
  Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Job> scrape_jobs_ GUARDED_BY(mu_);
  std::deque<Job> page_jobs_ GUARDED_BY(mu_);
  int pages_running_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace rdmahd
