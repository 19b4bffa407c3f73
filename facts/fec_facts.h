// Facts of the "fec" collector: forward error correction of each Ethernet netdev behind an RDMA
// port, as ETHTOOL_MSG_FEC_GET with statistics answers (parsers/ethtool_fec.h). Data only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "facts/genl_not_captured.h"

namespace rdmahd {

enum class FecMode { kOff, kRs, kBaseR, kLlrs, kOther };

struct FecCounter {
  std::optional<std::uint64_t> total;  // absent: the driver does not count it
  std::vector<std::uint64_t> lanes;    // empty: no per-lane values
};

// One netdev's FEC, as parsers/ethtool_fec.h decodes ETHTOOL_MSG_FEC_GET.
struct EthtoolFec {
  std::uint32_t ifindex = 0;
  std::string ifname;
  std::optional<FecMode> active;                  // absent: the driver reports none
  std::optional<std::uint32_t> active_link_mode;  // the raw bit, for a mode newer than the decoder
  std::optional<bool> auto_mode;                  // ETHTOOL_A_FEC_AUTO
  bool has_stats = false;                         // an ETHTOOL_A_FEC_STATS nest was present
  FecCounter corrected_blocks;
  FecCounter uncorrectable_blocks;
  FecCounter corrected_bits;
};

struct FecNetdevFacts {
  std::string netdev;
  // False when FEC is unknown (not asked: a capture; a driver without FEC, EOPNOTSUPP; the kernel
  // without ethtool netlink): Note() says why and `fec` holds nothing.
  bool read = false;
  // Not asked (a capture): Note() words it when read, so that the netdevs of a capture do not each
  // hold the same sentence. Otherwise `note` holds why FEC is unknown.
  bool not_captured = false;
  std::string note;
  EthtoolFec fec;

  std::string Note() const {
    return not_captured ? GenlNotCaptured("FEC comes", "ethtool -I --show-fec " + netdev) : note;
  }
};

struct FecFacts {
  std::vector<FecNetdevFacts> netdevs;  // by netdev name
};

}  // namespace rdmahd
