#include "parsers/ethtool_reply.h"

#include <linux/ethtool_netlink.h>

#include <cstring>

#include "common/netlink_parse.h"

namespace rdmahd {

Result<EthtoolReplyHeader> ParseEthtoolReplyHeader(std::span<const std::uint8_t> nest, std::string_view protocol) {
  auto attrs = SplitNlAttrs(nest, protocol, "ETHTOOL_A_HEADER");
  if (!attrs) return attrs.error();
  EthtoolReplyHeader out;
  for (const NlAttr& a : *attrs) {
    if (a.type == ETHTOOL_A_HEADER_DEV_INDEX) {
      auto v = NlAttrAs<std::uint32_t>(a, protocol, "ETHTOOL_A_HEADER_DEV_INDEX", "a u32");
      if (!v) return v.error();
      out.ifindex = *v;
    } else if (a.type == ETHTOOL_A_HEADER_DEV_NAME) {
      const char* p = reinterpret_cast<const char*>(a.payload.data());
      const std::size_t n = strnlen(p, a.payload.size());
      if (n > kEthtoolMaxIfnameBytes) {
        return NlMalformed(protocol, "ETHTOOL_A_HEADER_DEV_NAME of " + std::to_string(n) + " bytes, a netdev name has at most " +
                                         std::to_string(kEthtoolMaxIfnameBytes));
      }
      out.ifname.assign(p, n);
    }
  }
  return out;
}

}  // namespace rdmahd
