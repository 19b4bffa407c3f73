#include "daemon/json_api.h"

#include <algorithm>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/verdict_order.h"
#include "daemon/node_summary.h"

namespace rdmahd {
namespace {

using Json = nlohmann::ordered_json;

template <class T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

std::string Dump(const Json& j) {
  // ASCII only: a C1 control or a bidi override from a capture reaches a terminal as \uNNNN, as
  // control characters already do; a parser reads the same strings back.
  return j.dump(2, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace) + "\n";
}

Json Header() {
  Json j;
  j["schema_version"] = kJsonSchemaVersion;
  j["version"] = RDMAHD_VERSION;
  return j;
}

}  // namespace

namespace {

// `filter` nullptr: every verdict and no "page" (the document `check --output=json` prints).
std::string Checks(const Report& report, int exit_code, const std::vector<std::string>& problems,
                   const VerdictFilter* filter) {
  Json j = Header();
  j["config"] = report.config ? report.config->source : "";
  j["exit_code"] = exit_code;
  auto& verdicts = j["verdicts"] = Json::array();
  std::map<std::string, int> counts{{"ok", 0}, {"warning", 0}, {"failed", 0}, {"unknown", 0}};
  for (const VerdictView r : report.verdicts) ++counts[std::string(VerdictName(r.verdict))];
  // Worst first, as every surface lists them (core/verdict_order.h); one entry per verdict.
  const std::vector<std::size_t> selected =
      filter != nullptr ? SelectVerdicts(report, *filter) : OrderVerdicts(report.verdicts);
  const std::size_t first = filter != nullptr ? std::min(filter->offset, selected.size()) : 0;
  const std::size_t last = filter != nullptr && filter->limit ? std::min(selected.size(), first + *filter->limit)
                                                              : selected.size();
  for (std::size_t k = first; k < last; ++k) {
    const VerdictView r = report.verdicts[selected[k]];
    verdicts.push_back({{"check", r.check},
                        {"subject", r.subject},
                        {"status", VerdictName(r.verdict)},
                        {"reason", r.reason},
                        {"fix", r.fix}});
  }
  auto& collectors = j["collectors"] = Json::array();
  for (const CollectorOutcome& o : report.snapshot.outcomes) {
    collectors.push_back({{"collector", o.collector}, {"success", o.success}, {"errors", o.errors}});
  }
  j["problems"] = problems;
  j["summary"] = counts;
  if (filter != nullptr) {
    j["page"] = {{"total", selected.size()},
                 {"offset", filter->offset},
                 {"limit", OrNull(filter->limit)},
                 {"returned", last - first}};
  }
  return Dump(j);
}

}  // namespace

std::string ChecksDocument(const Report& report, int exit_code, const std::vector<std::string>& problems) {
  return Checks(report, exit_code, problems, nullptr);
}

std::string ChecksDocument(const Report& report, int exit_code, const std::vector<std::string>& problems,
                           const VerdictFilter& filter) {
  return Checks(report, exit_code, problems, &filter);
}

namespace {

// `device` nullopt: every device and netdev.
std::string Devices(const Report& report, std::optional<std::string_view> device) {
  NodeSummary s = SummarizeNode(report);
  if (device) {
    std::erase_if(s.devices, [&](const DeviceSummary& d) { return d.name != *device; });
    const DeviceSubjects subjects(report, std::string(*device));
    std::erase_if(s.netdevs, [&](const NetdevSummary& n) { return !subjects.netdevs().contains(n.name); });
  }
  Json j = Header();
  j["devices_known"] = s.devices_known;
  j["netdevs_known"] = s.netdevs_known;
  j["qos_known"] = s.qos_known;
  auto& devices = j["devices"] = Json::array();
  for (const DeviceSummary& d : s.devices) {
    Json dj;
    dj["name"] = d.name;
    dj["fw_ver"] = OrNull(d.fw_ver);
    dj["board_id"] = OrNull(d.board_id);
    dj["hca_type"] = OrNull(d.hca_type);
    dj["node_guid"] = OrNull(d.node_guid);
    dj["node_type"] = OrNull(d.node_type);
    dj["pci_address"] = OrNull(d.pci_address);
    dj["numa_node"] = OrNull(d.numa_node);
    dj["ports_unreadable"] = OrNull(d.ports_unreadable);
    auto& ports = dj["ports"] = Json::array();
    for (const PortSummary& p : d.ports) {
      ports.push_back({{"port", p.port},
                       {"link_layer", OrNull(p.link_layer)},
                       {"state", OrNull(p.state)},
                       {"phys_state", OrNull(p.phys_state)},
                       {"rate_bytes_per_second", OrNull(p.rate_bytes_per_second)},
                       {"netdevs", p.netdevs}});
    }
    devices.push_back(std::move(dj));
  }
  auto& netdevs = j["netdevs"] = Json::array();
  for (const NetdevSummary& n : s.netdevs) {
    netdevs.push_back({{"name", n.name},
                       {"ports", n.ports},
                       {"present", OrNull(n.present)},
                       {"operstate", OrNull(n.operstate)},
                       {"mtu", OrNull(n.mtu)},
                       {"speed_mbps", OrNull(n.speed_mbps)},
                       {"dcb_supported", OrNull(n.dcb_supported)},
                       {"pfc_priorities", OrNull(n.pfc_priorities)},
                       {"trust", OrNull(n.trust)},
                       {"ecn_np_priorities", OrNull(n.ecn_np_priorities)},
                       {"ecn_rp_priorities", OrNull(n.ecn_rp_priorities)},
                       {"dcb_note", n.dcb_note}});
  }
  return Dump(j);
}

}  // namespace

std::string DevicesDocument(const Report& report) { return Devices(report, std::nullopt); }

std::string DevicesDocument(const Report& report, std::string_view device) { return Devices(report, device); }

}  // namespace rdmahd
