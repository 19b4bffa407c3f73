// Facts of the "fec" collector: forward error correction of each Ethernet netdev behind an RDMA
// port, as ETHTOOL_MSG_FEC_GET with statistics answers (parsers/ethtool_fec.h). Data only.
#pragma once

#include <string>
#include <vector>

#include "parsers/ethtool_fec.h"

namespace rdmahd {

struct FecNetdevFacts {
  std::string netdev;
  // False when FEC is unknown (not asked: a capture; a driver without FEC, EOPNOTSUPP; the kernel
  // without ethtool netlink): `note` says why and `fec` holds nothing.
  bool read = false;
  std::string note;
  EthtoolFec fec;
};

struct FecFacts {
  std::vector<FecNetdevFacts> netdevs;  // by netdev name
};

}  // namespace rdmahd
