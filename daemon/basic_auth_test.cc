#include "daemon/basic_auth.h"

#include <crypt.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string Bcrypt(const std::string& password, int cost) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  const char* h = crypt_rn(password.c_str(), salt, &data, sizeof data);
  return h ? h : "";
}

// A hash of `cost` no password matches, made without paying for it; a check against it still
// pays the full cost.
std::string NoPasswordMatches(int cost) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, salt, sizeof salt), nullptr);
  return std::string(salt) + std::string(31, '.');
}

// What the callbacks of a PasswordCheckQueue reported, in order ("alice:ok", "bob:no", "x:cancelled").
class Outcomes {
 public:
  std::function<void(bool)> Done(const std::string& name) {
    return [this, name](bool verified) { Add(name + (verified ? ":ok" : ":no")); };
  }
  std::function<void()> Cancelled(const std::string& name) {
    return [this, name] { Add(name + ":cancelled"); };
  }
  // Waits until `n` outcomes are in (or `timeout`); returns them.
  std::vector<std::string> WaitFor(std::size_t n, milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return list_.size() >= n; });
    return list_;
  }
  std::vector<std::string> Now() {
    std::lock_guard lock(mu_);
    return list_;
  }

 private:
  void Add(std::string s) {
    std::lock_guard lock(mu_);
    list_.push_back(std::move(s));
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> list_;
};

TEST(BcryptCostTest, ReadsTheCostOfAHash) {
  EXPECT_EQ(BcryptCost(NoPasswordMatches(12)), 12);
  EXPECT_EQ(BcryptCost("$2y$04$" + std::string(53, '.')), 4);
  EXPECT_EQ(BcryptCost("$2a$31$" + std::string(53, '.')), 31);
  for (const char* bad : {"$2y$03$x", "$2y$32$x", "$2y$1a$x", "$2y$10x", "$2y$", "", "$1$10$x"}) {
    EXPECT_FALSE(BcryptCost(bad)) << bad;
  }
}

TEST(PasswordCheckQueueTest, VerifiesOffTheCallersThreadAndRemembersSuccesses) {
  auto auth = std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"alice", Bcrypt("pw", 4)}});
  PasswordCheckQueue queue(auth, {});
  Outcomes out;
  std::atomic<std::thread::id> done_on{};
  EXPECT_EQ(queue.Submit("a", "alice", "pw",
                         [&](bool ok) {
                           done_on = std::this_thread::get_id();
                           out.Done("right")(ok);
                         },
                         out.Cancelled("right")),
            PasswordCheckQueue::Admission::kAccepted);
  ASSERT_EQ(out.WaitFor(1, milliseconds(5000)), std::vector<std::string>{"right:ok"});
  EXPECT_NE(done_on.load(), std::this_thread::get_id());
  EXPECT_TRUE(auth->Cached("alice", "pw"));
  queue.Submit("a", "alice", "wrong", out.Done("wrong"), out.Cancelled("wrong"));
  EXPECT_EQ(out.WaitFor(2, milliseconds(5000)), (std::vector<std::string>{"right:ok", "wrong:no"}));
  EXPECT_FALSE(auth->Cached("alice", "wrong"));
}

// Submit never blocks: past a client's share or the capacity it refuses at once.
TEST(PasswordCheckQueueTest, RefusesPastAClientsShareAndPastCapacity) {
  auto auth = std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"alice", NoPasswordMatches(16)}});
  PasswordCheckQueue queue(auth, {.threads = 1, .capacity = 5, .per_client = 2});
  Outcomes out;
  using A = PasswordCheckQueue::Admission;
  auto submit = [&](const std::string& client) {
    auto t0 = Clock::now();
    A a = queue.Submit(client, "alice", "x", out.Done(client), out.Cancelled(client));
    EXPECT_LT(Clock::now() - t0, milliseconds(100));
    return a;
  };
  EXPECT_EQ(submit("a"), A::kAccepted);  // running
  EXPECT_EQ(submit("a"), A::kAccepted);  // waiting
  EXPECT_EQ(submit("a"), A::kClientBusy);
  EXPECT_EQ(submit("b"), A::kAccepted);
  EXPECT_EQ(submit("b"), A::kAccepted);
  EXPECT_EQ(submit("c"), A::kAccepted);
  EXPECT_EQ(submit("d"), A::kFull);
  EXPECT_EQ(submit("c"), A::kFull);
  EXPECT_TRUE(out.Now().empty());
  queue.Stop(milliseconds(0));
  EXPECT_EQ(out.Now().size(), 5u);  // every accepted check answered, by Stop
  EXPECT_EQ(submit("e"), A::kStopped);
}

// A client has one check running at a time, and the next to run is that of the client that has
// waited longest: "b", which came after all of "a"'s checks, runs right after "a"'s first.
TEST(PasswordCheckQueueTest, ClientsTakeTurns) {
  auto auth = std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"alice", NoPasswordMatches(11)}});
  PasswordCheckQueue queue(auth, {.threads = 1, .capacity = 16, .per_client = 3});
  Outcomes out;
  for (const char* name : {"a1", "a2", "a3"}) queue.Submit("a", "alice", "x", out.Done(name), out.Cancelled(name));
  queue.Submit("b", "alice", "x", out.Done("b1"), out.Cancelled("b1"));
  EXPECT_EQ(out.WaitFor(4, milliseconds(20000)), (std::vector<std::string>{"a1:no", "b1:no", "a2:no", "a3:no"}));
}

// Stop answers every waiting and running check with `cancelled` at once, does not wait for the
// running bcrypt, and no `done` comes after it, even when the abandoned bcrypt ends.
TEST(PasswordCheckQueueTest, StopCancelsWithoutWaitingForARunningBcrypt) {
  // Cost 12 (a fraction of a second): long enough to be running at Stop, short enough to end
  // within the test, to show that its end calls nothing.
  auto auth = std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"alice", NoPasswordMatches(12)}});
  Outcomes out;
  {
    PasswordCheckQueue queue(auth, {});
    queue.Submit("a", "alice", "x", out.Done("running"), out.Cancelled("running"));
    queue.Submit("b", "alice", "x", out.Done("waiting"), out.Cancelled("waiting"));
    std::this_thread::sleep_for(milliseconds(20));
    auto t0 = Clock::now();
    queue.Stop(milliseconds(10));
    EXPECT_LT(Clock::now() - t0, milliseconds(500));
    auto now = out.Now();
    std::sort(now.begin(), now.end());
    EXPECT_EQ(now, (std::vector<std::string>{"running:cancelled", "waiting:cancelled"}));
  }  // the queue is gone; its abandoned thread still owns what it uses
  std::this_thread::sleep_for(milliseconds(1500));  // several cost-12 checks
  EXPECT_EQ(out.Now().size(), 2u);
}

}  // namespace
}  // namespace rdmahd
