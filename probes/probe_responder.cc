#include "probes/probe_responder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <list>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "common/logging.h"
#include "common/mutex.h"
#include "common/thread_affinity.h"
#include "common/thread_name.h"
#include "probes/rdma_cm_connection.h"
#include "probes/responder_admission.h"
#include "probes/verbs_resources.h"

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kRecvDepth = 64;
constexpr std::uint32_t kSendDepth = 16;
constexpr std::uint32_t kSignalEvery = 8;  // one send completion per 8 answers (SendWindow)
constexpr int kMaxWc = 16;
// A peer has this long to finish connecting once accepted, and to send the next message of a
// latency round; a whole latency session at most kMaxLatencySession; a bandwidth session its
// duration plus kBandwidthSlack. Past that the session ends: a silent peer costs one session slot
// for seconds, never more.
constexpr auto kEstablishTimeout = std::chrono::seconds(3);
constexpr auto kIdleTimeout = std::chrono::seconds(2);
constexpr auto kMaxLatencySession = std::chrono::seconds(60);
constexpr auto kBandwidthSlack = std::chrono::seconds(5);
constexpr auto kLingerForPeer = std::chrono::seconds(1);

struct Session {
  std::unique_ptr<VerbsSession> verbs;
  ProbeHello hello;
  ResponderBudget::Lease lease;
  std::string peer;
  std::atomic<bool> done{false};
  std::thread thread;
};

// A cm event pending on the session's channel ends the session (a disconnect, or an error).
bool PeerLeft(VerbsSession& s) {
  Result<std::optional<CmEvent>> ev = WaitCmEvent(s.channel.get(), Clock::now(), nullptr);
  return !ev.ok() || ev->has_value();
}

// Answers each message with one of the same size. Ends after `iterations` answers, when the peer
// disconnects or stays silent for kIdleTimeout, at kMaxLatencySession, or on stop.
Status ServeLatency(VerbsSession& s, const ProbeHello& hello, const std::atomic<bool>& stop) {
  const std::uint32_t size = hello.message_size;
  PingPongSend send(s, size);
  const auto session_end = Clock::now() + kMaxLatencySession;
  auto last_progress = Clock::now();
  std::uint32_t answered = 0, to_answer = 0;
  SendWindow sends(kSendDepth, kSignalEvery);
  ibv_wc wc[kMaxWc];
  while (answered < hello.iterations) {
    if (stop.load(std::memory_order_relaxed)) return Error{"stopped"};
    const auto deadline = std::min(session_end, last_progress + kIdleTimeout);
    Result<int> n = WaitCompletions(s, wc, kMaxWc, last_progress + kSpinWithoutProgress,
                                    std::min(deadline, Clock::now() + std::chrono::milliseconds(100)), s.channel.get()->fd);
    if (!n.ok()) return n.error();
    if (*n == 0) {
      if (Clock::now() >= deadline) return Error{"peer silent"};
      if (PeerLeft(s)) return Error{"peer left"};
      continue;
    }
    last_progress = Clock::now();
    for (int k = 0; k < *n; ++k) {
      if (wc[k].status != IBV_WC_SUCCESS) return Error{std::string("work completion ") + ibv_wc_status_str(wc[k].status)};
      if (wc[k].opcode == IBV_WC_SEND) {
        sends.Retire(wc[k].wr_id);
        continue;
      }
      if (Status st = PostRecv(s, s.buffer.data() + size, size); !st.ok()) return st;
      ++to_answer;
    }
    // Answers wait for room in the send queue: a message whose answer cannot be posted yet is
    // answered once a send completion retires earlier ones (bounded by the idle timeout above).
    for (; to_answer > 0 && sends.CanPost() && answered < hello.iterations; --to_answer) {
      sends.Prepare(send.wr, answered + 1 == hello.iterations);
      ibv_send_wr* bad = nullptr;
      if (const int rc = ibv_post_send(s.qp.get(), &send.wr, &bad); rc != 0) return Error::FromErrno("ibv_post_send", rc);
      sends.Posted(send.wr);
      ++answered;
    }
  }
  return Status::Ok();
}

// The peer writes into our buffer; there is nothing to do but wait for it to disconnect.
Status ServeBandwidth(VerbsSession& s, const ProbeHello& hello, const std::atomic<bool>& stop) {
  const auto end = Clock::now() + std::chrono::milliseconds(hello.duration_ms) + kBandwidthSlack;
  Result<std::optional<CmEvent>> ev = WaitCmEvent(s.channel.get(), end, &stop);
  if (!ev.ok()) return ev.error();
  if (!ev->has_value()) return Error{stop.load() ? "stopped" : "session time cap reached"};
  return Status::Ok();
}

void Reject(rdma_cm_id* id, const ProbeReject& why) {
  const std::vector<std::uint8_t> data = EncodeReject(why);
  rdma_reject(id, data.data(), static_cast<std::uint8_t>(data.size()));
}

// A session's steps, in order (RunSession). The id arrives on the session's own channel with the
// connect request admitted (probes/responder_admission.h).

// Step 1: PD, registered buffer, completion channel, CQ and QP sized for what the hello asks. A
// latency session registers a send half and a receive half and posts its receives now, before the
// accept, so the prober's first message always finds one; a bandwidth session registers the buffer
// the prober writes into.
Status SetUpQueues(VerbsSession& s, const ProbeHello& hello) {
  const bool latency = hello.kind == ProbeKind::kLatency;
  const std::uint32_t size = hello.message_size;
  QueueSizes queues = latency ? QueueSizes{kSendDepth, kRecvDepth, size <= 64 ? 64u : 0u} : QueueSizes{1, 1, 0};
  const int access = latency ? IBV_ACCESS_LOCAL_WRITE : (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  Status st = CreateQueueResources(s, latency ? std::size_t{size} * 2 : size, access, queues);
  for (std::uint32_t i = 0; st.ok() && latency && i < kRecvDepth; ++i) st = PostRecv(s, s.buffer.data() + size, size);
  return st;
}

// Step 2: accept (RTR, RTS), the accept message in the private data: for a bandwidth session the
// buffer's rkey and address, where the prober's RDMA WRITEs go. False when rdma_accept fails.
bool Accept(VerbsSession& s, const ProbeHello& hello) {
  const bool latency = hello.kind == ProbeKind::kLatency;
  ProbeAccept accept{hello.kind, hello.message_size, latency ? 0 : s.mr.get()->rkey,
                     latency ? 0 : reinterpret_cast<std::uintptr_t>(s.buffer.data())};
  const std::vector<std::uint8_t> data = EncodeAccept(accept);
  rdma_conn_param param{};
  param.private_data = data.data();
  param.private_data_len = static_cast<std::uint8_t>(data.size());
  param.responder_resources = 0;
  param.initiator_depth = 0;
  param.rnr_retry_count = 7;
  return rdma_accept(s.id.get(), &param) == 0;
}

// Step 3: the prober completes the connection within kEstablishTimeout.
bool AwaitEstablished(VerbsSession& s, const std::atomic<bool>& stop) {
  Result<std::optional<CmEvent>> ev = WaitCmEvent(s.channel.get(), Clock::now() + kEstablishTimeout, &stop);
  return ev.ok() && ev->has_value() && (*ev)->type == RDMA_CM_EVENT_ESTABLISHED;
}

// Step 4: serve the probe (ServeLatency, ServeBandwidth above).
Status Serve(VerbsSession& s, const ProbeHello& hello, const std::atomic<bool>& stop) {
  return hello.kind == ProbeKind::kLatency ? ServeLatency(s, hello, stop) : ServeBandwidth(s, hello, stop);
}

// Step 5, after a latency session answered every message: the prober disconnects once it has the
// last answer. Disconnecting first could overtake that answer (the CM's messages travel on another
// QP) and flush it.
void LingerForPeer(VerbsSession& s, const std::atomic<bool>& stop) {
  (void)WaitCmEvent(s.channel.get(), Clock::now() + kLingerForPeer, &stop);
}

// Step 7: everything torn down in reverse order now, before the lease gives the memory back; a
// destroy that failed is logged.
void EndSession(Session& session) {
  VerbsSession& s = *session.verbs;
  s.Teardown();
  for (const std::string& e : s.log.errors)
    log::Warn("probe responder: session teardown failed", {{"peer", session.peer}, {"error", e}});
  session.verbs.reset();
  session.lease = ResponderBudget::Lease();
  session.done = true;
}

void RunSession(Session& session, const std::atomic<bool>& stop) {
  VerbsSession& s = *session.verbs;
  const ProbeHello& hello = session.hello;
  if (Status st = SetUpQueues(s, hello); !st.ok()) {
    log::Warn("probe responder: cannot set up a session", {{"peer", session.peer}, {"error", st.error().message}});
    Reject(s.id.get(), ProbeReject{RejectCode::kInternal, "responder could not set up the session"});
    session.done = true;  // what was created goes when the listener reaps the session
    return;
  }
  if (!Accept(s, hello)) {
    log::Debug("probe responder: rdma_accept failed", {{"peer", session.peer}});
  } else {
    if (!AwaitEstablished(s, stop)) {
      log::Debug("probe responder: peer did not complete the connection", {{"peer", session.peer}});
    } else if (Status served = Serve(s, hello, stop); !served.ok()) {
      log::Debug("probe responder: session ended early", {{"peer", session.peer}, {"why", served.error().message}});
    } else if (hello.kind == ProbeKind::kLatency) {
      LingerForPeer(s, stop);
    }
    // Step 6: disconnect. The prober may have done so already; one still connected (a session cut
    // short on this side) sees the end at once instead of at its own timeout.
    rdma_disconnect(s.id.get());
  }
  EndSession(session);
}

}  // namespace

struct ProbeResponder::Impl {
  Mutex mu;  // Apply vs the listener
  PeerResponderPolicy policy GUARDED_BY(mu);
  AddressAllowList allow GUARDED_BY(mu);
  ResponderBudget budget{0, 0};
  VerbsSession listener;             // channel + listening id only
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> accepted{0}, rejected{0};
  std::list<std::unique_ptr<Session>> sessions;  // listener thread only
  std::thread thread;

  void Run();
  void Reap(bool all);
  void OnConnectRequest(CmEvent& e);
};

void ProbeResponder::Impl::Reap(bool all) {
  for (auto it = sessions.begin(); it != sessions.end();) {
    if (all || (*it)->done.load()) {
      if ((*it)->thread.joinable()) (*it)->thread.join();
      it = sessions.erase(it);
    } else {
      ++it;
    }
  }
}

void ProbeResponder::Impl::OnConnectRequest(CmEvent& e) {
  rdma_cm_id* id = e.id;
  const sockaddr* peer = rdma_get_peer_addr(id);
  const std::string peer_text = SockAddrText(peer);
  ProbeHello hello;
  std::variant<ResponderBudget::Lease, ProbeReject> admitted = [&] {
    MutexLock lock(mu);
    return AdmitProbe(allow, peer, e.private_data, policy.max_message_size, budget, &hello);
  }();
  if (auto* why = std::get_if<ProbeReject>(&admitted)) {
    ++rejected;
    log::Debug("probe responder: rejected", {{"peer", peer_text}, {"reason", RejectCodeName(why->code)}, {"detail", why->text}});
    Reject(id, *why);
    rdma_destroy_id(id);
    return;
  }
  auto session = std::make_unique<Session>();
  session->verbs = std::make_unique<VerbsSession>();
  session->hello = hello;
  session->lease = std::move(std::get<ResponderBudget::Lease>(admitted));
  session->peer = peer_text;
  // The new id moves to a channel of its own here, in the listener thread, so no event of it is
  // ever read from the listener's channel.
  Status st = CreateEventChannel(*session->verbs);
  if (st.ok()) st = AdoptCmId(*session->verbs, id);  // from here the session owns the id
  if (!st.ok()) {
    ++rejected;
    log::Warn("probe responder: cannot take a session", {{"peer", peer_text}, {"error", st.error().message}});
    Reject(id, ProbeReject{RejectCode::kInternal, "responder could not set up the session"});
    if (!session->verbs->id) rdma_destroy_id(id);
    return;
  }
  ++accepted;
  log::Debug("probe responder: session", {{"peer", peer_text}, {"kind", ProbeKindName(hello.kind)},
                                          {"size", std::to_string(hello.message_size)}});
  Session& ref = *session;
  sessions.push_back(std::move(session));
  ref.thread = std::thread([&ref, this] {
    NameThisThread("probe-session");
    RunSession(ref, stop);
  });
}

void ProbeResponder::Impl::Run() {
  // Session threads start with this thread's CPUs (a new thread inherits them): pinning it pins them.
  ThreadPinning pinning;
  while (!stop.load()) {
    const CpuList cpus = [&] {
      MutexLock lock(mu);
      return policy.cpus;
    }();
    if (pinning.Apply(cpus) && !pinning.error().empty()) {
      log::Warn("probe responder: peers.responder.cpus not applied, sessions run on any CPU",
                {{"error", pinning.error()}});
    }
    Result<std::optional<CmEvent>> ev =
        WaitCmEvent(listener.channel.get(), Clock::now() + std::chrono::milliseconds(200), &stop);
    Reap(false);
    if (!ev.ok()) {
      log::Error("probe responder: event channel failed; responder stops", {{"error", ev.error().message}});
      break;
    }
    if (!ev->has_value()) continue;
    CmEvent& e = **ev;
    if (e.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      OnConnectRequest(e);
    } else if (e.type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
      log::Warn("probe responder: RDMA device removed under the listener; responder stops");
      break;
    }
  }
  stop = true;
  Reap(true);
}

Result<std::unique_ptr<ProbeResponder>> ProbeResponder::Start(const PeerResponderPolicy& policy) {
  auto impl = std::make_unique<Impl>();
  Result<AddressAllowList> allow = AddressAllowList::Parse(policy.allow);
  if (!allow.ok()) return allow.error();
  const std::size_t allow_entries = allow->size();
  {
    MutexLock lock(impl->mu);  // no listener yet: taken for the analysis, never contended
    impl->policy = policy;
    impl->allow = std::move(*allow);
  }
  impl->budget.SetCaps(policy.max_sessions, policy.max_registered_bytes);
  Result<sockaddr_storage> addr = ParseSockAddr(policy.listen_address.empty() ? "::" : policy.listen_address, policy.port);
  if (!addr.ok()) return Error{"probe responder: listen address: " + addr.error().message};
  VerbsSession& l = impl->listener;
  if (Status st = CreateEventChannel(l); !st.ok()) return Error{"probe responder: " + st.error().message, st.error().errno_value};
  if (Status st = CreateCmId(l); !st.ok()) return Error{"probe responder: " + st.error().message, st.error().errno_value};
  const std::string where = (policy.listen_address.empty() ? std::string("*") : policy.listen_address) + ":" +
                            std::to_string(policy.port);
  if (rdma_bind_addr(l.id.get(), reinterpret_cast<sockaddr*>(&*addr)) != 0)
    return Error::FromErrno("probe responder: bind " + where, errno);
  if (rdma_listen(l.id.get(), static_cast<int>(std::min<std::uint32_t>(policy.max_sessions * 2 + 4, 128))) != 0)
    return Error::FromErrno("probe responder: listen " + where, errno);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    NameThisThread("probe-responder");
    raw->Run();
  });
  log::Info("probe responder listening", {{"address", where}, {"allow", std::to_string(allow_entries) + " entries"}});
  return std::unique_ptr<ProbeResponder>(new ProbeResponder(std::move(impl)));
}

ProbeResponder::ProbeResponder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ProbeResponder::~ProbeResponder() {
  impl_->stop = true;
  if (impl_->thread.joinable()) impl_->thread.join();
}

bool ProbeResponder::CanApplyInPlace(const PeerResponderPolicy& next) const {
  MutexLock lock(impl_->mu);
  return next.enabled && next.listen_address == impl_->policy.listen_address && next.port == impl_->policy.port;
}

Status ProbeResponder::Apply(const PeerResponderPolicy& next) {
  Result<AddressAllowList> allow = AddressAllowList::Parse(next.allow);
  if (!allow.ok()) return allow.error();
  MutexLock lock(impl_->mu);
  impl_->allow = std::move(*allow);
  impl_->policy = next;
  impl_->budget.SetCaps(next.max_sessions, next.max_registered_bytes);
  return Status::Ok();
}

std::uint64_t ProbeResponder::sessions_accepted() const { return impl_->accepted.load(); }
std::uint64_t ProbeResponder::sessions_rejected() const { return impl_->rejected.load(); }
std::uint32_t ProbeResponder::active_sessions() const { return impl_->budget.sessions(); }

}  // namespace rdmahd
