#include "probes/dns_resolver.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>

#include <algorithm>
#include <cstring>

#include "common/parse.h"

namespace rdmahd {
namespace {

// Owns a resolver state (res_nclose on every path).
class ResolverState {
 public:
  ResolverState() { std::memset(&state_, 0, sizeof state_); }
  ~ResolverState() {
    if (open_) res_nclose(&state_);
  }
  ResolverState(const ResolverState&) = delete;
  ResolverState& operator=(const ResolverState&) = delete;

  Status Init(const DnsOptions& options) {
    if (res_ninit(&state_) != 0) return Error{"dns: cannot initialise the resolver (res_ninit)"};
    open_ = true;
    state_.retrans = static_cast<int>(std::max<std::int64_t>(1, options.timeout.count()));
    state_.retry = std::max(1, options.attempts);
    if (options.server.empty()) return Status::Ok();
    // One given server: IPv4 goes in nsaddr_list; IPv6 needs the extended list glibc keeps in
    // _u._ext, so IPv6 servers are refused rather than half-supported.
    std::string host = options.server;
    std::uint16_t port = 53;
    if (auto colon = host.rfind(':'); colon != std::string::npos && host.find(':') == colon) {
      auto p = ParseU64(std::string_view(host).substr(colon + 1));
      if (!p || *p == 0 || *p > 65535) return Error{"dns: bad port in server " + options.server};
      port = static_cast<std::uint16_t>(*p);
      host.resize(colon);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
      return Error{"dns: server must be an IPv4 address with an optional :port, got " + options.server};
    }
    state_.nsaddr_list[0] = addr;
    state_.nscount = 1;
    return Status::Ok();
  }

  res_state get() { return &state_; }

 private:
  struct __res_state state_;
  bool open_ = false;
};

std::string Describe(const DnsOptions& options) {
  return options.server.empty() ? "the servers of /etc/resolv.conf" : options.server;
}

// The records of one type, appended to `out`. NXDOMAIN is an error; NODATA (the name exists
// without this type) is not.
Status Query(ResolverState& state, const std::string& name, int type, const DnsOptions& options,
             std::vector<std::string>& out) {
  unsigned char answer[8192];
  const int len = res_nquery(state.get(), name.c_str(), ns_c_in, type, answer, sizeof answer);
  const char* what = type == ns_t_a ? "A" : "AAAA";
  if (len < 0) {
    switch (state.get()->res_h_errno) {
      case NO_DATA: return Status::Ok();
      case HOST_NOT_FOUND: return Error{"dns: " + name + " does not exist (NXDOMAIN from " + Describe(options) + ")"};
      case TRY_AGAIN:
        return Error{"dns: no answer for " + name + " " + what + " from " + Describe(options) +
                     " (timeout or SERVFAIL)"};
      default: return Error{"dns: query for " + name + " " + what + " failed at " + Describe(options)};
    }
  }
  ns_msg msg;
  if (ns_initparse(answer, len, &msg) != 0) return Error{"dns: malformed answer for " + name + " " + what};
  const int count = ns_msg_count(msg, ns_s_an);
  for (int i = 0; i < count; ++i) {
    ns_rr rr;
    if (ns_parserr(&msg, ns_s_an, i, &rr) != 0) return Error{"dns: malformed record in the answer for " + name};
    if (ns_rr_type(rr) != type || ns_rr_class(rr) != ns_c_in) continue;  // CNAMEs on the way
    char text[INET6_ADDRSTRLEN];
    const int family = type == ns_t_a ? AF_INET : AF_INET6;
    const std::size_t want = type == ns_t_a ? 4 : 16;
    if (ns_rr_rdlen(rr) != want || inet_ntop(family, ns_rr_rdata(rr), text, sizeof text) == nullptr) {
      return Error{"dns: malformed " + std::string(what) + " record for " + name};
    }
    out.emplace_back(text);
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ResolveAddresses(std::string_view name, const DnsOptions& options) {
  if (name.empty() || name.size() > 253) return Error{"dns: invalid name \"" + std::string(name) + "\""};
  ResolverState state;
  if (Status st = state.Init(options); !st.ok()) return st.error();
  const std::string n(name);
  std::vector<std::string> v4, v6;
  if (Status st = Query(state, n, ns_t_a, options, v4); !st.ok()) return st.error();
  if (Status st = Query(state, n, ns_t_aaaa, options, v6); !st.ok()) return st.error();
  for (auto* list : {&v4, &v6}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

}  // namespace rdmahd
