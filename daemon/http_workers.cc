#include "daemon/http_workers.h"

#include <utility>

#include "common/thread_name.h"

namespace rdmahd {

WorkerPool::WorkerPool(int threads, int page_limit) : page_limit_(page_limit) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      NameThisThread("http-worker");
      Loop();
    });
  }
}

void WorkerPool::Post(bool page, Job job) {
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      (page ? page_jobs_ : scrape_jobs_).push_back(std::move(job));
      // Every thread may be waiting for a scrape while the page lane is full: wake them all for
      // a scrape, one for a page (a thread that cannot take it goes back to sleep).
      if (page) {
        cv_.notify_one();
      } else {
        cv_.notify_all();
      }
      return;
    }
  }
  job(true);
}

void WorkerPool::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}


void WorkerPool::Loop() {
  MutexLock lock(mu_);
  for (;;) {
    while (!stopping_ && scrape_jobs_.empty() && !PageMayStart()) cv_.wait(lock);
    const bool page = scrape_jobs_.empty();
    if (page && page_jobs_.empty()) return;  // stopping, nothing left
    std::deque<Job>& jobs = page ? page_jobs_ : scrape_jobs_;
    Job job = std::move(jobs.front());
    jobs.pop_front();
    bool cancelled = stopping_;
    if (page) ++pages_running_;
    lock.unlock();
    job(cancelled);
    job = nullptr;  // what the job holds goes before the lock is taken again
    lock.lock();
    if (page) {
      --pages_running_;
      cv_.notify_all();  // a page may start now
    }
  }
}

}  // namespace rdmahd
