// RAII owners for the verbs and rdma_cm objects a probe session creates: one owner per object,
// each destroying exactly one thing. A session declares them in creation order (event channel,
// cm id, PD, MR, completion channel, CQ, QP), so C++ destroys them in exact reverse order; a
// failing destroy is recorded in the session's TeardownLog and the teardown goes on (a leaked QP
// is bad, a leaked QP plus everything after it is worse). Nothing throws, nothing here logs (core
// code): the prober turns teardown errors into a local_resources failure, the responder logs them.
//
// The QP belongs to the cm id (rdma_create_qp/rdma_destroy_qp): rdma_cm drives it through INIT
// (create), RTR and RTS (connect/accept), which is why there is no ibv_modify_qp here.
#pragma once

#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace rdmahd {

// What went wrong while tearing a session down (each entry: which object, errno text).
struct TeardownLog {
  std::vector<std::string> errors;
};

// Records one failed destroy. rc: the call's return value (a positive errno, or
// -1 with errno set).
void RecordVerbsTeardownError(const char* what, int rc, TeardownLog* log);

// Owns one T* destroyed by `destroy` (returns 0 or an errno-style value, like the verbs calls).
// Move-only. Reset() destroys now; the destructor does it if Reset() was not called.
template <class T>
class VerbsOwner {
 public:
  using Destroy = int (*)(T*);
  VerbsOwner() = default;
  VerbsOwner(T* object, Destroy destroy, const char* what, TeardownLog* log)
      : object_(object), destroy_(destroy), what_(what), log_(log) {}
  VerbsOwner(VerbsOwner&& o) noexcept { *this = std::move(o); }
  VerbsOwner& operator=(VerbsOwner&& o) noexcept {
    if (this != &o) {
      Reset();
      object_ = std::exchange(o.object_, nullptr);
      destroy_ = o.destroy_;
      what_ = o.what_;
      log_ = o.log_;
    }
    return *this;
  }
  VerbsOwner(const VerbsOwner&) = delete;
  VerbsOwner& operator=(const VerbsOwner&) = delete;
  ~VerbsOwner() { Reset(); }

  T* get() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }
  // Gives up ownership without destroying (rdma_cm took the object over).
  T* release() { return std::exchange(object_, nullptr); }
  void Reset() {
    T* object = std::exchange(object_, nullptr);
    if (object == nullptr || destroy_ == nullptr) return;
    const int rc = destroy_(object);
    if (rc != 0) RecordVerbsTeardownError(what_, rc, log_);
  }

 private:
  T* object_ = nullptr;
  Destroy destroy_ = nullptr;
  const char* what_ = "";
  TeardownLog* log_ = nullptr;
};

using EventChannelOwner = VerbsOwner<rdma_event_channel>;
using CmIdOwner = VerbsOwner<rdma_cm_id>;
using PdOwner = VerbsOwner<ibv_pd>;
using MrOwner = VerbsOwner<ibv_mr>;
using CompChannelOwner = VerbsOwner<ibv_comp_channel>;

// The CQ needs its completion events acknowledged before it can be destroyed, so its owner counts
// the events it took from the channel.
class CqOwner {
 public:
  CqOwner() = default;
  CqOwner(ibv_cq* cq, TeardownLog* log);
  CqOwner(CqOwner&&) noexcept;
  CqOwner& operator=(CqOwner&&) noexcept;
  ~CqOwner() { Reset(); }
  ibv_cq* get() const { return cq_; }
  // One more event taken with ibv_get_cq_event; acknowledged in batches (and before destroy).
  void CountEvent();
  void Reset();

 private:
  ibv_cq* cq_ = nullptr;
  unsigned unacked_events_ = 0;
  TeardownLog* log_ = nullptr;
};

// The QP created on a cm id with rdma_create_qp; destroyed with rdma_destroy_qp on the same id.
class CmQpOwner {
 public:
  CmQpOwner() = default;
  explicit CmQpOwner(rdma_cm_id* id) : id_(id) {}
  CmQpOwner(CmQpOwner&& o) noexcept : id_(std::exchange(o.id_, nullptr)) {}
  CmQpOwner& operator=(CmQpOwner&& o) noexcept {
    if (this != &o) { Reset(); id_ = std::exchange(o.id_, nullptr); }
    return *this;
  }
  ~CmQpOwner() { Reset(); }
  ibv_qp* get() const { return id_ != nullptr ? id_->qp : nullptr; }
  void Reset();

 private:
  rdma_cm_id* id_ = nullptr;
};

// Page-aligned, zeroed memory for a memory region (freed after the MR that covers it).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  static Result<AlignedBuffer> Allocate(std::size_t bytes);
  std::uint8_t* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free { void operator()(std::uint8_t* p) const; };
  std::unique_ptr<std::uint8_t, Free> data_;
  std::size_t size_ = 0;
};

// Everything one probe session (prober or responder side) holds, in creation order; the members'
// reverse destruction order is the teardown order. `log` is declared first so it outlives them.
struct VerbsSession {
  TeardownLog log;
  EventChannelOwner channel;
  CmIdOwner id;
  PdOwner pd;
  AlignedBuffer buffer;
  MrOwner mr;
  CompChannelOwner comp_channel;
  CqOwner cq;
  CmQpOwner qp;
  std::uint32_t max_inline = 0;  // what the QP accepted

  VerbsSession() = default;
  // Destroys everything now, in the same reverse order as the destructor, so the caller can read
  // `log` afterwards.
  void Teardown();
  VerbsSession(const VerbsSession&) = delete;
  VerbsSession& operator=(const VerbsSession&) = delete;
};

// Creates the event channel (non-blocking fd, so a wait is a poll with a timeout).
Status CreateEventChannel(VerbsSession& s);
// Creates an RC (RDMA_PS_TCP) cm id on the session's channel.
Status CreateCmId(VerbsSession& s);
// Adopts an id rdma_cm created (a connect request), moving it onto the session's own channel.
Status AdoptCmId(VerbsSession& s, rdma_cm_id* id);

struct QueueSizes {
  std::uint32_t send_depth = 16;
  std::uint32_t recv_depth = 16;
  std::uint32_t inline_bytes = 0;  // asked for; the QP may give more, or none (then retried without)
};
// PD, `buffer_bytes` registered with `access`, completion channel, CQ (armed on demand), and the
// QP on the cm id (whose verbs context must be known: address resolved, or a connect request).
Status CreateQueueResources(VerbsSession& s, std::size_t buffer_bytes, int access, const QueueSizes& sizes);

// How long a ping-pong (prober and responder alike) spins on its CQ after the last completion
// before it sleeps on the completion channel. Within a round a reply is measured without a
// wake-up, as perftest's busy poll measures it; a peer that goes silent costs this much CPU, then
// none. A shorter window can lock whole rounds into tick-long round trips on a loaded host with a
// software device: a thread that slept is woken onto the CPU where the other end spins, and the
// two then share it (docs/performance.md, "Peer probes: accuracy against perftest").
inline constexpr auto kSpinWithoutProgress = std::chrono::milliseconds(20);

// Waits for work completions: spins while `spin_until` is in the future (a round in progress),
// then arms the CQ and sleeps on the completion channel fd, never past `deadline`. Returns the
// number of completions stored in `wc` (>= 1), 0 on deadline, or an Error. `extra_fd` (>= 0)
// also ends the wait when readable (returns 0): the cm event channel, to see a disconnect.
Result<int> WaitCompletions(VerbsSession& s, ibv_wc* wc, int max_wc, std::chrono::steady_clock::time_point spin_until,
                            std::chrono::steady_clock::time_point deadline, int extra_fd = -1);

// Posts one receive of `length` bytes at `addr` (inside the session's registered buffer).
Status PostRecv(VerbsSession& s, std::uint8_t* addr, std::uint32_t length);

// The message each side of a ping-pong posts: a SEND of the first `size` bytes of the session's
// registered buffer, inline when the QP accepted that many inline bytes. SendWindow sets its
// signaling and wr_id before each post. It holds the scatter entry its request points to, so it is
// neither copied nor moved.
struct PingPongSend {
  PingPongSend(const VerbsSession& s, std::uint32_t size);
  PingPongSend(const PingPongSend&) = delete;
  PingPongSend& operator=(const PingPongSend&) = delete;

  ibv_sge sge;
  ibv_send_wr wr{};
};

// Selective signaling of a ping-pong's sends, as perftest's latency tests do: only one send in
// `every` asks for a completion, and that completion retires it and every unsignaled send posted
// before it (a QP completes its send queue in order). The device then writes one send completion
// per `every` messages instead of one per message: less work per round trip for a NIC, and on a
// software device (rxe) CPU time taken from the very round trips being measured. A send is also
// signaled when it fills the queue, so a full queue always has a completion coming.
class SendWindow {
 public:
  SendWindow(std::uint32_t depth, std::uint32_t every) : depth_(depth), every_(every < 1 ? 1 : every) {}
  // False while the queue is full: wait for a send completion (Retire) before posting.
  bool CanPost() const { return outstanding_ < depth_; }
  // Sets IBV_SEND_SIGNALED and wr_id on `wr` for the next send (`last`: the final one of a
  // round, always signaled so the round leaves nothing unaccounted). Call before posting it.
  void Prepare(ibv_send_wr& wr, bool last) {
    const bool signal = last || run_ + 1 >= every_ || outstanding_ + 1 >= depth_;
    wr.send_flags = signal ? (wr.send_flags | IBV_SEND_SIGNALED) : (wr.send_flags & ~unsigned{IBV_SEND_SIGNALED});
    wr.wr_id = signal ? run_ + 1 : 0;  // the sends this completion retires
  }
  // Call after the post of `wr` succeeded.
  void Posted(const ibv_send_wr& wr) {
    ++outstanding_;
    run_ = (wr.send_flags & IBV_SEND_SIGNALED) != 0 ? 0 : run_ + 1;
  }
  // A send completion: retires the sends its wr_id counts.
  void Retire(std::uint64_t wr_id) {
    outstanding_ -= static_cast<std::uint32_t>(std::min<std::uint64_t>(wr_id, outstanding_));
  }
  std::uint32_t outstanding() const { return outstanding_; }

 private:
  std::uint32_t depth_;
  std::uint32_t every_;
  std::uint32_t outstanding_ = 0;  // posted, not yet retired by a completion
  std::uint32_t run_ = 0;          // unsignaled sends since the last signaled one
};

// The bounded `reason` for a failed work completion: "wc_" + the status name in lower case.
std::string WcStatusReason(ibv_wc_status status);

}  // namespace rdmahd
