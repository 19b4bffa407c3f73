#include "parsers/rdma_nl_stats.h"

#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/netlink_parse.h"
#include "tests/support/nldev_test_message.h"

namespace rdmahd {
namespace {

TEST(RdmaNlStatsTest, RequestsCarryTheCommandAndThePort) {
  auto req = BuildNldevStatGetRequest(7, 2, 42);
  auto messages = SplitNlMessages(req, "test");
  ASSERT_TRUE(messages.ok());
  ASSERT_EQ(messages->size(), 1u);
  EXPECT_EQ(messages->front().header.nlmsg_type, testing::kNldevStatGet);
  EXPECT_EQ(messages->front().header.nlmsg_seq, 42u);
  EXPECT_EQ(messages->front().header.nlmsg_flags, NLM_F_REQUEST);
  auto attrs = SplitNlAttrs(messages->front().body, "test", "request");
  ASSERT_TRUE(attrs.ok());
  std::map<std::uint16_t, std::uint32_t> got;
  for (const NlAttr& a : *attrs) {
    std::uint32_t v;
    std::memcpy(&v, a.payload.data(), 4);
    got[a.type] = v;
  }
  EXPECT_EQ(got, (std::map<std::uint16_t, std::uint32_t>{{RDMA_NLDEV_ATTR_DEV_INDEX, 7}, {RDMA_NLDEV_ATTR_PORT_INDEX, 2}}));

  auto dump = SplitNlMessages(BuildNldevGetDumpRequest(5), "test");
  ASSERT_TRUE(dump.ok());
  EXPECT_EQ(dump->front().header.nlmsg_type, testing::kNldevGet);
  EXPECT_EQ(dump->front().header.nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
}

TEST(RdmaNlStatsTest, ParsesAStatReply) {
  testing::NldevDatagram d;
  testing::PutNldevStatReply(d, 9, 3, "rxe0", 1, {{"sent_pkts", 800}, {"rcvd_pkts", 1ULL << 40}});
  auto stats = ParseNldevStatReply(d.bytes(), 9);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->dev_index, 3u);
  EXPECT_EQ(stats->dev_name, "rxe0");
  EXPECT_EQ(stats->port, 1u);
  ASSERT_EQ(stats->counters.size(), 2u);
  EXPECT_EQ(stats->counters[0].name, "sent_pkts");
  EXPECT_EQ(stats->counters[0].value, 800u);
  EXPECT_EQ(stats->counters[1].value, 1ULL << 40);

  auto wrong_seq = ParseNldevStatReply(d.bytes(), 10);
  ASSERT_FALSE(wrong_seq.ok());
  EXPECT_NE(wrong_seq.error().message.find("sequence 9, expected 10"), std::string::npos);
}

TEST(RdmaNlStatsTest, KernelErrorsAndMalformedRepliesAreErrors) {
  testing::NldevDatagram err;
  err.Error(4, EINVAL);
  auto e = ParseNldevStatReply(err.bytes(), 4);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().errno_value, EINVAL);
  EXPECT_NE(e.error().message.find("RDMA_NLDEV_CMD_STAT_GET"), std::string::npos);

  testing::NldevDatagram ack;
  ack.Error(4, 0);
  EXPECT_EQ(ParseNldevStatReply(ack.bytes(), 4).error().errno_value, EBADMSG);

  testing::NldevDatagram good;
  testing::PutNldevStatReply(good, 1, 1, "mlx5_0", 1, {{"out_of_buffer", 5}});
  // Every truncation of a good reply is refused (and, under ASan, never read past).
  nlmsghdr h;
  std::memcpy(&h, good.bytes().data(), sizeof h);
  for (std::size_t n = 0; n < h.nlmsg_len; ++n) {
    std::vector<std::uint8_t> cut(good.bytes().begin(), good.bytes().begin() + static_cast<std::ptrdiff_t>(n));
    auto r = ParseNldevStatReply(cut);
    ASSERT_FALSE(r.ok()) << "cut at " << n;
    EXPECT_EQ(r.error().errno_value, EBADMSG);
  }

  // An entry with a name and no value.
  testing::NldevDatagram no_value;
  nlmsghdr* nlh = no_value.Add(testing::kNldevStatGet, 1);
  nlattr* table = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  nlattr* entry = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
  mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "x");
  mnl_attr_nest_end(nlh, entry);
  mnl_attr_nest_end(nlh, table);
  no_value.Close(nlh);
  auto nv = ParseNldevStatReply(no_value.bytes());
  ASSERT_FALSE(nv.ok());
  EXPECT_EQ(nv.error().errno_value, EBADMSG);
  EXPECT_NE(nv.error().message.find("RDMA netlink reply malformed"), std::string::npos);
}

}  // namespace
}  // namespace rdmahd
