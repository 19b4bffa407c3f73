#include "probes/verbs_resources.h"

#include <gtest/gtest.h>

#include <cerrno>
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
