#include "collectors/module_eeprom.h"

#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "facts/module_facts.h"
#include "parsers/module_eeprom.h"

namespace rdmahd {
namespace {

bool IsSff8636(std::uint8_t id) { return id == 0x0C || id == 0x0D || id == 0x11; }
bool IsCmis(std::uint8_t id) { return id == 0x18 || id == 0x19 || id == 0x1E; }

std::string Note(const std::string& netdev, const Error& e) {
  switch (e.errno_value) {
    case ENOENT:
      return e.message;  // the family is not registered
    case EOPNOTSUPP:
      return "the driver of " + netdev + " gives no module EEPROM access (EOPNOTSUPP: a virtual NIC, or no cage)" +
             (e.message.find("CAP_NET_ADMIN") != std::string::npos ? "; the SIOCETHTOOL fallback needs CAP_NET_ADMIN"
                                                                   : "");
    case EIO:
    case ENODEV:
      return "no module answers in the cage of " + netdev + " (" + e.message + "): empty cage, or a module that "
             "does not respond";
    default:
      return netdev + ": " + e.message;
  }
}

}  // namespace

void ModuleCollector::ReadCapture(const NodeFs& fs, const std::string& name, ModuleNetdevFacts& f,
                                  CollectorOutcome& outcome) const {
  const std::string command = "ethtool -m " + name + " raw on";
  if (fs.dcb_dir().empty()) {
    f.note = "not captured: the module EEPROM comes from the node's kernel over netlink and --path.sysfs is not /sys "
             "(capture `" + command + " > DIR/" + name + "/" + kModuleEepromCaptureFile +
             "` on the node, then pass --path.dcb=DIR)";
    return;
  }
  const std::string path = fs.dcb_dir() + "/" + name + "/" + kModuleEepromCaptureFile;
  auto dump = fs.ReadFile(path, kMaxModuleEepromDumpBytes);
  if (!dump) {
    if (dump.error().errno_value == ENOENT) {
      // Relative to --path.dcb: the same capture gives the same verdict wherever it is analysed.
      f.note = "not captured: no " + name + "/" + kModuleEepromCaptureFile + " in --path.dcb (`" + command +
               " > DIR/" + name + "/" + kModuleEepromCaptureFile + "` on the node writes it)";
    } else {
      f.note = dump.error().message;
      outcome.errors.push_back(f.note);
    }
    return;
  }
  DecodeDump(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(dump->data()), dump->size()), path, f,
             outcome);
}

void ModuleCollector::DecodeDump(std::span<const std::uint8_t> dump, const std::string& source, ModuleNetdevFacts& f,
                                 CollectorOutcome& outcome) {
  auto pages = SplitModuleEepromDump(dump);
  auto dom = pages ? DecodeModuleEeprom(*pages) : Result<ModuleDom>(pages.error());
  if (!dom) {
    f.note = source + ": " + dom.error().message;
    outcome.errors.push_back(f.note);
    return;
  }
  f.read = true;
  f.dom = std::make_shared<const ModuleDom>(std::move(*dom));
}

Result<std::vector<std::uint8_t>> ReadModuleEepromIoctl(EthtoolIoctl& ioctl, const std::string& ifname) {
  ethtool_modinfo info{};
  info.cmd = ETHTOOL_GMODULEINFO;
  std::vector<std::uint8_t> buf(sizeof(info));
  std::memcpy(buf.data(), &info, sizeof(info));
  if (Status st = ioctl.Call(ifname, buf); !st) return st.error();
  std::memcpy(&info, buf.data(), sizeof(info));
  if (info.eeprom_len == 0 || info.eeprom_len > kMaxModuleEepromDumpBytes) {
    return Error{"ETHTOOL_GMODULEINFO: a module EEPROM of " + std::to_string(info.eeprom_len) + " bytes", EIO};
  }
  ethtool_eeprom request{};
  request.cmd = ETHTOOL_GMODULEEEPROM;
  request.offset = 0;
  request.len = info.eeprom_len;
  buf.assign(sizeof(request) + info.eeprom_len, 0);
  std::memcpy(buf.data(), &request, sizeof(request));
  if (Status st = ioctl.Call(ifname, buf); !st) return st.error();
  return std::vector<std::uint8_t>(buf.begin() + sizeof(request), buf.end());
}

ModuleCollector::ModuleCollector()
    : ModuleCollector(std::make_unique<MnlGenlTransport>(ETHTOOL_GENL_NAME), std::make_unique<SocketEthtoolIoctl>()) {}
ModuleCollector::ModuleCollector(std::unique_ptr<GenlTransport> transport, std::unique_ptr<EthtoolIoctl> ioctl)
    : transport_(std::move(transport)), ioctl_(std::move(ioctl)) {}

Result<std::vector<std::uint8_t>> ModuleCollector::ReadHalfPage(const std::string& ifname, const ModuleEepromRead& read) {
  auto answer = ExchangeGenl(*transport_, seq_, /*dump=*/false, [&](std::uint16_t family, std::uint32_t seq) {
    return BuildModuleEepromGetRequest(family, ifname, read, seq);
  });
  if (!answer) return answer.error();
  return ParseModuleEepromReply(answer->datagrams.front(), answer->family_id, read.length, answer->seq);
}

Status ModuleCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  ModuleEepromFacts facts;
  const std::vector<std::string> netdevs = ctx.topology.Netdevs();
  facts.netdevs.reserve(netdevs.size());
  for (const std::string& name : netdevs) {
    ModuleNetdevFacts f;
    f.netdev = name;
    if (!ctx.fs.asks_kernel()) {
      ReadCapture(ctx.fs, name, f, outcome);
      facts.netdevs.push_back(std::move(f));
      continue;
    }
    auto lower = ReadHalfPage(name, {});
    const bool netlink_cannot = !lower && (lower.error().errno_value == EOPNOTSUPP || lower.error().errno_value == ENOENT);
    if (netlink_cannot && ioctl_ != nullptr) {
      auto dump = ReadModuleEepromIoctl(*ioctl_, name);
      if (dump) {
        DecodeDump(*dump, name + " (SIOCETHTOOL)", f, outcome);
        facts.netdevs.push_back(std::move(f));
        continue;
      }
      if (dump.error().errno_value == EPERM) {
        lower = Error{lower.error().message + "; the SIOCETHTOOL fallback needs CAP_NET_ADMIN",
                      lower.error().errno_value};
      } else if (dump.error().errno_value != EOPNOTSUPP) {
        lower = dump.error();  // the ioctl's answer is the closer one (EIO: an empty cage)
      }
    }
    if (!lower || lower->empty()) {
      const Error e = lower ? Error{"the module answered with no bytes", EIO} : lower.error();
      f.note = Note(name, e);
      // Not failures: no access, an empty cage, the netdev gone, no ethtool netlink (before 5.6).
      if (e.errno_value != EOPNOTSUPP && e.errno_value != EIO && e.errno_value != ENODEV && e.errno_value != ENOENT)
        outcome.errors.push_back(f.note);
      facts.netdevs.push_back(std::move(f));
      continue;
    }
    // Optional pages: one the module lacks or refuses is left empty.
    auto optional = [&](const ModuleEepromRead& read) {
      auto bytes = ReadHalfPage(name, read);
      return bytes ? std::move(*bytes) : std::vector<std::uint8_t>{};
    };
    const std::uint8_t id = (*lower)[0];
    const bool flat_8636 = lower->size() > 2 && ((*lower)[2] & 0x04) != 0;
    const bool flat_cmis = lower->size() > 2 && ((*lower)[2] & 0x80) != 0;
    std::vector<std::uint8_t> upper00 = optional({.offset = 128});
    std::vector<std::uint8_t> a2, upper01, upper02, upper03, upper11;
    if (id == 0x03) {
      a2 = optional({.i2c_address = 0x51});
    } else if (IsSff8636(id) && !flat_8636) {
      upper03 = optional({.offset = 128, .page = 0x03});
    } else if (IsCmis(id) && !flat_cmis) {
      upper01 = optional({.offset = 128, .page = 0x01});
      upper02 = optional({.offset = 128, .page = 0x02});
      upper11 = optional({.offset = 128, .page = 0x11});
    }
    const ModuleEepromPages pages{*lower, upper00, a2, upper01, upper02, upper03, upper11};
    auto dom = DecodeModuleEeprom(pages);
    if (!dom) {
      f.note = name + ": " + dom.error().message;
    } else {
      f.read = true;
      f.dom = std::make_shared<const ModuleDom>(std::move(*dom));
    }
    facts.netdevs.push_back(std::move(f));
  }
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

namespace {

// The four thresholds of one quantity, converted to base units by `scale`.
void AddThresholds(const MetricSink::FamilyRef& family, const std::string& netdev,
                   const std::optional<ModuleThresholds>& t, double scale) {
  if (!t) return;
  family.Add({{"netdev", netdev}, {"threshold", "high_alarm"}}, t->high_alarm * scale);
  family.Add({{"netdev", netdev}, {"threshold", "low_alarm"}}, t->low_alarm * scale);
  family.Add({{"netdev", netdev}, {"threshold", "high_warning"}}, t->high_warning * scale);
  family.Add({{"netdev", netdev}, {"threshold", "low_warning"}}, t->low_warning * scale);
}

}  // namespace

void ModuleCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const auto* facts = snapshot.Get<ModuleEepromFacts>();
  if (facts == nullptr) return;
  auto info = sink.Gauge("rdma_module_info",
                         "1 for the module in an RDMA netdev's cage: its identifier (SFF-8024), vendor, part number "
                         "and serial number, as `ethtool -m` prints them.");
  auto dom = sink.Gauge("rdma_module_diagnostics_present",
                        "1 when the module reports digital diagnostics (temperature, power), 0 when it has none (a "
                        "passive copper cable, a module without monitoring).");
  auto temp = sink.Gauge("rdma_module_temperature_celsius", "The module's internal temperature.");
  auto volts = sink.Gauge("rdma_module_supply_voltage_volts", "The module's supply voltage.");
  auto bias = sink.Gauge("rdma_module_lane_tx_bias_amperes", "The laser bias current of one transmit lane.");
  auto txp = sink.Gauge("rdma_module_lane_tx_power_watts", "The optical power one transmit lane sends.");
  auto rxp = sink.Gauge("rdma_module_lane_rx_power_watts", "The optical power one receive lane gets (average or OMA).");
  auto laser_off = sink.Gauge("rdma_module_lane_laser_off",
                              "1 when a lane's transmitter is disabled or its bias and TX power both read 0.");
  auto temp_t = sink.Gauge("rdma_module_temperature_threshold_celsius",
                           "The module's own temperature alarm and warning thresholds.");
  auto volts_t = sink.Gauge("rdma_module_supply_voltage_threshold_volts",
                            "The module's own supply voltage alarm and warning thresholds.");
  auto bias_t = sink.Gauge("rdma_module_tx_bias_threshold_amperes",
                           "The module's own laser bias alarm and warning thresholds (every lane).");
  auto txp_t = sink.Gauge("rdma_module_tx_power_threshold_watts",
                          "The module's own TX power alarm and warning thresholds (every lane).");
  auto rxp_t = sink.Gauge("rdma_module_rx_power_threshold_watts",
                          "The module's own RX power alarm and warning thresholds (every lane).");
  auto checksum = sink.Gauge("rdma_module_eeprom_checksum_ok",
                             "1 when a checksum of the module's memory map matches its bytes, 0 when it does not "
                             "(then nothing else of the module is exported: its identity and thresholds cannot be "
                             "trusted, nor readings decoded with them).");
  for (const ModuleNetdevFacts& f : facts->netdevs) {
    if (!f.read) continue;
    const ModuleDom& m = *f.dom;
    for (const ModuleChecksum& c : m.checksums) checksum.Add({{"netdev", f.netdev}, {"checksum", c.label}}, c.ok() ? 1 : 0);
    if (m.FailedChecksum() != nullptr) continue;
    info.Add({{"netdev", f.netdev}, {"identifier", m.identifier_name}, {"vendor", m.vendor_name},
              {"part_number", m.vendor_part_number}, {"serial_number", m.vendor_serial}},
             1);
    dom.Add({{"netdev", f.netdev}}, m.has_dom ? 1 : 0);
    if (!m.has_dom) continue;
    if (m.temperature_c) temp.Add({{"netdev", f.netdev}}, *m.temperature_c);
    if (m.supply_voltage_v) volts.Add({{"netdev", f.netdev}}, *m.supply_voltage_v);
    for (const ModuleLane& lane : m.lanes) {
      const std::string n = std::to_string(lane.number);
      if (lane.tx_bias_ma) bias.Add({{"netdev", f.netdev}, {"lane", n}}, *lane.tx_bias_ma / 1e3);
      if (lane.tx_power_mw) txp.Add({{"netdev", f.netdev}, {"lane", n}}, *lane.tx_power_mw / 1e3);
      if (lane.rx_power_mw) rxp.Add({{"netdev", f.netdev}, {"lane", n}}, *lane.rx_power_mw / 1e3);
      laser_off.Add({{"netdev", f.netdev}, {"lane", n}}, lane.laser_off ? 1 : 0);
    }
    AddThresholds(temp_t, f.netdev, m.temperature_thresholds_c, 1);
    AddThresholds(volts_t, f.netdev, m.voltage_thresholds_v, 1);
    AddThresholds(bias_t, f.netdev, m.tx_bias_thresholds_ma, 1e-3);
    AddThresholds(txp_t, f.netdev, m.tx_power_thresholds_mw, 1e-3);
    AddThresholds(rxp_t, f.netdev, m.rx_power_thresholds_mw, 1e-3);
  }
}

RDMAHD_REGISTER_COLLECTOR("module_eeprom", ModuleCollector,
                          "the optic or cable in each RDMA netdev's cage: identity, temperature, voltage, per-lane "
                          "bias and TX/RX power, its thresholds (module EEPROM over ethtool netlink)");

}  // namespace rdmahd
