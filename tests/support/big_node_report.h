// A Report of a big node built in memory, for tests of the surfaces that must stay bounded
// (status page, JSON API filters): `devices` devices mlx5_0.. with one RoCE port each, netdev
// ens<i>, ACTIVE. Per device: ok verdicts of port_active (the port), port_errors (the port) and
// roce_mtu (the netdev); unknown verdicts of pcie_link (the device) and roce_ecn (the netdev). One
// failed verdict: port_active of mlx5_<failed_device>/1 (instead of its ok one).
#pragma once

#include <string>

#include "core/collection_engine.h"
#include "core/topology.h"
#include "facts/rdma_device_facts.h"

namespace rdmahd::testing {

inline Report BigNodeReport(int devices, int failed_device) {
  Report r;
  Topology t;
  t.class_dir_present = true;
  RdmaDevicesFacts facts;
  for (int i = 0; i < devices; ++i) {
    const std::string dev = "mlx5_" + std::to_string(i), port = dev + "/1", netdev = "ens" + std::to_string(i);
    TopologyDevice d;
    d.name = dev;
    TopologyPort p;
    p.port = 1;
    p.link_layer = "Ethernet";
    d.ports.push_back(p);
    t.devices.push_back(d);
    t.links.push_back({dev, 1, netdev});
    RdmaDeviceFacts df;
    df.name = dev;
    df.fw_ver = "22.39.1002";
    RdmaPortFacts pf;
    pf.device = dev;
    pf.port = 1;
    pf.state = SysfsEnumValue{4, "ACTIVE"};
    df.ports.push_back(pf);
    facts.devices.push_back(df);
    if (i == failed_device) {
      r.verdicts.push_back({"port_active", port, Verdict::kFailed, "port DOWN", "rdma link set " + port + " up"});
    } else {
      r.verdicts.push_back({"port_active", port, Verdict::kOk, "port ACTIVE", ""});
    }
    r.verdicts.push_back({"port_errors", port, Verdict::kOk, "no error counter rising", ""});
    r.verdicts.push_back({"roce_mtu", netdev, Verdict::kOk, "MTU 4200", ""});
    r.verdicts.push_back({"pcie_link", dev, Verdict::kUnknown, "PCIe link unknown: not captured", ""});
    r.verdicts.push_back({"roce_ecn", netdev, Verdict::kUnknown, "no ecn folder for " + netdev, ""});
  }
  r.snapshot.Put(t);
  r.snapshot.Put(facts);
  return r;
}

}  // namespace rdmahd::testing
