// The "ethtool_std_stats" collector: the driver-neutral standard statistics of each Ethernet
// netdev behind an RDMA port (facts/ethtool_std_stats_facts.h): one ETHTOOL_MSG_STATS_GET request
// for the groups eth-phy, eth-mac and rmon per netdev and collection over the ethtool generic
// netlink family (`ethtool -S DEV --groups eth-phy eth-mac rmon`). Only on the live node
// (NodeFs::asks_kernel): a capture is "not captured". A driver without the groups (EOPNOTSUPP, or
// an answer with no counter in them: loopback, veth) or a kernel without ethtool netlink (before
// 5.6; the stats command came in 5.13) leaves the netdev unknown with the reason; neither is a
// collector error.
#pragma once

#include <memory>

#include "collectors/genl_transport.h"
#include "core/collector.h"

namespace rdmahd {

// ETHTOOL_MSG_STATS_GET for `ifname`, the groups eth-phy, eth-mac and rmon as a compact bitset.
std::vector<std::uint8_t> BuildStatsGetRequest(std::uint16_t family_id, const std::string& ifname, std::uint32_t seq);

class EthtoolStdStatsCollector : public Collector {
 public:
  EthtoolStdStatsCollector();  // the "ethtool" family through MnlGenlTransport
  explicit EthtoolStdStatsCollector(std::unique_ptr<GenlTransport> transport);
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

 private:
  std::unique_ptr<GenlTransport> transport_;
  std::uint32_t seq_ = 0;
};

}  // namespace rdmahd
