#include "collectors/dcb_netlink.h"

#include "common/netlink_parse.h"
#include "common/netlink_socket.h"

#include <libmnl/libmnl.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace rdmahd {
namespace {

// Attribute numbers newer than the UAPI headers this builds against (Linux 6.2+).
constexpr std::uint16_t kAttrDcbAppTrustTable = 11;  // DCB_ATTR_DCB_APP_TRUST_TABLE in enum ieee_attrs
constexpr std::uint16_t kAttrDcbApp = 2;             // DCB_ATTR_DCB_APP in enum ieee_attrs_app

constexpr std::string_view kProtocol = "DCB netlink";
using Attr = NlAttr;

Error Malformed(std::string_view what) { return NlMalformed(kProtocol, what); }

Result<std::vector<Attr>> SplitAttrs(std::span<const std::uint8_t> bytes, std::string_view where) {
  return SplitNlAttrs(bytes, kProtocol, where);
}

Status ParseIeeeNest(std::span<const std::uint8_t> nest, DcbState& state) {
  auto attrs = SplitAttrs(nest, "DCB_ATTR_IEEE");
  if (!attrs) return attrs.error();
  for (const Attr& a : *attrs) {
    switch (a.type) {
      case DCB_ATTR_IEEE_PFC: {
        auto parsed = NlAttrAs<ieee_pfc>(a, kProtocol, "DCB_ATTR_IEEE_PFC", "struct ieee_pfc");
        if (!parsed) return parsed.error();
        const ieee_pfc& raw = *parsed;
        PfcConfig pfc;
        pfc.pfc_cap = raw.pfc_cap;
        pfc.enabled_mask = raw.pfc_en;
        pfc.macsec_bypass = raw.mbc != 0;
        pfc.delay = raw.delay;
        pfc.requests.emplace();
        pfc.indications.emplace();
        for (int i = 0; i < kDcbPriorities; ++i) {
          (*pfc.requests)[i] = raw.requests[i];
          (*pfc.indications)[i] = raw.indications[i];
        }
        state.pfc = pfc;
        break;
      }
      case DCB_ATTR_IEEE_APP_TABLE: {
        auto entries = SplitAttrs(a.payload, "DCB_ATTR_IEEE_APP_TABLE");
        if (!entries) return entries.error();
        std::vector<DcbAppEntry> app;
        for (const Attr& e : *entries) {
          if (e.type != DCB_ATTR_IEEE_APP && e.type != kAttrDcbApp) continue;
          auto raw = NlAttrAs<dcb_app>(e, kProtocol, "APP entry", "struct dcb_app");
          if (!raw) return raw.error();
          app.push_back({raw->selector, raw->protocol, raw->priority});
        }
        state.app = std::move(app);
        break;
      }
      case kAttrDcbAppTrustTable: {
        auto entries = SplitAttrs(a.payload, "DCB_ATTR_DCB_APP_TRUST_TABLE");
        if (!entries) return entries.error();
        std::vector<std::uint8_t> order;
        for (const Attr& e : *entries) {
          if (e.payload.empty()) return Malformed("empty APP trust entry");
          order.push_back(e.payload[0]);
        }
        state.app_trust = std::move(order);
        break;
      }
      default:
        break;  // ETS, maxrate, buffers, peer info: not needed here
    }
  }
  return Status::Ok();
}

}  // namespace

std::map<int, int> DscpPriorityMap(const DcbState& state) {
  std::map<int, int> out;
  if (!state.app) return out;
  for (const DcbAppEntry& e : *state.app) {
    if (e.selector == kAppSelectorDscp) out[e.protocol] = e.priority;
  }
  return out;
}

std::vector<std::uint8_t> BuildDcbIeeeGetRequest(const std::string& ifname, std::uint32_t seq) {
  std::vector<std::uint8_t> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = RTM_GETDCB;
  nlh->nlmsg_flags = NLM_F_REQUEST;
  nlh->nlmsg_seq = seq;
  auto* dcb = static_cast<dcbmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(dcbmsg)));
  dcb->dcb_family = AF_UNSPEC;
  dcb->cmd = DCB_CMD_IEEE_GET;
  mnl_attr_put_strz(nlh, DCB_ATTR_IFNAME, ifname.c_str());
  buf.resize(nlh->nlmsg_len);
  return buf;
}

Result<DcbState> ParseDcbIeeeReply(std::span<const std::uint8_t> reply, std::uint32_t expected_seq) {
  auto messages = SplitNlMessages(reply, kProtocol);
  if (!messages) return messages.error();
  const nlmsghdr& hdr = messages->front().header;
  const std::span<const std::uint8_t> body = messages->front().body;
  if (expected_seq != 0 && hdr.nlmsg_seq != expected_seq) {
    return Malformed("sequence " + std::to_string(hdr.nlmsg_seq) + ", expected " +
                     std::to_string(expected_seq));
  }

  if (hdr.nlmsg_type == NLMSG_ERROR) {
    auto err = NlErrorCode(body, kProtocol);
    if (!err) return err.error();
    if (*err == EOPNOTSUPP) {
      DcbState none;
      none.supported = false;
      return none;
    }
    if (*err == 0) return Malformed("acknowledgement without a DCB answer");
    return Error::FromErrno("RTM_GETDCB DCB_CMD_IEEE_GET", *err);
  }
  if (hdr.nlmsg_type != RTM_GETDCB) {
    return Malformed("unexpected message type " + std::to_string(hdr.nlmsg_type));
  }
  if (body.size() < sizeof(dcbmsg)) return Malformed("truncated dcbmsg header");
  dcbmsg dm;
  std::memcpy(&dm, body.data(), sizeof(dm));
  if (dm.cmd != DCB_CMD_IEEE_GET) {
    return Malformed("answer to DCB command " + std::to_string(dm.cmd) + ", expected IEEE_GET");
  }
  const std::size_t attrs_at = std::min<std::size_t>(NLMSG_ALIGN(sizeof(dcbmsg)), body.size());
  auto attrs = SplitAttrs(body.subspan(attrs_at), "RTM_GETDCB");
  if (!attrs) return attrs.error();

  DcbState state;
  for (const Attr& a : *attrs) {
    if (a.type == DCB_ATTR_IEEE) {
      Status st = ParseIeeeNest(a.payload, state);
      if (!st) return st.error();
    } else if (a.type == DCB_ATTR_DCBX) {
      if (a.payload.empty()) return Malformed("empty DCB_ATTR_DCBX");
      state.dcbx = a.payload[0];
    }
  }
  return state;
}

// ---------------------------------------------------------------------------------------------
MnlDcbTransport::MnlDcbTransport() : socket_(NETLINK_ROUTE, "RTM_GETDCB") {}

Result<std::vector<std::uint8_t>> MnlDcbTransport::Exchange(std::span<const std::uint8_t> request) {
  // A few stale answers (to requests that timed out) at most are skipped.
  auto answer = socket_.Exchange(request, /*dump=*/false, /*max_datagrams=*/8);
  if (!answer) return answer.error();
  return std::move(answer->front());
}

DcbNetlinkReader::DcbNetlinkReader(std::unique_ptr<DcbNetlinkTransport> transport)
    : transport_(std::move(transport)) {}

Result<DcbState> DcbNetlinkReader::Read(const std::string& ifname) {
  if (++seq_ == 0) ++seq_;
  auto request = BuildDcbIeeeGetRequest(ifname, seq_);
  auto reply = transport_->Exchange(request);
  if (!reply) return Error{ifname + ": " + reply.error().message, reply.error().errno_value};
  auto state = ParseDcbIeeeReply(*reply, seq_);
  if (!state) return Error{ifname + ": " + state.error().message, state.error().errno_value};
  return state;
}

}  // namespace rdmahd
