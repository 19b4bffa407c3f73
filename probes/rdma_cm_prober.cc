#include "probes/rdma_cm_prober.h"

#include <time.h>

#include <algorithm>
#include <vector>

#include "common/thread_affinity.h"
#include "probes/cpu_frequency.h"
#include "probes/handshake.h"
#include "probes/rdma_cm_connection.h"
#include "probes/verbs_resources.h"

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;
// No completion for this long in an exchange fails it as "timeout", whatever the whole exchange
// was allowed: a peer that stops answering without a disconnect or a work-completion error.
constexpr auto kMaxSilence = std::chrono::seconds(5);
constexpr std::uint32_t kLatencyRecvDepth = 64;
constexpr std::uint32_t kLatencySendDepth = 16;
constexpr std::uint32_t kLatencySignalEvery = 8;  // one send completion per 8 messages (SendWindow)
constexpr int kMaxWc = 16;

// CLOCK_MONOTONIC_RAW: not slewed by NTP, so a sample is the hardware's time between two posts.
std::int64_t RawNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

ProbeFailure Fail(std::string reason, const PeerEndpoint& peer, const std::string& what) {
  return ProbeFailure{std::move(reason), "peer " + peer.name + " (" + peer.address + "): " + what};
}

// Disconnects politely so the responder sees the end at once rather than at its session cap.
void Disconnect(VerbsSession& s) {
  if (s.id) rdma_disconnect(s.id.get());
}

// Tears the session down before the outcome leaves: a destroy that failed (a leak in the making)
// is reported, as local_resources, rather than lost.
template <class T>
ProbeOutcome<T> Finish(VerbsSession& s, ProbeOutcome<T> outcome, const PeerEndpoint& peer) {
  s.Teardown();
  if (s.log.errors.empty()) return outcome;
  std::string errors;
  for (const std::string& e : s.log.errors) errors += (errors.empty() ? "" : "; ") + e;
  if (auto* f = std::get_if<ProbeFailure>(&outcome)) {
    f->message += " (teardown: " + errors + ")";
    return outcome;
  }
  return Fail("local_resources", peer, "teardown: " + errors);
}

class RdmaCmProber final : public PeerProber {
 public:
  ProbeOutcome<LatencySamples> Latency(const PeerEndpoint& peer, const ProbeSource& source,
                                       const LatencyRequest& request, const std::atomic<bool>& stop) override {
    VerbsSession s;
    return Finish(s, RunLatency(s, peer, source, request, stop), peer);
  }
  ProbeOutcome<BandwidthResult> Bandwidth(const PeerEndpoint& peer, const ProbeSource& source,
                                          const BandwidthRequest& request, const std::atomic<bool>& stop) override {
    VerbsSession s;
    return Finish(s, RunBandwidth(s, peer, source, request, stop), peer);
  }

 private:
  static ProbeOutcome<LatencySamples> RunLatency(VerbsSession& s, const PeerEndpoint& peer, const ProbeSource& source,
                                                 const LatencyRequest& request, const std::atomic<bool>& stop);
  static ProbeOutcome<BandwidthResult> RunBandwidth(VerbsSession& s, const PeerEndpoint& peer,
                                                    const ProbeSource& source, const BandwidthRequest& request,
                                                    const std::atomic<bool>& stop);
};

ProbeOutcome<LatencySamples> RdmaCmProber::RunLatency(VerbsSession& s, const PeerEndpoint& peer,
                                                      const ProbeSource& source, const LatencyRequest& request,
                                                      const std::atomic<bool>& stop) {
  if (request.iterations < 2 || request.iterations > kMaxLatencyIterations || request.message_size == 0)
    return Fail("local_resources", peer, "latency request out of range");
  const std::uint32_t size = request.message_size;
  ConnectPlan plan;
  plan.hello = ProbeHello{ProbeKind::kLatency, size, request.iterations, 0, 0};
  plan.buffer_bytes = std::size_t{size} * 2;  // [0, size) sent, [size, 2 size) received into
  plan.access = IBV_ACCESS_LOCAL_WRITE;
  plan.queues = QueueSizes{kLatencySendDepth, kLatencyRecvDepth, size <= 64 ? 64u : 0u};
  plan.before_connect = [size](VerbsSession& ss) -> Status {
    for (std::uint32_t i = 0; i < kLatencyRecvDepth; ++i) {
      if (Status st = PostRecv(ss, ss.buffer.data() + size, size); !st.ok()) return st;
    }
    return Status::Ok();
  };
  ProbeOutcome<ProbeAccept> accepted = ConnectToResponder(s, peer, source, plan, stop);
  if (auto* f = std::get_if<ProbeFailure>(&accepted)) return *f;

  std::vector<std::int64_t> posted(request.iterations);
  PingPongSend send(s, size);
  const auto deadline = Clock::now() + request.timeout;
  auto last_progress = Clock::now();
  SendWindow sends(kLatencySendDepth, kLatencySignalEvery);
  ibv_wc wc[kMaxWc];
  for (std::uint32_t i = 0; i < request.iterations; ++i) {
    sends.Prepare(send.wr, i + 1 == request.iterations);
    posted[i] = RawNowNs();
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(s.qp.get(), &send.wr, &bad); rc != 0) {
      Disconnect(s);
      return Fail("local_resources", peer, Error::FromErrno("ibv_post_send", rc).message);
    }
    sends.Posted(send.wr);
    // The reply to this message; send completions are reaped on the way.
    bool replied = false;
    while (!replied || !sends.CanPost()) {
      if (stop.load(std::memory_order_relaxed)) {
        Disconnect(s);
        return Fail("stopped", peer, "latency: stopped");
      }
      const auto wait_until = std::min(deadline, last_progress + kMaxSilence);
      Result<int> n = WaitCompletions(s, wc, kMaxWc, last_progress + kSpinWithoutProgress, wait_until,
                                      s.channel.get()->fd);
      if (!n.ok()) {
        Disconnect(s);
        return Fail("local_resources", peer, n.error().message);
      }
      if (*n == 0) {
        // The peer's CM told us it left (librdmacm moves our QP to error as it reads that).
        if (std::string why; ConnectionLost(s, &why))
          return Fail("unreachable", peer, "latency: connection lost during the exchange (" + why + ") at message " +
                                               std::to_string(i + 1) + " of " + std::to_string(request.iterations));
        if (Clock::now() < wait_until) continue;
        Disconnect(s);
        return Fail("timeout", peer, "latency: no reply to message " + std::to_string(i + 1) + " of " +
                                         std::to_string(request.iterations) + " within the timeout");
      }
      last_progress = Clock::now();
      for (int k = 0; k < *n; ++k) {
        if (wc[k].status != IBV_WC_SUCCESS) {
          Disconnect(s);
          return Fail(WcStatusReason(wc[k].status), peer,
                      std::string("latency: work completion ") + ibv_wc_status_str(wc[k].status));
        }
        if (wc[k].opcode == IBV_WC_SEND) {
          sends.Retire(wc[k].wr_id);
        } else {
          replied = true;
          if (Status st = PostRecv(s, s.buffer.data() + size, size); !st.ok()) {
            Disconnect(s);
            return Fail("local_resources", peer, st.error().message);
          }
        }
      }
    }
  }
  Disconnect(s);

  LatencySamples out;
  out.clock = "steady";
  // After the timed part: read on this (the probe's) thread, about the CPUs it may run on.
  out.cpu_warning = CpuFrequencyWarning(ReadCpuFrequencies(NodeFs("/sys", "/proc"), CallingThreadCpus()));
  out.half_round_trip_us.reserve(request.iterations - 1);
  for (std::uint32_t i = 0; i + 1 < request.iterations; ++i)
    out.half_round_trip_us.push_back(static_cast<double>(posted[i + 1] - posted[i]) / 2000.0);
  return out;
}

ProbeOutcome<BandwidthResult> RdmaCmProber::RunBandwidth(VerbsSession& s, const PeerEndpoint& peer,
                                                         const ProbeSource& source, const BandwidthRequest& request,
                                                         const std::atomic<bool>& stop) {
  if (request.queue_depth == 0 || request.queue_depth > kMaxBandwidthQueueDepth || request.message_size == 0 ||
      request.duration.count() <= 0 || request.duration.count() > kMaxBandwidthDurationMs)
    return Fail("local_resources", peer, "bandwidth request out of range");
  const std::uint32_t size = request.message_size;
  const std::uint32_t depth = request.queue_depth;
  ConnectPlan plan;
  plan.hello = ProbeHello{ProbeKind::kBandwidth, size, 0, static_cast<std::uint32_t>(request.duration.count()), depth};
  plan.buffer_bytes = size;
  plan.access = IBV_ACCESS_LOCAL_WRITE;
  plan.queues = QueueSizes{depth, 1, 0};
  ProbeOutcome<ProbeAccept> accepted = ConnectToResponder(s, peer, source, plan, stop);
  if (auto* f = std::get_if<ProbeFailure>(&accepted)) return *f;
  const ProbeAccept& remote = std::get<ProbeAccept>(accepted);

  // Selective signalling, as NICs like it: one completion per `batch` writes, each completion
  // standing for its batch (an RC send queue completes in order).
  const std::uint32_t batch = std::min<std::uint32_t>(16, depth);
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(s.buffer.data()), size, s.mr.get()->lkey};
  ibv_send_wr wrs[16]{};
  for (std::uint32_t k = 0; k < batch; ++k) {
    wrs[k].sg_list = &sge;
    wrs[k].num_sge = 1;
    wrs[k].opcode = IBV_WR_RDMA_WRITE;
    wrs[k].wr.rdma.remote_addr = remote.addr;
    wrs[k].wr.rdma.rkey = remote.rkey;
    wrs[k].next = k + 1 < batch ? &wrs[k + 1] : nullptr;
    wrs[k].send_flags = k + 1 == batch ? IBV_SEND_SIGNALED : 0;
  }
  std::uint64_t outstanding = 0, completed_writes = 0;
  const auto start = Clock::now();
  const auto stop_posting = start + request.duration;
  // Draining what is in flight is bounded too: a peer that stops acknowledging costs one timeout.
  const auto deadline = stop_posting + source.step_timeout + std::chrono::seconds(1);
  auto last_completion = start;
  auto last_progress = start;
  ibv_wc wc[kMaxWc];
  for (;;) {
    const auto now = Clock::now();
    if (stop.load(std::memory_order_relaxed)) {
      Disconnect(s);
      return Fail("stopped", peer, "bandwidth: stopped");
    }
    while (now < stop_posting && outstanding + batch <= depth) {
      ibv_send_wr* bad = nullptr;
      if (const int rc = ibv_post_send(s.qp.get(), wrs, &bad); rc != 0) {
        Disconnect(s);
        return Fail("local_resources", peer, Error::FromErrno("ibv_post_send", rc).message);
      }
      outstanding += batch;
    }
    if (outstanding == 0) break;
    const auto wait_until = std::min(deadline, last_progress + kMaxSilence);
    Result<int> n = WaitCompletions(s, wc, kMaxWc, last_progress + kSpinWithoutProgress, wait_until, s.channel.get()->fd);
    if (!n.ok()) {
      Disconnect(s);
      return Fail("local_resources", peer, n.error().message);
    }
    if (*n == 0) {
      if (std::string why; ConnectionLost(s, &why))
        return Fail("unreachable", peer, "bandwidth: connection lost during the stream (" + why + ")");
      if (Clock::now() < wait_until) continue;
      Disconnect(s);
      return Fail("timeout", peer, "bandwidth: writes not completed within the timeout");
    }
    last_progress = Clock::now();
    for (int k = 0; k < *n; ++k) {
      if (wc[k].status != IBV_WC_SUCCESS) {
        Disconnect(s);
        return Fail(WcStatusReason(wc[k].status), peer,
                    std::string("bandwidth: work completion ") + ibv_wc_status_str(wc[k].status));
      }
      outstanding -= batch;
      completed_writes += batch;
      last_completion = last_progress;
    }
  }
  Disconnect(s);
  BandwidthResult result;
  result.bytes = completed_writes * size;
  result.seconds = std::chrono::duration<double>(last_completion - start).count();
  return result;
}

}  // namespace

std::unique_ptr<PeerProber> MakeRdmaCmProber() { return std::make_unique<RdmaCmProber>(); }

}  // namespace rdmahd
