// The "module_eeprom" collector: the module in each RDMA netdev's cage (facts/module_facts.h), its EEPROM
// read page by page with ETHTOOL_MSG_MODULE_EEPROM_GET over the ethtool generic netlink family
// (what `ethtool -m DEV` reads) and decoded by parsers/module_eeprom. The lower page tells the
// memory map; then upper page 00h and, by map: A2h (SFF-8472), page 03h (SFF-8636, when paged),
// pages 01h, 02h and 11h bank 0 (CMIS, when paged). A page the module or driver refuses is left
// out (the decoder says what it lacks). When the kernel's ethtool netlink cannot read module EEPROM
// at all (EOPNOTSUPP: before 5.13; ENOENT: no ethtool netlink), the SIOCETHTOOL ioctl is the
// fallback. On a tree that is not the live /sys the kernel is never
// asked: with --path.dcb=DIR the module is read from DIR/<netdev>/module-eeprom.bin (the flat dump
// `ethtool -m <netdev> raw on` writes: 256 bytes for SFF-8636 and CMIS, 512 for SFF-8472, 640 for
// paged SFF-8636), else it is "not captured". Without module EEPROM access (EOPNOTSUPP), with an empty cage or a module that
// does not answer, the netdev is unknown with the reason, and that is no collector error. A module
// whose memory map fails a checksum (parsers/module_eeprom.h) is exported only as its checksums
// (rdma_module_eeprom_checksum_ok): its identity, readings and thresholds cannot be trusted.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectors/ethtool_stats.h"
#include "collectors/genl_transport.h"
#include "collectors/module_eeprom_netlink.h"
#include "common/result.h"
#include "core/collector.h"

namespace rdmahd {

// The module's flat dump through the SIOCETHTOOL ioctl (ETHTOOL_GMODULEINFO for its length, then
// ETHTOOL_GMODULEEEPROM), what `ethtool -m DEV raw on` writes: for kernels whose ethtool netlink
// has no MODULE_EEPROM_GET (before 5.13) or no ethtool netlink at all. Needs CAP_NET_ADMIN (EPERM
// without). A length of 0 or above kMaxModuleEepromDumpBytes is EIO.
Result<std::vector<std::uint8_t>> ReadModuleEepromIoctl(EthtoolIoctl& ioctl, const std::string& ifname);

inline constexpr const char* kModuleEepromCaptureFile = "module-eeprom.bin";
inline constexpr std::size_t kMaxModuleEepromDumpBytes = 4096;  // the largest real dump is 640

struct ModuleNetdevFacts;

class ModuleCollector : public Collector {
 public:
  ModuleCollector();  // the "ethtool" family through MnlGenlTransport, the ioctl through SocketEthtoolIoctl
  // `ioctl` may be null: no fallback.
  explicit ModuleCollector(std::unique_ptr<GenlTransport> transport, std::unique_ptr<EthtoolIoctl> ioctl = nullptr);
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

 private:
  Result<std::vector<std::uint8_t>> ReadHalfPage(const std::string& ifname, const ModuleEepromRead& read);
  void ReadCapture(const NodeFs& fs, const std::string& name, ModuleNetdevFacts& f, CollectorOutcome& outcome) const;
  // Decodes a flat dump read from `source` into `f` (an error names `source`).
  static void DecodeDump(std::span<const std::uint8_t> dump, const std::string& source, ModuleNetdevFacts& f,
                         CollectorOutcome& outcome);
  std::unique_ptr<GenlTransport> transport_;
  std::unique_ptr<EthtoolIoctl> ioctl_;
  std::uint32_t seq_ = 0;
};

}  // namespace rdmahd
