// Facts of the "fec" collector: forward error correction of each Ethernet netdev behind an RDMA
// port, as ETHTOOL_MSG_FEC_GET with statistics answers (parsers/ethtool_fec.h). Data only.
#pragma once

#include <string>
#include <vector>

#include "facts/genl_not_captured.h"
#include "parsers/ethtool_fec.h"

namespace rdmahd {

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
