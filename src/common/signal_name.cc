#include "common/signal_name.h"

#include <cctype>
#include <charconv>
#include <csignal>

namespace muster {
namespace {

struct Named {
  const char* name;
  int signal;
};
constexpr Named kSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT}, {"ILL", SIGILL},   {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT}, {"BUS", SIGBUS},     {"FPE", SIGFPE},   {"KILL", SIGKILL}, {"USR1", SIGUSR1},
    {"SEGV", SIGSEGV}, {"USR2", SIGUSR2},   {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM},
    {"CHLD", SIGCHLD}, {"CONT", SIGCONT},   {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU}, {"URG", SIGURG},     {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},     {"PWR", SIGPWR},   {"SYS", SIGSYS},
};

}  // namespace

std::optional<int> SignalNumber(std::string_view name) {
  if (name.empty() || name.size() > 16) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(name[0]))) {
    int n = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
    if (ec != std::errc() || end != name.data() + name.size() || n < 1 || n > 64) return std::nullopt;
    return n;
  }
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string_view bare = upper;
  if (bare.substr(0, 3) == "SIG") bare.remove_prefix(3);
  for (const Named& s : kSignals) {
    if (bare == s.name) return s.signal;
  }
  return std::nullopt;
}

bool SrunPassesOn(int signal) {
  for (int s : kStepSignals) {
    if (s == signal) return true;
  }
  return false;
}

std::string SignalName(int signal) {
  for (const Named& s : kSignals) {
    if (s.signal == signal) return std::string("SIG") + s.name;
  }
  return "SIG" + std::to_string(signal);
}

}  // namespace muster
