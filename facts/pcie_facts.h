// Facts of the "pcie" collector: the PCIe link of the PCI function behind each RDMA device, as the
// kernel reports it in sysfs (current_link_speed/width, max_link_speed/width; readable by anyone)
// and, where the config space can be read past its first 64 bytes (root only), the Device Control
// register's Max_Read_Request_Size and Max_Payload_Size. Data only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmahd {

struct PcieLinkFacts {
  std::string device;                       // RDMA device, e.g. mlx5_0
  bool pci_function = false;                // false: no device/ (rxe, siw); nothing below read
  std::optional<std::string> pci_address;   // "0000:01:00.0"; absent when device/ is not a link
  std::string note;                         // why a value below is absent (file, errno)

  std::optional<double> current_speed_gts;  // current_link_speed "8.0 GT/s PCIe" -> 8.0
  std::optional<double> max_speed_gts;      // max_link_speed
  std::optional<std::uint32_t> current_width;  // current_link_width "4" -> 4 lanes
  std::optional<std::uint32_t> max_width;
  // Raw text of the speed files as the kernel printed them (trimmed), for reasons.
  std::string current_speed_text, max_speed_text;

  std::optional<std::uint32_t> max_read_request_bytes;  // absent: see config_note
  std::optional<std::uint32_t> max_payload_bytes;
  std::string config_note;  // why the config space gave no Device Control register
};

struct PcieFacts {
  std::vector<PcieLinkFacts> devices;  // by RDMA device name
};

}  // namespace rdmahd
