// Facts of the "verbs" collector (collectors/verbs_devices.h): what only libibverbs tells about
// each RDMA device. Data only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmahd {

// The ibv_query_device limits operators size jobs by. They are fixed for the life of a device.
struct VerbsDeviceAttrs {
  std::uint64_t max_mr_size = 0;  // bytes one memory region may span
  std::uint32_t max_qp = 0;
  std::uint32_t max_qp_wr = 0;    // work requests per send/receive queue
  std::uint32_t max_sge = 0;      // scatter/gather entries per work request
  std::uint32_t max_cq = 0;
  std::uint32_t max_cqe = 0;      // entries per completion queue
  std::uint32_t max_mr = 0;
  std::uint32_t max_pd = 0;
  std::uint32_t max_srq = 0;
  std::uint32_t max_srq_wr = 0;
  std::uint32_t max_qp_rd_atom = 0;  // outstanding RDMA reads/atomics a QP may have as responder
  std::uint32_t phys_port_cnt = 0;
};

// ibv_query_port, converted: MTU enums to bytes, everything else as the kernel reports it.
struct VerbsPortAttrs {
  std::uint32_t port = 0;
  std::uint32_t state = 0;  // enum ibv_port_state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER
  std::optional<std::uint32_t> active_mtu_bytes;  // nullopt when the enum is not 1..5
  std::optional<std::uint32_t> max_mtu_bytes;
  std::uint32_t gid_tbl_len = 0;
  std::uint32_t max_msg_sz = 0;  // bytes
};

struct VerbsDeviceFacts {
  std::string name;  // e.g. mlx5_0
  VerbsDeviceAttrs attrs;
  std::vector<VerbsPortAttrs> ports;  // ports that answered ibv_query_port, by number
};

// A device libibverbs lists but that could not be opened or queried (EACCES on its uverbs
// character device, a device going away): its limits are unknown, not zero.
struct VerbsUnopenedDevice {
  std::string name;
  std::string reason;  // the error, naming the device (and the uverbs node when known) and errno
};

struct VerbsFacts {
  // False when libibverbs was not asked (the sysfs root is not the live /sys); `not_queried_reason`
  // says why and `devices` is empty.
  bool queried = false;
  std::string not_queried_reason;
  std::vector<VerbsDeviceFacts> devices;  // by name, after config.devices filtering
  std::vector<VerbsUnopenedDevice> unopened;  // by name, after filtering
};

}  // namespace rdmahd
