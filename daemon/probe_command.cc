#include "daemon/probe_command.h"

#include <netdb.h>
#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "daemon/check_command.h"

namespace rdmahd {
namespace {

// The first address PEER resolves to (numeric addresses pass through).
Result<std::string> ResolvePeer(const std::string& peer) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(peer.c_str(), nullptr, &hints, &res); rc != 0 || res == nullptr)
    return Error{"cannot resolve " + peer + ": " + gai_strerror(rc)};
  char buf[INET6_ADDRSTRLEN] = {};
  if (res->ai_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof(buf));
  else
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(res->ai_addr)->sin6_addr, buf, sizeof(buf));
  freeaddrinfo(res);
  return std::string(buf);
}

std::string Fixed(double v, int width, int precision = 2) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%*.*f", width, precision, v);
  return buf;
}
std::string Int(unsigned long long v, int width) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%-*llu", width, v);
  return buf;
}

}  // namespace

void PrintLatencyReport(std::uint32_t bytes, std::uint32_t iterations, const LatencyStats& f, std::ostream& out) {
  out << " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
         "   99% percentile[usec]   99.9% percentile[usec]\n";
  out << " " << Int(bytes, 7) << Int(iterations, 13) << Fixed(f.min_us, 11) << Fixed(f.max_us, 15)
      << Fixed(f.typical_us, 17) << Fixed(f.average_us, 15) << Fixed(f.stdev_us, 17) << Fixed(f.p99_us, 23)
      << Fixed(f.p99_9_us, 25) << "\n";
}

void PrintBandwidthReport(std::uint32_t bytes, const BandwidthResult& r, std::ostream& out) {
  const double bps = r.BytesPerSecond();
  const unsigned long long writes = bytes == 0 ? 0 : r.bytes / bytes;
  out << " #bytes     #writes    duration[sec]    BW average[MB/sec]    BW average[Gb/sec]    MsgRate[Mpps]\n";
  out << " " << Int(bytes, 11) << Int(writes, 11) << Fixed(r.seconds, 13, 3) << Fixed(bps / 1048576.0, 22)
      << Fixed(bps * 8 / 1e9, 22) << Fixed(r.seconds > 0 ? static_cast<double>(writes) / r.seconds / 1e6 : 0, 17, 6)
      << "\n";
}

int RunProbeCommand(const Options& options, PeerProber& prober, std::ostream& out, std::ostream& err) {
  Result<std::string> address = ResolvePeer(options.probe_peer);
  if (!address.ok()) {
    err << "rdma-healthd probe: " << address.error().message << "\n";
    return kExitCouldNotRun;
  }
  const PeerEndpoint peer{options.probe_peer, *address, options.probe_port};
  ProbeSource source;
  source.bind_address = options.probe_source;
  source.tos = options.probe_tos;
  source.step_timeout = std::chrono::milliseconds(static_cast<long long>(options.probe_timeout_s * 1000));
  const std::atomic<bool> stop{false};  // SIGINT keeps its default action: the kernel frees the rest
  const std::string rule(100, '-');
  if (!options.probe_bandwidth) {
    LatencyRequest request;
    request.message_size = options.probe_size.value_or(2);
    request.iterations = options.probe_iterations;
    // Interactive: as long as the run needs even on a slow path (100 ms per round trip: Soft-RoCE
    // between two 1-vCPU VMs under TCG takes ~45 ms), while a dead peer still ends it within
    // seconds (its work completions fail: retries exceeded).
    request.timeout = std::chrono::milliseconds(10000 + std::uint64_t{request.iterations} * 100);
    out << rule << "\n RC SEND/RECV latency to " << peer.name << " (" << peer.address << ") port " << peer.port
        << (options.probe_tos ? ", tos " + std::to_string(*options.probe_tos) : std::string()) << "\n" << rule << "\n";
    ProbeOutcome<LatencySamples> got = prober.Latency(peer, source, request, stop);
    if (const auto* f = std::get_if<ProbeFailure>(&got)) {
      err << "rdma-healthd probe: failed (" << f->reason << "): " << f->message << "\n";
      return kExitFailed;
    }
    const LatencySamples& samples = std::get<LatencySamples>(got);
    std::optional<LatencyStats> figures = ComputeLatencyStats(samples.half_round_trip_us);
    if (!figures) {
      err << "rdma-healthd probe: too few samples\n";
      return kExitFailed;
    }
    // perftest prints its "Conflicting CPU frequency values" warning before the figures, too.
    if (!samples.cpu_warning.empty()) err << "rdma-healthd probe: warning: " << samples.cpu_warning << "\n";
    PrintLatencyReport(request.message_size, request.iterations, *figures, out);
    out << rule << "\n";
    return kExitOk;
  }
  BandwidthRequest request;
  request.message_size = options.probe_size.value_or(65536);
  request.duration = std::chrono::milliseconds(static_cast<long long>(options.probe_duration_s * 1000));
  request.queue_depth = options.probe_queue_depth;
  out << rule << "\n RDMA WRITE bandwidth to " << peer.name << " (" << peer.address << ") port " << peer.port
      << ", queue depth " << request.queue_depth
      << (options.probe_tos ? ", tos " + std::to_string(*options.probe_tos) : std::string()) << "\n" << rule << "\n";
  ProbeOutcome<BandwidthResult> got = prober.Bandwidth(peer, source, request, stop);
  if (const auto* f = std::get_if<ProbeFailure>(&got)) {
    err << "rdma-healthd probe: failed (" << f->reason << "): " << f->message << "\n";
    return kExitFailed;
  }
  PrintBandwidthReport(request.message_size, std::get<BandwidthResult>(got), out);
  out << rule << "\n";
  return kExitOk;
}

}  // namespace rdmahd
