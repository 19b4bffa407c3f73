#include "collectors/ethtool_std_stats_collector.h"

#include <libmnl/libmnl.h>
#include <linux/ethtool_netlink.h>
#include <linux/netlink.h>

#include <cerrno>
#include <utility>

#include "facts/ethtool_std_stats_facts.h"
#include "parsers/ethtool_std_stats.h"

namespace rdmahd {

std::vector<std::uint8_t> BuildStatsGetRequest(std::uint16_t family_id, const std::string& ifname, std::uint32_t seq) {
  return BuildGenlRequest(family_id, ETHTOOL_MSG_STATS_GET, ETHTOOL_GENL_VERSION, NLM_F_REQUEST, seq, [&](nlmsghdr* nlh) {
    PutEthtoolRequestHeader(nlh, ETHTOOL_A_STATS_HEADER, ifname, 0);
    // The groups as the kernel's ethnl_update_bitset reads a compact list: NOMASK, the number of
    // bits, and the bits as u32 words.
    const std::uint32_t groups =
        (1u << ETHTOOL_STATS_ETH_PHY) | (1u << ETHTOOL_STATS_ETH_MAC) | (1u << ETHTOOL_STATS_RMON);
    nlattr* set = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_GROUPS);
    mnl_attr_put(nlh, ETHTOOL_A_BITSET_NOMASK, 0, nullptr);
    mnl_attr_put_u32(nlh, ETHTOOL_A_BITSET_SIZE, __ETHTOOL_STATS_CNT);
    mnl_attr_put(nlh, ETHTOOL_A_BITSET_VALUE, sizeof groups, &groups);
    mnl_attr_nest_end(nlh, set);
  });
}

EthtoolStdStatsCollector::EthtoolStdStatsCollector()
    : EthtoolStdStatsCollector(std::make_unique<MnlGenlTransport>(ETHTOOL_GENL_NAME)) {}
EthtoolStdStatsCollector::EthtoolStdStatsCollector(std::unique_ptr<GenlTransport> transport)
    : transport_(std::move(transport)) {}

Status EthtoolStdStatsCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  EthtoolStdStatsFacts facts;
  const std::vector<std::string> netdevs = ctx.topology.Netdevs();
  facts.netdevs.reserve(netdevs.size());
  for (const std::string& name : netdevs) {
    EthtoolStdStatsNetdevFacts f;
    f.netdev = name;
    if (!ctx.fs.asks_kernel()) {
      f.not_captured = true;
      facts.netdevs.push_back(std::move(f));
      continue;
    }
    auto answer = ExchangeGenl(*transport_, seq_, /*dump=*/false, [&](std::uint16_t family, std::uint32_t seq) {
      return BuildStatsGetRequest(family, name, seq);
    });
    Result<EthtoolStdStats> stats =
        answer ? ParseEthtoolStatsReply(answer->datagrams.front(), answer->family_id, answer->seq)
               : Result<EthtoolStdStats>(answer.error());
    if (stats && !stats->counters.empty()) {
      f.read = true;
      f.stats = std::move(*stats);
    } else if (stats) {
      // The kernel answers every driver with the groups asked, empty where the driver has no
      // ethtool_ops for them (loopback, veth): nothing is known, which is not "no errors".
      f.note = "the driver of " + name + " fills none of the standard statistics groups eth-phy, eth-mac, rmon";
    } else if (stats.error().errno_value == EOPNOTSUPP) {
      f.note = "the driver of " + name + " reports no standard statistics (EOPNOTSUPP: a driver without them, or a "
               "kernel before 5.13 without the command)";
    } else {
      f.note = name + ": " + stats.error().message;
      // Not a failure: the netdev went away, or the kernel has no ethtool netlink (before 5.6).
      if (stats.error().errno_value != ENODEV && stats.error().errno_value != ENOENT) outcome.errors.push_back(f.note);
    }
    facts.netdevs.push_back(std::move(f));
  }
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void EthtoolStdStatsCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const auto* facts = snapshot.Get<EthtoolStdStatsFacts>();
  if (facts == nullptr) return;
  auto stat = sink.Counter("rdma_netdev_standard_stat_total",
                           "A driver-neutral standard statistic of a netdev (ethtool netlink STATS_GET: IEEE 802.3 "
                           "PHY and MAC counters, RFC 2819 RMON), named as `ethtool -S DEV --groups` prints it.");
  for (const EthtoolStdStatsNetdevFacts& f : facts->netdevs) {
    if (!f.read) continue;
    for (const EthtoolStdCounter& c : f.stats.counters) {
      stat.Add({{"netdev", f.netdev}, {"stat", c.name}}, static_cast<double>(c.value));
    }
  }
}

RDMAHD_REGISTER_COLLECTOR("ethtool_std_stats", EthtoolStdStatsCollector,
                          "IEEE 802.3 PHY/MAC and RMON standard statistics of each RDMA netdev (ethtool netlink)");

}  // namespace rdmahd
