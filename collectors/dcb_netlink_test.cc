#include "collectors/dcb_netlink.h"

#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>

#include "collectors/roce_qos.h"

namespace rdmahd {
namespace {

// Builds netlink messages byte for byte the way the kernel lays them out (NLMSG/NLA alignment),
// from the UAPI structs themselves.
class NlBuilder {
 public:
  template <class T>
  void Put(const T& v) { PutBytes(&v, sizeof(v)); }
  void PutBytes(const void* p, std::size_t n) {
    auto* b = static_cast<const std::uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  void Align() { buf_.resize(NLA_ALIGN(buf_.size()), 0); }
  std::size_t Begin(std::uint16_t type) {
    std::size_t at = buf_.size();
    nlattr a{0, type};
    Put(a);
    return at;
  }
  void End(std::size_t at) {
    std::uint16_t len = static_cast<std::uint16_t>(buf_.size() - at);
    std::memcpy(buf_.data() + at, &len, sizeof(len));
    Align();
  }
  void Attr(std::uint16_t type, const void* p, std::size_t n) {
    std::size_t at = Begin(type);
    PutBytes(p, n);
    End(at);
  }
  std::vector<std::uint8_t>& bytes() { return buf_; }

 private:
  std::vector<std::uint8_t> buf_;
};

constexpr std::uint32_t kSeq = 7;

struct ReplySpec {
  std::optional<std::uint8_t> pfc_en;       // DCB_ATTR_IEEE_PFC present when set
  std::vector<dcb_app> app;
  bool app_table = true;
  std::vector<std::uint8_t> trust;          // DCB_ATTR_DCB_APP_TRUST_TABLE when non-empty
  std::optional<std::uint8_t> dcbx = DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE;
};

ReplySpec WithPfc(std::optional<std::uint8_t> pfc_en) {
  ReplySpec s;
  s.pfc_en = pfc_en;
  return s;
}

// The shape of dcbnl_ieee_fill(): IFNAME, IEEE nest {ETS?, PFC, APP_TABLE{APP...}, TRUST?}, DCBX.
std::vector<std::uint8_t> IeeeGetReply(const ReplySpec& spec) {
  NlBuilder b;
  nlmsghdr h{};
  h.nlmsg_type = RTM_GETDCB;
  h.nlmsg_seq = kSeq;
  b.Put(h);
  dcbmsg dm{};
  dm.dcb_family = AF_UNSPEC;
  dm.cmd = DCB_CMD_IEEE_GET;
  b.Put(dm);
  b.Attr(DCB_ATTR_IFNAME, "ens1f0np0", 10);
  std::size_t ieee = b.Begin(DCB_ATTR_IEEE);
  ieee_ets ets{};
  ets.ets_cap = 8;
  b.Attr(DCB_ATTR_IEEE_ETS, &ets, sizeof(ets));
  if (spec.pfc_en) {
    ieee_pfc pfc{};
    pfc.pfc_cap = 8;
    pfc.pfc_en = *spec.pfc_en;
    pfc.delay = 4096;
    pfc.requests[3] = 1234;
    pfc.indications[3] = 99;
    b.Attr(DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
  }
  if (spec.app_table) {
    std::size_t table = b.Begin(DCB_ATTR_IEEE_APP_TABLE);
    for (const dcb_app& a : spec.app) b.Attr(DCB_ATTR_IEEE_APP, &a, sizeof(a));
    b.End(table);
  }
  if (!spec.trust.empty()) {
    std::size_t table = b.Begin(11 /* DCB_ATTR_DCB_APP_TRUST_TABLE */);
    for (std::uint8_t sel : spec.trust) b.Attr(sel == 255 ? 2 : DCB_ATTR_IEEE_APP, &sel, 1);
    b.End(table);
  }
  b.End(ieee);
  if (spec.dcbx) b.Attr(DCB_ATTR_DCBX, &*spec.dcbx, 1);
  std::uint32_t len = static_cast<std::uint32_t>(b.bytes().size());
  std::memcpy(b.bytes().data(), &len, sizeof(len));
  return b.bytes();
}

std::vector<std::uint8_t> ErrorReply(int err) {
  NlBuilder b;
  nlmsghdr h{};
  h.nlmsg_len = NLMSG_HDRLEN + sizeof(nlmsgerr);
  h.nlmsg_type = NLMSG_ERROR;
  h.nlmsg_seq = kSeq;
  b.Put(h);
  nlmsgerr e{};
  e.error = -err;
  b.Put(e);
  return b.bytes();
}

TEST(DcbNetlinkParseTest, PfcOnPriority3Only) {
  auto st = ParseDcbIeeeReply(IeeeGetReply(WithPfc(0x08)), kSeq);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_TRUE(st->supported);
  ASSERT_TRUE(st->pfc);
  EXPECT_EQ(st->pfc->enabled_mask, 0x08);
  for (int p = 0; p < 8; ++p) EXPECT_EQ(st->pfc->Enabled(p), p == 3) << p;
  EXPECT_EQ(st->pfc->pfc_cap, 8);
  EXPECT_EQ(st->pfc->delay, 4096);
  EXPECT_EQ((*st->pfc->requests)[3], 1234u);
  EXPECT_EQ((*st->pfc->indications)[3], 99u);
  EXPECT_EQ(st->dcbx, DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE);
}

TEST(DcbNetlinkParseTest, PfcOnPriorities3And4) {
  auto st = ParseDcbIeeeReply(IeeeGetReply(WithPfc(0x18)), kSeq);
  ASSERT_TRUE(st.ok()) << st.error().message;
  for (int p = 0; p < 8; ++p) EXPECT_EQ(st->pfc->Enabled(p), p == 3 || p == 4) << p;
}

TEST(DcbNetlinkParseTest, PfcOffIsKnownOffNotUnknown) {
  auto st = ParseDcbIeeeReply(IeeeGetReply(WithPfc(0x00)), kSeq);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_TRUE(st->pfc.has_value());
  EXPECT_EQ(st->pfc->enabled_mask, 0);
}

TEST(DcbNetlinkParseTest, NoPfcAttributeLeavesPfcUnknown) {
  auto st = ParseDcbIeeeReply(IeeeGetReply(ReplySpec{}), kSeq);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(st->supported);
  EXPECT_FALSE(st->pfc.has_value());
}

TEST(DcbNetlinkParseTest, DscpTrustWithDscp26ToPriority3) {
  ReplySpec spec = WithPfc(0x08);
  spec.app = {{IEEE_8021QAZ_APP_SEL_ETHERTYPE, 0, 0}, {IEEE_8021QAZ_APP_SEL_DSCP, 3, 26},
              {IEEE_8021QAZ_APP_SEL_DSCP, 6, 48}};
  auto st = ParseDcbIeeeReply(IeeeGetReply(spec), kSeq);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_TRUE(st->app);
  ASSERT_EQ(st->app->size(), 3u);
  EXPECT_EQ((*st->app)[1], (DcbAppEntry{IEEE_8021QAZ_APP_SEL_DSCP, 26, 3}));
  EXPECT_EQ(DeriveTrust(*st), TrustMode::kDscp);
  EXPECT_EQ(DscpPriorityMap(*st), (std::map<int, int>{{26, 3}, {48, 6}}));
}

TEST(DcbNetlinkParseTest, PcpTrustWithoutDscpEntries) {
  ReplySpec spec = WithPfc(0x08);
  spec.app = {{IEEE_8021QAZ_APP_SEL_ETHERTYPE, 3, 0x8915}};
  auto st = ParseDcbIeeeReply(IeeeGetReply(spec), kSeq);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(DeriveTrust(*st), TrustMode::kPcp);
  EXPECT_TRUE(DscpPriorityMap(*st).empty());
  // An empty APP table is PCP trust too; a missing one is unknown.
  auto empty = ParseDcbIeeeReply(IeeeGetReply(WithPfc(0x08)), kSeq);
  EXPECT_EQ(DeriveTrust(*empty), TrustMode::kPcp);
  auto none = ParseDcbIeeeReply(IeeeGetReply([] { auto s = WithPfc(0x08); s.app_table = false; return s; }()), kSeq);
  EXPECT_EQ(DeriveTrust(*none), std::nullopt);
}

TEST(DcbNetlinkParseTest, AppTrustTableDecidesWhenPresent) {
  ReplySpec spec = WithPfc(0x08);
  spec.trust = {IEEE_8021QAZ_APP_SEL_DSCP, 255};
  auto st = ParseDcbIeeeReply(IeeeGetReply(spec), kSeq);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_TRUE(st->app_trust);
  EXPECT_EQ(*st->app_trust, (std::vector<std::uint8_t>{5, 255}));
  EXPECT_EQ(DeriveTrust(*st), TrustMode::kDscp);  // no DSCP entries, but the trust order says DSCP
  spec.trust = {255};
  spec.app = {{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26}};
  EXPECT_EQ(DeriveTrust(*ParseDcbIeeeReply(IeeeGetReply(spec), kSeq)), TrustMode::kPcp);
}

TEST(DcbNetlinkParseTest, DriverWithoutDcbIsUnsupportedNotOff) {
  auto st = ParseDcbIeeeReply(ErrorReply(EOPNOTSUPP), kSeq);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_FALSE(st->supported);
  EXPECT_FALSE(st->pfc.has_value());
  EXPECT_EQ(DeriveTrust(*st), std::nullopt);
}

TEST(DcbNetlinkParseTest, OtherKernelErrorsCarryErrno) {
  auto st = ParseDcbIeeeReply(ErrorReply(ENODEV), kSeq);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().errno_value, ENODEV);
  EXPECT_NE(st.error().message.find("No such device"), std::string::npos) << st.error().message;
}

TEST(DcbNetlinkParseTest, EveryTruncationIsRejectedWithAClearError) {
  ReplySpec spec = WithPfc(0x08);
  spec.app = {{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26}};
  auto full = IeeeGetReply(spec);
  for (std::size_t n = 0; n < full.size(); ++n) {
    // An exact-size heap copy so AddressSanitizer would catch any read past the end.
    std::vector<std::uint8_t> cut(full.begin(), full.begin() + static_cast<long>(n));
    auto st = ParseDcbIeeeReply(cut, kSeq);
    ASSERT_FALSE(st.ok()) << "accepted a reply cut to " << n << " of " << full.size() << " bytes";
    EXPECT_NE(st.error().message.find("truncated"), std::string::npos) << st.error().message;
  }
}

TEST(DcbNetlinkParseTest, MalformedRepliesAreRejected) {
  // PFC payload shorter than struct ieee_pfc (the nest and message lengths are consistent).
  {
    NlBuilder b;
    nlmsghdr h{};
    h.nlmsg_type = RTM_GETDCB;
    h.nlmsg_seq = kSeq;
    b.Put(h);
    dcbmsg dm{};
    dm.cmd = DCB_CMD_IEEE_GET;
    b.Put(dm);
    std::size_t ieee = b.Begin(DCB_ATTR_IEEE);
    std::uint8_t short_pfc[4] = {8, 0x08, 0, 0};
    b.Attr(DCB_ATTR_IEEE_PFC, short_pfc, sizeof(short_pfc));
    b.End(ieee);
    std::uint32_t len = static_cast<std::uint32_t>(b.bytes().size());
    std::memcpy(b.bytes().data(), &len, sizeof(len));
    auto st = ParseDcbIeeeReply(b.bytes(), kSeq);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("DCB_ATTR_IEEE_PFC has 4 bytes"), std::string::npos) << st.error().message;
  }
  auto good = IeeeGetReply(WithPfc(0x08));
  const std::size_t first_attr = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dcbmsg));
  // An attribute claiming more bytes than the message has.
  {
    auto bad = good;
    std::uint16_t huge = 0x7ff0;
    std::memcpy(bad.data() + first_attr, &huge, sizeof(huge));
    auto st = ParseDcbIeeeReply(bad, kSeq);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("claims"), std::string::npos) << st.error().message;
  }
  // An attribute length smaller than the attribute header (would loop forever if trusted).
  {
    auto bad = good;
    std::uint16_t tiny = 2;
    std::memcpy(bad.data() + first_attr, &tiny, sizeof(tiny));
    EXPECT_FALSE(ParseDcbIeeeReply(bad, kSeq).ok());
  }
  // nlmsg_len larger than the datagram.
  {
    auto bad = good;
    std::uint32_t len = static_cast<std::uint32_t>(bad.size() + 64);
    std::memcpy(bad.data(), &len, sizeof(len));
    EXPECT_FALSE(ParseDcbIeeeReply(bad, kSeq).ok());
  }
  // An NLMSG_ERROR whose code is not a -errno (found by the fuzzer: INT_MIN overflowed on negation).
  for (int code : {INT32_MIN, 5, -5000}) {
    auto bad = ErrorReply(0);
    std::memcpy(bad.data() + NLMSG_HDRLEN, &code, sizeof(code));
    auto st = ParseDcbIeeeReply(bad, kSeq);
    ASSERT_FALSE(st.ok()) << code;
    EXPECT_NE(st.error().message.find("not a -errno"), std::string::npos) << st.error().message;
  }
  // A stale answer (another sequence number) and a non-DCB message type.
  EXPECT_FALSE(ParseDcbIeeeReply(good, kSeq + 1).ok());
  {
    auto bad = good;
    std::uint16_t type = RTM_NEWLINK;
    std::memcpy(bad.data() + 4, &type, sizeof(type));
    EXPECT_FALSE(ParseDcbIeeeReply(bad, kSeq).ok());
  }
}

class RecordedTransport : public DcbNetlinkTransport {
 public:
  explicit RecordedTransport(std::vector<std::uint8_t> reply) : reply_(std::move(reply)) {}
  Result<std::vector<std::uint8_t>> Exchange(std::span<const std::uint8_t> request) override {
    last_request.assign(request.begin(), request.end());
    // Answer with the request's sequence number, as the kernel does.
    std::vector<std::uint8_t> r = reply_;
    std::memcpy(r.data() + 8, request.data() + 8, 4);
    return r;
  }
  std::vector<std::uint8_t> last_request;

 private:
  std::vector<std::uint8_t> reply_;
};

TEST(DcbNetlinkReaderTest, SendsIeeeGetForTheNetdevAndParsesTheAnswer) {
  auto transport = std::make_unique<RecordedTransport>(IeeeGetReply(WithPfc(0x08)));
  RecordedTransport* t = transport.get();
  DcbNetlinkReader reader(std::move(transport));
  auto st = reader.Read("ens1f0np0");
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(st->pfc->Enabled(3));

  // The request: nlmsghdr{RTM_GETDCB, NLM_F_REQUEST} + dcbmsg{IEEE_GET} + DCB_ATTR_IFNAME "ens1f0np0\0".
  const auto& req = t->last_request;
  ASSERT_EQ(req.size(), NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dcbmsg)) + NLA_ALIGN(NLA_HDRLEN + 10));
  nlmsghdr h;
  std::memcpy(&h, req.data(), sizeof(h));
  EXPECT_EQ(h.nlmsg_type, RTM_GETDCB);
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST);
  EXPECT_EQ(h.nlmsg_len, req.size());
  EXPECT_EQ(req[NLMSG_HDRLEN + 1], DCB_CMD_IEEE_GET);
  const std::size_t attr = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dcbmsg));
  nlattr a;
  std::memcpy(&a, req.data() + attr, sizeof(a));
  EXPECT_EQ(a.nla_type, DCB_ATTR_IFNAME);
  EXPECT_EQ(a.nla_len, NLA_HDRLEN + 10);
  EXPECT_STREQ(reinterpret_cast<const char*>(req.data() + attr + NLA_HDRLEN), "ens1f0np0");
}

TEST(DcbNetlinkReaderTest, ErrorsNameTheNetdev) {
  DcbNetlinkReader reader(std::make_unique<RecordedTransport>(ErrorReply(ENODEV)));
  auto st = reader.Read("ens9");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message.rfind("ens9: ", 0), 0u) << st.error().message;
}

}  // namespace
}  // namespace rdmahd
