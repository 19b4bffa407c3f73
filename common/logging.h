// Logging: one call site API with structured fields, three outputs.
//   text    - logfmt on stderr (`ts=... level=info msg="..." device=mlx5_0`), the default
//   json    - one JSON object per line on stderr
//   journal - native journald entries whose fields (CHECK=, SUBJECT=, ...) are queryable with
//             journalctl; chosen automatically when systemd connected stderr to the journal
// Built on spdlog (level filtering, thread-safe sinks). The process-wide logger is the one
// accepted global: every module may log.
#pragma once

#include <spdlog/common.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"

namespace rdmahd::log {

enum class Format { kText, kJson, kJournal };

using Field = std::pair<std::string_view, std::string_view>;

// Parses "text" | "json" | "journal" | "auto" (auto = journal under systemd's journal, else text).
Result<Format> ParseFormat(std::string_view name);
// Parses "debug" | "info" | "warn" | "error".
Result<spdlog::level::level_enum> ParseLevel(std::string_view name);

void Init(Format format, spdlog::level::level_enum level);

void Write(spdlog::level::level_enum level, std::string_view msg, std::initializer_list<Field> fields = {});
inline void Debug(std::string_view m, std::initializer_list<Field> f = {}) { Write(spdlog::level::debug, m, f); }
inline void Info(std::string_view m, std::initializer_list<Field> f = {}) { Write(spdlog::level::info, m, f); }
inline void Warn(std::string_view m, std::initializer_list<Field> f = {}) { Write(spdlog::level::warn, m, f); }
inline void Error(std::string_view m, std::initializer_list<Field> f = {}) { Write(spdlog::level::err, m, f); }

// Formatting, exposed for tests.
std::string FormatText(std::string_view ts, spdlog::level::level_enum level, std::string_view msg,
                       std::initializer_list<Field> fields);
std::string FormatJson(std::string_view ts, spdlog::level::level_enum level, std::string_view msg,
                       std::initializer_list<Field> fields);

}  // namespace rdmahd::log
