#include "checks/error_rates.h"

#include <chrono>
#include <cstdint>
#include <optional>

#include "config/config_section.h"

namespace rdmahd {
namespace {

using std::chrono::milliseconds;

Status ParseErrorRates(const ConfigWalker& w, const ConfigNode& v, ErrorRatePolicy& out) {
  auto count = [&](std::uint32_t& field) {
    return [&w, &field](const ConfigNode& f) { return w.ReadU32(f, 1, 1'000'000'000, field); };
  };
  auto share = [&](double& field) {
    return [&w, &field](const ConfigNode& f) {
      std::optional<double> x;
      Status s = w.ReadPositive(f, 1.0, "a fraction of packets (0.001 = 0.1%)", x);
      if (s.ok() && x) field = *x;
      return s;
    };
  };
  Status st = w.VisitMap(v, {
      {"window", [&](const ConfigNode& f) { return w.ReadDuration(f, milliseconds{10'000}, milliseconds{3'600'000}, out.window); }},
      {"hold", [&](const ConfigNode& f) { return w.ReadDuration(f, milliseconds{0}, milliseconds{3'600'000}, out.hold); }},
      {"symbol_errors_per_hour", count(out.symbol_errors_per_hour)},
      {"link_error_recoveries_per_minute", count(out.link_error_recoveries_per_minute)},
      {"port_error_share", share(out.port_error_share)},
      {"loss_share_warning", share(out.loss_share_warning)},
      {"loss_share_failed", share(out.loss_share_failed)},
      {"out_of_buffer_share", share(out.out_of_buffer_share)},
      {"min_packets",
       [&](const ConfigNode& f) {
         std::optional<std::uint64_t> n;
         Status s = w.ReadCount(f, n);
         if (s.ok() && n) out.min_packets = *n;
         return s;
       }},
  });
  if (st.ok() && out.loss_share_failed < out.loss_share_warning) {
    return w.FailAt(v, "loss_share_failed must not be below loss_share_warning");
  }
  return st;
}

}  // namespace

RDMAHD_REGISTER_CONFIG_SECTION(ErrorRatePolicy, "host.error_rates", 90,
    {{"host.error_rates.window", "`600s`"},
     {"host.error_rates.hold", "`900s`"},
     {"host.error_rates.symbol_errors_per_hour", "`120`"},
     {"host.error_rates.link_error_recoveries_per_minute", "`5`"},
     {"host.error_rates.port_error_share", "`0.0001`"},
     {"host.error_rates.loss_share_warning", "`0.001`"},
     {"host.error_rates.loss_share_failed", "`0.01`"},
     {"host.error_rates.out_of_buffer_share", "`0.001`"},
     {"host.error_rates.min_packets", "`1000`"}},
    ParseErrorRates);

}  // namespace rdmahd
