#include "collectors/rdma_nl_stats.h"

#include <linux/netlink.h>

#include <cerrno>
#include <utility>

#include "common/netlink_socket.h"

namespace rdmahd {

MnlRdmaTransport::MnlRdmaTransport() : socket_(NETLINK_RDMA, "RDMA netlink request") {}

Result<std::vector<std::vector<std::uint8_t>>> MnlRdmaTransport::Exchange(std::span<const std::uint8_t> request,
                                                                          bool dump) {
  // A dump of a few hundred devices fits in a handful of datagrams.
  return socket_.Exchange(request, dump, /*max_datagrams=*/1024);
}

// ---------------------------------------------------------------------------------------------
RdmaNetlinkStats::RdmaNetlinkStats(std::unique_ptr<RdmaNetlinkTransport> transport)
    : transport_(std::move(transport)) {}

std::uint32_t RdmaNetlinkStats::NextSeq() {
  if (++seq_ == 0) ++seq_;  // 0 means "any" to the reply parsers
  return seq_;
}

Status RdmaNetlinkStats::RefreshIndexes() {
  auto answer = transport_->Exchange(BuildNldevGetDumpRequest(NextSeq()), /*dump=*/true);
  if (!answer) return answer.error();
  std::vector<NldevDevice> devices;
  for (const auto& datagram : *answer) {
    auto done = ParseNldevGetDump(datagram, devices);
    if (!done) return done.error();
  }
  index_of_.clear();
  for (const NldevDevice& d : devices) index_of_[d.name] = d.index;
  return Status::Ok();
}

Result<std::vector<NldevHwCounter>> RdmaNetlinkStats::PortCounters(const std::string& device, std::uint32_t port) {
  const std::string what = device + "/" + std::to_string(port) + ": ";
  // Two rounds: the cached index may be stale (the device was re-created, or renamed): the kernel
  // then answers EINVAL or with another name, and the indexes are listed again.
  for (int round = 0; round < 2; ++round) {
    if (round == 1 || !index_of_.count(device)) {
      if (Status st = RefreshIndexes(); !st) return Error{what + st.error().message, st.error().errno_value};
    }
    auto it = index_of_.find(device);
    if (it == index_of_.end()) return Error{what + "not an RDMA device the kernel lists over netlink", ENODEV};
    const std::uint32_t seq = NextSeq();
    auto answer = transport_->Exchange(BuildNldevStatGetRequest(it->second, port, seq), /*dump=*/false);
    if (!answer) return Error{what + answer.error().message, answer.error().errno_value};
    if (answer->empty()) return Error{what + "no answer", EPROTO};
    auto stats = ParseNldevStatReply(answer->front(), seq);
    if (!stats) {
      if (stats.error().errno_value == EINVAL && round == 0) continue;
      return Error{what + stats.error().message, stats.error().errno_value};
    }
    if (stats->dev_name != device || stats->port != port) {
      if (round == 0) continue;
      return Error{what + "the kernel answered for " + stats->dev_name + "/" + std::to_string(stats->port), EPROTO};
    }
    return std::move(stats->counters);
  }
  return Error{what + "no consistent answer", EPROTO};
}

}  // namespace rdmahd
