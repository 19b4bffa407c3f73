// The "fec" collector: forward error correction of each Ethernet netdev behind an RDMA port
// (facts/fec_facts.h): one ETHTOOL_MSG_FEC_GET request with ETHTOOL_FLAG_STATS per netdev and
// collection over the ethtool generic netlink family (`ethtool -I --show-fec DEV`). Only on the
// live node (NodeFs::asks_kernel): a capture is "not captured". A driver without FEC (veth, most
// virtual NICs: EOPNOTSUPP) or a kernel without ethtool netlink leaves the netdev unknown with the
// reason; neither is a collector error.
#pragma once

#include <memory>

#include "collectors/genl_transport.h"
#include "core/collector.h"

namespace rdmahd {

// ETHTOOL_MSG_FEC_GET for `ifname`, statistics included.
std::vector<std::uint8_t> BuildFecGetRequest(std::uint16_t family_id, const std::string& ifname, std::uint32_t seq);

class FecCollector : public Collector {
 public:
  FecCollector();  // the "ethtool" family through MnlGenlTransport
  explicit FecCollector(std::unique_ptr<GenlTransport> transport);
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

 private:
  std::unique_ptr<GenlTransport> transport_;
  std::uint32_t seq_ = 0;
};

}  // namespace rdmahd
