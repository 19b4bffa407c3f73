#include "collectors/fec.h"

#include <linux/ethtool_netlink.h>
#include <linux/netlink.h>

#include <cerrno>
#include <utility>

#include "facts/fec_facts.h"
#include "parsers/ethtool_fec.h"

namespace rdmahd {

std::vector<std::uint8_t> BuildFecGetRequest(std::uint16_t family_id, const std::string& ifname, std::uint32_t seq) {
  return BuildGenlRequest(family_id, ETHTOOL_MSG_FEC_GET, ETHTOOL_GENL_VERSION, NLM_F_REQUEST, seq,
                          [&](nlmsghdr* nlh) { PutEthtoolRequestHeader(nlh, ETHTOOL_A_FEC_HEADER, ifname, ETHTOOL_FLAG_STATS); });
}

FecCollector::FecCollector() : FecCollector(std::make_unique<MnlGenlTransport>(ETHTOOL_GENL_NAME)) {}
FecCollector::FecCollector(std::unique_ptr<GenlTransport> transport) : transport_(std::move(transport)) {}

Status FecCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  FecFacts facts;
  const std::vector<std::string> netdevs = ctx.topology.Netdevs();
  facts.netdevs.reserve(netdevs.size());
  for (const std::string& name : netdevs) {
    FecNetdevFacts f;
    f.netdev = name;
    if (!ctx.fs.asks_kernel()) {
      f.not_captured = true;
      facts.netdevs.push_back(std::move(f));
      continue;
    }
    auto answer = ExchangeGenl(*transport_, seq_, /*dump=*/false, [&](std::uint16_t family, std::uint32_t seq) {
      return BuildFecGetRequest(family, name, seq);
    });
    Result<EthtoolFec> fec = answer ? ParseEthtoolFecReply(answer->datagrams.front(), answer->family_id, answer->seq)
                                    : Result<EthtoolFec>(answer.error());
    if (fec) {
      f.read = true;
      f.fec = std::move(*fec);
    } else if (fec.error().errno_value == EOPNOTSUPP) {
      f.note = "the driver of " + name + " reports no FEC (EOPNOTSUPP: a virtual NIC, or a driver without the ethtool "
               "FEC operations)";
    } else {
      f.note = name + ": " + fec.error().message;
      // Not a failure: the netdev went away, or the kernel has no ethtool netlink (before 5.6).
      if (fec.error().errno_value != ENODEV && fec.error().errno_value != ENOENT) outcome.errors.push_back(f.note);
    }
    facts.netdevs.push_back(std::move(f));
  }
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void FecCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const auto* facts = snapshot.Get<FecFacts>();
  if (facts == nullptr) return;
  auto mode = sink.Gauge("rdma_fec_active_mode_info",
                         "1 for the FEC mode a netdev's link runs with (off, rs, baser, llrs, other); absent when the "
                         "driver reports none.");
  struct Kind {
    const FecCounter EthtoolFec::*counter;
    MetricSink::FamilyRef total, lane;
  };
  Kind kinds[] = {
      {&EthtoolFec::corrected_blocks,
       sink.Counter("rdma_fec_corrected_blocks_total", "FEC codewords (blocks) the PHY corrected on a netdev's link."),
       sink.Counter("rdma_fec_lane_corrected_blocks_total", "FEC blocks corrected, per lane (drivers that count per lane).")},
      {&EthtoolFec::uncorrectable_blocks,
       sink.Counter("rdma_fec_uncorrectable_blocks_total",
                    "FEC codewords (blocks) the PHY could not correct on a netdev's link: frames lost."),
       sink.Counter("rdma_fec_lane_uncorrectable_blocks_total",
                    "FEC blocks not correctable, per lane (drivers that count per lane).")},
      {&EthtoolFec::corrected_bits,
       sink.Counter("rdma_fec_corrected_bits_total", "Bits the FEC corrected on a netdev's link."),
       sink.Counter("rdma_fec_lane_corrected_bits_total", "Bits the FEC corrected, per lane (drivers that count per lane).")},
  };
  for (const FecNetdevFacts& f : facts->netdevs) {
    if (!f.read) continue;
    if (f.fec.active) mode.Add({{"netdev", f.netdev}, {"mode", FecModeName(*f.fec.active)}}, 1);
    for (const Kind& k : kinds) {
      const FecCounter& c = f.fec.*(k.counter);
      if (c.total) k.total.Add({{"netdev", f.netdev}}, static_cast<double>(*c.total));
      for (std::size_t i = 0; i < c.lanes.size(); ++i) {
        const std::string lane = std::to_string(i);
        k.lane.Add({{"netdev", f.netdev}, {"lane", lane}}, static_cast<double>(c.lanes[i]));
      }
    }
  }
}

RDMAHD_REGISTER_COLLECTOR("fec", FecCollector,
                          "FEC mode and corrected/uncorrectable block counters of each RDMA netdev (ethtool netlink)");

}  // namespace rdmahd
