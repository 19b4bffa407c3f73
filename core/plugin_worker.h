// PluginWorker: one thread that runs one plug-in's jobs (a collector's collections, the topology
// discovery, a probe's rounds), one job at a time. Plug-in code can hang (a netlink peer that
// never answers, a FIFO read, a driver stuck in an ioctl): whoever posts a job waits for it only
// as long as it chooses, and jobs run one after the other on the one thread, so the plug-in never
// runs twice at once.
//
// Destroying the worker while a job runs does not wait for it: the thread is detached and ends
// after the job. A job must therefore own (by shared_ptr) everything it touches.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/mutex.h"

namespace rdmahd {

class PluginWorker {
 public:
  // `thread_name`: what the thread is called (common/thread_name.h).
  explicit PluginWorker(std::string thread_name);
  ~PluginWorker();
  PluginWorker(const PluginWorker&) = delete;
  PluginWorker& operator=(const PluginWorker&) = delete;

  // Runs `job` on the worker's thread, after the job running now if any; false (and `job`
  // dropped) when another job is already waiting or the worker is being destroyed. The owner
  // must not post while its earlier job is stuck (it would wait behind it). `job` must not throw.
  bool Post(std::function<void()> job);

 private:
  struct State {
    Mutex mu;
    std::condition_variable_any cv;
    std::function<void()> job GUARDED_BY(mu);  // set by Post, cleared when the job returned
    bool running GUARDED_BY(mu) = false;
    bool quit GUARDED_BY(mu) = false;
  };
  static void Loop(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace rdmahd
