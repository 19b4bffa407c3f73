// TextBufferPool: lends out the buffer of a rendered /metrics text again once nobody holds it.
//
// A text is shared (std::shared_ptr) between the daemon's cache and every HTTP response still
// sending it, possibly on other threads. When its last holder lets go, the deleter hands the buffer
// back here under the pool's mutex, and the next render takes it under the same mutex: that mutex
// is what orders the last reader's reads before the next writer's writes. (Checking
// shared_ptr::use_count() instead orders nothing: it is a relaxed load, and ThreadSanitizer
// rightly reports the reuse as a race.)
#pragma once

#include <memory>
#include <string>

#include "common/mutex.h"

namespace rdmahd {

class TextBufferPool : public std::enable_shared_from_this<TextBufferPool> {
 public:
  static std::shared_ptr<TextBufferPool> Create() { return std::shared_ptr<TextBufferPool>(new TextBufferPool()); }

  // The buffer most recently handed back (its capacity kept), or a new one.
  std::unique_ptr<std::string> Take() {
    MutexLock lock(mu_);
    if (spare_) return std::move(spare_);
    return std::make_unique<std::string>();
  }

  // Frees the spare buffer, if any: for a while no text will be rendered (a buffer handed back
  // later is kept again).
  void DropSpare() {
    std::unique_ptr<std::string> spare;
    MutexLock lock(mu_);
    spare.swap(spare_);
  }

  // Shares `text`; its buffer comes back to this pool when the last holder lets go. The pool lives
  // as long as any text it shared.
  std::shared_ptr<const std::string> Share(std::unique_ptr<std::string> text) {
    return std::shared_ptr<const std::string>(
        text.release(), [pool = shared_from_this()](const std::string* p) { pool->GiveBack(p); });
  }

 private:
  TextBufferPool() = default;

  // One spare is enough (a text is rendered only when the cached one is stale); the newest is
  // kept, the older freed.
  void GiveBack(const std::string* p) {
    std::unique_ptr<std::string> buffer(const_cast<std::string*>(p));
    MutexLock lock(mu_);
    spare_.swap(buffer);
  }

  Mutex mu_;
  std::unique_ptr<std::string> spare_ GUARDED_BY(mu_);
};

}  // namespace rdmahd
