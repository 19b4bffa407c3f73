#include "core/plugin_worker.h"

#include <utility>

#include "common/thread_name.h"

namespace rdmahd {

PluginWorker::PluginWorker(std::string thread_name)
    : state_(std::make_shared<State>()), thread_([state = state_, name = std::move(thread_name)] {
        NameThisThread(name);
        Loop(state);
      }) {}

PluginWorker::~PluginWorker() {
  bool busy;
  {
    MutexLock lock(state_->mu);
    state_->quit = true;
    busy = state_->running || state_->job;
    state_->cv.notify_all();
  }
  // The last owner of what a job used may drop it on the worker's own thread, destroying this
  // worker there: that thread cannot join itself. A busy worker may never return from its job.
  if (busy || std::this_thread::get_id() == thread_.get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

bool PluginWorker::Post(std::function<void()> job) {
  MutexLock lock(state_->mu);
  // A job still returning (its owner already saw it finish) is no obstacle: the thread runs the
  // next one after it. Owners track whether their plug-in is stuck themselves.
  if (state_->job || state_->quit) return false;
  state_->job = std::move(job);
  state_->cv.notify_all();
  return true;
}

void PluginWorker::Loop(const std::shared_ptr<State>& state) {
  MutexLock lock(state->mu);
  for (;;) {
    while (!state->quit && !state->job) state->cv.wait(lock);
    if (!state->job) return;  // quit and nothing left to run
    std::function<void()> job = std::move(state->job);
    state->job = nullptr;
    state->running = true;
    lock.unlock();
    job();
    job = nullptr;  // drop what the job owned before reporting idle
    lock.lock();
    state->running = false;
    if (state->quit) return;
  }
}

}  // namespace rdmahd
