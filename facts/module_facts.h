// Facts of the "module_eeprom" collector: the pluggable module (optic or cable) in the cage of each
// Ethernet netdev behind an RDMA port, decoded from its EEPROM pages (parsers/module_eeprom.h):
// identity, temperature, supply voltage, per-lane TX bias, TX and RX power, the module's own
// alarm and warning thresholds and its flags. Data only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "facts/module_dom.h"

namespace rdmahd {

struct ModuleNetdevFacts {
  std::string netdev;
  // False when the module is unknown (not asked: a capture; a driver without module EEPROM
  // access, EOPNOTSUPP; an empty cage; pages that identify no module): `note` says why.
  bool read = false;
  std::string note;
  // Set when read; dom->has_dom false: no diagnostics (dom->no_dom_reason says why). Held by pointer:
  // a decoded module is some 500 bytes, and a node whose modules are not read holds none.
  std::shared_ptr<const ModuleDom> dom;
};

struct ModuleEepromFacts {
  std::vector<ModuleNetdevFacts> netdevs;  // by netdev name
};

}  // namespace rdmahd
