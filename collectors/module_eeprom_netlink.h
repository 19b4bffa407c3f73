// ETHTOOL_MSG_MODULE_EEPROM_GET requests and replies (linux/ethtool_netlink.h): pure builders and
// a parser over bytes, for the module_eeprom collector (collectors/module_eeprom.h) and its fuzz
// target.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace rdmahd {

// Where one read goes: a 128-byte half page of the module's memory, as ETHTOOL_A_MODULE_EEPROM_*
// name it (the kernel refuses a read that crosses offset 128).
struct ModuleEepromRead {
  std::uint32_t offset = 0;  // 0: the lower page; 128: the upper page `page`
  std::uint32_t length = 128;
  std::uint8_t page = 0;
  std::uint8_t bank = 0;
  std::uint8_t i2c_address = 0x50;  // 0x51: SFF-8472 A2h
};

std::vector<std::uint8_t> BuildModuleEepromGetRequest(std::uint16_t family_id, const std::string& ifname,
                                                      const ModuleEepromRead& read, std::uint32_t seq);

// The bytes of the answer to one such request. A kernel error (EOPNOTSUPP, EIO for an empty cage,
// EINVAL for a page the module lacks) keeps its errno; a reply without ETHTOOL_A_MODULE_EEPROM_DATA,
// or with more bytes than `expected_length`, is malformed (EBADMSG). Fewer bytes are returned as
// they came (the decoder leaves out what they do not reach).
Result<std::vector<std::uint8_t>> ParseModuleEepromReply(std::span<const std::uint8_t> datagram,
                                                         std::uint16_t family_id, std::uint32_t expected_length,
                                                         std::uint32_t expected_seq = 0);

}  // namespace rdmahd
