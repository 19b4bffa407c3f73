#include "collectors/genl_transport.h"

#include <libmnl/libmnl.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>

#include <cerrno>
#include <string_view>
#include <utility>

#include "common/netlink_parse.h"

namespace rdmahd {
namespace {

constexpr std::string_view kProtocol = "generic netlink CTRL_CMD_GETFAMILY";

}  // namespace

std::vector<std::uint8_t> BuildGenlRequest(std::uint16_t family_id, std::uint8_t cmd, std::uint8_t version,
                                           std::uint16_t flags, std::uint32_t seq,
                                           const std::function<void(nlmsghdr*)>& attrs) {
  std::vector<std::uint8_t> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = family_id;
  nlh->nlmsg_flags = flags;
  nlh->nlmsg_seq = seq;
  auto* g = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
  g->cmd = cmd;
  g->version = version;
  if (attrs) attrs(nlh);
  buf.resize(nlh->nlmsg_len);
  return buf;
}

void PutEthtoolRequestHeader(nlmsghdr* nlh, std::uint16_t nest_type, const std::string& ifname, std::uint32_t flags) {
  nlattr* nest = mnl_attr_nest_start(nlh, nest_type);
  mnl_attr_put_strz(nlh, ETHTOOL_A_HEADER_DEV_NAME, ifname.c_str());
  if (flags != 0) mnl_attr_put_u32(nlh, ETHTOOL_A_HEADER_FLAGS, flags);
  mnl_attr_nest_end(nlh, nest);
}

std::vector<std::uint8_t> BuildGenlFamilyRequest(const std::string& family, std::uint32_t seq) {
  return BuildGenlRequest(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, NLM_F_REQUEST, seq,
                          [&](nlmsghdr* nlh) { mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, family.c_str()); });
}

Result<std::uint16_t> ParseGenlFamilyReply(std::span<const std::uint8_t> datagram, std::uint32_t expected_seq) {
  auto reply = GenlReply(datagram, GENL_ID_CTRL, CTRL_CMD_NEWFAMILY, expected_seq, kProtocol);
  if (!reply) return reply.error();
  auto attrs = SplitNlAttrs(reply->attrs, kProtocol, "CTRL_CMD_NEWFAMILY");
  if (!attrs) return attrs.error();
  for (const NlAttr& a : *attrs) {
    if (a.type == CTRL_ATTR_FAMILY_ID) return NlAttrAs<std::uint16_t>(a, kProtocol, "CTRL_ATTR_FAMILY_ID", "a u16");
  }
  return NlMalformed(kProtocol, "no CTRL_ATTR_FAMILY_ID");
}

Result<GenlAnswer> ExchangeGenl(GenlTransport& transport, std::uint32_t& seq, bool dump,
                                const std::function<std::vector<std::uint8_t>(std::uint16_t, std::uint32_t)>& build) {
  auto family = transport.FamilyId();
  if (!family) return family.error();
  if (++seq == 0) ++seq;  // 0 means "any" to the reply parsers
  auto answer = transport.Exchange(build(*family, seq), dump);
  if (!answer) return answer.error();
  if (answer->empty()) return Error{"no answer", EPROTO};
  return GenlAnswer{std::move(*answer), *family, seq};
}

MnlGenlTransport::MnlGenlTransport(std::string family)
    : family_(std::move(family)), socket_(NETLINK_GENERIC, "generic netlink " + family_ + " request") {}

Result<std::uint16_t> MnlGenlTransport::FamilyId() {
  if (id_) return *id_;
  if (++seq_ == 0) ++seq_;
  auto answer = socket_.Exchange(BuildGenlFamilyRequest(family_, seq_), /*dump=*/false, /*max_datagrams=*/16);
  if (!answer) return answer.error();
  if (answer->empty()) return Error{"generic netlink family " + family_ + ": no answer", EPROTO};
  auto id = ParseGenlFamilyReply(answer->front(), seq_);
  if (!id) {
    if (id.error().errno_value == ENOENT) {
      return Error{"generic netlink family " + family_ + " is not registered in this kernel", ENOENT};
    }
    return id.error();
  }
  id_ = *id;
  return *id;
}

Result<std::vector<std::vector<std::uint8_t>>> MnlGenlTransport::Exchange(std::span<const std::uint8_t> request,
                                                                          bool dump) {
  auto answer = socket_.Exchange(request, dump, /*max_datagrams=*/1024);
  if (!answer) id_.reset();  // the family may have been unregistered and registered again (module reload)
  return answer;
}

}  // namespace rdmahd
