// The shell relay and its client, end to end over loopback: a real
// pseudo-terminal, a real shell, TLS with the job's key.
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "shell/shell_channel.h"
#include "shell/shell_relay.h"
#include "shell/shell_session.h"

namespace muster::shell {
namespace {

const std::string kKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const std::string kOtherKey = "ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

// A relay for job 7 in a child process; its endpoint read from a pipe.
struct Relay {
  pid_t pid = -1;
  std::string endpoint;

  explicit Relay(std::vector<std::string> argv, Duration accept_timeout = Duration::Seconds(20)) {
    int p[2];
    EXPECT_EQ(::pipe(p), 0);
    pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      RelayOptions o;
      o.job = 7;
      o.key_hex = kKey;
      o.advertise_host = "127.0.0.1";
      o.argv = std::move(argv);
      o.accept_timeout = accept_timeout;
      o.announce = [&](const std::string& e) {
        const std::string line = e + "\n";
        return ::write(p[1], line.data(), line.size()) == static_cast<ssize_t>(line.size()) ? Status::Ok()
                                                                                            : Unavailable("pipe");
      };
      ::_exit(RunRelay(o));
    }
    ::close(p[1]);
    char c;
    while (::read(p[0], &c, 1) == 1 && c != '\n') endpoint += c;
    ::close(p[0]);
  }
  // The relay's exit status.
  int Wait() {
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
};

struct Result {
  StatusOr<int> status = Status::Ok();
  std::string output;
};

// A session with `input` on stdin (a pipe, closed after it), its output
// collected in a file.
Result Session(const std::string& endpoint, const std::string& input, const std::string& key = kKey, int64_t job = 7) {
  int in[2];
  EXPECT_EQ(::pipe(in), 0);
  EXPECT_EQ(::write(in[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
  ::close(in[1]);
  char path[] = "/tmp/shell_test_outXXXXXX";
  const int out = ::mkstemp(path);
  SessionOptions o;
  o.endpoint = endpoint;
  o.key_hex = key;
  o.job = job;
  o.in_fd = in[0];
  o.out_fd = out;
  Result r;
  r.status = RunSession(o);
  ::close(in[0]);
  ::close(out);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  r.output = ss.str();
  ::unlink(path);
  return r;
}

TEST(Shell, ACommandRunsOnATerminalAndItsExitStatusComesBack) {
  Relay relay({"/bin/sh"});
  ASSERT_FALSE(relay.endpoint.empty());
  const Result r = Session(relay.endpoint, "tty; stty size; echo answer=$((6*7)); exit 3\n");
  ASSERT_TRUE(r.status.ok()) << r.status.status().ToString();
  EXPECT_EQ(*r.status, 3);
  EXPECT_NE(r.output.find("/dev/pts/"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("24 80"), std::string::npos) << r.output;  // the size sent when stdin is no terminal
  EXPECT_NE(r.output.find("answer=42"), std::string::npos) << r.output;
  EXPECT_EQ(relay.Wait(), 3);
}

TEST(Shell, TheEndOfInputEndsTheShell) {
  Relay relay({"/bin/sh"});
  const Result r = Session(relay.endpoint, "echo one\n");
  ASSERT_TRUE(r.status.ok()) << r.status.status().ToString();
  EXPECT_EQ(*r.status, 0);
  EXPECT_NE(r.output.find("one"), std::string::npos);
  EXPECT_EQ(relay.Wait(), 0);
}

TEST(Shell, AWrongKeyOrAnotherJobIsRefusedAndTheRelayWaitsForItsUser) {
  Relay relay({"/bin/sh"});
  Result r = Session(relay.endpoint, "echo no\n", kOtherKey);
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.status().code(), StatusCode::kUnauthenticated) << r.status.status().ToString();
  EXPECT_EQ(r.output, "");
  r = Session(relay.endpoint, "echo no\n", kKey, /*job=*/8);
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.status().code(), StatusCode::kUnauthenticated);
  r = Session(relay.endpoint, "echo yes-$((1+1))\nexit 0\n");
  ASSERT_TRUE(r.status.ok()) << r.status.status().ToString();
  EXPECT_NE(r.output.find("yes-2"), std::string::npos) << r.output;
  EXPECT_EQ(relay.Wait(), 0);
}

TEST(Shell, NobodyConnectingEndsTheRelayWith124) {
  Relay relay({"/bin/sh"}, Duration::Millis(300));
  EXPECT_EQ(relay.Wait(), 124);
}

TEST(Shell, ALostConnectionHangsUpTheShell) {
  Relay relay({"/bin/sh", "-c", "sleep 60"});
  const size_t colon = relay.endpoint.rfind(':');
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  ASSERT_EQ(::getaddrinfo("127.0.0.1", relay.endpoint.substr(colon + 1).c_str(), &hints, &res), 0);
  const int fd = ::socket(res->ai_family, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(fd, res->ai_addr, res->ai_addrlen), 0);
  ::freeaddrinfo(res);
  {
    auto ch = ShellChannel::Connect(fd, kKey, 7);
    ASSERT_TRUE(ch.ok()) << ch.status().ToString();
    ASSERT_TRUE((*ch)->Write('O', EncodeSize(30, 100) + "xterm").ok());
  }  // gone without a word
  EXPECT_EQ(relay.Wait(), 129);
}

TEST(Shell, SizesRoundTrip) {
  uint16_t rows = 0, cols = 0;
  ASSERT_TRUE(DecodeSize(EncodeSize(300, 1000), rows, cols));
  EXPECT_EQ(rows, 300);
  EXPECT_EQ(cols, 1000);
  EXPECT_FALSE(DecodeSize("abc", rows, cols));
}

}  // namespace
}  // namespace muster::shell
