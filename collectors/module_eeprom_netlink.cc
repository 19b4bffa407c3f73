#include "collectors/module_eeprom_netlink.h"

#include <libmnl/libmnl.h>
#include <linux/ethtool_netlink.h>
#include <linux/netlink.h>

#include <string_view>

#include "collectors/genl_transport.h"
#include "common/netlink_parse.h"

namespace rdmahd {
namespace {

constexpr std::string_view kProtocol = "ethtool netlink MODULE_EEPROM_GET";

}  // namespace

std::vector<std::uint8_t> BuildModuleEepromGetRequest(std::uint16_t family_id, const std::string& ifname,
                                                      const ModuleEepromRead& read, std::uint32_t seq) {
  return BuildGenlRequest(family_id, ETHTOOL_MSG_MODULE_EEPROM_GET, ETHTOOL_GENL_VERSION, NLM_F_REQUEST, seq,
                          [&](nlmsghdr* nlh) {
                            PutEthtoolRequestHeader(nlh, ETHTOOL_A_MODULE_EEPROM_HEADER, ifname, 0);
                            mnl_attr_put_u32(nlh, ETHTOOL_A_MODULE_EEPROM_OFFSET, read.offset);
                            mnl_attr_put_u32(nlh, ETHTOOL_A_MODULE_EEPROM_LENGTH, read.length);
                            mnl_attr_put_u8(nlh, ETHTOOL_A_MODULE_EEPROM_PAGE, read.page);
                            mnl_attr_put_u8(nlh, ETHTOOL_A_MODULE_EEPROM_BANK, read.bank);
                            mnl_attr_put_u8(nlh, ETHTOOL_A_MODULE_EEPROM_I2C_ADDRESS, read.i2c_address);
                          });
}

Result<std::vector<std::uint8_t>> ParseModuleEepromReply(std::span<const std::uint8_t> datagram,
                                                         std::uint16_t family_id, std::uint32_t expected_length,
                                                         std::uint32_t expected_seq) {
  auto reply = GenlReply(datagram, family_id, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY, expected_seq, kProtocol);
  if (!reply) return reply.error();
  auto attrs = SplitNlAttrs(reply->attrs, kProtocol, "ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY");
  if (!attrs) return attrs.error();
  for (const NlAttr& a : *attrs) {
    if (a.type != ETHTOOL_A_MODULE_EEPROM_DATA) continue;
    if (a.payload.size() > expected_length) {
      return NlMalformed(kProtocol, "ETHTOOL_A_MODULE_EEPROM_DATA has " + std::to_string(a.payload.size()) +
                                        " bytes, " + std::to_string(expected_length) + " were asked for");
    }
    return std::vector<std::uint8_t>(a.payload.begin(), a.payload.end());
  }
  return NlMalformed(kProtocol, "no ETHTOOL_A_MODULE_EEPROM_DATA");
}

}  // namespace rdmahd
