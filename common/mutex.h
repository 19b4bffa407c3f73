// Mutex and MutexLock: std::mutex with clang's thread-safety attributes, so that "this member is
// only touched with that mutex held" is checked by the compiler (scripts/thread_safety.sh runs
// clang -Wthread-safety over every file that uses them, in the unit tier of scripts/test.sh)
// instead of written in a comment. Under GCC the attributes are empty: the same code, unchecked.
//
//   Mutex mu_;
//   int count_ GUARDED_BY(mu_) = 0;
//   void Add() EXCLUDES(mu_) { MutexLock lock(mu_); ++count_; }
//   void AddLocked() REQUIRES(mu_) { ++count_; }
//
// Waiting: std::condition_variable_any over the MutexLock, in a loop the analysis can follow:
//   while (!ready_) cv_.wait(lock);
// (a predicate lambda is a separate function to the analysis, which cannot know that `wait` calls it
// with the mutex held).
#pragma once

#include <mutex>

#if defined(__clang__)
#define RDMAHD_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define RDMAHD_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) RDMAHD_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY RDMAHD_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) RDMAHD_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) RDMAHD_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) RDMAHD_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) RDMAHD_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) RDMAHD_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) RDMAHD_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) RDMAHD_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) RDMAHD_THREAD_ANNOTATION(assert_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS RDMAHD_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace rdmahd {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the caller holds this mutex where it cannot see it taken (an object
  // that holds it for its lifetime, as History::Batch does). Checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope. lock()/unlock() let std::condition_variable_any wait on it (it releases
// and retakes the mutex inside wait) and let a scope give the mutex up for a while.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }
  void unlock() RELEASE() {
    mu_.unlock();
    held_ = false;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

}  // namespace rdmahd
