#include "daemon/basic_auth.h"

#include <crypt.h>
#include <gnutls/crypto.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>

#include "common/mutex.h"
#include "common/thread_name.h"

namespace rdmahd {
namespace {

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool BcryptMatches(const std::string& password, const std::string& hash) {
  // crypt_data is ~32 KiB: on the heap, and zeroed as crypt_rn wants.
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof *data);
  return out != nullptr && out[0] != '*' && ConstantTimeEqual(out, hash);
}

}  // namespace

std::optional<int> BcryptCost(const std::string& hash) {
  if (hash.size() < 7 || hash[0] != '$' || hash[1] != '2' || hash[3] != '$' || hash[6] != '$') return std::nullopt;
  if (hash[4] < '0' || hash[4] > '9' || hash[5] < '0' || hash[5] > '9') return std::nullopt;
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) return std::nullopt;
  return cost;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

std::string BasicAuth::CacheKey(const std::string& user, const std::string& password) const {
  // The hash takes part so a changed hash (another web config) never matches an old entry, and
  // passwords are not kept in clear.
  auto it = users_.find(user);
  std::string material = user + '\0' + (it == users_.end() ? "" : it->second) + '\0' + password;
  unsigned char digest[32];
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, material.data(), material.size(), digest) != 0) return {};
  return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

bool BasicAuth::Cached(const std::string& user, const std::string& password) const {
  if (users_.find(user) == users_.end()) return false;
  std::string key = CacheKey(user, password);
  if (key.empty()) return false;
  MutexLock lock(mu_);
  return verified_.count(key) != 0;
}

bool BasicAuth::Matches(const std::string& user, const std::string& password) const {
  auto it = users_.find(user);
  if (it == users_.end()) {
    if (!users_.empty()) (void)BcryptMatches(password, users_.begin()->second);  // same cost as a known user
    return false;
  }
  return BcryptMatches(password, it->second);
}

void BasicAuth::Remember(const std::string& user, const std::string& password) {
  std::string key = CacheKey(user, password);
  if (key.empty()) return;
  MutexLock lock(mu_);
  if (verified_.size() >= kMaxCached) verified_.clear();
  verified_.insert(std::move(key));
}

bool BasicAuth::Verify(const std::string& user, const std::string& password) {
  if (!Matches(user, password)) return false;
  Remember(user, password);
  return true;
}

// Everything a check thread uses, owned jointly by the queue and its threads, so that a thread
// abandoned in a bcrypt at Stop still owns what it touches.
struct PasswordCheckQueue::Shared {
  struct Job {
    std::string user, password;  // immutable once queued
    // Guarded by deliver_mu: whoever sets `answered` first calls its callback; both are dropped then.
    std::function<void(bool)> done;
    std::function<void()> cancelled;
    bool answered = false;
  };
  struct Client {
    std::deque<std::shared_ptr<Job>> waiting;
    bool running = false;
  };

  Shared(std::shared_ptr<BasicAuth> a, PasswordCheckLimits l) : auth(std::move(a)), limits(l) {}

  void RunChecks(std::size_t thread_index);
  // Calls the job's callback unless it was answered already; deliver_mu must be held.
  static void Answer(Job& job, std::optional<bool> verified) {
    if (!job.answered) {
      job.answered = true;
      if (verified) {
        job.done(*verified);
      } else {
        job.cancelled();
      }
    }
    job.done = nullptr;
    job.cancelled = nullptr;
  }

  const std::shared_ptr<BasicAuth> auth;
  const PasswordCheckLimits limits;

  // Lock order: deliver_mu before mu.
  Mutex deliver_mu;
  bool stopped GUARDED_BY(deliver_mu) = false;  // no callback is called once it is set

  Mutex mu;
  std::condition_variable_any work_cv;  // a turn or stopping
  std::condition_variable_any exit_cv;  // a thread left
  std::map<std::string, Client> clients GUARDED_BY(mu);  // clients with a check
  // Clients with a check waiting and none running, longest waiting first.
  std::deque<std::string> turns GUARDED_BY(mu);
  std::vector<std::shared_ptr<Job>> running GUARDED_BY(mu);
  std::size_t checks GUARDED_BY(mu) = 0;  // waiting + running
  bool stopping GUARDED_BY(mu) = false;
  std::vector<bool> exited GUARDED_BY(mu);  // one per thread
};

void PasswordCheckQueue::Shared::RunChecks(std::size_t thread_index) {
  MutexLock lock(mu);
  for (;;) {
    while (!stopping && turns.empty()) work_cv.wait(lock);
    if (stopping) break;
    const std::string client = std::move(turns.front());
    turns.pop_front();
    Client& c = clients[client];
    std::shared_ptr<Job> job = std::move(c.waiting.front());
    c.waiting.pop_front();
    c.running = true;
    running.push_back(job);
    lock.unlock();

    const bool verified = auth->Matches(job->user, job->password);
    {
      MutexLock deliver(deliver_mu);
      if (!stopped) {
        if (verified) auth->Remember(job->user, job->password);
        Answer(*job, verified);
      }
    }

    lock.lock();
    if (stopping) break;  // Stop has answered and dropped every check
    running.erase(std::find(running.begin(), running.end(), job));
    --checks;
    Client& after = clients[client];
    after.running = false;
    if (!after.waiting.empty()) {
      turns.push_back(client);
      work_cv.notify_one();
    } else {
      clients.erase(client);
    }
  }
  exited[thread_index] = true;
  exit_cv.notify_all();
}

PasswordCheckQueue::PasswordCheckQueue(std::shared_ptr<BasicAuth> auth, PasswordCheckLimits limits)
    : shared_(std::make_shared<Shared>(std::move(auth), limits)) {
  const std::size_t n = static_cast<std::size_t>(std::max(1, limits.threads));
  shared_->exited.assign(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    threads_.emplace_back([shared = shared_, i] {
      NameThisThread("http-auth");
      shared->RunChecks(i);
    });
  }
}

PasswordCheckQueue::~PasswordCheckQueue() { Stop(); }

PasswordCheckQueue::Admission PasswordCheckQueue::Submit(const std::string& client, std::string user,
                                                         std::string password,
                                                         std::function<void(bool verified)> done,
                                                         std::function<void()> cancelled) {
  MutexLock lock(shared_->mu);
  if (shared_->stopping) return Admission::kStopped;
  auto it = shared_->clients.find(client);
  const std::size_t mine =
      it == shared_->clients.end() ? 0 : it->second.waiting.size() + (it->second.running ? 1 : 0);
  if (mine >= shared_->limits.per_client) return Admission::kClientBusy;
  if (shared_->checks >= shared_->limits.capacity) return Admission::kFull;
  auto job = std::make_shared<Shared::Job>();
  job->user = std::move(user);
  job->password = std::move(password);
  job->done = std::move(done);
  job->cancelled = std::move(cancelled);
  Shared::Client& c = shared_->clients[client];
  c.waiting.push_back(std::move(job));
  ++shared_->checks;
  if (!c.running && c.waiting.size() == 1) {
    shared_->turns.push_back(client);
    shared_->work_cv.notify_one();
  }
  return Admission::kAccepted;
}

void PasswordCheckQueue::Stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  {
    MutexLock deliver(shared_->deliver_mu);
    shared_->stopped = true;
    std::vector<std::shared_ptr<Shared::Job>> unanswered;
    {
      MutexLock lock(shared_->mu);
      shared_->stopping = true;
      for (auto& [client, c] : shared_->clients) {
        for (auto& job : c.waiting) unanswered.push_back(std::move(job));
      }
      for (auto& job : shared_->running) unanswered.push_back(job);
      shared_->clients.clear();
      shared_->turns.clear();
      shared_->running.clear();
      shared_->checks = 0;
    }
    shared_->work_cv.notify_all();
    for (auto& job : unanswered) Shared::Answer(*job, std::nullopt);
  }
  {
    const auto deadline = std::chrono::steady_clock::now() + grace;
    MutexLock lock(shared_->mu);
    while (!std::all_of(shared_->exited.begin(), shared_->exited.end(), [](bool e) { return e; })) {
      if (shared_->exit_cv.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
  }
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    bool left;
    {
      MutexLock lock(shared_->mu);
      left = shared_->exited[i];
    }
    if (left) {
      threads_[i].join();
    } else {
      threads_[i].detach();  // in a bcrypt: see the header
    }
  }
}

}  // namespace rdmahd
