// The executor with real processes, the real task shim (the muster binary)
// and, where the machine allows (root), real cgroups.
#include "agent/executor.h"

#include "../wait_for.h"
#include "agent/launcher.h"
#include "agent/task_beacon.h"
#include "process_util.h"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

namespace muster::agent {
namespace {

using muster::testing::AllGone;
using muster::testing::WaitFor;

namespace fs = std::filesystem;

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/executor_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Executor> Make(bool cgroups = true, bool launcher = false, std::vector<std::string> podman = {},
                                 std::string container_prefix = "") {
    if (launcher && !launcher_) {
      auto l = Launcher::Start();
      EXPECT_TRUE(l.ok()) << l.status().ToString();
      if (l.ok()) launcher_ = std::move(*l);
    }
    ExecutorOptions o;
    o.launcher = launcher ? launcher_.get() : nullptr;
    o.state_dir = dir_ + "/state";
    o.shim_binary = MUSTER_BINARY;
    o.use_cgroups = cgroups;
    o.cgroup_parent = "muster-test-" + std::to_string(getpid());
    o.podman = std::move(podman);
    o.container_prefix = std::move(container_prefix);
    auto e = std::make_unique<Executor>(o, clock_);
    auto how = e->Init();
    EXPECT_TRUE(how.ok()) << how.status().ToString();
    return e;
  }

  static TaskSpec Shell(const std::string& key, const std::string& script) {
    TaskSpec s;
    s.key = key;
    s.argv = {"/bin/sh", "-c", script};
    s.env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}, {"GREETING", "hello"}};
    return s;
  }

  // Polls until the task has ended (or 30 s).
  static TaskResult WaitEnd(Executor& e, const std::string& key) {
    std::optional<TaskResult> result;
    WaitFor([&] {
      e.Poll();
      for (const TaskStatus& t : e.Tasks()) {
        if (t.key == key && t.result) result = *t.result;
      }
      return result.has_value();
    });
    if (!result) {
      ADD_FAILURE() << key << " did not end";
    }
    return result.value_or(TaskResult{});
  }

  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  static bool Root() { return geteuid() == 0; }

  // True once the executor has removed every task cgroup (the kernel can
  // keep an emptied group busy for a moment; Poll() retries).
  static bool CgroupsGone(Executor& e) {
    return WaitFor(
        [&] {
          e.Poll();
          return e.cgroups()->List().empty();
        },
        std::chrono::seconds(2));
  }

  void FenceWhenTheLeaseFileIs(const std::string& damage);
  // Counts the opens of one file (inotify): a witness that a task's shim
  // has read its lease file, without waiting for its period.
  class OpenCounter {
   public:
    explicit OpenCounter(const std::string& path) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
      ::inotify_add_watch(fd_, path.c_str(), IN_OPEN);
    }
    ~OpenCounter() { ::close(fd_); }
    OpenCounter(const OpenCounter&) = delete;
    OpenCounter& operator=(const OpenCounter&) = delete;
    int Opens() {
      alignas(inotify_event) char buf[4096];
      ssize_t n;
      while ((n = ::read(fd_, buf, sizeof buf)) > 0) {
        for (char* p = buf; p < buf + n; p += sizeof(inotify_event) + reinterpret_cast<inotify_event*>(p)->len) {
          if (reinterpret_cast<inotify_event*>(p)->mask & IN_OPEN) ++opens_;
        }
      }
      return opens_;
    }

   private:
    int fd_;
    int opens_ = 0;
  };

  std::string dir_;
  SystemClock clock_;
  std::unique_ptr<Launcher> launcher_;
};

// Waits (up to 30 s) until `file` has `n` complete lines.
void WaitLines(const std::string& file, int n) {
  const bool had = WaitFor([&] {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    return std::count(text.begin(), text.end(), '\n') >= n;
  });
  if (!had) {
    ADD_FAILURE() << file << " never had " << n << " lines";
  }
}

TEST_F(ExecutorTest, RunsACommandWithItsEnvironmentAndKeepsItsOutput) {
  auto e = Make();
  ASSERT_TRUE(e->Start(Shell("j1.a1.r0", "echo out $GREETING; echo err >&2; exit 3"), {}).ok());
  const TaskResult r = WaitEnd(*e, "j1.a1.r0");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_FALSE(r.oom);
  EXPECT_EQ(Read(e->LogPath("j1.a1.r0")), "out hello\nerr\n");
}

TEST_F(ExecutorTest, ATaskNeverStartsTwice) {
  auto e = Make();
  ASSERT_TRUE(e->Start(Shell("j2.a1.r0", "true"), {}).ok());
  EXPECT_EQ(e->Start(Shell("j2.a1.r0", "true"), {}).code(), StatusCode::kAlreadyExists);
  WaitEnd(*e, "j2.a1.r0");
  EXPECT_EQ(e->Start(Shell("j2.a1.r0", "true"), {}).code(), StatusCode::kAlreadyExists);
}

TEST_F(ExecutorTest, AMissingCommandEndsWithExit127AndAMessage) {
  auto e = Make();
  TaskSpec s = Shell("j3.a1.r0", "");
  s.argv = {"no-such-command-muster"};
  ASSERT_TRUE(e->Start(s, {}).ok());
  const TaskResult r = WaitEnd(*e, "j3.a1.r0");
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(Read(e->LogPath("j3.a1.r0")).find("no-such-command-muster"), std::string::npos);
}

TEST_F(ExecutorTest, StopSignalsThenKillsTheWholeTree) {
  auto e = Make();
  // The task traps the signal, ignores it, and has a background child: both
  // must be gone after the grace period.
  const std::string pids = dir_ + "/pids";
  ASSERT_TRUE(e->Start(Shell("j4.a1.r0", "echo $$ > " + pids + "; trap 'echo got-term' TERM; sleep 300 & echo $! >> " +
                                             pids + "; while true; do sleep 0.1; done"),
                       {})
                  .ok());
  WaitLines(pids, 2);  // the trap is set and the child runs (not a fixed sleep: a loaded machine starts slowly)
  e->Stop("j4.a1.r0", SIGTERM, Duration::Millis(500), "stop");
  const TaskResult r = WaitEnd(*e, "j4.a1.r0");
  EXPECT_EQ(r.stop_reason, "stop");
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_NE(Read(e->LogPath("j4.a1.r0")).find("got-term"), std::string::npos);
  EXPECT_TRUE(AllGone(pids)) << "a process of the task is left";
  if (e->cgroups()) {
    EXPECT_TRUE(CgroupsGone(*e));
  }
}

TEST_F(ExecutorTest, OutOfMemoryIsReadFromTheCgroup) {
  if (!Root()) GTEST_SKIP() << "needs root for cgroups";
  auto e = Make();
  ASSERT_NE(e->cgroups(), nullptr);
  CgroupLimits limits;
  limits.memory_bytes = 64LL << 20;
  // Allocate and touch 512 MiB in 16 MiB steps.
  ASSERT_TRUE(e->Start(Shell("j5.a1.r0", "python3 -c 'x=[bytearray(16<<20) for _ in range(32)]'"), limits).ok());
  const TaskResult r = WaitEnd(*e, "j5.a1.r0");
  EXPECT_TRUE(r.oom);
  EXPECT_FALSE(r.Succeeded());
  EXPECT_TRUE(CgroupsGone(*e));
}

TEST_F(ExecutorTest, ARestartedAgentAdoptsARunningTaskAndGetsItsExit) {
  {
    auto e = Make();
    ASSERT_TRUE(e->Start(Shell("j6.a1.r0", "sleep 1; exit 7"), {}).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }  // the "agent" is gone; the shim runs on
  auto e = Make();
  auto tasks = e->Tasks();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_TRUE(tasks[0].running);
  const TaskResult r = WaitEnd(*e, "j6.a1.r0");
  EXPECT_EQ(r.exit_code, 7);
  e->Forget("j6.a1.r0");
  EXPECT_TRUE(e->Tasks().empty());
  EXPECT_FALSE(fs::exists(e->JournalPath("j6.a1.r0")));
}

// The agent records a shim's pid after starting it; an agent killed in
// between (its task already running) left a journal without it, and the
// next agent ended the task as lost and killed it, so the server ran it
// again. The shim records its own pid before it starts the payload.
TEST_F(ExecutorTest, ATaskWhoseAgentDiedBeforeRecordingItsPidIsAdopted) {
  const std::string started = dir_ + "/started";
  {
    auto e = Make();
    ASSERT_TRUE(e->Start(Shell("j9.a1.r0", "echo start > " + started + "; sleep 1; exit 7"), {}).ok());
    WaitLines(started, 1);
    // The agent's own line ("startMs") never written: as if killed just after the spawn.
    const std::string journal = e->JournalPath("j9.a1.r0");
    std::string kept;
    for (const std::string& line : ReadJournal(journal)) {
      if (line.find("\"startMs\"") == std::string::npos) kept += line + "\n";
    }
    std::ofstream(journal, std::ios::trunc) << kept;
  }
  auto e = Make();
  auto tasks = e->Tasks();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_TRUE(tasks[0].running) << "the running task was taken for one that never started";
  EXPECT_EQ(WaitEnd(*e, "j9.a1.r0").exit_code, 7);
}

// Both pids the lost journal of the race above held (the shim's and the
// agent's line) are gone: the shim's beacon still finds it, and it is
// adopted rather than taken for a task that never started (which left it
// running beside the copy the server would start next).
TEST_F(ExecutorTest, ATaskWhoseJournalLostItsPidsIsFoundByItsBeacon) {
  const std::string started = dir_ + "/started";
  {
    auto e = Make(/*cgroups=*/false);
    ASSERT_TRUE(e->Start(Shell("j12.a1.r0", "echo start > " + started + "; sleep 1; exit 7"), {}).ok());
    WaitLines(started, 1);
    const std::string journal = e->JournalPath("j12.a1.r0");
    const std::string spec = ReadJournal(journal).front();
    std::ofstream(journal, std::ios::trunc) << spec << "\n";  // the spec alone
  }
  auto e = Make(/*cgroups=*/false);
  auto tasks = e->Tasks();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_TRUE(tasks[0].running) << "the running task was taken for one that never started";
  EXPECT_EQ(WaitEnd(*e, "j12.a1.r0").exit_code, 7);
}

// A journal overwritten or deleted while the agent was down hid a running
// task: the new agent reported it gone, the server started the job again,
// and the old copy ran on beside it. Now the agent finds the task by its
// beacon and stops it before its first report.
TEST_F(ExecutorTest, ATaskWhoseJournalIsDamagedOrDeletedIsStoppedNotLeftRunning) {
  for (const bool cgroups : {false, true}) {
    if (cgroups && !Root()) continue;
    for (const bool deleted : {false, true}) {
      SCOPED_TRACE(std::string(cgroups ? "cgroups, " : "no cgroups, ") + (deleted ? "deleted" : "overwritten"));
      const std::string key = std::string("j13.a1.r") + (cgroups ? "1" : "0") + (deleted ? "1" : "0");
      const std::string pids = dir_ + "/pids-" + key;
      {
        auto e = Make(cgroups);
        std::string script = "echo $$ > " + pids;
        script.append("; sleep 300 & echo $! >> ").append(pids).append("; wait");
        ASSERT_TRUE(e->Start(Shell(key, script), {}).ok());
        WaitLines(pids, 2);
        const std::string journal = e->JournalPath(key);
        if (deleted) {
          fs::remove(journal);
        } else {
          std::ofstream(journal, std::ios::trunc) << "not a journal\n";
        }
      }
      auto e = Make(cgroups);
      EXPECT_TRUE(AllGone(pids)) << "a copy of the task still runs";
      if (deleted) {
        EXPECT_FALSE(e->Has(key));
        continue;
      }
      auto tasks = e->Tasks();
      ASSERT_EQ(tasks.size(), 1u);
      ASSERT_TRUE(tasks[0].result.has_value());
      EXPECT_EQ(tasks[0].result->stop_reason, "lost");
      EXPECT_NE(tasks[0].result->message.find("journal"), std::string::npos) << tasks[0].result->message;
      e->Forget(key);
    }
  }
}

// Variables that change what a program does, or where it looks for code
// and configuration: none of a job's may reach a program run as root.
const std::vector<std::string>& DangerousVariables() {
  static const std::vector<std::string> names = {"PATH",
                                                 "LD_PRELOAD",
                                                 "LD_LIBRARY_PATH",
                                                 "LD_AUDIT",
                                                 "LD_DEBUG",
                                                 "LD_DEBUG_OUTPUT",
                                                 "LD_PROFILE",
                                                 "PYTHONPATH",
                                                 "PYTHONHOME",
                                                 "PYTHONSTARTUP",
                                                 "PERL5LIB",
                                                 "PERL5OPT",
                                                 "RUBYOPT",
                                                 "NODE_OPTIONS",
                                                 "IFS",
                                                 "ENV",
                                                 "BASH_ENV",
                                                 "SHELLOPTS",
                                                 "PS4",
                                                 "CDPATH",
                                                 "GLOBIGNORE",
                                                 "GCONV_PATH",
                                                 "LOCPATH",
                                                 "NLSPATH",
                                                 "MALLOC_CHECK_",
                                                 "HOSTALIASES",
                                                 "RES_OPTIONS",
                                                 "LOCALDOMAIN",
                                                 "TZ",
                                                 "LANG",
                                                 "LC_ALL",
                                                 "HOME",
                                                 "TMPDIR",
                                                 "XDG_RUNTIME_DIR",
                                                 "XDG_CONFIG_HOME",
                                                 "XDG_DATA_HOME",
                                                 "XDG_CACHE_HOME",
                                                 "CONTAINERS_CONF",
                                                 "CONTAINERS_STORAGE_CONF",
                                                 "CONTAINERS_REGISTRIES_CONF",
                                                 "REGISTRY_AUTH_FILE",
                                                 "STORAGE_DRIVER",
                                                 "CONTAINER_HOST",
                                                 "CONTAINER_CONNECTION",
                                                 "DBUS_SESSION_BUS_ADDRESS",
                                                 "SSL_CERT_FILE",
                                                 "CURL_CA_BUNDLE",
                                                 "HTTPS_PROXY",
                                                 "http_proxy",
                                                 "GODEBUG",
                                                 "GOTRACEBACK",
                                                 "OPENSSL_CONF"};
  return names;
}

// The security issue's attack 1, and its general form: for every program
// run as root for a task (Podman's image exists, pull, run, inspect and rm
// from the shim, and ps from the executor at start, through a probe
// standing in for Podman at the path the agent resolved; and the shim
// itself), a job whose env sets every variable above, with and without a
// line break in its values. Each root child's environment, read from
// /proc/PID/environ, holds none of the job's values and the fixed PATH;
// Podman's holds none of the agent's own beyond the allowlist either. A
// line break cannot reach an env file: that container task fails to
// launch, naming the variable, before Podman runs at all.
TEST_F(ExecutorTest, NothingOfAJobsEnvironmentReachesWhatRootRuns) {
  const std::string probe = dir_ + "/podman-probe";
  const std::string calls = dir_ + "/calls";
  fs::create_directories(calls);
  // Each call's record is whole once renamed into `calls`.
  std::ofstream(probe) << "#!/bin/sh\n"
                          "f="
                       << calls
                       << "/$$\n"
                          "echo \"argv: $*\" > $f.part\n"
                          "/usr/bin/tr '\\0' '\\n' < /proc/$$/environ >> $f.part\n"
                          "/bin/mv $f.part $f\n"
                          "case \" $* \" in *' pull '*) exit 0 ;; *' image exists '*) exit 1 ;; esac\n"
                          "case \" $* \" in *' inspect '*) echo 0 false 1700000000 ;; esac\n"
                          "exit 0\n";
  fs::permissions(probe, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  // The agent's own environment (the operator's) is not Podman's either.
  const std::vector<std::string> agent_vars = {"BASH_ENV", "PYTHONPATH", "PERL5OPT", "LD_LIBRARY_PATH"};
  for (const std::string& name : agent_vars) ::setenv(name.c_str(), ("agent-evil-" + name).c_str(), 1);
  auto e = Make(/*cgroups=*/Root(), /*launcher=*/false, {probe}, "muster-test-");
  // The whole records, once at least `n` are (the executor's own cleanup
  // runs in the background).
  const auto read_calls = [&](size_t n = 0) {
    std::vector<std::string> out;
    muster::testing::WaitFor([&] {
      out.clear();
      for (const auto& f : fs::directory_iterator(calls)) {
        if (f.path().extension() != ".part") out.push_back(Read(f.path().string()));
      }
      return out.size() >= n;
    });
    fs::remove_all(calls);
    fs::create_directories(calls);
    return out;
  };
  const std::vector<std::string> at_start = read_calls(1);
  ASSERT_EQ(at_start.size(), 1u) << "the executor lists its containers at start";
  EXPECT_NE(at_start[0].find(" ps "), std::string::npos) << at_start[0];
  EXPECT_EQ(at_start[0].find("evil"), std::string::npos) << at_start[0];
  for (const bool newline : {false, true}) {
    SCOPED_TRACE(newline ? "values with a line break" : "plain values");
    std::map<std::string, std::string> env;
    for (const std::string& name : DangerousVariables()) env[name] = "job-evil-" + name + (newline ? "\n" : "");

    TaskSpec c;
    c.key = newline ? "j41.a1.r0" : "j40.a1.r0";
    c.argv = {"/bin/true"};
    c.env = env;
    ContainerSpec spec;
    spec.image = "localhost/probe:1";
    spec.name = "muster-test-" + c.key;
    spec.podman = probe;
    c.container = spec;
    ASSERT_TRUE(e->Start(c, {}).ok());
    const TaskResult r = WaitEnd(*e, c.key);
    // Without its environment, only the executor's `rm` of a container
    // that never was (its cleanup, when the shim did not remove one).
    const std::vector<std::string> seen = read_calls(newline ? 1 : 5);
    if (newline) {
      EXPECT_TRUE(r.launch_failed) << r.message;
      EXPECT_NE(r.message.find("line break"), std::string::npos) << r.message;
      ASSERT_EQ(seen.size(), 1u);
      EXPECT_EQ(seen[0].rfind("argv: rm ", 0), 0u) << "Podman ran for a task that could not be given its environment:\n"
                                                   << seen[0];
    } else {
      EXPECT_EQ(r.exit_code, 0) << r.message << Read(e->LogPath(c.key));
      std::set<std::string> verbs;
      for (const std::string& call : seen) {
        for (const char* verb : {"image exists", " pull ", " run ", " inspect ", " rm "}) {
          if (call.substr(0, call.find('\n')).find(verb) != std::string::npos) verbs.insert(verb);
        }
      }
      EXPECT_EQ(verbs.size(), 5u) << "every Podman call of a task is checked";
    }
    for (const std::string& call : seen) {
      EXPECT_EQ(call.find("evil"), std::string::npos) << "a job's variable reached Podman as root:\n" << call;
      EXPECT_NE(call.find("\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"), std::string::npos)
          << call;
    }

    // A process task: the shim is root; the payload, as the job's user,
    // gets the job's variables.
    TaskSpec p = Shell(newline ? "j43.a1.r0" : "j42.a1.r0",
                       "/bin/cat /proc/$PPID/environ > " + dir_ + "/shim.env; /usr/bin/env > " + dir_ + "/self.env");
    p.env = env;
    ASSERT_TRUE(e->Start(p, {}).ok());
    EXPECT_EQ(WaitEnd(*e, p.key).exit_code, 0) << Read(e->LogPath(p.key));
    EXPECT_EQ(Read(dir_ + "/shim.env").find("job-evil"), std::string::npos) << "a job's variable reached its root shim";
    EXPECT_NE(Read(dir_ + "/self.env").find("PYTHONPATH=job-evil-PYTHONPATH"), std::string::npos)
        << "the payload did not get its own environment";
  }
  for (const std::string& name : agent_vars) ::unsetenv(name.c_str());
}

// Anyone on the node can bind a beacon's name naming any pid: a restarted
// agent took such a beacon for a task with no journal and SIGKILLed the
// pid it named, and its process group, as root (the security issue's
// attack 2). A beacon is believed only once the kernel says its listener is
// the pid it names, of the agent's user: a forger's own, or a name bound
// without listening, is ignored and its victim left alone.
TEST_F(ExecutorTest, AForgedBeaconNamingAnotherProcessIsNeverSignalled) {
  const std::string scope = [&] {
    auto e = Make(/*cgroups=*/Root());  // makes the state directory, then "stops"
    return TaskBeaconScope(dir_ + "/state/tasks");
  }();
  ASSERT_FALSE(scope.empty());
  const pid_t victim = fork();
  if (victim == 0) {
    ::setsid();
    ::execl("/bin/sleep", "sleep", "300", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int64_t victim_start = 0;
  ASSERT_TRUE(muster::testing::WaitFor([&] { return (victim_start = ProcessStartTime(victim)) > 0; }));
  std::vector<pid_t> forgers;
  for (const bool listens : {true, false}) {
    const std::string key = listens ? "j990.a1.r0" : "j991.a1.r0";
    const pid_t forger = muster::testing::HoldAs(65534, [&] {                     // an ordinary user (nobody)
      if (listens) return BindTaskBeacon(scope, key, victim, victim_start) >= 0;  // as a shim does
      // Bound only, as beacons were before they were listened on.
      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      std::string name = "muster-task/" + scope;
      name += "/" + key + "/" + std::to_string(victim) + "/" + std::to_string(victim_start);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::memcpy(addr.sun_path + 1, name.data(), name.size());
      return ::bind(fd, reinterpret_cast<sockaddr*>(&addr),
                    static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())) == 0;
    });
    ASSERT_GT(forger, 0) << "the forger could not bind its beacon";
    forgers.push_back(forger);
  }
  ASSERT_EQ(ListTaskBeacons(scope).size(), 2u);
  {
    auto e = Make(/*cgroups=*/Root());  // the agent restarts and recovers
    EXPECT_FALSE(e->Has("j990.a1.r0"));
  }
  EXPECT_EQ(::kill(victim, 0), 0) << "the forged beacon's victim was signalled";
  EXPECT_EQ(::waitpid(victim, nullptr, WNOHANG), 0) << "the forged beacon's victim was killed";
  for (pid_t p : forgers) EXPECT_EQ(::waitpid(p, nullptr, WNOHANG), 0) << "a forger was killed by pid";
  for (pid_t p : forgers) ::kill(p, SIGKILL);
  ::kill(victim, SIGKILL);
  for (pid_t p : forgers) ::waitpid(p, nullptr, 0);
  ::waitpid(victim, nullptr, 0);
}

// The shim of an agent whose state directory was removed kept its task
// running for ever: with no lease file it read no deadline; so did an
// emptied or garbled one, beside the copy the server started elsewhere. A
// lease file missing or without a deadline at two checks in a row now
// fences the task.
TEST_F(ExecutorTest, ATaskWhoseLeaseFileIsGoneFencesItself) {
  for (const char* damage : {"removed", "emptied", "garbled"}) {
    SCOPED_TRACE(damage);
    FenceWhenTheLeaseFileIs(damage);
  }
}

void ExecutorTest::FenceWhenTheLeaseFileIs(const std::string& damage) {
  fs::remove_all(dir_ + "/state");
  fs::remove(dir_ + "/pids");
  auto e = Make(/*cgroups=*/false);
  const std::string lease = dir_ + "/lease";
  std::ofstream(lease) << "99999999999999999999\n";  // far in the future
  TaskSpec spec = Shell("j14.a1.r0", "echo $$ > " + dir_ + "/pids; sleep 300 & echo $! >> " + dir_ + "/pids; wait");
  spec.lease_file = lease;
  spec.grace_ms = 100;
  OpenCounter reads(lease);
  ASSERT_TRUE(e->Start(spec, {}).ok());
  WaitLines(dir_ + "/pids", 2);
  // The shim's checks (one a second) have read the good lease twice: the
  // first has let the task be by the time the second begins.
  ASSERT_TRUE(WaitFor([&] { return reads.Opens() >= 2; })) << reads.Opens();
  e->Poll();
  ASSERT_TRUE(e->Tasks()[0].running) << "fenced while its lease was still good";
  if (damage == "removed") {
    fs::remove(lease);
  } else {
    std::ofstream(lease, std::ios::trunc) << (damage == "emptied" ? "" : "garbage");
  }
  const TaskResult r = WaitEnd(*e, "j14.a1.r0");
  EXPECT_EQ(r.stop_reason, "fenced");
  EXPECT_TRUE(AllGone(dir_ + "/pids"));
  EXPECT_NE(Read(e->LogPath("j14.a1.r0")).find("lease file " + lease + " is gone or holds no deadline"),
            std::string::npos);
}

// A fenced shim stopped the payload's main process and ended once that
// exited, leaving a process that ignored the stop signal running; with
// its agent gone, nothing else would stop it. The shim now kills its
// process group as it ends.
TEST_F(ExecutorTest, AFencedTaskWhoseAgentIsGoneLeavesNoProcessBehind) {
  const std::string lease = dir_ + "/lease";
  std::ofstream(lease) << "99999999999999999999\n";
  const std::string pids = dir_ + "/pids";
  TaskSpec spec =
      Shell("j15.a1.r0", "echo $PPID > " + pids + "; (trap '' TERM; exec sleep 300) & echo $! >> " + pids + "; wait");
  spec.lease_file = lease;
  spec.grace_ms = 100;
  {
    auto e = Make(/*cgroups=*/false);
    ASSERT_TRUE(e->Start(spec, {}).ok());
    WaitLines(pids, 2);
  }  // the agent is gone; its task runs on
  fs::remove(lease);
  pid_t shim = 0;
  std::ifstream(pids) >> shim;
  ASSERT_GT(shim, 1);
  WaitFor([&] { return agent::ProcessStartTime(shim) == 0; }, std::chrono::seconds(10));
  ASSERT_EQ(agent::ProcessStartTime(shim), 0) << "the shim did not fence its task";
  // SIGKILL lands asynchronously.
  EXPECT_TRUE(WaitFor([&] { return AllGone(pids); }, std::chrono::seconds(2)))
      << "a process that ignored the stop signal outlived the fenced shim";
}

// A task whose shim was killed ended as a failure of the job (a retry
// spent) although Muster's own process had died. It is lost (the server
// requeues it without spending a retry), and the payload goes with it.
TEST_F(ExecutorTest, ATaskWhoseShimIsKilledIsLostNotFailed) {
  auto e = Make(/*cgroups=*/false);
  const std::string pids = dir_ + "/pids";
  ASSERT_TRUE(
      e->Start(Shell("j16.a1.r0", "echo $PPID > " + pids + "; echo $$ >> " + pids + "; exec sleep 300"), {}).ok());
  WaitLines(pids, 2);
  pid_t shim = 0;
  std::ifstream(pids) >> shim;
  ASSERT_GT(shim, 1);
  ASSERT_EQ(::kill(shim, SIGKILL), 0);
  const TaskResult r = WaitEnd(*e, "j16.a1.r0");
  EXPECT_EQ(r.stop_reason, "lost");
  EXPECT_EQ(r.message, "its task shim (Muster's process on the node) was killed by signal 9");
  WaitFor([&] { return AllGone(pids); }, std::chrono::seconds(2));  // SIGKILL lands
  EXPECT_TRUE(AllGone(pids));
}

TEST_F(ExecutorTest, AForgottenJournalIsReusedAndNeverBringsItsTaskBack) {
  const std::string spare = dir_ + "/state/tasks/spare";
  auto count = [&] { return std::distance(fs::directory_iterator(spare), fs::directory_iterator()); };
  auto e = Make();
  ASSERT_TRUE(e->Start(Shell("j11.a1.r0", "exit 2"), {}).ok());
  EXPECT_EQ(WaitEnd(*e, "j11.a1.r0").exit_code, 2);
  e->Forget("j11.a1.r0");
  EXPECT_FALSE(fs::exists(e->JournalPath("j11.a1.r0")));
  EXPECT_EQ(count(), 1);
  // The next task's journal is the spare, holding only its own lines.
  ASSERT_TRUE(e->Start(Shell("j11.a1.r1", "exit 5"), {}).ok());
  EXPECT_EQ(count(), 0);
  EXPECT_EQ(WaitEnd(*e, "j11.a1.r1").exit_code, 5);
  const std::string journal = Read(e->JournalPath("j11.a1.r1"));
  EXPECT_EQ(journal.find("exit 2"), std::string::npos) << journal;
  EXPECT_NE(journal.find("exit 5"), std::string::npos) << journal;
  // A restarted executor knows the second task only, still ended.
  e.reset();
  e = Make();
  const auto tasks = e->Tasks();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].key, "j11.a1.r1");
  ASSERT_TRUE(tasks[0].result.has_value());
  EXPECT_EQ(tasks[0].result->exit_code, 5);
  EXPECT_EQ(e->Start(Shell("j11.a1.r1", "true"), {}).code(), StatusCode::kAlreadyExists);
}

TEST_F(ExecutorTest, WorksWithoutCgroups) {
  auto e = Make(/*cgroups=*/false);
  EXPECT_EQ(e->cgroups(), nullptr);
  const std::string pids = dir_ + "/pids";
  ASSERT_TRUE(
      e->Start(Shell("j7.a1.r0", "echo $$ > " + pids + "; sleep 300 & echo $! >> " + pids + "; wait"), {}).ok());
  WaitLines(pids, 2);  // the task runs (a slow start must not turn the stop into the SIGKILL after grace)
  e->Stop("j7.a1.r0", SIGTERM, Duration::Millis(100), "stop");
  const TaskResult r = WaitEnd(*e, "j7.a1.r0");
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_TRUE(AllGone(pids)) << "a process of the task is left";
}

TEST_F(ExecutorTest, RunsAsAnotherUserWhenRoot) {
  if (!Root()) GTEST_SKIP() << "needs root";
  auto e = Make();
  TaskSpec s = Shell("j8.a1.r0", "id -u; id -g");
  s.run_as = true;
  s.uid = 65534;
  s.gid = 65534;
  s.working_dir = "/";
  ASSERT_TRUE(e->Start(s, {}).ok());
  WaitEnd(*e, "j8.a1.r0");
  EXPECT_EQ(Read(e->LogPath("j8.a1.r0")), "65534\n65534\n");
}

// A job's script ran under /bin/sh whatever its #! line said, so a bash
// script (arrays, [[ ]], source) failed under dash. It runs with the
// interpreter it names, as sbatch runs it; without a #! line, /bin/sh.
TEST_F(ExecutorTest, AScriptRunsWithTheInterpreterItsFirstLineNames) {
  struct Case {
    std::string script, log;
    bool other_user;
    int exit_code = 0;
  };
  const std::vector<Case> cases = {
      // A missing interpreter fails the job (it ran under sh, which took a
      // python script's lines for commands).
      {"#!/nonexistent/python3\nprint('x')\n",
       "muster: cannot run the script's #!/nonexistent/python3 line: No such file or directory\n", false, 127},
      {"#!/bin/bash\nnames=(a b)\n[[ ${#names[@]} == 2 ]] && echo \"bash $GREETING\"\n", "bash hello\n", false},
      {"#!/usr/bin/env python3\nimport os\nprint('python', os.environ['GREETING'])\n", "python hello\n", false},
      {"echo \"sh $GREETING\"\n", "sh hello\n", false},
      {"#!/bin/bash\n[[ $(id -u) == 65534 ]] && echo \"bash as nobody\"\n", "bash as nobody\n", true},
  };
  auto e = Make();
  int n = 0;
  for (const Case& c : cases) {
    if (c.other_user && !Root()) continue;
    const std::string key = "j15.a1.r" + std::to_string(n++);
    SCOPED_TRACE(c.script);
    TaskSpec s = Shell(key, c.script);
    s.script = true;
    if (c.other_user) {
      s.run_as = true;
      s.uid = s.gid = 65534;
      s.working_dir = "/";
    }
    ASSERT_TRUE(e->Start(s, {}).ok());
    EXPECT_EQ(WaitEnd(*e, key).exit_code, c.exit_code) << Read(e->LogPath(key));
    EXPECT_EQ(Read(e->LogPath(key)), c.log);
  }
}

TEST_F(ExecutorTest, TheLauncherStartsShimsWithoutExecAndTheirExitsAreSeen) {
  auto e = Make(/*cgroups=*/true, /*launcher=*/true);
  const std::string pids = dir_ + "/pids";
  ASSERT_TRUE(e->Start(Shell("j10.a1.r0", "echo out $GREETING; exit 4"), {}).ok());
  ASSERT_TRUE(
      e->Start(Shell("j10.a1.r1", "echo $$ > " + pids + "; sleep 300 & echo $! >> " + pids + "; wait"), {}).ok());
  const TaskResult r = WaitEnd(*e, "j10.a1.r0");
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(Read(e->LogPath("j10.a1.r0")), "out hello\n");
  WaitLines(pids, 2);
  e->Stop("j10.a1.r1", SIGTERM, Duration::Millis(200), "stop");
  const TaskResult s = WaitEnd(*e, "j10.a1.r1");
  EXPECT_EQ(s.stop_reason, "stop");
  EXPECT_TRUE(AllGone(pids));
  // A restarted executor adopts a launched task through a pidfd.
  ASSERT_TRUE(e->Start(Shell("j10.a1.r2", "sleep 0.5; exit 6"), {}).ok());
  e.reset();
  auto again = Make(/*cgroups=*/true, /*launcher=*/true);
  EXPECT_EQ(WaitEnd(*again, "j10.a1.r2").exit_code, 6);
}

// On cgroup v2 the launcher creates the shim inside the task's group
// (CLONE_INTO_CGROUP): no move, so no wait for the kernel's grace period.
// This machine mounts a v2 hierarchy beside its v1 controllers; a driver
// over that one alone exercises the same path as a v2-only node.
// With its launcher killed, the agent died of SIGPIPE at the next task
// start (operator audit). Tasks are now spawned without it.
TEST_F(ExecutorTest, ALauncherThatDiedIsDoneWithout) {
  auto e = Make(/*cgroups=*/false, /*launcher=*/true);
  const pid_t launcher = launcher_->pid();
  ASSERT_GT(launcher, 1);
  ASSERT_EQ(::kill(launcher, SIGKILL), 0);
  ::waitpid(launcher, nullptr, 0);
  ::signal(SIGPIPE, SIG_IGN);  // as the agent does
  ASSERT_TRUE(e->Start(Shell("j17.a1.r0", "echo spawned; exit 4"), {}).ok());
  EXPECT_EQ(WaitEnd(*e, "j17.a1.r0").exit_code, 4);
  EXPECT_EQ(Read(e->LogPath("j17.a1.r0")), "spawned\n");
  ASSERT_TRUE(e->Start(Shell("j17.a1.r1", "exit 5"), {}).ok()) << "and every task after";
  EXPECT_EQ(WaitEnd(*e, "j17.a1.r1").exit_code, 5);
}

TEST_F(ExecutorTest, OnCgroupV2TheLauncherStartsTheShimInsideItsGroup) {
  if (!Root()) GTEST_SKIP() << "needs root";
  std::string v2_line;
  {
    std::ifstream in("/proc/self/mounts");
    for (std::string line; std::getline(in, line);) {
      if (line.find(" cgroup2 ") != std::string::npos) v2_line = line;
    }
  }
  if (v2_line.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted";
  const std::string mounts = dir_ + "/mounts";
  std::ofstream(mounts) << v2_line << "\n";
  const std::string parent = "muster-test-v2-" + std::to_string(getpid());
  auto driver = CgroupDriver::Detect(parent, mounts);
  ASSERT_TRUE(driver.ok()) << driver.status().ToString();
  ASSERT_EQ((*driver)->version(), 2);
  auto procs = (*driver)->Create("j12.a1.r0", {});
  ASSERT_TRUE(procs.ok()) << procs.status().ToString();
  ASSERT_EQ(procs->size(), 1u);
  const std::string group = fs::path((*procs)[0]).parent_path().string();

  fs::create_directories(dir_ + "/tasks");
  TaskSpec spec = Shell("j12.a1.r0", "cat /proc/self/cgroup");
  spec.cgroup_procs = *procs;
  spec.log_path = dir_ + "/j12.log";
  const std::string journal = dir_ + "/tasks/j12.a1.r0.jsonl";
  ASSERT_TRUE(CreateJournal(journal, TaskSpecToJson(spec)).ok());
  auto launcher = Launcher::Start();
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  auto launched = (*launcher)->Launch(journal, spec.log_path, group);
  ASSERT_TRUE(launched.ok()) << launched.status().ToString();
  EXPECT_TRUE(launched->in_cgroup);
  pollfd exited{launched->pidfd, POLLIN, 0};
  EXPECT_EQ(::poll(&exited, 1, 30'000), 1) << "the shim did not end";
  ::close(launched->pidfd);
  // The payload ran in the group (the v2 line of /proc/self/cgroup).
  EXPECT_NE(Read(spec.log_path).find("0::/" + parent + "/j12.a1.r0\n"), std::string::npos) << Read(spec.log_path);
  EXPECT_TRUE((*driver)->KillAll("j12.a1.r0"));
  WaitFor([&] { return (*driver)->Remove("j12.a1.r0").ok(); }, std::chrono::seconds(2));
  ::rmdir(fs::path(group).parent_path().c_str());
}

// The driver reads its hierarchies from a mounts table (here a fake one over
// plain directories) and says what a v1 start costs without favordynmods.
TEST_F(ExecutorTest, OnCgroupV1TheDriverSaysWhetherStartsWaitForTheKernel) {
  for (const bool favor : {false, true}) {
    const std::string root = dir_ + (favor ? "/favor" : "/plain");
    fs::create_directories(root + "/memory");
    fs::create_directories(root + "/pids");
    const std::string mounts = root + "/mounts";
    std::ofstream(mounts) << "cgroup " << root << "/memory cgroup rw,relatime,memory" << (favor ? ",favordynmods" : "")
                          << " 0 0\ncgroup " << root << "/pids cgroup rw,relatime,pids 0 0\n";
    auto driver = CgroupDriver::Detect("muster", mounts);
    ASSERT_TRUE(driver.ok()) << driver.status().ToString();
    EXPECT_EQ((*driver)->version(), 1);
    const std::string how = (*driver)->Describe();
    EXPECT_EQ(how.rfind("v1 (memory, pids)", 0), 0u) << how;
    EXPECT_EQ(how.find("favordynmods") != std::string::npos, !favor) << how;
  }
}

TEST_F(ExecutorTest, LogsOfForgottenTasksGoAfterTheirRetention) {
  auto e = Make();
  ASSERT_TRUE(e->Start(Shell("j20.a1.r0", "sleep 30"), {}).ok());  // known: its log stays, however old
  auto age = [](const std::string& path, int64_t days) {
    std::ofstream(path, std::ios::app) << "line\n";
    const timeval old = {::time(nullptr) - days * 86400, 0};
    const timeval times[2] = {old, old};
    ASSERT_EQ(::utimes(path.c_str(), times), 0) << path;
  };
  age(e->LogPath("j20.a1.r0"), 30);
  age(e->LogPath("j21.a1.r0"), 8);         // forgotten, older than a week: goes
  age(e->LogPath("j21.a1.r0") + ".1", 9);  // with its rotated half
  age(e->LogPath("j22.a1.r0"), 6);         // forgotten, younger: stays
  EXPECT_EQ(e->PruneLogs(Duration::Hours(int64_t{7} * 24)), 2);
  EXPECT_TRUE(fs::exists(e->LogPath("j20.a1.r0")));
  EXPECT_FALSE(fs::exists(e->LogPath("j21.a1.r0")));
  EXPECT_FALSE(fs::exists(e->LogPath("j21.a1.r0") + ".1"));
  EXPECT_TRUE(fs::exists(e->LogPath("j22.a1.r0")));
  EXPECT_EQ(e->PruneLogs(Duration::Zero()), 0);  // zero keeps everything
  e->Stop("j20.a1.r0", SIGKILL, Duration::Millis(0), "stop");
  WaitEnd(*e, "j20.a1.r0");
}

TEST_F(ExecutorTest, LogsRotateAtTheLimit) {
  auto e = Make();
  TaskSpec s = Shell("j9.a1.r0",
                     "i=0; while [ $i -lt 200 ]; do echo 0123456789012345678901234567890123456789; i=$((i+1)); done");
  s.log_max_bytes = 1000;
  ASSERT_TRUE(e->Start(s, {}).ok());
  WaitEnd(*e, "j9.a1.r0");
  EXPECT_LE(fs::file_size(e->LogPath("j9.a1.r0")), 1000u);
  EXPECT_TRUE(fs::exists(e->LogPath("j9.a1.r0") + ".1"));
}

TEST(TaskBeacons, AreListedForTheirStateDirectoryOnly) {
  const std::string dir = ::testing::TempDir() + "/beacons_" + std::to_string(getpid());
  fs::create_directories(dir + "/a/tasks");
  fs::create_directories(dir + "/b/tasks");
  const std::string a = TaskBeaconScope(dir + "/a/tasks"), b = TaskBeaconScope(dir + "/b/tasks");
  ASSERT_EQ(a.size(), 16u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, TaskBeaconScope(dir + "/b/../a/tasks")) << "the scope is of the canonical path";
  EXPECT_EQ(TaskBeaconScope(dir + "/missing"), "");
  const int fd = BindTaskBeacon(a, "j1.a2.r3", getpid(), 42);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  EXPECT_LT(BindTaskBeacon(a, "j1.a2.r3", getpid(), 42), 0) << "a name is bound once";
  auto listed = ListTaskBeacons(a);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].key, "j1.a2.r3");
  EXPECT_EQ(listed[0].pid, getpid());
  EXPECT_EQ(listed[0].start_time, 42);
  EXPECT_TRUE(ListTaskBeacons(b).empty());
  ::close(fd);
  EXPECT_TRUE(ListTaskBeacons(a).empty()) << "a beacon goes with its socket";
  // Names that do not parse are skipped.
  std::ofstream(dir + "/unix") << "Num RefCount Protocol Flags Type St Inode Path\n"
                               << "0: 00000002 0 0 0001 01 1 @muster-task/" << a << "/j1.a1.r0/12x/5\n"
                               << "0: 00000002 0 0 0001 01 2 @muster-task/" << a << "/j1.a1.r0/1/5\n"
                               << "0: 00000002 0 0 0001 01 3 @muster-task/" << a << "/j1.a1.r0/77\n"
                               << "0: 00000002 0 0 0001 01 4 @muster-task/" << a << "/j2.a1.r0/77/9\n";
  listed = ListTaskBeacons(a, dir + "/unix");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].key, "j2.a1.r0");
  EXPECT_EQ(listed[0].pid, 77);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace muster::agent
