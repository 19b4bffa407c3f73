#include "probes/verbs_resources.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <random>
#include <string>
#include <vector>

namespace rdmahd {
namespace {

// Fakes standing for verbs objects: each destroy records its name; "pd" fails like a PD still in
// use (EBUSY), as ibv_dealloc_pd does when an MR was leaked.
struct FakeObject {
  std::string name;
  std::vector<std::string>* order;
};
int DestroyFake(FakeObject* o) {
  o->order->push_back(o->name);
  return o->name == "pd" ? EBUSY : 0;
}

struct FakeSession {
  TeardownLog log;  // first: outlives the owners
  VerbsOwner<FakeObject> channel, id, pd, mr, comp_channel, cq, qp;
};

TEST(VerbsOwner, SessionTearsDownInReverseCreationOrderPastErrors) {
  std::vector<std::string> order;
  std::vector<FakeObject> objects;
  for (const char* n : {"channel", "id", "pd", "mr", "comp_channel", "cq", "qp"}) objects.push_back({n, &order});
  TeardownLog copied;
  {
    FakeSession s;
    s.channel = VerbsOwner<FakeObject>(&objects[0], DestroyFake, "channel", &s.log);
    s.id = VerbsOwner<FakeObject>(&objects[1], DestroyFake, "id", &s.log);
    s.pd = VerbsOwner<FakeObject>(&objects[2], DestroyFake, "ibv_dealloc_pd", &s.log);
    s.mr = VerbsOwner<FakeObject>(&objects[3], DestroyFake, "mr", &s.log);
    s.comp_channel = VerbsOwner<FakeObject>(&objects[4], DestroyFake, "comp_channel", &s.log);
    s.cq = VerbsOwner<FakeObject>(&objects[5], DestroyFake, "cq", &s.log);
    s.qp = VerbsOwner<FakeObject>(&objects[6], DestroyFake, "qp", &s.log);
    // Tear the QP, CQ and channel down early as a session does on a failed step; the rest go
    // with the session.
    s.qp.Reset();
    s.pd.Reset();  // fails: recorded, and nothing after it is skipped
    copied = s.log;
  }
  EXPECT_EQ(order, (std::vector<std::string>{"qp", "pd", "cq", "comp_channel", "mr", "id", "channel"}));
  ASSERT_EQ(copied.errors.size(), 1u);
  EXPECT_NE(copied.errors[0].find("ibv_dealloc_pd"), std::string::npos);
  EXPECT_NE(copied.errors[0].find("busy"), std::string::npos);
}

TEST(VerbsOwner, EachObjectIsDestroyedExactlyOnceAcrossMovesAndReleases) {
  std::vector<std::string> order;
  FakeObject a{"a", &order}, b{"b", &order}, c{"c", &order};
  TeardownLog log;
  {
    VerbsOwner<FakeObject> x(&a, DestroyFake, "a", &log);
    VerbsOwner<FakeObject> y(std::move(x));
    EXPECT_FALSE(x);
    y = VerbsOwner<FakeObject>(&b, DestroyFake, "b", &log);  // a goes now
    EXPECT_EQ(order, (std::vector<std::string>{"a"}));
    VerbsOwner<FakeObject> z(&c, DestroyFake, "c", &log);
    EXPECT_EQ(z.release(), &c);  // handed over: never destroyed here
    y.Reset();
    y.Reset();
  }
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(log.errors.empty());
}

TEST(WcStatusReason, NamesAreTheBoundedReasonLabel) {
  EXPECT_EQ(WcStatusReason(IBV_WC_RETRY_EXC_ERR), "wc_retry_exc_err");
  EXPECT_EQ(WcStatusReason(IBV_WC_WR_FLUSH_ERR), "wc_wr_flush_err");
  EXPECT_EQ(WcStatusReason(IBV_WC_REM_ACCESS_ERR), "wc_rem_access_err");
  EXPECT_EQ(WcStatusReason(static_cast<ibv_wc_status>(200)), "wc_other");
}

}  // namespace
}  // namespace rdmahd

namespace rdmahd {
namespace {

// A model of a send queue: it completes sends in order, and only signaled ones produce a
// completion (carrying their wr_id). A ping-pong posts through SendWindow while the "device"
// completes sends at random moments; the window must never overfill the queue, never wait on a
// full queue with no completion coming, and end a round with everything retired.
TEST(SendWindow, SignalsOneInEveryNeverOverfillsAndAFullQueueAlwaysHasACompletionComing) {
  for (const std::uint32_t every : {1u, 4u, 8u, 16u, 32u}) {
    constexpr std::uint32_t kDepth = 16, kMessages = 1000;
    SendWindow window(kDepth, every);
    std::deque<ibv_send_wr> queue;  // posted, not yet completed by the device
    std::vector<std::uint64_t> completions;
    std::uint32_t signaled = 0;
    std::mt19937 rng(every);
    auto device_completes_one = [&] {
      const ibv_send_wr done = queue.front();
      queue.pop_front();
      if ((done.send_flags & IBV_SEND_SIGNALED) != 0) completions.push_back(done.wr_id);
    };
    for (std::uint32_t i = 0; i < kMessages; ++i) {
      while (!window.CanPost()) {
        // Waiting for a completion: one must be coming, or the prober would wait forever.
        const bool coming = !completions.empty() ||
                            std::any_of(queue.begin(), queue.end(),
                                        [](const ibv_send_wr& w) { return (w.send_flags & IBV_SEND_SIGNALED) != 0; });
        ASSERT_TRUE(coming) << "every=" << every << ": full queue with no completion coming at message " << i;
        if (completions.empty()) device_completes_one();
        else {
          window.Retire(completions.front());
          completions.erase(completions.begin());
        }
      }
      ibv_send_wr wr{};
      wr.send_flags = IBV_SEND_INLINE;
      window.Prepare(wr, i + 1 == kMessages);
      EXPECT_NE(wr.send_flags & IBV_SEND_INLINE, 0u) << "other flags are kept";
      window.Posted(wr);
      queue.push_back(wr);
      signaled += (wr.send_flags & IBV_SEND_SIGNALED) != 0;
      ASSERT_LE(queue.size() + 0, kDepth) << "every=" << every;
      ASSERT_LE(window.outstanding(), kDepth);
      ASSERT_GE(window.outstanding(), queue.size()) << "a send retired before the device completed it";
      // The device and the poll loop make progress at random moments.
      if (!queue.empty() && rng() % 2 == 0) device_completes_one();
      if (!completions.empty() && rng() % 3 == 0) {
        window.Retire(completions.front());
        completions.erase(completions.begin());
      }
    }
    EXPECT_TRUE(queue.empty() || (queue.back().send_flags & IBV_SEND_SIGNALED) != 0) << "the last send is signaled";
    while (!queue.empty()) device_completes_one();
    for (const std::uint64_t id : completions) window.Retire(id);
    EXPECT_EQ(window.outstanding(), 0u) << "every=" << every << ": the round ends with every send retired";
    EXPECT_LE(signaled, kMessages / every + kMessages / kDepth + 1) << "every=" << every;
    EXPECT_GE(signaled, kMessages / std::max(every, kDepth)) << "every=" << every;
  }
}

// The ping-pong's message, the same for the prober and the responder: the start of the registered
// buffer under the MR's key, one scatter entry, inline up to what the QP accepted.
TEST(PingPongSend, SendsTheBufferStartUnderTheMrKeyInlineUpToTheQpsLimit) {
  VerbsSession s;
  Result<AlignedBuffer> buffer = AlignedBuffer::Allocate(8192);
  ASSERT_TRUE(buffer.ok());
  s.buffer = std::move(*buffer);
  ibv_mr mr{};
  mr.lkey = 0x1234;
  s.mr = MrOwner(&mr, nullptr, "ibv_dereg_mr", &s.log);  // not a real MR: nothing to destroy
  s.max_inline = 64;

  PingPongSend small(s, 64);
  EXPECT_EQ(small.sge.addr, reinterpret_cast<std::uintptr_t>(s.buffer.data()));
  EXPECT_EQ(small.sge.length, 64u);
  EXPECT_EQ(small.sge.lkey, 0x1234u);
  EXPECT_EQ(small.wr.sg_list, &small.sge);
  EXPECT_EQ(small.wr.num_sge, 1);
  EXPECT_EQ(small.wr.opcode, IBV_WR_SEND);
  EXPECT_EQ(small.wr.send_flags, unsigned{IBV_SEND_INLINE});
  EXPECT_EQ(small.wr.next, nullptr);

  PingPongSend large(s, 65);
  EXPECT_EQ(large.sge.length, 65u);
  EXPECT_EQ(large.wr.sg_list, &large.sge);
  EXPECT_EQ(large.wr.send_flags, 0u);
}

}  // namespace
}  // namespace rdmahd
