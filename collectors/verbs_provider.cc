#include "collectors/verbs_provider.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

namespace rdmahd {
namespace {

// libibverbs returns an errno value from the query calls (older providers returned -1 and set
// errno); either way the caller gets a positive errno, EIO when nothing better is known.
int QueryErrno(int rc) {
  if (rc > 0) return rc;
  return errno != 0 ? errno : EIO;
}

std::uint32_t NonNegative(int v) { return v < 0 ? 0 : static_cast<std::uint32_t>(v); }

// The device list of one call. Opened contexts outlive it (see the header).
class DeviceList {
 public:
  DeviceList() { list_ = ibv_get_device_list(&count_); }
  ~DeviceList() {
    if (list_ != nullptr) ibv_free_device_list(list_);
  }
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;

  bool ok() const { return list_ != nullptr; }
  int size() const { return list_ != nullptr ? count_ : 0; }
  ibv_device* at(int i) const { return list_[i]; }

 private:
  ibv_device** list_ = nullptr;
  int count_ = 0;
};

class LibibverbsDeviceHandle : public VerbsDeviceHandle {
 public:
  LibibverbsDeviceHandle(std::string name, ibv_context* context) : name_(std::move(name)), context_(context) {}
  ~LibibverbsDeviceHandle() override { ibv_close_device(context_); }
  LibibverbsDeviceHandle(const LibibverbsDeviceHandle&) = delete;
  LibibverbsDeviceHandle& operator=(const LibibverbsDeviceHandle&) = delete;

  Result<VerbsDeviceAttrs> QueryDevice() override {
    ibv_device_attr a;
    std::memset(&a, 0, sizeof a);
    errno = 0;
    if (int rc = ibv_query_device(context_, &a); rc != 0) {
      return Error::FromErrno("ibv_query_device " + name_, QueryErrno(rc));
    }
    VerbsDeviceAttrs out;
    out.max_mr_size = a.max_mr_size;
    out.max_qp = NonNegative(a.max_qp);
    out.max_qp_wr = NonNegative(a.max_qp_wr);
    out.max_sge = NonNegative(a.max_sge);
    out.max_cq = NonNegative(a.max_cq);
    out.max_cqe = NonNegative(a.max_cqe);
    out.max_mr = NonNegative(a.max_mr);
    out.max_pd = NonNegative(a.max_pd);
    out.max_srq = NonNegative(a.max_srq);
    out.max_srq_wr = NonNegative(a.max_srq_wr);
    out.max_qp_rd_atom = NonNegative(a.max_qp_rd_atom);
    out.phys_port_cnt = a.phys_port_cnt;
    return out;
  }

  Result<VerbsPortAttrs> QueryPort(std::uint32_t port) override {
    ibv_port_attr a;
    std::memset(&a, 0, sizeof a);
    errno = 0;
    if (port == 0 || port > 255) {
      return Error::FromErrno("ibv_query_port " + name_ + "/" + std::to_string(port), EINVAL);
    }
    if (int rc = ibv_query_port(context_, static_cast<std::uint8_t>(port), &a); rc != 0) {
      return Error::FromErrno("ibv_query_port " + name_ + "/" + std::to_string(port), QueryErrno(rc));
    }
    VerbsPortAttrs out;
    out.port = port;
    out.state = static_cast<std::uint32_t>(a.state);
    out.active_mtu_bytes = IbvMtuToBytes(a.active_mtu);
    out.max_mtu_bytes = IbvMtuToBytes(a.max_mtu);
    out.gid_tbl_len = NonNegative(a.gid_tbl_len);
    out.max_msg_sz = a.max_msg_sz;
    return out;
  }

 private:
  std::string name_;
  ibv_context* context_;
};

class LibibverbsProvider : public VerbsProvider {
 public:
  Result<std::vector<VerbsDeviceId>> ListDevices() override {
    errno = 0;
    DeviceList list;
    if (!list.ok()) {
      // ENOSYS: no uverbs ABI in sysfs (ib_uverbs not loaded, or no RDMA hardware at all).
      if (errno == ENOSYS || errno == ENOENT || errno == 0) return std::vector<VerbsDeviceId>{};
      return Error::FromErrno("ibv_get_device_list", errno);
    }
    std::vector<VerbsDeviceId> out;
    for (int i = 0; i < list.size(); ++i) out.push_back(IdOf(list.at(i)));
    return out;
  }

  Result<std::unique_ptr<VerbsDeviceHandle>> Open(const VerbsDeviceId& id) override {
    errno = 0;
    DeviceList list;
    if (!list.ok()) return Error::FromErrno("ibv_get_device_list (to open " + id.name + ")", errno ? errno : ENODEV);
    for (int i = 0; i < list.size(); ++i) {
      ibv_device* dev = list.at(i);
      if (!(IdOf(dev) == id)) continue;
      errno = 0;
      ibv_context* context = ibv_open_device(dev);
      if (context == nullptr) {
        const int err = errno != 0 ? errno : ENODEV;
        return Error::FromErrno("ibv_open_device " + id.name + " (/dev/infiniband/" + dev->dev_name + ")", err);
      }
      return std::unique_ptr<VerbsDeviceHandle>(std::make_unique<LibibverbsDeviceHandle>(id.name, context));
    }
    return Error::FromErrno("ibv_open_device " + id.name + ": no longer listed by libibverbs", ENODEV);
  }

 private:
  static VerbsDeviceId IdOf(ibv_device* dev) {
    VerbsDeviceId id;
    const char* name = ibv_get_device_name(dev);
    id.name = name != nullptr ? name : "";
    if (int index = ibv_get_device_index(dev); index >= 0) id.kernel_index = static_cast<std::uint32_t>(index);
    return id;
  }
};

}  // namespace

std::optional<std::uint32_t> IbvMtuToBytes(int mtu_enum) {
  if (mtu_enum < IBV_MTU_256 || mtu_enum > IBV_MTU_4096) return std::nullopt;
  return 128u << mtu_enum;  // 1 -> 256, 5 -> 4096
}

std::unique_ptr<VerbsProvider> MakeLibibverbsProvider() { return std::make_unique<LibibverbsProvider>(); }

}  // namespace rdmahd
