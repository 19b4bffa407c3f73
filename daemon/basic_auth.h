// HTTP basic authentication against bcrypt hashes (the exporter-toolkit's basic_auth_users).
//
// BasicAuth holds the users and remembers (user, hash, password) triples that verified once, so
// that a scraper's every-15-second request costs a hash lookup, as exporter-toolkit does.
// PasswordCheckQueue runs the bcrypt of credentials not remembered yet on its own thread, apart
// from the threads that serve remembered ones, so a flood of wrong passwords never delays them.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "common/mutex.h"

namespace rdmahd {

// The highest bcrypt cost a web config may use. The work doubles with each step; at 14 one check
// is still about a second of CPU on a server core (docs/performance.md has the figures), so the
// first scrape after a start, which pays one check, perhaps behind another client's, stays well
// inside Prometheus' 10 s scrape timeout on a loaded node. exporter-toolkit's docs use 10,
// htpasswd -B 5 unless -C says otherwise (its own limit is 17).
inline constexpr int kMaxBcryptCost = 14;

// The cost of a bcrypt hash ("$2y$12$..." -> 12); nullopt when the two digits after the prefix
// are not a number from 4 to 31 (the range bcrypt defines).
std::optional<int> BcryptCost(const std::string& hash);

// Thread-safe.
class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);

  bool enabled() const { return !users_.empty(); }
  // True when this exact (user, password) verified before. Cheap (a SHA-256 of the pair): fit for
  // the HTTP event thread.
  bool Cached(const std::string& user, const std::string& password) const;
  // Full bcrypt check (slow: tens of milliseconds to seconds, by cost); a success is cached.
  bool Verify(const std::string& user, const std::string& password);
  // The bcrypt check alone: remembers nothing, and uses nothing but libcrypt and the immutable
  // users, so a thread may be left in it while the process exits. An unknown user costs a bcrypt
  // too, so that the answer's timing does not tell which users exist. Cannot be interrupted
  // (crypt_rn has no way to stop).
  bool Matches(const std::string& user, const std::string& password) const;
  // Caches (user, password) as verified.
  void Remember(const std::string& user, const std::string& password);

 private:
  std::string CacheKey(const std::string& user, const std::string& password) const;

  const std::map<std::string, std::string> users_;  // user -> bcrypt hash; immutable
  // Bounded: a flood of distinct valid passwords cannot grow memory (the set is cleared when full).
  static constexpr std::size_t kMaxCached = 256;
  mutable Mutex mu_;
  std::unordered_set<std::string> verified_ GUARDED_BY(mu_);
};

// Bounds of PasswordCheckQueue. A client is what the caller says (the HTTP server: the address,
// an IPv6 one by its /64).
struct PasswordCheckLimits {
  // Threads running bcrypt. One: a flood costs at most one core, whatever its size.
  int threads = 1;
  // Checks waiting or running, all clients together; past it new ones are refused.
  std::size_t capacity = 16;
  // Checks one client may have waiting or running; past it its new ones are refused.
  std::size_t per_client = 2;
};

// Runs BasicAuth::Verify for credentials that are not cached, on threads of its own, under
// PasswordCheckLimits:
//  - Submit never blocks: a check past `per_client` or `capacity` is refused at once, so the
//    caller answers at once (429, 503) instead of queueing without bound;
//  - clients take turns: a client has at most one check running, and the next check to run is
//    that of the client that has waited longest since its last one, so one client sending many
//    wrong passwords delays another client's first check by at most one check per waiting client;
//  - Stop never waits for a running bcrypt past its grace: crypt_rn cannot be interrupted, so a
//    thread still in it is detached (abandoned). Such a thread is in BasicAuth::Matches, which
//    touches only libcrypt and the users; what it touches after (its job, the queue's state) is
//    owned jointly by it through a shared_ptr; after Stop it neither caches the result nor calls
//    a callback. So it is safe to leave it running until it ends, or until the process exits.
// Callbacks: for each accepted check, exactly one of `done(verified)` (on a queue thread, when the
// check ends before Stop) or `cancelled()` (on the thread calling Stop, for a check waiting or
// running at Stop) is called, never after Stop returns. They are called under the queue's delivery
// lock: they must be quick and must not call into this queue.
// Thread-safe.
class PasswordCheckQueue {
 public:
  enum class Admission {
    kAccepted,
    kClientBusy,  // the client has `per_client` checks already
    kFull,        // `capacity` checks are waiting or running
    kStopped,
  };

  PasswordCheckQueue(std::shared_ptr<BasicAuth> auth, PasswordCheckLimits limits);
  ~PasswordCheckQueue();  // Stop(kDefaultStopGrace)
  PasswordCheckQueue(const PasswordCheckQueue&) = delete;
  PasswordCheckQueue& operator=(const PasswordCheckQueue&) = delete;

  // On kAccepted exactly one callback will be called (see above); otherwise neither is.
  Admission Submit(const std::string& client, std::string user, std::string password,
                   std::function<void(bool verified)> done, std::function<void()> cancelled);

  // Refuses new checks, calls `cancelled` for every check waiting or running, waits up to `grace`
  // for the threads to leave (an idle one leaves at once), joins those that left and detaches
  // those still in a bcrypt. Idempotent; later calls return at once.
  static constexpr std::chrono::milliseconds kDefaultStopGrace{100};
  void Stop(std::chrono::milliseconds grace = kDefaultStopGrace);

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
  std::vector<std::thread> threads_;
  bool stopped_ = false;  // Stop and the destructor are the owner's, called one at a time
};

}  // namespace rdmahd
