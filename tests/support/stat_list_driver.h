// A driver for the SIOCETHTOOL path that answers from a list of stats, as the kernel's ethtool core
// fills the caller's buffers. Shared by the collector tests and bench/netdev_bench.cc; the list is
// shared with the caller, who changes names and values between collections.
#pragma once

#include <linux/ethtool.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectors/ethtool_stats.h"

namespace rdmahd::testing {

class StatListDriver : public EthtoolIoctl {
 public:
  explicit StatListDriver(std::shared_ptr<std::vector<DriverStat>> stats,
                          std::optional<PauseParam> pause = std::nullopt)
      : stats_(std::move(stats)), pause_(pause) {}

  // Every netdev answers alike. Global pause: `pause`, or EOPNOTSUPP when unset (veth and many
  // virtual devices).
  Status Call(const std::string&, std::span<std::uint8_t> buf) override {
    std::uint32_t cmd;
    std::memcpy(&cmd, buf.data(), sizeof cmd);
    const std::vector<DriverStat>& s = *stats_;
    const auto n = static_cast<std::uint32_t>(s.size());
    if (cmd == ETHTOOL_GSSET_INFO) {
      ethtool_sset_info info{};
      info.cmd = cmd;
      info.sset_mask = 1ULL << ETH_SS_STATS;
      std::memcpy(buf.data(), &info, sizeof info);
      std::memcpy(buf.data() + sizeof info, &n, sizeof n);
    } else if (cmd == ETHTOOL_GSTRINGS) {
      ethtool_gstrings gs{};
      gs.cmd = cmd;
      gs.string_set = ETH_SS_STATS;
      gs.len = n;
      std::memcpy(buf.data(), &gs, sizeof gs);
      for (std::uint32_t i = 0; i < n; ++i) {
        char* slot = reinterpret_cast<char*>(buf.data() + sizeof gs + std::size_t{i} * ETH_GSTRING_LEN);
        std::memset(slot, 0, ETH_GSTRING_LEN);
        std::memcpy(slot, s[i].name.data(), std::min<std::size_t>(s[i].name.size(), ETH_GSTRING_LEN));
      }
    } else if (cmd == ETHTOOL_GSTATS) {
      ethtool_stats es{};
      es.cmd = cmd;
      es.n_stats = n;
      std::memcpy(buf.data(), &es, sizeof es);
      for (std::uint32_t i = 0; i < n; ++i) {
        std::memcpy(buf.data() + sizeof es + std::size_t{i} * sizeof(std::uint64_t), &s[i].value, sizeof(std::uint64_t));
      }
    } else if (cmd == ETHTOOL_GPAUSEPARAM && pause_) {
      ethtool_pauseparam pp{};
      pp.cmd = cmd;
      pp.autoneg = pause_->autoneg;
      pp.rx_pause = pause_->rx;
      pp.tx_pause = pause_->tx;
      std::memcpy(buf.data(), &pp, sizeof pp);
    } else {
      return Error::FromErrno("SIOCETHTOOL", EOPNOTSUPP);
    }
    return Status::Ok();
  }

 private:
  std::shared_ptr<std::vector<DriverStat>> stats_;
  std::optional<PauseParam> pause_;
};

}  // namespace rdmahd::testing
