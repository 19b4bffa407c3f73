// What the host-readiness collectors (pcie, roce_tos, plumbing) share about the RDMA devices of
// the collection's Topology.
#pragma once

#include <optional>
#include <string>

#include "common/node_fs.h"
#include "config/policies.h"
#include "core/topology.h"
#include "facts/plumbing_facts.h"

namespace rdmahd {

// The host collectors take the collection's Topology devices as they are (core/topology.h): a
// device's name, ports (with their link layer), PCI function (device_dir, pci_address) and
// generation are all discovered there, once.

// The kernel module of a software device, known by its name (rdma_rxe for rxe*, siw for siw*);
// nullopt for any other name.
std::optional<std::string> SoftwareDriverModule(const TopologyDevice& d);
// Why there is no PCI function: a software device has none; any other device without device/ is
// a capture that left the link out (or a kernel object this daemon does not know).
std::string NoPciFunctionReason(const TopologyDevice& d);

// `text` (a message or path) with the NodeFs roots written as the kernel's own (/sys, /proc, /dev),
// so reasons read the same on a live node and on a capture, wherever the capture lies.
std::string KernelPaths(const NodeFs& fs, std::string text);

// host.device_access as user and group ids. Names are looked up on this machine (passwd and group
// through NSS) only when `look_up_names`: on a captured node they would name this machine's
// accounts, not the node's, so there only numeric ids count and a name leaves the note saying so.
AccessIdentity ResolveAccess(const HostDeviceAccessPolicy& policy, bool look_up_names);

}  // namespace rdmahd
