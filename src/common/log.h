// Log: the server's and the agent's lines on stderr, each with a UTC time
// (RFC 3339, milliseconds), a level and the component, written by spdlog
// (Debian's libspdlog-dev):
//
//   2026-11-28T00:41:07.123Z info  muster server: listening on https://10.0.0.5:8470, ...
//
// Levels: debug (what a developer tracing a problem wants), info (start,
// stop, leadership, what an operator did), warn (something refused or
// retried; written "warning"), error (something failed). Nothing is logged per request at
// info; the access log (server/options.h, accessLog) has the requests.
// The level is set once at start: --log-level, else $MUSTER_LOG_LEVEL,
// else info.
//
//   log::Init("muster server", "info");
//   log::Info("listening on {}", url);
//
// Thread-safety: Init once before other threads log; the rest from any
// thread (lines are written whole).
#pragma once

#include <fmt/format.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace muster::log {

enum class Level { kDebug, kInfo, kWarn, kError };

// `level`: debug, info, warn or error ("" = $MUSTER_LOG_LEVEL, else info).
Status Init(const std::string& component, const std::string& level = "");
bool Enabled(Level level);
void Write(Level level, std::string_view message);

template <typename... Args>
void Debug(fmt::format_string<Args...> f, Args&&... args) {
  if (Enabled(Level::kDebug)) Write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Info(fmt::format_string<Args...> f, Args&&... args) {
  if (Enabled(Level::kInfo)) Write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Warn(fmt::format_string<Args...> f, Args&&... args) {
  if (Enabled(Level::kWarn)) Write(Level::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Error(fmt::format_string<Args...> f, Args&&... args) {
  Write(Level::kError, fmt::format(f, std::forward<Args>(args)...));
}

// A file of lines, each with its UTC time (the server's access log):
// appended, written out at least every second, never fsync'ed.
class LineFile {
 public:
  static StatusOr<std::unique_ptr<LineFile>> Open(const std::string& path);
  ~LineFile();
  void Write(std::string_view line);

 private:
  explicit LineFile(std::shared_ptr<void> logger) : logger_(std::move(logger)) {}
  std::shared_ptr<void> logger_;  // an spdlog::logger
};

}  // namespace muster::log
