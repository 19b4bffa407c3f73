#include "common/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-journal.h>
#include <sys/uio.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/excerpt.h"
#include "common/mutex.h"
#include "common/utf8.h"

namespace rdmahd::log {
namespace {

struct State {
  Mutex mu;
  Format format GUARDED_BY(mu) = Format::kText;
  std::shared_ptr<spdlog::logger> logger GUARDED_BY(mu);  // for text and json: writes preformatted lines
};

State& GetState() {
  static State state;
  return state;
}

std::string_view LevelName(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace: return "trace";
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err: return "error";
    case spdlog::level::critical: return "critical";
    default: return "info";
  }
}

int SyslogPriority(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
    case spdlog::level::debug: return 7;
    case spdlog::level::info: return 6;
    case spdlog::level::warn: return 4;
    case spdlog::level::err: return 3;
    default: return 2;
  }
}

std::string Timestamp() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

// logfmt: quote when the value has spaces, quotes, '=' or is empty.
void AppendLogfmtValue(std::string& out, std::string_view v) {
  // Values carry names and contents of files (device names, fw_ver): U+FFFD for invalid UTF-8, as
  // in the metrics and the JSON format, so log shippers do not drop or mangle the line.
  if (!IsValidUtf8(v)) {
    AppendLogfmtValue(out, ValidUtf8(v));
    return;
  }
  // Control characters escaped as the `check` table does (a CR or ESC printed raw could rewrite the
  // line a reader sees, a newline forge a record); a value that needed escaping is quoted.
  const std::string text = TerminalText(v);
  const bool quote = text.empty() || text != v || text.find_first_of(" \"=") != std::string::npos;
  if (!quote) {
    out += text;
    return;
  }
  out += '"';
  for (char c : text) {
    if (c == '"') out += '\\';
    out += c;
  }
  out += '"';
}

std::string JournalFieldName(std::string_view key) {
  std::string name;
  for (char c : key) {
    if (c >= 'a' && c <= 'z') name += static_cast<char>(c - 'a' + 'A');
    else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) name += c;
    else name += '_';
  }
  if (name.empty() || name[0] == '_' || (name[0] >= '0' && name[0] <= '9')) name = "F" + name;
  return name;
}

}  // namespace

Result<Format> ParseFormat(std::string_view name) {
  if (name == "text") return Format::kText;
  if (name == "json") return Format::kJson;
  if (name == "journal") return Format::kJournal;
  if (name == "auto") {
    // systemd sets JOURNAL_STREAM when stderr goes to the journal.
    const char* js = std::getenv("JOURNAL_STREAM");
    return (js != nullptr && *js != '\0') ? Format::kJournal : Format::kText;
  }
  return rdmahd::Error{"unknown log format \"" + std::string(name) + "\" (want text, json, journal or auto)"};
}

Result<spdlog::level::level_enum> ParseLevel(std::string_view name) {
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warn") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  return rdmahd::Error{"unknown log level \"" + std::string(name) + "\" (want debug, info, warn or error)"};
}

void Init(Format format, spdlog::level::level_enum level) {
  State& s = GetState();
  MutexLock lock(s.mu);
  s.format = format;
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  s.logger = std::make_shared<spdlog::logger>("rdma-healthd", sink);
  s.logger->set_pattern("%v");
  s.logger->set_level(level);
  s.logger->flush_on(spdlog::level::trace);
}

std::string FormatText(std::string_view ts, spdlog::level::level_enum level, std::string_view msg,
                       std::initializer_list<Field> fields) {
  std::string out = "ts=";
  out += ts;
  out += " level=";
  out += LevelName(level);
  out += " msg=";
  AppendLogfmtValue(out, msg);
  for (const auto& [k, v] : fields) {
    out += ' ';
    out += k;
    out += '=';
    AppendLogfmtValue(out, v);
  }
  return out;
}

std::string FormatJson(std::string_view ts, spdlog::level::level_enum level, std::string_view msg,
                       std::initializer_list<Field> fields) {
  nlohmann::ordered_json j;
  j["ts"] = ts;
  j["level"] = LevelName(level);
  j["msg"] = msg;
  for (const auto& [k, v] : fields) j[std::string(k)] = v;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Write(spdlog::level::level_enum level, std::string_view msg, std::initializer_list<Field> fields) {
  State& s = GetState();
  std::shared_ptr<spdlog::logger> logger;
  Format format;
  {
    MutexLock lock(s.mu);
    if (!s.logger) {
      // Not initialised (tests, early errors): text at info.
      auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
      s.logger = std::make_shared<spdlog::logger>("rdma-healthd", sink);
      s.logger->set_pattern("%v");
    }
    logger = s.logger;
    format = s.format;
  }
  if (!logger->should_log(level)) return;
  if (format == Format::kJournal) {
    std::vector<std::string> strs;
    strs.reserve(fields.size() + 3);
    strs.push_back("MESSAGE=" + std::string(msg));
    strs.push_back("PRIORITY=" + std::to_string(SyslogPriority(level)));
    strs.push_back("SYSLOG_IDENTIFIER=rdma-healthd");
    for (const auto& [k, v] : fields) strs.push_back(JournalFieldName(k) + "=" + std::string(v));
    std::vector<iovec> iov;
    for (auto& str : strs) iov.push_back({str.data(), str.size()});
    sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
    return;
  }
  std::string line = format == Format::kJson ? FormatJson(Timestamp(), level, msg, fields)
                                             : FormatText(Timestamp(), level, msg, fields);
  logger->log(level, "{}", line);
}

}  // namespace rdmahd::log
