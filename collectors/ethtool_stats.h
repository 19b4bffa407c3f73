// The SIOCETHTOOL ioctl and what the collectors read through it: a netdev's driver statistics
// (ETHTOOL_GSSET_INFO -> ETHTOOL_GSTRINGS -> ETHTOOL_GSTATS) and pause settings
// (ETHTOOL_GPAUSEPARAM), the way `ethtool -S` and `ethtool -a` get them. None of these needs
// privilege.
//
// Layers, as for DCB netlink: the pure parsers over the kernel's reply buffers
// (parsers/ethtool_stats.h); an EthtoolIoctl interface (the real one is SocketEthtoolIoctl, tests
// play a driver); EthtoolReader on top.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "facts/netdev_facts.h"
#include "parsers/ethtool_stats.h"

namespace rdmahd {

class EthtoolIoctl {
 public:
  virtual ~EthtoolIoctl() = default;
  // SIOCETHTOOL on `ifname` with `buffer` as ifr_data. The buffer starts with the __u32 command;
  // the kernel fills in the rest. A driver without the command gives errno EOPNOTSUPP.
  virtual Status Call(const std::string& ifname, std::span<std::uint8_t> buffer) = 0;
};

// AF_INET datagram socket, opened on first use (in the calling thread's network namespace) and kept.
class SocketEthtoolIoctl : public EthtoolIoctl {
 public:
  SocketEthtoolIoctl() = default;
  ~SocketEthtoolIoctl() override;
  SocketEthtoolIoctl(const SocketEthtoolIoctl&) = delete;
  SocketEthtoolIoctl& operator=(const SocketEthtoolIoctl&) = delete;
  Status Call(const std::string& ifname, std::span<std::uint8_t> buffer) override;

 private:
  int fd_ = -1;
};

class EthtoolReader {
 public:
  explicit EthtoolReader(std::unique_ptr<EthtoolIoctl> ioctl);
  // All driver stats, names and values paired. Errors name the netdev and the step.
  Result<std::vector<DriverStat>> ReadStats(const std::string& ifname);
  // The same read into `out`'s buffers (checked, not copied out).
  Status ReadRawStats(const std::string& ifname, RawDriverStats& out);
  // Global pause; nullopt when the driver does not report it (EOPNOTSUPP: veth, many virtual devices).
  Result<std::optional<PauseParam>> ReadPause(const std::string& ifname);

 private:
  std::unique_ptr<EthtoolIoctl> ioctl_;
};

}  // namespace rdmahd
