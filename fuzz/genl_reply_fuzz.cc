// libFuzzer target: the generic netlink answers the devlink, FEC and module readers parse before
// their decoders: the controller's CTRL_CMD_GETFAMILY answer (collectors/genl_transport.h) and a
// MODULE_EEPROM_GET reply (collectors/module_eeprom_netlink.h). The family id comes from the
// input's own netlink header; the first byte picks the length the reply is held to.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "collectors/genl_transport.h"
#include "collectors/module_eeprom_netlink.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  (void)rdmahd::ParseGenlFamilyReply(bytes);
  std::uint16_t family = 0;
  if (size >= 6) std::memcpy(&family, data + 4, sizeof(family));  // nlmsghdr.nlmsg_type
  const std::uint32_t length = size > 0 ? data[0] : 128;
  if (auto page = rdmahd::ParseModuleEepromReply(bytes, family, length); page.ok() && page->size() > length) {
    __builtin_trap();  // the parser's contract: never more bytes than asked for
  }
  return 0;
}
