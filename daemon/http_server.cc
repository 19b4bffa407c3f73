#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/logging.h"
#include "common/mutex.h"
#include "common/thread_name.h"
#include "daemon/basic_auth.h"
#include "daemon/listen_address.h"

namespace rdmahd {
namespace {

constexpr const char* kTextPlain = "text/plain; charset=utf-8";
// Below this a body goes out as is: gzip would save a few bytes at the cost of a header.
constexpr std::size_t kMinGzipBytes = 1024;
// fds the rest of the daemon may hold (collectors, logs, netlink) besides HTTP connections.
constexpr rlim_t kFdsKeptForTheRest = 256;
constexpr std::chrono::milliseconds kShutdownGrace{1000};
// How often ConnectionWatch looks at the connections (see there), and how soon it looks after a
// new connection or to confirm a FIN it saw.
constexpr std::chrono::milliseconds kSweepInterval{200};
constexpr std::chrono::milliseconds kFinConfirmDelay{30};
// A warning for accept failing for want of descriptors at most this often.
constexpr std::chrono::seconds kFdWarningInterval{10};
// A warning for password checks refused (a flood of wrong passwords) at most this often.
constexpr std::chrono::seconds kRefusalWarningInterval{10};

using Clock = std::chrono::steady_clock;

// Jobs for routes that may be slow. A job runs with cancelled=true when the pool stops before it
// started, so that its suspended connection is still resumed (libmicrohttpd cannot stop with
// suspended connections). Scrape jobs go first; page jobs (/, /api/*) run at most `page_limit` at
// once, so with more threads than that a scrape never waits behind a page, however many are
// queued.
class WorkerPool {
 public:
  using Job = std::function<void(bool cancelled)>;

  WorkerPool(int threads, int page_limit) : page_limit_(page_limit) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        NameThisThread("http-worker");
        Loop();
      });
    }
  }
  ~WorkerPool() { Stop(); }

  void Post(bool page, Job job) {
    {
      MutexLock lock(mu_);
      if (!stopping_) {
        (page ? page_jobs_ : scrape_jobs_).push_back(std::move(job));
        // Every thread may be waiting for a scrape while the page lane is full: wake them all for
        // a scrape, one for a page (a thread that cannot take it goes back to sleep).
        if (page) {
          cv_.notify_one();
        } else {
          cv_.notify_all();
        }
        return;
      }
    }
    job(true);
  }

  void Stop() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  bool PageMayStart() const REQUIRES(mu_) { return !page_jobs_.empty() && (stopping_ || pages_running_ < page_limit_); }

  void Loop() {
    MutexLock lock(mu_);
    for (;;) {
      while (!stopping_ && scrape_jobs_.empty() && !PageMayStart()) cv_.wait(lock);
      const bool page = scrape_jobs_.empty();
      if (page && page_jobs_.empty()) return;  // stopping, nothing left
      std::deque<Job>& jobs = page ? page_jobs_ : scrape_jobs_;
      Job job = std::move(jobs.front());
      jobs.pop_front();
      bool cancelled = stopping_;
      if (page) ++pages_running_;
      lock.unlock();
      job(cancelled);
      job = nullptr;  // what the job holds goes before the lock is taken again
      lock.lock();
      if (page) {
        --pages_running_;
        cv_.notify_all();  // a page may start now
      }
    }
  }

  const int page_limit_;
  Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Job> scrape_jobs_ GUARDED_BY(mu_);
  std::deque<Job> page_jobs_ GUARDED_BY(mu_);
  int pages_running_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// Whether the client of the connection on `fd` has left: it reset the connection, or (when
// `fin_counts`) sent its FIN. A non-blocking MSG_PEEK: reads nothing, waits for nothing.
bool ClientHasLeft(int fd, bool fin_counts) {
  if (fd < 0) return false;
  char byte = 0;
  for (;;) {
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return false;  // bytes waiting (a pipelined request): still there
    if (n == 0) return fin_counts;
    if (errno == EINTR) continue;
    return errno == ECONNRESET || errno == EPIPE || errno == ETIMEDOUT || errno == ENOTCONN;
  }
}

// zlib counts in 32 bits: longer input is fed, and output room given, at most this much at a time.
constexpr std::size_t kZlibChunk = std::size_t{1} << 30;

// `gzip` decompressed, when it is one gzip stream of exactly `size` bytes.
std::optional<std::string> Gunzip(std::string_view gzip, std::size_t size) {
  if (gzip.size() > kZlibChunk || size > kZlibChunk) return std::nullopt;
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return std::nullopt;
  std::string out(size, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gzip.data()));
  z.avail_in = static_cast<uInt>(gzip.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const bool whole = rc == Z_STREAM_END && z.total_out == size && z.avail_in == 0;
  inflateEnd(&z);
  if (!whole) return std::nullopt;
  return out;
}

// Runs deflate with `flush` until it has taken all of z.next_in (Z_FINISH: until the stream is
// complete), doubling `out` whenever it is full.
bool Deflate(z_stream& z, std::string& out, int flush) {
  for (;;) {
    if (z.total_out == out.size()) out.resize(2 * out.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data()) + z.total_out;
    z.avail_out = static_cast<uInt>(std::min(out.size() - z.total_out, kZlibChunk));
    const int rc = deflate(&z, flush);
    if (rc == Z_STREAM_END) return true;
    if (rc != Z_OK && rc != Z_BUF_ERROR) return false;
    if (z.avail_out == 0) continue;  // more room, and on
    // Stopped with room to spare: all the input is taken, or (finishing short of the stream's end)
    // it cannot go on.
    return flush != Z_FINISH && z.avail_in == 0;
  }
}

// RFC 9110 Accept-Encoding: "gzip" or "*" with a non-zero q.
bool AcceptsGzip(const char* header) {
  if (header == nullptr) return false;
  std::string_view rest(header);
  bool star = false, gzip = false, gzip_refused = false;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    auto semi = item.find(';');
    std::string_view name = item.substr(0, semi);
    while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    bool zero = false;
    if (semi != std::string_view::npos) {
      std::string params(item.substr(semi + 1));
      auto q = params.find("q=");
      if (q != std::string::npos) zero = std::strtod(params.c_str() + q + 2, nullptr) <= 0.0;
    }
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "gzip" || lower == "x-gzip") (zero ? gzip_refused : gzip) = true;
    if (lower == "*" && !zero) star = true;
  }
  return gzip || (star && !gzip_refused);
}

// The opaque-tag of an entity tag, without W/ (RFC 9110, 8.8.3.2: weak comparison).
std::string_view OpaqueTag(std::string_view tag) {
  if (tag.size() >= 2 && tag[0] == 'W' && tag[1] == '/') tag.remove_prefix(2);
  return tag;
}

HttpResponse RunHandler(const HttpHandler& handler, const HttpRequest& request) {
  try {
    return handler(request);
  } catch (const std::exception& e) {
    return {500, kTextPlain, std::string("internal error: ") + e.what() + "\n"};
  } catch (...) {
    return {500, kTextPlain, "internal error\n"};
  }
}

std::string TlsPriorities(const TlsServerConfig& tls) {
  static const char* kVersions[] = {"TLS10", "TLS11", "TLS12", "TLS13"};
  static const char* kGnutls[] = {"+VERS-TLS1.0", "+VERS-TLS1.1", "+VERS-TLS1.2", "+VERS-TLS1.3"};
  std::string p = "NORMAL:-VERS-ALL";
  const std::string max = tls.max_version.empty() ? "TLS13" : tls.max_version;
  for (int i = 0; i < 4; ++i) {
    if (tls.min_version <= kVersions[i] && kVersions[i] <= max) p += std::string(":") + kGnutls[i];
  }
  return p;
}

// libmicrohttpd only says "failed" for a bad certificate or key; GnuTLS says why.
Status CheckTlsMaterial(const TlsServerConfig& tls, const std::string& source) {
  gnutls_certificate_credentials_t cred = nullptr;
  if (gnutls_certificate_allocate_credentials(&cred) != GNUTLS_E_SUCCESS) return Error{"GnuTLS: out of memory"};
  auto datum = [](const std::string& s) {
    return gnutls_datum_t{reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())),
                          static_cast<unsigned>(s.size())};
  };
  gnutls_datum_t cert = datum(tls.cert_pem), key = datum(tls.key_pem), ca = datum(tls.client_ca_pem);
  Status st;
  int rc = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, nullptr, 0);
  if (rc < 0) {
    st = Error{source + ": cert_file " + tls.cert_file + " with key_file " + tls.key_file + ": " +
               gnutls_strerror(rc)};
  } else if (!tls.client_ca_pem.empty() &&
             (rc = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM)) <= 0) {
    st = Error{source + ": client_ca_file " + tls.client_ca_file + ": " +
               (rc == 0 ? std::string("no certificate in it") : gnutls_strerror(rc))};
  }
  gnutls_certificate_free_credentials(cred);
  return st;
}

// The soft RLIMIT_NOFILE, for messages ("unlimited" when there is none).
std::string OpenFileLimitText() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return "unknown";
  if (rl.rlim_cur == RLIM_INFINITY) return "unlimited";
  return std::to_string(rl.rlim_cur);
}

// " (out of file descriptors: the open-file limit is N; ...)" when the process cannot open one more
// descriptor (EMFILE/ENFILE) or `seen` says it could not, else "".
std::string OutOfDescriptorsNote(bool seen = false) {
  if (!seen) {
    int fd = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0);
    if (fd >= 0) {
      ::close(fd);
      return "";
    }
    if (errno != EMFILE && errno != ENFILE) return "";
  }
  return " (out of file descriptors: the open-file limit is " + OpenFileLimitText() +
         "; raise it with ulimit -n or systemd LimitNOFILE=)";
}

// Descriptors the server needs beyond its listening socket before it can serve one client: the
// event loop's epoll and wake-up descriptors and the client's socket.
constexpr int kFdsToServeOne = 3;

// Whether `n` more descriptors can be opened now. Probed before any server thread starts, so that
// a limit too low to serve fails the start naming it, whichever later call would have run out.
bool HaveFreeDescriptors(int n) {
  std::vector<int> probes;
  for (int i = 0; i < n; ++i) {
    int fd = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) break;
    probes.push_back(fd);
  }
  const bool enough = static_cast<int>(probes.size()) == n;
  for (int fd : probes) ::close(fd);
  return enough;
}

}  // namespace

std::string ClientAddressKey(const sockaddr* sa) {
  if (sa == nullptr) return "?";
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return std::string("4") + std::string(reinterpret_cast<const char*>(&in->sin_addr), 4);
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    const auto* bytes = reinterpret_cast<const char*>(&in6->sin6_addr);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) return std::string("4") + std::string(bytes + 12, 4);
    return std::string("6") + std::string(bytes, 8);
  }
  return "?";
}

namespace {

// Who a connection is from (ClientAddressKey).
std::string ClientKey(MHD_Connection* conn) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  return ClientAddressKey(info == nullptr ? nullptr : info->client_addr);
}

// The client's address as text, for the log.
std::string ClientAddressText(MHD_Connection* conn) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return "unknown";
  char text[INET6_ADDRSTRLEN] = "unknown";
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof text);
  }
  return text;
}

// Closes connections libmicrohttpd would hold for the whole idle timeout although their request can
// never be served, so that they do not fill max_connections:
//  - the peer closed (FIN) before its request header was complete, or before its body was (a
//    Content-Length not reached, a chunk cut mid-way), or between requests. libmicrohttpd 0.9.75
//    under epoll often misses such a FIN (it arrives with the last bytes it read and no new edge
//    follows), so the socket sits in CLOSE-WAIT until the idle timeout (60 s);
//  - the header is not complete by its deadline (HttpServerOptions::header_timeout_seconds), or
//    the body by its own (body_timeout_seconds, from the header's end): libmicrohttpd's only
//    timeout is an idle one, which a client sending a byte now and then resets for ever.
// A request whose header and body are complete is left alone, FIN or not: a client that
// half-closed after its request (HTTP/1.0 style, `nc -N`) still gets its answer, and one that does
// not read it is bounded by the idle timeout.
// Mechanism: the connection-notify callback records each connection's fd; the callbacks that see a
// request line (URI log), a complete header (the access handler's first call), a complete body
// (the call that answers) and a finished request move it between phases. A thread looks every
// kSweepInterval: in a phase without a whole request in hand, recv(MSG_PEEK) returning 0 means the
// peer sent FIN with nothing left to read;
// it must have been so on two sweeps in a row, kFinConfirmDelay apart (a complete request that
// libmicrohttpd has read but not yet handed over looks the same for a moment). Such a connection, or one past its header
// or body deadline, gets shutdown(SHUT_RDWR): libmicrohttpd then sees end-of-file and error on it and
// closes it in its own thread, as for any dead peer. The fd cannot be closed and reused under the
// sweep: libmicrohttpd calls the CLOSED notification (which removes it, under mu_) before it
// closes the socket.
// It also holds the connection limits libmicrohttpd cannot: per client as ClientAddressKey counts
// them (an IPv6 /64 is one client; libmicrohttpd's own per-IP limit, not used, would count each IPv6 address), a
// connection past the client's share shut down as it opens; and a reserve of slots kept free by
// shedding, when a new connection takes one, the connection idle longest: first those that never
// sent a request line, then those between requests (kept-alive scrapers, which reconnect). So a
// flood of idle connections from many addresses, each under its share, never keeps a newcomer in
// the accept queue until the header deadline; a connection with a request in hand is never shed.
class ConnectionWatch {
 public:
  struct Limits {
    std::chrono::seconds header_timeout;
    std::chrono::seconds body_timeout;
    unsigned max_connections;
    unsigned max_per_client;
    unsigned reserved;  // slots kept free by shedding idle connections
  };
  explicit ConnectionWatch(Limits limits)
      : header_timeout_(limits.header_timeout), body_timeout_(limits.body_timeout), limits_(limits) {}
  ~ConnectionWatch() { Stop(); }

  void Start() {
    sweeper_ = std::thread([this] {
      NameThisThread("http-sweep");
      MutexLock lock(mu_);
      next_sweep_ = Clock::now() + kSweepInterval;
      while (!stopping_) {
        // Until the next sweep is due, or an earlier one is asked for (or a stop).
        while (!stopping_ && !rescheduled_) {
          if (cv_.wait_until(lock, next_sweep_) == std::cv_status::timeout) break;
        }
        if (stopping_ || rescheduled_) {
          rescheduled_ = false;  // woken for an earlier sweep (or to stop)
          continue;
        }
        auto now = Clock::now();
        next_sweep_ = now + (SweepLocked(now) ? kFinConfirmDelay : kSweepInterval);
      }
    });
  }
  void Stop() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (sweeper_.joinable()) sweeper_.join();
  }

  // The calls below come from libmicrohttpd's event thread.
  void Opened(MHD_Connection* conn) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == nullptr) return;
    std::string key = ClientKey(conn);
    MutexLock lock(mu_);
    auto now = Clock::now();
    Tracked& t = conns_[conn];
    t = Tracked{};
    t.fd = info->connect_fd;
    t.Enter(Phase::kAwaitingHeader);
    t.deadline = now + header_timeout_;
    if (++per_client_[key] > limits_.max_per_client) {
      ::shutdown(t.fd, SHUT_RDWR);  // libmicrohttpd sees the error and closes it
      t.shut = true;
      log::Debug("HTTP connection refused: the client holds its share of the slots",
                 {{"client", ClientAddressText(conn)}, {"max_per_client", std::to_string(limits_.max_per_client)}});
    } else if (++live_ + limits_.reserved > limits_.max_connections) {
      ShedIdlestLocked(conn);
    }
    t.key = std::move(key);
    // A burst of connections that close half-way must not wait a whole interval to be seen.
    if (now + kFinConfirmDelay < next_sweep_) {
      next_sweep_ = now + kFinConfirmDelay;
      rescheduled_ = true;
      cv_.notify_one();
    }
  }
  void Closed(MHD_Connection* conn) {
    MutexLock lock(mu_);
    auto it = conns_.find(conn);
    if (it == conns_.end()) return;
    if (!it->second.shut) --live_;
    if (auto c = per_client_.find(it->second.key); c != per_client_.end() && --c->second == 0) per_client_.erase(c);
    conns_.erase(it);
  }
  // A request line arrived: a later request on a keep-alive connection starts its header deadline.
  // (The first request's deadline runs from the connection's start.)
  void RequestLine(MHD_Connection* conn) {
    MutexLock lock(mu_);
    auto it = conns_.find(conn);
    if (it == conns_.end()) return;
    if (it->second.phase == Phase::kBetweenRequests) {
      it->second.Enter(Phase::kAwaitingHeader);
      it->second.deadline = Clock::now() + header_timeout_;
    }
    it->second.request_line_seen = true;
  }
  // The header is complete: any body must be by its own deadline.
  void HeaderComplete(MHD_Connection* conn) {
    MutexLock lock(mu_);
    if (auto it = conns_.find(conn); it != conns_.end()) {
      it->second.Enter(Phase::kReadingBody);
      it->second.deadline = Clock::now() + body_timeout_;
    }
  }
  // The whole request (body included) is in hand, or is answered without reading its body.
  void RequestComplete(MHD_Connection* conn) { SetPhase(conn, Phase::kInRequest); }
  void RequestDone(MHD_Connection* conn) { SetPhase(conn, Phase::kBetweenRequests); }

 private:
  enum class Phase { kAwaitingHeader, kReadingBody, kInRequest, kBetweenRequests };
  struct Tracked {
    int fd = -1;
    Phase phase = Phase::kAwaitingHeader;
    Clock::time_point deadline;  // of the header (kAwaitingHeader) or the body (kReadingBody)
    bool fin_seen = false;  // on the previous sweep, in this phase
    bool shut = false;      // shutdown() done; libmicrohttpd will close it
    bool request_line_seen = false;  // in this phase
    Clock::time_point since;         // in this phase
    std::string key;                 // ClientAddressKey
    void Enter(Phase p) {
      phase = p;
      fin_seen = false;
      request_line_seen = false;
      since = Clock::now();
    }
  };

  // Shuts down the connection idle longest (see the class comment), other than `newcomer`.
  void ShedIdlestLocked(MHD_Connection* newcomer) REQUIRES(mu_) {
    Tracked* idlest = nullptr;
    int idlest_rank = 2;
    for (auto& [conn, t] : conns_) {
      if (t.shut || conn == newcomer) continue;
      int rank = t.phase == Phase::kAwaitingHeader && !t.request_line_seen ? 0
                 : t.phase == Phase::kBetweenRequests                    ? 1
                                                                         : 2;
      if (rank < idlest_rank || (rank == idlest_rank && idlest != nullptr && t.since < idlest->since)) {
        idlest = &t;
        idlest_rank = rank;
      }
    }
    if (idlest == nullptr) return;  // every other connection has a request in hand
    ::shutdown(idlest->fd, SHUT_RDWR);
    idlest->shut = true;
    --live_;
    ++shed_;
    log::Debug("HTTP idle connection shed for a new one", {{"shed_so_far", std::to_string(shed_)}});
  }

  void SetPhase(MHD_Connection* conn, Phase phase) {
    MutexLock lock(mu_);
    if (auto it = conns_.find(conn); it != conns_.end()) it->second.Enter(phase);
  }

  // True when a FIN is waiting to be confirmed by the next sweep.
  bool SweepLocked(Clock::time_point now) REQUIRES(mu_) {
    unsigned peer_closed = 0, header_late = 0, body_late = 0;
    bool to_confirm = false;
    for (auto& [conn, t] : conns_) {
      if (t.shut || t.phase == Phase::kInRequest) continue;
      char byte;
      bool fin = ::recv(t.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
      bool late = (t.phase == Phase::kAwaitingHeader || t.phase == Phase::kReadingBody) && now >= t.deadline;
      if (fin && !t.fin_seen && !late) {
        t.fin_seen = true;
        to_confirm = true;
        continue;
      }
      t.fin_seen = fin;
      if (!fin && !late) continue;
      ::shutdown(t.fd, SHUT_RDWR);
      t.shut = true;
      --live_;
      ++(fin ? peer_closed : t.phase == Phase::kAwaitingHeader ? header_late : body_late);
    }
    if (peer_closed + header_late + body_late > 0) {
      log::Debug("HTTP connections closed", {{"peer_closed_mid_request", std::to_string(peer_closed)},
                                             {"header_timeout", std::to_string(header_late)},
                                             {"body_timeout", std::to_string(body_late)}});
    }
    return to_confirm;
  }

  const std::chrono::seconds header_timeout_;
  const std::chrono::seconds body_timeout_;
  const Limits limits_;
  Mutex mu_;
  std::condition_variable_any cv_;
  std::unordered_map<MHD_Connection*, Tracked> conns_ GUARDED_BY(mu_);
  std::unordered_map<std::string, unsigned> per_client_ GUARDED_BY(mu_);  // connections per ClientKey
  unsigned live_ GUARDED_BY(mu_) = 0;  // tracked and not shut down
  std::uint64_t shed_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool rescheduled_ GUARDED_BY(mu_) = false;  // next_sweep_ moved earlier
  Clock::time_point next_sweep_ GUARDED_BY(mu_) = Clock::time_point::max();
  std::thread sweeper_;
};

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// What the header fields say about framing, beyond what libmicrohttpd looks at (it takes the first
// of duplicate fields, and keeps a name with whitespace before the colon as another name).
struct FieldCensus {
  unsigned content_lengths = 0;
  bool space_in_name = false;
};

MHD_Result CountField(void* cls, MHD_ValueKind /*kind*/, const char* key, const char* /*value*/) {
  auto* census = static_cast<FieldCensus*>(cls);
  if (key == nullptr) return MHD_YES;
  std::string_view name(key);
  if (name.empty() || name.find_first_of(" \t") != std::string_view::npos) census->space_in_name = true;
  if (EqualsIgnoringCase(name, MHD_HTTP_HEADER_CONTENT_LENGTH)) ++census->content_lengths;
  return MHD_YES;
}

// RFC 9112, 3.2, 5.1, 6.1 and 6.3: framing a proxy in front could read differently from us. A
// field name with whitespace before its colon ("Transfer-Encoding : chunked", which libmicrohttpd
// would ignore as an unknown field and so read the chunks as a second request); more than one
// Content-Length, even with the same value (libmicrohttpd takes the first: the rest of the body
// would be read as a second request); both Content-Length and Transfer-Encoding (refused, not
// read as chunked: the strict choice RFC 9112 6.1 leaves open); a Transfer-Encoding whose last
// coding is not chunked (libmicrohttpd would read its body to the end of the connection); a NUL in
// the target (libmicrohttpd decodes %00 and the path ends there: "/metrics%00x" would be served as
// /metrics).
std::optional<std::string> FramingProblem(MHD_Connection* conn, bool nul_in_target) {
  if (nul_in_target) return "a NUL (%00) in the request target";
  FieldCensus census;
  MHD_get_connection_values(conn, MHD_HEADER_KIND, &CountField, &census);
  if (census.space_in_name) return "whitespace in a header field name";
  if (census.content_lengths > 1) return "more than one Content-Length";
  const char* te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
  if (te == nullptr) return std::nullopt;
  if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH) != nullptr) {
    return "both Content-Length and Transfer-Encoding";
  }
  std::string lower;
  for (const char* c = te; *c; ++c) {
    if (*c != ' ' && *c != '\t') lower += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  }
  // Only "chunked" alone is supported: a coding before it (gzip, chunked) would have to be undone.
  if (lower != "chunked") return "a Transfer-Encoding other than chunked";
  return std::nullopt;
}


// Collects the query arguments of a request (MHD_GET_ARGUMENT_KIND, percent-decoded), stopping
// at the first that breaks a bound (kMaxQueryArguments and the name and value bounds).
struct QueryCensus {
  std::vector<QueryArgument> arguments;
  std::optional<std::string> problem;
};

MHD_Result CollectArgument(void* cls, MHD_ValueKind /*kind*/, const char* key, const char* value) {
  auto* census = static_cast<QueryCensus*>(cls);
  const std::string_view name = key ? key : "", text = value ? value : "";
  if (census->arguments.size() == kMaxQueryArguments) {
    census->problem = "more than " + std::to_string(kMaxQueryArguments) + " query arguments";
  } else if (name.size() > kMaxQueryNameBytes) {
    census->problem = "a query argument name longer than " + std::to_string(kMaxQueryNameBytes) + " bytes";
  } else if (text.size() > kMaxQueryValueBytes) {
    census->problem = "a query argument value longer than " + std::to_string(kMaxQueryValueBytes) + " bytes";
  } else {
    census->arguments.push_back({std::string(name), std::string(text)});
    return MHD_YES;
  }
  return MHD_NO;
}

}  // namespace

struct GzipStream::State {
  z_stream z{};
  std::string out;
  bool ok = false;
};

GzipStream::GzipStream(std::size_t expected_size) : state_(std::make_unique<State>()) {
  // 15 + 16: a gzip wrapper; level 1: metric text compresses ~10x even so, at a fraction of the CPU.
  state_->ok = deflateInit2(&state_->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  // Sized for that ratio and grown when short, not sized to deflateBound(): the bound is the input's
  // size, and a string resized to it is zero-filled, so all of it would be resident for as long as
  // the compressed copy is kept.
  state_->out.resize(std::max<std::size_t>(expected_size / 8, 4096));
}

GzipStream::~GzipStream() { deflateEnd(&state_->z); }  // a no-op once ended, or never started

std::size_t GzipStream::size_in() const { return state_->z.total_in; }

void GzipStream::Write(std::string_view bytes) {
  State& s = *state_;
  while (s.ok && !bytes.empty()) {
    const std::size_t n = std::min(bytes.size(), kZlibChunk);
    s.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    s.z.avail_in = static_cast<uInt>(n);
    s.ok = Deflate(s.z, s.out, Z_NO_FLUSH);
    bytes.remove_prefix(n);
  }
}

std::optional<std::string> GzipStream::Finish() {
  State& s = *state_;
  if (s.ok) s.ok = Deflate(s.z, s.out, Z_FINISH);
  const std::size_t size = s.z.total_out;
  deflateEnd(&s.z);
  if (!s.ok) return std::nullopt;
  s.ok = false;
  s.out.resize(size);
  s.out.shrink_to_fit();
  return std::move(s.out);
}

std::optional<std::string> Gzip(std::string_view body) {
  GzipStream stream(body.size());
  stream.Write(body);
  return stream.Finish();
}

SharedBody::SharedBody(std::shared_ptr<const std::string> text, std::shared_ptr<const std::string> gzip,
                       std::size_t text_size)
    : text_size_(text_size), text_(std::move(text)), gzip_(std::move(gzip)) {}

std::shared_ptr<SharedBody> SharedBody::FromText(std::shared_ptr<const std::string> text) {
  const std::size_t size = text->size();
  return std::shared_ptr<SharedBody>(new SharedBody(std::move(text), nullptr, size));
}

std::shared_ptr<SharedBody> SharedBody::FromGzip(std::string gzip, std::size_t text_size) {
  std::shared_ptr<const std::string> bytes;
  if (gzip.capacity() >= kGivenBackFrom) {
    // glibc returns a freed block inside its heap only when trimmed; a big exposition's pages would
    // otherwise stay resident until the next scrape lands on them.
    bytes = std::shared_ptr<const std::string>(new std::string(std::move(gzip)), [](const std::string* b) {
      delete b;
      malloc_trim(0);
    });
  } else {
    bytes = std::make_shared<const std::string>(std::move(gzip));
  }
  return std::shared_ptr<SharedBody>(new SharedBody(nullptr, std::move(bytes), text_size));
}

std::shared_ptr<const std::string> SharedBody::Text() {
  MutexLock lock(mu_);
  if (text_) return text_;
  if (auto text = decompressed_.lock()) return text;
  std::optional<std::string> text = Gunzip(*gzip_, text_size_);
  if (!text) return nullptr;
  auto shared = std::make_shared<const std::string>(std::move(*text));
  decompressed_ = shared;
  return shared;
}

std::shared_ptr<const std::string> SharedBody::Gzipped() {
  MutexLock lock(mu_);
  if (text_size_ < kMinGzipBytes) return nullptr;
  if (gzip_ || gzip_failed_) return gzip_;
  if (auto gzip = Gzip(*text_)) {
    gzip_ = std::make_shared<const std::string>(std::move(*gzip));
  } else {
    gzip_failed_ = true;
  }
  return gzip_;
}

bool SharedBody::text_in_memory() const {
  MutexLock lock(mu_);
  return text_ != nullptr || !decompressed_.expired();
}

std::string WeakEtag(std::string_view body) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : body) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char text[32];
  std::snprintf(text, sizeof text, "W/\"%016llx\"", static_cast<unsigned long long>(h));
  return text;
}

bool IfNoneMatchHits(std::string_view header, std::string_view etag) {
  const std::string_view want = OpaqueTag(etag);
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < header.size() && (header[i] == ' ' || header[i] == '\t' || header[i] == ',')) ++i;
  };
  skip_space();
  if (header.substr(i) == "*") return true;
  while (i < header.size()) {
    std::size_t start = i;
    if (header.compare(i, 2, "W/") == 0) i += 2;
    if (i >= header.size() || header[i] != '"') return false;
    std::size_t close = header.find('"', i + 1);
    if (close == std::string_view::npos) return false;
    if (OpaqueTag(header.substr(start, close + 1 - start)) == want) return true;
    i = close + 1;
    skip_space();
  }
  return false;
}

// What goes out for a response: a 304 without a body when the request's If-None-Match names its
// ETag, else its body, gzip-compressed when the request accepts it and it is worth it.
struct Encoded {
  std::shared_ptr<const std::string> bytes;  // nullptr: a shared body that did not decompress
  bool gzip = false;
  bool not_modified = false;
};

Encoded Encode(const HttpResponse& r, bool gzip, std::string_view if_none_match) {
  if (r.status == 200 && !r.etag.empty() && !if_none_match.empty() && IfNoneMatchHits(if_none_match, r.etag)) {
    return {std::make_shared<const std::string>(), false, true};
  }
  if (r.shared_body) {
    if (gzip) {
      if (auto compressed = r.shared_body->Gzipped()) return {std::move(compressed), true};
    }
    return {r.shared_body->Text(), false};
  }
  if (gzip && r.body.size() >= kMinGzipBytes) {
    if (auto compressed = Gzip(r.body)) return {std::make_shared<const std::string>(std::move(*compressed)), true};
  }
  return {std::make_shared<const std::string>(r.body), false};
}

// One request's state, owned by libmicrohttpd's con_cls slot from the first callback to
// RequestCompleted. While the connection is suspended only the worker touches `response` and
// `encoded`; it publishes them with `done` (release) before resuming, and the event thread reads
// them after an acquire of `done`.
struct RequestState {
  HttpResponse response;
  Encoded encoded;
  bool started = false;        // the access handler's first call (header complete) is past
  bool nul_in_target = false;  // seen in the raw target by the URI log callback
  bool head = false;
  bool gzip = false;
  bool queued = false;
  bool client_left = false;  // set with `response`: close the connection, send nothing
  int fd = -1;               // the connection's socket (set before the request is queued)
  std::string if_none_match;  // the request's If-None-Match header, if any
  std::vector<QueryArgument> query;  // set before the request is queued
  Clock::time_point arrived{};       // likewise: when the request was complete
  std::atomic<bool> done{false};

  // Whether the client has left, as `kind` counts it (see "Clients that left", http_server.h).
  bool ClientLeft(RouteKind kind) const { return ClientHasLeft(fd, kind == RouteKind::kPage); }
  // What a handler of a `kind` route is told of the request.
  HttpRequest Request(RouteKind kind) const {
    return HttpRequest{gzip, [this, kind] { return ClientLeft(kind); }, query, arrived};
  }
};

struct HttpServer::Impl {
  HttpServerOptions options;
  std::map<std::string, HttpRoute> routes;
  std::shared_ptr<BasicAuth> auth;
  std::optional<TlsServerConfig> tls;
  std::string tls_priorities;
  std::unique_ptr<WorkerPool> pool;
  // Declared after the pool, so destroyed before it: its callbacks post to the pool.
  std::unique_ptr<PasswordCheckQueue> password_checks;
  MHD_Daemon* daemon = nullptr;
  int port = 0;
  unsigned max_connections = 0;
  unsigned max_per_client = 0;
  std::atomic<int> deferred_outstanding{0};  // requests handed to the pool and not yet completed
  std::atomic<std::uint64_t> requests_left{0};  // dropped as their client had left (tests, logs)
  std::unique_ptr<ConnectionWatch> watch;
  std::atomic<std::int64_t> last_fd_warning_ns{std::numeric_limits<std::int64_t>::min()};
  std::atomic<bool> out_of_fds_seen{false};  // libmicrohttpd said so (at start: epoll, pipes)
  // Password checks refused since the last warning about them, and when that was (event thread).
  std::uint64_t checks_refused_unreported = 0;
  std::optional<Clock::time_point> last_refusal_warning;

  ~Impl() {
    if (daemon == nullptr) return;
    watch->Stop();
    // Stop accepting, let the workers finish (each resumes its connection), then stop the event
    // thread. libmicrohttpd hands the quiesced listening socket back to us to close.
    MHD_socket listen_fd = MHD_quiesce_daemon(daemon);
    // Password checks first: those waiting or running are answered 503 now (a running bcrypt is
    // abandoned, not waited for), and the ones that finished already are on the pool.
    if (password_checks) password_checks->Stop();
    pool->Stop();
    // A short grace for the event thread to send what the workers just finished (and the 503s of
    // the cancelled); a slow reader does not hold shutdown past it.
    auto grace_end = std::chrono::steady_clock::now() + kShutdownGrace;
    while (deferred_outstanding.load() > 0 && std::chrono::steady_clock::now() < grace_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    MHD_stop_daemon(daemon);
    if (listen_fd != MHD_INVALID_SOCKET) ::close(listen_fd);
  }

  // Sends `r` (gzip-compressed when the request allows it and it is worth it), or a 304 without
  // a body when `if_none_match` names its ETag.
  MHD_Result Queue(MHD_Connection* conn, const HttpResponse& r, bool gzip, bool close = false,
                   std::string_view if_none_match = {}) {
    return Send(conn, r, Encode(r, gzip, if_none_match), close);
  }

  // Sends `r` as `encoded` says.
  MHD_Result Send(MHD_Connection* conn, const HttpResponse& r, const Encoded& encoded, bool close = false) {
    if (encoded.bytes == nullptr) {
      return Queue(conn, {500, kTextPlain, "internal error: the body does not decompress\n"}, false, close);
    }
    // The response points into the body's bytes; the holder keeps them alive until libmicrohttpd
    // is done with the response (a slow reader may take a while).
    const std::shared_ptr<const std::string>& body = encoded.bytes;
    auto* holder = new std::shared_ptr<const std::string>(body);
    MHD_Response* resp = MHD_create_response_from_buffer_with_free_callback_cls(
        body->size(), const_cast<char*>(body->data()),
        [](void* p) { delete static_cast<std::shared_ptr<const std::string>*>(p); }, holder);
    if (resp == nullptr) {
      delete holder;
      return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
    // With an ETag a client may keep the body, but asks again each time (If-None-Match); an answer
    // behind basic auth is never kept, by the browser or any cache on the way.
    const bool may_keep = !r.etag.empty() && !(auth && auth->enabled());
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, may_keep ? "no-cache" : "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Content-Security-Policy", kContentSecurityPolicy);
    if (!r.etag.empty()) MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, r.etag.c_str());
    MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    if (encoded.gzip) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    if (close) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    if (r.status == 405) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (r.retry_after_seconds != 0) {
      MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, std::to_string(r.retry_after_seconds).c_str());
    }
    if (r.status == 401) {
      MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"rdma-healthd\"");
    }
    MHD_Result rc = MHD_queue_response(conn, encoded.not_modified ? 304u : static_cast<unsigned>(r.status), resp);
    MHD_destroy_response(resp);
    return rc;
  }

  // Runs `route` on the pool with the connection suspended, then resumes it with the response.
  MHD_Result Defer(MHD_Connection* conn, RequestState* state, const HttpRoute* route) {
    state->queued = true;
    ++deferred_outstanding;
    MHD_suspend_connection(conn);
    PostRoute(conn, state, route);
    return MHD_YES;
  }

  // Posts `route`'s handler for a suspended request; a client that left by the time a worker takes
  // it is not served (nothing is collected or rendered for it).
  void PostRoute(MHD_Connection* conn, RequestState* state, const HttpRoute* route) {
    pool->Post(route->kind == RouteKind::kPage, [this, conn, state, route](bool cancelled) {
      if (cancelled) return Finish(conn, state, {503, kTextPlain, "shutting down\n"});
      if (state->ClientLeft(route->kind)) return Finish(conn, state, LeftBefore());
      HttpResponse r = RunHandler(route->handler, state->Request(route->kind));
      // Encoding (a gzip of megabytes) is work too.
      if (!r.client_left && state->ClientLeft(route->kind)) r = HttpResponse::ClientLeft();
      if (r.client_left) ++requests_left;
      Finish(conn, state, std::move(r));
    });
  }

  HttpResponse LeftBefore() {
    ++requests_left;
    return HttpResponse::ClientLeft();
  }

  // Sets the answer of a suspended request and resumes its connection (any thread, once). The
  // body is encoded here, so a compression or decompression runs on the worker that made the
  // answer, not on the event thread.
  static void Finish(MHD_Connection* conn, RequestState* state, HttpResponse r) {
    state->client_left = r.client_left;
    state->response = std::move(r);
    if (!state->client_left) state->encoded = Encode(state->response, state->gzip, state->if_none_match);
    state->done.store(true, std::memory_order_release);
    MHD_resume_connection(conn);
  }

  // The bcrypt of credentials not in the cache, on the password-check queue with the connection
  // suspended; once they verify, the route (`route`, or the fixed answer when there is none) runs
  // on the pool. Refused at once when the client or the queue has too many checks.
  MHD_Result CheckPassword(MHD_Connection* conn, RequestState* state, std::string user, std::string password,
                           const HttpRoute* route, HttpResponse fixed) {
    state->queued = true;
    ++deferred_outstanding;
    // Suspended before the check is queued: its callback may resume the connection at once.
    MHD_suspend_connection(conn);
    auto admission = password_checks->Submit(
        ClientKey(conn), std::move(user), std::move(password),
        [this, conn, state, route, fixed = std::move(fixed)](bool verified) {
          if (!verified) return Finish(conn, state, {401, kTextPlain, "unauthorized\n"});
          if (route == nullptr) return Finish(conn, state, fixed);
          PostRoute(conn, state, route);
        },
        [conn, state] { Finish(conn, state, {503, kTextPlain, "shutting down\n"}); });
    if (admission == PasswordCheckQueue::Admission::kAccepted) return MHD_YES;
    HttpResponse refused;
    if (admission == PasswordCheckQueue::Admission::kClientBusy) {
      refused = {429, kTextPlain, "too many password checks from this address at once; retry later\n"};
      refused.retry_after_seconds = 1;
    } else if (admission == PasswordCheckQueue::Admission::kFull) {
      refused = {503, kTextPlain, "too many password checks waiting; retry later\n"};
      refused.retry_after_seconds = 1;
    } else {
      refused = {503, kTextPlain, "shutting down\n"};
    }
    ReportRefusal(conn, refused.status);
    Finish(conn, state, std::move(refused));
    return MHD_YES;
  }

  // A flood of wrong passwords is worth an operator's attention, but not a line per request:
  // a warning at most every kRefusalWarningInterval, counting the refusals since the last one.
  void ReportRefusal(MHD_Connection* conn, int status) {
    ++checks_refused_unreported;
    const auto now = Clock::now();
    if (last_refusal_warning && now - *last_refusal_warning < kRefusalWarningInterval) {
      log::Debug("HTTP password check refused", {{"status", std::to_string(status)}});
      return;
    }
    log::Warn("HTTP password checks refused: too many at once (a flood of wrong passwords?)",
              {{"refused", std::to_string(checks_refused_unreported)},
               {"client", ClientAddressText(conn)},
               {"status", std::to_string(status)},
               {"per_client", std::to_string(options.password_checks.per_client)},
               {"capacity", std::to_string(options.password_checks.capacity)}});
    checks_refused_unreported = 0;
    last_refusal_warning = now;
  }

  // Client certificates: libmicrohttpd only asks for one when given a trust list and never checks
  // it, so the policy is applied here, on the TLS session, before any route runs.
  std::optional<std::string> ClientCertProblem(MHD_Connection* conn) const {
    if (!tls || tls->client_auth == ClientAuth::kNoClientCert) return std::nullopt;
    const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == nullptr || info->tls_session == nullptr) return "no TLS session";
    auto session = static_cast<gnutls_session_t>(info->tls_session);
    unsigned n = 0;
    const gnutls_datum_t* certs = gnutls_certificate_get_peers(session, &n);
    bool given = certs != nullptr && n > 0;
    if (!given) {
      if (tls->client_auth == ClientAuth::kVerifyClientCertIfGiven) return std::nullopt;
      return "a client certificate is required";
    }
    if (tls->client_auth == ClientAuth::kRequireAnyClientCert) return std::nullopt;
    unsigned status = 0;
    if (gnutls_certificate_verify_peers2(session, &status) != GNUTLS_E_SUCCESS) {
      return "the client certificate could not be verified";
    }
    if (status != 0) {
      gnutls_datum_t text{};
      std::string why = "the client certificate is not trusted";
      if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0) {
        why += std::string(": ") + reinterpret_cast<const char*>(text.data);
        gnutls_free(text.data);
      }
      return why;
    }
    return std::nullopt;
  }

  MHD_Result Handle(MHD_Connection* conn, const char* url, const char* method, size_t* upload_size,
                    void** con_cls) {
    if (*con_cls == nullptr) *con_cls = new RequestState();  // normally made by the URI log callback
    auto* state = static_cast<RequestState*>(*con_cls);
    if (!state->started) {  // the header is complete; any body comes in later calls
      state->started = true;
      if (auto problem = FramingProblem(conn, state->nul_in_target)) {
        watch->RequestComplete(conn);
        // Queued before the body is read: libmicrohttpd reads nothing more from this connection
        // and closes it after the answer (Connection: close says so to the client).
        log::Debug("HTTP request refused", {{"reason", *problem}});
        return Queue(conn, {400, kTextPlain, "bad request: " + *problem + "\n"}, false, /*close=*/true);
      }
      watch->HeaderComplete(conn);
      return MHD_YES;
    }
    if (state->done.load(std::memory_order_acquire)) {
      if (state->client_left) {
        log::Debug("HTTP request dropped: the client left", {{"client", ClientAddressText(conn)}});
        return MHD_NO;  // closes the connection; nothing was made to send
      }
      return Send(conn, state->response, state->encoded);
    }
    if (state->queued) return MHD_YES;  // resumed without a response cannot happen; be safe
    if (*upload_size != 0) {  // a request body: not wanted, read and dropped
      *upload_size = 0;
      return MHD_YES;
    }
    watch->RequestComplete(conn);  // the body, if any, is all read
    if (const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD)) {
      state->fd = info->connect_fd;
    }
    state->gzip = AcceptsGzip(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                          MHD_HTTP_HEADER_ACCEPT_ENCODING));
    if (const char* inm = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH)) {
      state->if_none_match = inm;
    }
    if (auto problem = ClientCertProblem(conn)) {
      log::Debug("HTTP client refused", {{"reason", *problem}});
      return Queue(conn, {403, kTextPlain, *problem + "\n"}, false);
    }
    QueryCensus census;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, &CollectArgument, &census);
    if (census.problem) {
      log::Debug("HTTP request refused", {{"reason", *census.problem}});
      return Queue(conn, {400, kTextPlain, "bad request: " + *census.problem + "\n"}, false);
    }
    state->query = std::move(census.arguments);
    state->arrived = Clock::now();
    const bool head = std::strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    const bool get = std::strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    auto route = routes.find(url);

    // The answer once the client is known to be allowed in.
    auto answer = [this, head, get, route]() -> std::pair<const HttpRoute*, HttpResponse> {
      if (!head && !get) return {nullptr, {405, kTextPlain, "method not allowed\n"}};
      if (route == routes.end()) return {nullptr, {404, kTextPlain, "not found\n"}};
      return {&route->second, {}};
    };

    if (auth && auth->enabled()) {
      char* password = nullptr;
      char* user = MHD_basic_auth_get_username_password(conn, &password);
      std::string u = user ? user : "", p = password ? password : "";
      bool given = user != nullptr && password != nullptr;
      if (user) MHD_free(user);
      if (password) MHD_free(password);
      if (!given) return Queue(conn, {401, kTextPlain, "unauthorized\n"}, false);
      if (!auth->Cached(u, p)) {
        auto [r, fixed] = answer();
        return CheckPassword(conn, state, std::move(u), std::move(p), r, std::move(fixed));
      }
    }
    auto [r, fixed] = answer();
    if (r == nullptr) return Queue(conn, fixed, state->gzip);
    if (r->kind == RouteKind::kInline) {
      return Queue(conn, RunHandler(r->handler, HttpRequest{state->gzip, {}, state->query, state->arrived}), state->gzip, false, state->if_none_match);
    }
    return Defer(conn, state, r);
  }

  // Makes the TLS handshake itself demand (and, where asked, verify) a client certificate, as
  // Go's tls.Config does, so a client without one fails at the handshake, not at the first request.
  void OnConnectionStarted(MHD_Connection* conn) const {
    if (!tls || tls->client_auth == ClientAuth::kNoClientCert) return;
    const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == nullptr || info->tls_session == nullptr) return;
    auto session = static_cast<gnutls_session_t>(info->tls_session);
    bool require = tls->client_auth == ClientAuth::kRequireAnyClientCert ||
                   tls->client_auth == ClientAuth::kRequireAndVerifyClientCert;
    gnutls_certificate_server_set_request(session, require ? GNUTLS_CERT_REQUIRE : GNUTLS_CERT_REQUEST);
    // GnuTLS's own verification also fails a handshake without a certificate, so it only serves
    // RequireAndVerifyClientCert; VerifyClientCertIfGiven is checked per request (ClientCertProblem).
    if (tls->client_auth == ClientAuth::kRequireAndVerifyClientCert) gnutls_session_set_verify_cert(session, nullptr, 0);
  }
};

namespace {

MHD_Result AccessHandler(void* cls, MHD_Connection* conn, const char* url, const char* method,
                         const char* /*version*/, const char* /*upload_data*/, size_t* upload_size,
                         void** con_cls) {
  return static_cast<HttpServer::Impl*>(cls)->Handle(conn, url, method, upload_size, con_cls);
}

void RequestCompleted(void* cls, MHD_Connection* conn, void** con_cls,
                      MHD_RequestTerminationCode /*toe*/) {
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  impl->watch->RequestDone(conn);
  auto* state = static_cast<RequestState*>(*con_cls);
  if (state != nullptr && state->queued) --impl->deferred_outstanding;
  delete state;
  *con_cls = nullptr;
}

void ConnectionNotify(void* cls, MHD_Connection* conn, void** /*socket_context*/,
                      MHD_ConnectionNotificationCode code) {
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    impl->watch->Opened(conn);
    impl->OnConnectionStarted(conn);
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    impl->watch->Closed(conn);
  }
}

// Called with the raw request target, before libmicrohttpd decodes it; what it returns is the
// request's con_cls. The decoded path is a C string, so a %00 is only visible here.
void* RequestLineSeen(void* cls, const char* uri, MHD_Connection* conn) {
  static_cast<HttpServer::Impl*>(cls)->watch->RequestLine(conn);
  auto* state = new RequestState();
  state->nul_in_target = uri != nullptr && strstr(uri, "%00") != nullptr;
  return state;
}

// libmicrohttpd's own messages (client resets, the connection cap): debug level, as a flood of
// bad clients must not flood the journal.
// The exception: accept failing for want of descriptors means scrapes are not being answered, so it
// is a warning (at most one per kFdWarningInterval) that names the limit.
__attribute__((format(printf, 2, 0))) void MhdLog(void* cls, const char* fmt, va_list ap) {
  const int saved_errno = errno;
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string text(buf);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const bool out_of_fds = text.find("resource limit") != std::string::npos ||
                          text.find(std::strerror(EMFILE)) != std::string::npos ||
                          text.find(std::strerror(ENFILE)) != std::string::npos;
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  if (out_of_fds && impl != nullptr) {
    impl->out_of_fds_seen = true;
    std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
    std::int64_t last = impl->last_fd_warning_ns.load();
    std::int64_t interval = std::chrono::nanoseconds(kFdWarningInterval).count();
    if (last == std::numeric_limits<std::int64_t>::min() || now - last >= interval) {
      if (impl->last_fd_warning_ns.compare_exchange_strong(last, now)) {
        log::Warn("HTTP server out of file descriptors: connections are not accepted",
                  {{"open_file_limit", OpenFileLimitText()},
                   {"max_connections", std::to_string(impl->max_connections)},
                   {"hint", "raise the open-file limit (ulimit -n, systemd LimitNOFILE=)"},
                   {"message", text}});
        errno = saved_errno;
        return;
      }
    }
  }
  log::Debug("libmicrohttpd", {{"message", text}});
  errno = saved_errno;
}

unsigned FitConnectionsToFdLimit(unsigned wanted) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return wanted;
  rlim_t room = rl.rlim_cur > kFdsKeptForTheRest + 16 ? rl.rlim_cur - kFdsKeptForTheRest : 16;
  return room < wanted ? static_cast<unsigned>(room) : wanted;
}

}  // namespace

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;
int HttpServer::port() const { return impl_->port; }
unsigned HttpServer::max_connections() const { return impl_->max_connections; }
unsigned HttpServer::max_connections_per_client() const { return impl_->max_per_client; }
std::uint64_t HttpServer::requests_dropped_client_left() const { return impl_->requests_left.load(); }


Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                      std::map<std::string, HttpRoute> routes) {
  auto address = ParseListenAddress(options.listen_address);
  if (!address.ok()) return address.error();
  if (options.web && options.web->tls) {
    if (Status st = CheckTlsMaterial(*options.web->tls, options.web->source); !st.ok()) return st.error();
  }
  auto socket = ListeningSocket::Open(*address);
  if (!socket.ok()) {
    std::string note = OutOfDescriptorsNote();
    if (!note.empty()) return Error{socket.error().message + note};
    return socket.error();
  }

  if (!HaveFreeDescriptors(kFdsToServeOne)) {
    return Error{"cannot start the HTTP server on " + options.listen_address + OutOfDescriptorsNote(true)};
  }

  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->routes = std::move(routes);
  impl->port = socket->port();
  if (options.web) {
    impl->tls = options.web->tls;
    impl->auth = std::make_shared<BasicAuth>(options.web->basic_auth_users);
  }
  impl->max_connections = FitConnectionsToFdLimit(options.max_connections);
  impl->max_per_client = options.max_connections_per_client != 0
                             ? options.max_connections_per_client
                             : std::max(impl->max_connections / kPerClientShareDivisor, 4u);
  impl->max_per_client = std::min(impl->max_per_client, impl->max_connections);
  impl->watch = std::make_unique<ConnectionWatch>(ConnectionWatch::Limits{
      std::chrono::seconds(options.header_timeout_seconds), std::chrono::seconds(options.body_timeout_seconds),
      impl->max_connections, impl->max_per_client,
      std::min(std::max(impl->max_connections / kReservedShareDivisor, 2u), impl->max_connections / 2)});
  const int workers = options.workers < 1 ? 1 : options.workers;
  const int page_workers = options.page_workers > 0 ? std::min(options.page_workers, workers) : std::max(1, workers - 1);
  impl->pool = std::make_unique<WorkerPool>(workers, page_workers);
  if (impl->auth && impl->auth->enabled()) {
    impl->password_checks = std::make_unique<PasswordCheckQueue>(impl->auth, options.password_checks);
  }

  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_ITC | MHD_USE_ERROR_LOG;
  std::vector<MHD_OptionItem> opts = {
      {MHD_OPTION_LISTEN_SOCKET, socket->fd(), nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(impl->max_connections), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(options.idle_timeout_seconds), nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&RequestCompleted), impl.get()},
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&ConnectionNotify), impl.get()},
      {MHD_OPTION_URI_LOG_CALLBACK, reinterpret_cast<intptr_t>(&RequestLineSeen), impl.get()},
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&MhdLog), impl.get()},
  };
  if (impl->tls) {
    flags |= MHD_USE_TLS;
    impl->tls_priorities = TlsPriorities(*impl->tls);
    opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(impl->tls->cert_pem.c_str())});
    opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(impl->tls->key_pem.c_str())});
    opts.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(impl->tls_priorities.c_str())});
    if (!impl->tls->client_ca_pem.empty()) {
      opts.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(impl->tls->client_ca_pem.c_str())});
    }
  }
  opts.push_back({MHD_OPTION_END, 0, nullptr});
  impl->daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, &AccessHandler, impl.get(),
                                  MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_END);
  if (impl->daemon == nullptr) {
    // The socket is still ours (closed by its owner). A bad certificate or key is the usual cause,
    // or no descriptor left for the event loop (epoll, its wake-up pipe).
    std::string why = OutOfDescriptorsNote(impl->out_of_fds_seen.load());
    if (why.empty() && impl->tls) {
      why = " (check the certificate and key in " + options.web->source + ")";
    }
    return Error{"cannot start the HTTP server on " + options.listen_address + why};
  }
  (void)socket->release();  // libmicrohttpd owns it now
  impl->watch->Start();
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

}  // namespace rdmahd
