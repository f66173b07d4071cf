#include "common/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

#include "common/message_text.h"

namespace muster::log {
namespace {

spdlog::level::level_enum ToSpd(Level l) {
  switch (l) {
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

// Before Init (tests, tools), lines go to stderr at info with no component.
std::shared_ptr<spdlog::logger>& Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("muster", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %-5l %v", spdlog::pattern_time_type::utc);
    l->set_level(spdlog::level::info);
    l->flush_on(spdlog::level::trace);  // stderr is read by supervisors and tests as it comes
    return l;
  }();
  return logger;
}

}  // namespace

Status Init(const std::string& component, const std::string& level) {
  std::string name = level;
  if (name.empty()) {
    const char* env = std::getenv("MUSTER_LOG_LEVEL");
    name = env && *env ? env : "info";
  }
  Level l;
  if (name == "debug")
    l = Level::kDebug;
  else if (name == "info")
    l = Level::kInfo;
  else if (name == "warn" || name == "warning")
    l = Level::kWarn;
  else if (name == "error")
    l = Level::kError;
  else
    return InvalidArgument("must be debug, info, warn or error, got " + QuoteForMessage(name), "log-level");
  auto& logger = Logger();
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %-5l " + component + ": %v", spdlog::pattern_time_type::utc);
  logger->set_level(ToSpd(l));
  return Status::Ok();
}

bool Enabled(Level level) { return Logger()->should_log(ToSpd(level)); }

void Write(Level level, std::string_view message) { Logger()->log(ToSpd(level), message); }

StatusOr<std::unique_ptr<LineFile>> LineFile::Open(const std::string& path) {
  static std::atomic<int> count{0};
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path);
    auto logger = std::make_shared<spdlog::logger>("lines-" + std::to_string(count++), std::move(sink));
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %v", spdlog::pattern_time_type::utc);
    logger->flush_on(spdlog::level::err);
    spdlog::register_logger(logger);  // for flush_every
    static const bool flusher = [] {
      spdlog::flush_every(std::chrono::seconds(1));
      return true;
    }();
    (void)flusher;
    return std::unique_ptr<LineFile>(new LineFile(std::move(logger)));
  } catch (const spdlog::spdlog_ex& e) {
    return InvalidArgument("cannot write " + path + ": " + e.what(), "accessLog");
  }
}

LineFile::~LineFile() {
  auto* logger = static_cast<spdlog::logger*>(logger_.get());
  logger->flush();
  spdlog::drop(logger->name());
}

void LineFile::Write(std::string_view line) { static_cast<spdlog::logger*>(logger_.get())->info(line); }

}  // namespace muster::log
