#include "daemon/basic_auth.h"

#include <crypt.h>
#include <gnutls/crypto.h>

#include <memory>

namespace rdmahd {
namespace {

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool BcryptMatches(const std::string& password, const std::string& hash) {
  // crypt_data is ~32 KiB: on the heap, and zeroed as crypt_rn wants.
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof *data);
  return out != nullptr && out[0] != '*' && ConstantTimeEqual(out, hash);
}

}  // namespace

std::optional<int> BcryptCost(const std::string& hash) {
  if (hash.size() < 7 || hash[0] != '$' || hash[1] != '2' || hash[3] != '$' || hash[6] != '$') return std::nullopt;
  if (hash[4] < '0' || hash[4] > '9' || hash[5] < '0' || hash[5] > '9') return std::nullopt;
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) return std::nullopt;
  return cost;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

std::string BasicAuth::CacheKey(const std::string& user, const std::string& password) const {
  // The hash takes part so a changed hash (another web config) never matches an old entry, and
  // passwords are not kept in clear.
  auto it = users_.find(user);
  std::string material = user + '\0' + (it == users_.end() ? "" : it->second) + '\0' + password;
  unsigned char digest[32];
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, material.data(), material.size(), digest) != 0) return {};
  return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

bool BasicAuth::Cached(const std::string& user, const std::string& password) const {
  if (users_.find(user) == users_.end()) return false;
  std::string key = CacheKey(user, password);
  if (key.empty()) return false;
  std::lock_guard lock(mu_);
  return verified_.count(key) != 0;
}

bool BasicAuth::Verify(const std::string& user, const std::string& password) {
  auto it = users_.find(user);
  if (it == users_.end()) {
    if (!users_.empty()) (void)BcryptMatches(password, users_.begin()->second);  // same cost as a known user
    return false;
  }
  if (!BcryptMatches(password, it->second)) return false;
  std::string key = CacheKey(user, password);
  if (!key.empty()) {
    std::lock_guard lock(mu_);
    if (verified_.size() >= kMaxCached) verified_.clear();
    verified_.insert(std::move(key));
  }
  return true;
}

}  // namespace rdmahd
