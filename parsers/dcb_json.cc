#include "parsers/dcb_json.h"

#include <cerrno>
#include <nlohmann/json.hpp>

#include "common/parse.h"

namespace rdmahd {
namespace {

using nlohmann::json;

Error Bad(std::string_view what) { return Error{std::string(what), EBADMSG}; }

// The nlohmann parser throws; keep that inside this file.
Result<json> ParseObject(std::string_view text, std::string_view what) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad(std::string(what) + ": not valid JSON");
  if (doc.is_array() && doc.size() == 1) doc = doc[0];
  if (!doc.is_object()) return Bad(std::string(what) + ": expected a JSON object");
  return doc;
}

std::optional<bool> OnOff(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "on") return true;
    if (s == "off") return false;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> Unsigned(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
  return std::nullopt;
}

Result<std::array<std::uint64_t, kDcbPriorities>> PerPriorityCounts(const json& v, std::string_view key) {
  std::array<std::uint64_t, kDcbPriorities> out{};
  if (!v.is_array() || v.size() != kDcbPriorities) {
    return Bad("dcb pfc JSON: \"" + std::string(key) + "\" must be an array of 8 counts");
  }
  for (int i = 0; i < kDcbPriorities; ++i) {
    auto n = Unsigned(v[i]);
    if (!n) return Bad("dcb pfc JSON: \"" + std::string(key) + "\"[" + std::to_string(i) + "] is not a count");
    out[i] = *n;
  }
  return out;
}

}  // namespace

Result<PfcConfig> ParseDcbPfcJson(std::string_view text) {
  auto doc = ParseObject(text, "dcb pfc JSON");
  if (!doc) return doc.error();
  const json& o = *doc;
  PfcConfig pfc;
  auto it = o.find("prio_pfc");
  if (it == o.end() || !it->is_array() || it->size() != kDcbPriorities) {
    return Bad("dcb pfc JSON: \"prio_pfc\" must be an array of 8 on/off values");
  }
  for (int i = 0; i < kDcbPriorities; ++i) {
    auto on = OnOff((*it)[i]);
    if (!on) return Bad("dcb pfc JSON: \"prio_pfc\"[" + std::to_string(i) + "] is not on/off");
    if (*on) pfc.enabled_mask |= static_cast<std::uint8_t>(1u << i);
  }
  if (auto c = o.find("pfc_cap"); c != o.end()) {
    auto n = Unsigned(*c);
    if (!n || *n > 255) return Bad("dcb pfc JSON: \"pfc_cap\" is not 0..255");
    pfc.pfc_cap = static_cast<std::uint8_t>(*n);
  }
  if (auto m = o.find("macsec_bypass"); m != o.end()) {
    auto on = OnOff(*m);
    if (!on) return Bad("dcb pfc JSON: \"macsec_bypass\" is not on/off");
    pfc.macsec_bypass = *on;
  }
  if (auto d = o.find("delay"); d != o.end()) {
    auto n = Unsigned(*d);
    if (!n || *n > 65535) return Bad("dcb pfc JSON: \"delay\" is not 0..65535");
    pfc.delay = static_cast<std::uint16_t>(*n);
  }
  if (auto r = o.find("requests"); r != o.end()) {
    auto counts = PerPriorityCounts(*r, "requests");
    if (!counts) return counts.error();
    pfc.requests = *counts;
  }
  if (auto r = o.find("indications"); r != o.end()) {
    auto counts = PerPriorityCounts(*r, "indications");
    if (!counts) return counts.error();
    pfc.indications = *counts;
  }
  return pfc;
}

Result<std::vector<DcbAppEntry>> ParseDcbAppJson(std::string_view text) {
  auto doc = ParseObject(text, "dcb app JSON");
  if (!doc) return doc.error();
  std::vector<DcbAppEntry> out;

  auto priority_of = [](const json& v) -> std::optional<std::uint8_t> {
    auto n = Unsigned(v);
    if (!n || *n >= kDcbPriorities) return std::nullopt;
    return static_cast<std::uint8_t>(*n);
  };
  // [[key, prio], ...] with a numeric key.
  auto pairs = [&](std::string_view key, std::uint8_t selector, std::uint64_t max_key) -> Status {
    auto it = doc->find(std::string(key));
    if (it == doc->end()) return Status::Ok();
    if (!it->is_array()) return Bad("dcb app JSON: \"" + std::string(key) + "\" is not an array");
    for (const json& pair : *it) {
      if (!pair.is_array() || pair.size() != 2) {
        return Bad("dcb app JSON: \"" + std::string(key) + "\" entries must be [key, priority]");
      }
      auto k = Unsigned(pair[0]);
      auto p = priority_of(pair[1]);
      if (!k || *k > max_key || !p) {
        return Bad("dcb app JSON: bad \"" + std::string(key) + "\" entry " + pair.dump());
      }
      out.push_back({selector, static_cast<std::uint16_t>(*k), *p});
    }
    return Status::Ok();
  };
  if (Status st = pairs("dscp_prio", kAppSelectorDscp, 63); !st) return st.error();
  if (Status st = pairs("ethtype_prio", kAppSelectorEthertype, 0xffff); !st) return st.error();
  if (Status st = pairs("stream_port_prio", 2, 0xffff); !st) return st.error();
  if (Status st = pairs("dgram_port_prio", 3, 0xffff); !st) return st.error();
  if (Status st = pairs("port_prio", 4, 0xffff); !st) return st.error();
  if (auto it = doc->find("default_prio"); it != doc->end()) {
    if (!it->is_array()) return Bad("dcb app JSON: \"default_prio\" is not an array");
    for (const json& v : *it) {
      auto p = priority_of(v);
      if (!p) return Bad("dcb app JSON: bad \"default_prio\" entry " + v.dump());
      out.push_back({kAppSelectorEthertype, 0, *p});
    }
  }
  // pcp_prio keys are names like "1de"; the PCP table does not decide trust, so it is not decoded.
  return out;
}

Result<DcbState> DcbStateFromCapture(const std::string& base, std::optional<std::string_view> pfc_json,
                                     std::optional<std::string_view> app_json) {
  auto nonempty = [](std::optional<std::string_view> text) -> std::optional<std::string_view> {
    if (!text || Trim(*text).empty()) return std::nullopt;
    return Trim(*text);
  };
  DcbState state;
  auto pfc_text = nonempty(pfc_json);
  auto app_text = nonempty(app_json);
  if (pfc_text && *pfc_text == "unsupported") {
    state.supported = false;
    return state;
  }
  if (!pfc_text && !app_text) return Error{"DCB capture " + base + " has neither pfc.json nor app.json", ENOENT};
  if (pfc_text) {
    auto pfc = ParseDcbPfcJson(*pfc_text);
    if (!pfc) return Error{base + "/pfc.json: " + pfc.error().message, EBADMSG};
    state.pfc = *pfc;
  }
  if (app_text) {
    auto app = ParseDcbAppJson(*app_text);
    if (!app) return Error{base + "/app.json: " + app.error().message, EBADMSG};
    state.app = std::move(*app);
  }
  return state;
}

std::string DcbPfcJsonOf(const PfcConfig& p) {
  json j;
  j["pfc_cap"] = p.pfc_cap;
  j["macsec_bypass"] = p.macsec_bypass;
  j["delay"] = p.delay;
  json prio = json::array();
  for (int i = 0; i < kDcbPriorities; ++i) prio.push_back(p.Enabled(i));
  j["prio_pfc"] = prio;
  if (p.requests) j["requests"] = *p.requests;
  if (p.indications) j["indications"] = *p.indications;
  return j.dump() + "\n";
}

std::string DcbAppJsonOf(const std::vector<DcbAppEntry>& entries) {
  json j = json::object();
  json ethtype = json::array(), dscp = json::array(), stream = json::array(), dgram = json::array(),
       port = json::array();
  for (const DcbAppEntry& e : entries) {
    switch (e.selector) {
      case kAppSelectorEthertype: ethtype.push_back({e.protocol, e.priority}); break;
      case kAppSelectorDscp: dscp.push_back({e.protocol, e.priority}); break;
      case 2: stream.push_back({e.protocol, e.priority}); break;  // IEEE_8021QAZ_APP_SEL_STREAM
      case 3: dgram.push_back({e.protocol, e.priority}); break;   // _DGRAM
      case 4: port.push_back({e.protocol, e.priority}); break;    // _ANY
      default: break;  // PCP entries (Linux >= 6.2): `dcb` prints them as "1de" strings; not judged, left out
    }
  }
  j["ethtype_prio"] = ethtype;
  j["dscp_prio"] = dscp;
  j["stream_port_prio"] = stream;
  j["dgram_port_prio"] = dgram;
  j["port_prio"] = port;
  return j.dump() + "\n";
}

}  // namespace rdmahd
