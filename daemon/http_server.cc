#include "daemon/http_server.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "common/logging.h"
#include "daemon/basic_auth.h"
#include "daemon/client_address.h"
#include "daemon/connection_watch.h"
#include "daemon/etag.h"
#include "daemon/http_workers.h"
#include "daemon/listen_address.h"

namespace rdmahd {
namespace {

constexpr const char* kTextPlain = "text/plain; charset=utf-8";
// fds the rest of the daemon may hold (collectors, logs, netlink) besides HTTP connections.
constexpr rlim_t kFdsKeptForTheRest = 256;
constexpr std::chrono::milliseconds kShutdownGrace{1000};
// A warning for accept failing for want of descriptors at most this often.
constexpr std::chrono::seconds kFdWarningInterval{10};
// A warning for password checks refused (a flood of wrong passwords) at most this often.
constexpr std::chrono::seconds kRefusalWarningInterval{10};

using Clock = std::chrono::steady_clock;

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
