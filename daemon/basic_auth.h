// BasicAuth: HTTP basic authentication against bcrypt hashes (the exporter-toolkit's
// basic_auth_users). bcrypt costs ~50-100 ms at cost 10, so Verify() runs on the HTTP worker pool,
// never on the event thread, and successful (user, hash, password) checks are remembered so that a
// scraper's every-15-second request costs a hash lookup, as exporter-toolkit does. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

namespace rdmahd {

// The highest bcrypt cost a web config may use. The work doubles with each step; at 14 one check
// is still about a second of CPU on a server core (docs/performance.md has the figures), so the
// first scrape after a start, which pays one check, perhaps behind another client's, stays well
// inside Prometheus' 10 s scrape timeout on a loaded node. exporter-toolkit's docs use 10,
// htpasswd -B 5 unless -C says otherwise (its own limit is 17).
inline constexpr int kMaxBcryptCost = 14;

// The cost of a bcrypt hash ("$2y$12$..." -> 12); nullopt when the two digits after the prefix
// are not a number from 4 to 31 (the range bcrypt defines).
std::optional<int> BcryptCost(const std::string& hash);

class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);

  bool enabled() const { return !users_.empty(); }
  // True when this exact (user, password) verified before. Cheap (a SHA-256 of the pair).
  bool Cached(const std::string& user, const std::string& password) const;
  // Full bcrypt check (slow); a success is cached. An unknown user costs a bcrypt too, so that the
  // answer's timing does not tell which users exist.
  bool Verify(const std::string& user, const std::string& password);

 private:
  std::string CacheKey(const std::string& user, const std::string& password) const;

  const std::map<std::string, std::string> users_;  // user -> bcrypt hash; immutable
  // Bounded: a flood of distinct valid passwords cannot grow memory (the set is cleared when full).
  static constexpr std::size_t kMaxCached = 256;
  mutable std::mutex mu_;
  std::unordered_set<std::string> verified_;  // guarded by mu_
};

}  // namespace rdmahd
