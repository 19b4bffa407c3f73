#include "collectors/ethtool_stats.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rdmahd {

SocketEthtoolIoctl::~SocketEthtoolIoctl() {
  if (fd_ >= 0) ::close(fd_);
}

Status SocketEthtoolIoctl::Call(const std::string& ifname, std::span<std::uint8_t> buffer) {
  if (ifname.size() >= IFNAMSIZ) return Error{"interface name too long: " + ifname, EINVAL};
  if (fd_ < 0) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Error::FromErrno("socket(AF_INET) for SIOCETHTOOL", errno);
  }
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname.c_str(), ifname.size() + 1);
  ifr.ifr_data = reinterpret_cast<char*>(buffer.data());
  if (::ioctl(fd_, SIOCETHTOOL, &ifr) != 0) return Error::FromErrno("SIOCETHTOOL", errno);
  return Status::Ok();
}

EthtoolReader::EthtoolReader(std::unique_ptr<EthtoolIoctl> ioctl) : ioctl_(std::move(ioctl)) {}

namespace {
template <class T>
void PutHeader(std::vector<std::uint8_t>& buf, const T& hdr) {
  std::memcpy(buf.data(), &hdr, sizeof(hdr));
}
Error WithNetdev(const std::string& ifname, std::string_view step, const Error& e) {
  return Error{ifname + ": " + std::string(step) + ": " + e.message, e.errno_value};
}
}  // namespace

Status EthtoolReader::ReadRawStats(const std::string& ifname, RawDriverStats& out) {
  // 1. How many stats.
  std::vector<std::uint8_t> info_buf(sizeof(ethtool_sset_info) + sizeof(std::uint32_t));
  ethtool_sset_info info{};
  info.cmd = ETHTOOL_GSSET_INFO;
  info.sset_mask = 1ULL << ETH_SS_STATS;
  PutHeader(info_buf, info);
  if (Status st = ioctl_->Call(ifname, info_buf); !st) return WithNetdev(ifname, "ETHTOOL_GSSET_INFO", st.error());
  auto count = ParseSsetInfoReply(info_buf);
  if (!count) return WithNetdev(ifname, "ETHTOOL_GSSET_INFO", count.error());
  out.count = *count;

  // 2. Their names. (The kernel copies out every byte of count slots, so a reused buffer needs no
  // clearing.)
  out.strings.resize(sizeof(ethtool_gstrings) + std::size_t{*count} * ETH_GSTRING_LEN);
  ethtool_gstrings gs{};
  gs.cmd = ETHTOOL_GSTRINGS;
  gs.string_set = ETH_SS_STATS;
  gs.len = *count;
  PutHeader(out.strings, gs);
  if (Status st = ioctl_->Call(ifname, out.strings); !st) return WithNetdev(ifname, "ETHTOOL_GSTRINGS", st.error());
  if (Status st = CheckGstringsReply(out.strings, *count); !st) return WithNetdev(ifname, "ETHTOOL_GSTRINGS", st.error());

  // 3. Their values.
  out.values.resize(sizeof(ethtool_stats) + std::size_t{*count} * sizeof(std::uint64_t));
  ethtool_stats es{};
  es.cmd = ETHTOOL_GSTATS;
  es.n_stats = *count;
  PutHeader(out.values, es);
  if (Status st = ioctl_->Call(ifname, out.values); !st) return WithNetdev(ifname, "ETHTOOL_GSTATS", st.error());
  if (Status st = CheckGstatsReply(out.values, *count); !st) return WithNetdev(ifname, "ETHTOOL_GSTATS", st.error());
  return Status::Ok();
}

Result<std::vector<DriverStat>> EthtoolReader::ReadStats(const std::string& ifname) {
  RawDriverStats raw;
  if (Status st = ReadRawStats(ifname, raw); !st) return st.error();
  std::vector<DriverStat> out;
  out.reserve(raw.count);
  for (std::uint32_t i = 0; i < raw.count; ++i) out.push_back({std::string(raw.name(i)), raw.value(i)});
  return out;
}

Result<std::optional<PauseParam>> EthtoolReader::ReadPause(const std::string& ifname) {
  std::vector<std::uint8_t> buf(sizeof(ethtool_pauseparam));
  ethtool_pauseparam pp{};
  pp.cmd = ETHTOOL_GPAUSEPARAM;
  PutHeader(buf, pp);
  if (Status st = ioctl_->Call(ifname, buf); !st) {
    if (st.error().errno_value == EOPNOTSUPP) return std::optional<PauseParam>{};
    return WithNetdev(ifname, "ETHTOOL_GPAUSEPARAM", st.error());
  }
  auto parsed = ParsePauseParamReply(buf);
  if (!parsed) return WithNetdev(ifname, "ETHTOOL_GPAUSEPARAM", parsed.error());
  return std::optional<PauseParam>{*parsed};
}

}  // namespace rdmahd
