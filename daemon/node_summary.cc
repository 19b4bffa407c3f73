#include "daemon/node_summary.h"

#include <algorithm>
#include <map>

#include "core/topology.h"
#include "facts/netdev_facts.h"
#include "facts/rdma_device_facts.h"
#include "facts/roce_facts.h"

namespace rdmahd {
namespace {

std::optional<std::vector<int>> EcnPriorities(const EcnRoleFacts& role) {
  if (!role.present) return std::nullopt;
  std::vector<int> on;
  for (int p = 0; p < kDcbPriorities; ++p) {
    if (role.enabled[static_cast<std::size_t>(p)].value_or(false)) on.push_back(p);
  }
  return on;
}

void AddQos(const RoceNetdevFacts& qos, NetdevSummary& n) {
  n.dcb_note = qos.dcb_note;
  if (qos.trust) n.trust = *qos.trust == TrustMode::kDscp ? "dscp" : "pcp";
  n.ecn_np_priorities = EcnPriorities(qos.ecn_np);
  n.ecn_rp_priorities = EcnPriorities(qos.ecn_rp);
  if (!qos.dcb) return;
  n.dcb_supported = qos.dcb->supported;
  if (qos.dcb->pfc) {
    std::vector<int> on;
    for (int p = 0; p < kDcbPriorities; ++p) {
      if (qos.dcb->pfc->Enabled(p)) on.push_back(p);
    }
    n.pfc_priorities = std::move(on);
  }
}

}  // namespace

NodeSummary SummarizeNode(const Report& report) {
  NodeSummary s;
  const auto* topology = report.snapshot.Get<Topology>();
  const auto* devices = report.snapshot.Get<RdmaDevicesFacts>();
  const auto* netdevs = report.snapshot.Get<RdmaNetdevFacts>();
  const auto* qos = report.snapshot.Get<RoceQosFacts>();
  s.devices_known = devices != nullptr;
  s.netdevs_known = netdevs != nullptr;
  s.qos_known = qos != nullptr;
  if (topology == nullptr) return s;

  std::map<std::string, NetdevSummary> by_netdev;
  for (const RdmaNetdev& link : topology->links) {
    NetdevSummary& n = by_netdev[link.netdev];
    n.name = link.netdev;
    n.ports.push_back(link.device + "/" + std::to_string(link.port));
  }
  for (const TopologyDevice& td : topology->devices) {
    // Built in place: moving a finished one trips GCC 12's -Wmaybe-uninitialized at -O2 (optional<int>).
    DeviceSummary& d = s.devices.emplace_back();
    d.name = td.name;
    d.numa_node = td.numa_node;
    d.pci_address = td.pci_address;
    d.ports_unreadable = td.ports_unreadable;
    const RdmaDeviceFacts* facts = nullptr;
    if (devices != nullptr) {
      for (const RdmaDeviceFacts& f : devices->devices) {
        if (f.name == td.name) facts = &f;
      }
    }
    if (facts != nullptr) {
      d.fw_ver = facts->fw_ver;
      d.board_id = facts->board_id;
      d.hca_type = facts->hca_type;
      d.node_guid = facts->node_guid;
      d.node_type = facts->node_type;
    }
    for (const TopologyPort& tp : td.ports) {
      PortSummary p;
      p.port = tp.port;
      p.link_layer = tp.link_layer;
      if (facts != nullptr) {
        for (const RdmaPortFacts& pf : facts->ports) {
          if (pf.port != tp.port) continue;
          if (pf.state) p.state = pf.state->name;
          if (pf.phys_state) p.phys_state = pf.phys_state->name;
          p.rate_bytes_per_second = pf.rate_bytes_per_second;
        }
      }
      for (const RdmaNetdev& link : topology->links) {
        if (link.device == td.name && link.port == static_cast<int>(tp.port)) p.netdevs.push_back(link.netdev);
      }
      d.ports.push_back(std::move(p));
    }
  }
  for (auto& [name, n] : by_netdev) {
    if (netdevs != nullptr) {
      if (const NetdevFacts* f = netdevs->Find(name)) {
        n.present = f->present;
        n.operstate = f->operstate;
        n.mtu = f->mtu;
        n.speed_mbps = f->speed_mbps;
      }
    }
    if (qos != nullptr) {
      if (const RoceNetdevFacts* q = qos->Find(name)) AddQos(*q, n);
    }
    s.netdevs.push_back(std::move(n));
  }
  return s;
}

}  // namespace rdmahd
