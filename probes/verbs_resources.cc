#include "probes/verbs_resources.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>


namespace rdmahd {
namespace {

constexpr unsigned kAckBatch = 64;

int DestroyEventChannel(rdma_event_channel* c) {
  rdma_destroy_event_channel(c);
  return 0;
}
int DestroyCmId(rdma_cm_id* id) { return rdma_destroy_id(id); }
int DeallocPd(ibv_pd* pd) { return ibv_dealloc_pd(pd); }
int DeregMr(ibv_mr* mr) { return ibv_dereg_mr(mr); }
int DestroyCompChannel(ibv_comp_channel* c) { return ibv_destroy_comp_channel(c); }

Status SetNonBlocking(int fd, const char* what) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return Error::FromErrno(what, errno);
  return Status::Ok();
}

}  // namespace

void RecordVerbsTeardownError(const char* what, int rc, TeardownLog* log) {
  const int err = rc == -1 ? errno : (rc < 0 ? -rc : rc);
  if (log != nullptr) log->errors.push_back(std::string(what) + ": " + std::strerror(err));
}

void VerbsSession::Teardown() {
  qp.Reset();
  cq.Reset();
  comp_channel.Reset();
  mr.Reset();
  buffer = AlignedBuffer();
  pd.Reset();
  id.Reset();
  channel.Reset();
}

CqOwner::CqOwner(ibv_cq* cq, TeardownLog* log) : cq_(cq), log_(log) {}
CqOwner::CqOwner(CqOwner&& o) noexcept
    : cq_(std::exchange(o.cq_, nullptr)), unacked_events_(std::exchange(o.unacked_events_, 0)), log_(o.log_) {}
CqOwner& CqOwner::operator=(CqOwner&& o) noexcept {
  if (this != &o) {
    Reset();
    cq_ = std::exchange(o.cq_, nullptr);
    unacked_events_ = std::exchange(o.unacked_events_, 0);
    log_ = o.log_;
  }
  return *this;
}
void CqOwner::CountEvent() {
  if (++unacked_events_ >= kAckBatch) {
    ibv_ack_cq_events(cq_, unacked_events_);
    unacked_events_ = 0;
  }
}
void CqOwner::Reset() {
  ibv_cq* cq = std::exchange(cq_, nullptr);
  if (cq == nullptr) return;
  if (unacked_events_ > 0) ibv_ack_cq_events(cq, std::exchange(unacked_events_, 0));
  if (const int rc = ibv_destroy_cq(cq); rc != 0) RecordVerbsTeardownError("ibv_destroy_cq", rc, log_);
}

void CmQpOwner::Reset() {
  rdma_cm_id* id = std::exchange(id_, nullptr);
  if (id != nullptr && id->qp != nullptr) rdma_destroy_qp(id);  // void: nothing to report
}

void AlignedBuffer::Free::operator()(std::uint8_t* p) const { std::free(p); }

Result<AlignedBuffer> AlignedBuffer::Allocate(std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
  void* p = std::aligned_alloc(kPage, rounded == 0 ? kPage : rounded);
  if (p == nullptr) return Error{"allocate " + std::to_string(bytes) + " bytes for a probe buffer", ENOMEM};
  std::memset(p, 0, rounded == 0 ? kPage : rounded);
  AlignedBuffer b;
  b.data_.reset(static_cast<std::uint8_t*>(p));
  b.size_ = bytes;
  return b;
}

Status CreateEventChannel(VerbsSession& s) {
  rdma_event_channel* c = rdma_create_event_channel();
  if (c == nullptr) return Error::FromErrno("rdma_create_event_channel", errno);
  s.channel = EventChannelOwner(c, DestroyEventChannel, "rdma_destroy_event_channel", &s.log);
  return SetNonBlocking(c->fd, "rdma event channel O_NONBLOCK");
}

Status CreateCmId(VerbsSession& s) {
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(s.channel.get(), &id, nullptr, RDMA_PS_TCP) != 0) return Error::FromErrno("rdma_create_id", errno);
  s.id = CmIdOwner(id, DestroyCmId, "rdma_destroy_id", &s.log);
  return Status::Ok();
}

Status AdoptCmId(VerbsSession& s, rdma_cm_id* id) {
  // Owned from here whatever happens: a connect request's id is ours to destroy.
  s.id = CmIdOwner(id, DestroyCmId, "rdma_destroy_id", &s.log);
  if (rdma_migrate_id(id, s.channel.get()) != 0) return Error::FromErrno("rdma_migrate_id", errno);
  return Status::Ok();
}

Status CreateQueueResources(VerbsSession& s, std::size_t buffer_bytes, int access, const QueueSizes& sizes) {
  ibv_context* ctx = s.id.get()->verbs;
  if (ctx == nullptr) return Error{"cm id has no device yet"};
  ibv_pd* pd = ibv_alloc_pd(ctx);
  if (pd == nullptr) return Error::FromErrno("ibv_alloc_pd", errno);
  s.pd = PdOwner(pd, DeallocPd, "ibv_dealloc_pd", &s.log);

  Result<AlignedBuffer> buffer = AlignedBuffer::Allocate(buffer_bytes);
  if (!buffer.ok()) return buffer.error();
  s.buffer = std::move(*buffer);
  ibv_mr* mr = ibv_reg_mr(pd, s.buffer.data(), s.buffer.size(), access);
  if (mr == nullptr) return Error::FromErrno("ibv_reg_mr " + std::to_string(buffer_bytes) + " bytes", errno);
  s.mr = MrOwner(mr, DeregMr, "ibv_dereg_mr", &s.log);

  ibv_comp_channel* cc = ibv_create_comp_channel(ctx);
  if (cc == nullptr) return Error::FromErrno("ibv_create_comp_channel", errno);
  s.comp_channel = CompChannelOwner(cc, DestroyCompChannel, "ibv_destroy_comp_channel", &s.log);
  if (Status st = SetNonBlocking(cc->fd, "completion channel O_NONBLOCK"); !st.ok()) return st;

  const int cqe = static_cast<int>(sizes.send_depth + sizes.recv_depth);
  ibv_cq* cq = ibv_create_cq(ctx, cqe, nullptr, cc, 0);
  if (cq == nullptr) return Error::FromErrno("ibv_create_cq", errno);
  s.cq = CqOwner(cq, &s.log);

  ibv_qp_init_attr attr{};
  attr.send_cq = cq;
  attr.recv_cq = cq;
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 0;
  attr.cap.max_send_wr = sizes.send_depth;
  attr.cap.max_recv_wr = sizes.recv_depth;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = sizes.inline_bytes;
  if (rdma_create_qp(s.id.get(), pd, &attr) != 0) {
    if (sizes.inline_bytes == 0) return Error::FromErrno("rdma_create_qp", errno);
    attr.cap.max_inline_data = 0;  // a device without inline sends: plain sends are fine
    if (rdma_create_qp(s.id.get(), pd, &attr) != 0) return Error::FromErrno("rdma_create_qp", errno);
  }
  s.qp = CmQpOwner(s.id.get());
  s.max_inline = attr.cap.max_inline_data;
  return Status::Ok();
}

Result<int> WaitCompletions(VerbsSession& s, ibv_wc* wc, int max_wc, std::chrono::steady_clock::time_point spin_until,
                            std::chrono::steady_clock::time_point deadline, int extra_fd) {
  ibv_cq* cq = s.cq.get();
  unsigned spins = 0;
  for (;;) {
    // Spin phase: a ping-pong in progress answers within microseconds; sleeping would measure the
    // scheduler. The clock is read every 32 polls only.
    for (;;) {
      const int n = ibv_poll_cq(cq, max_wc, wc);
      if (n != 0) return n < 0 ? Result<int>(Error{"ibv_poll_cq failed"}) : Result<int>(n);
      if ((++spins & 31) != 0) continue;
      // Every 256 polls (~10 us on a NIC, longer than its round trip, so rarely reached there),
      // let a runnable kernel thread have the CPU: a software device's softirq work, pushed to
      // ksoftirqd, delivers the very completion we wait for. With nothing else runnable this
      // returns at once.
      if ((spins & 255) == 0) sched_yield();
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return 0;
      if (now >= spin_until) break;
    }
    // Sleep phase: arm, re-poll (a completion may have landed before arming), then wait.
    if (const int rc = ibv_req_notify_cq(cq, 0); rc != 0) return Error::FromErrno("ibv_req_notify_cq", rc);
    if (const int n = ibv_poll_cq(cq, max_wc, wc); n != 0)
      return n < 0 ? Result<int>(Error{"ibv_poll_cq failed"}) : Result<int>(n);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return 0;
    pollfd fds[2] = {{s.comp_channel.get()->fd, POLLIN, 0}, {extra_fd, POLLIN, 0}};
    const int ready = poll(fds, extra_fd >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left.count() + 1, 1000)));
    if (ready < 0 && errno != EINTR) return Error::FromErrno("poll completion channel", errno);
    if (extra_fd >= 0 && (fds[1].revents & POLLIN) != 0) {
      // Completions that landed with the event come first: a peer's last answer and its
      // disconnect often arrive together.
      const int n = ibv_poll_cq(cq, max_wc, wc);
      return n < 0 ? Result<int>(Error{"ibv_poll_cq failed"}) : Result<int>(n);
    }
    if ((fds[0].revents & POLLIN) != 0) {
      ibv_cq* ev_cq = nullptr;
      void* ev_ctx = nullptr;
      if (ibv_get_cq_event(s.comp_channel.get(), &ev_cq, &ev_ctx) == 0) s.cq.CountEvent();
    }
    spin_until = std::chrono::steady_clock::time_point{};  // woken: one poll, then sleep again
  }
}

Status PostRecv(VerbsSession& s, std::uint8_t* addr, std::uint32_t length) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(addr), length, s.mr.get()->lkey};
  ibv_recv_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(s.qp.get(), &wr, &bad); rc != 0) return Error::FromErrno("ibv_post_recv", rc);
  return Status::Ok();
}

PingPongSend::PingPongSend(const VerbsSession& s, std::uint32_t size)
    : sge{reinterpret_cast<std::uintptr_t>(s.buffer.data()), size, s.mr.get()->lkey} {
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = size <= s.max_inline ? IBV_SEND_INLINE : 0;
}

std::string WcStatusReason(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return "wc_success";
    case IBV_WC_LOC_LEN_ERR: return "wc_loc_len_err";
    case IBV_WC_LOC_QP_OP_ERR: return "wc_loc_qp_op_err";
    case IBV_WC_LOC_EEC_OP_ERR: return "wc_loc_eec_op_err";
    case IBV_WC_LOC_PROT_ERR: return "wc_loc_prot_err";
    case IBV_WC_WR_FLUSH_ERR: return "wc_wr_flush_err";
    case IBV_WC_MW_BIND_ERR: return "wc_mw_bind_err";
    case IBV_WC_BAD_RESP_ERR: return "wc_bad_resp_err";
    case IBV_WC_LOC_ACCESS_ERR: return "wc_loc_access_err";
    case IBV_WC_REM_INV_REQ_ERR: return "wc_rem_inv_req_err";
    case IBV_WC_REM_ACCESS_ERR: return "wc_rem_access_err";
    case IBV_WC_REM_OP_ERR: return "wc_rem_op_err";
    case IBV_WC_RETRY_EXC_ERR: return "wc_retry_exc_err";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "wc_rnr_retry_exc_err";
    case IBV_WC_LOC_RDD_VIOL_ERR: return "wc_loc_rdd_viol_err";
    case IBV_WC_REM_INV_RD_REQ_ERR: return "wc_rem_inv_rd_req_err";
    case IBV_WC_REM_ABORT_ERR: return "wc_rem_abort_err";
    case IBV_WC_INV_EECN_ERR: return "wc_inv_eecn_err";
    case IBV_WC_INV_EEC_STATE_ERR: return "wc_inv_eec_state_err";
    case IBV_WC_FATAL_ERR: return "wc_fatal_err";
    case IBV_WC_RESP_TIMEOUT_ERR: return "wc_resp_timeout_err";
    case IBV_WC_GENERAL_ERR: return "wc_general_err";
    default: return "wc_other";
  }
}

}  // namespace rdmahd
