// Container jobs on a real cluster with real Podman (issue: `image:` runs in
// a container with exactly its GPUs). The image is built here from Debian's
// static busybox with umoci, so no registry is needed for most tests; the
// pull tests run Debian's docker-registry on loopback. GPUs are fake ones
// whose device files the test makes (mknod), so a container's /dev shows
// exactly what it was given.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "../agent/cluster_fixture.h"
#include "../agent/process_util.h"
#include "../free_port.h"
#include "../tcp_proxy.h"
#include "../wait_for.h"
#include "agent/task_beacon.h"

namespace muster::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Runs a shell command; its exit code and output.
std::pair<int, std::string> Sh(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return {-1, out};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// What every test shares: a containers.conf this machine's kernel accepts,
// and a busybox image in Podman's storage.
struct Shared {
  std::string dir;    // for the suite's files
  std::string conf;   // containers.conf
  std::string image;  // localhost/muster-test/busybox:<hash>, kept for later runs
  std::string skip;   // why the suite cannot run here
  std::string error;  // why it failed to set up
};
Shared* shared = nullptr;

class ContainerTest : public ClusterFixture {
 protected:
  explicit ContainerTest(const char* config = kFastFailures) : ClusterFixture(config) {}

  static void SetUpTestSuite() {
    shared = new Shared();
    if (::geteuid() != 0) {
      shared->skip = "needs root (Podman runs rootful here)";
      return;
    }
    for (const char* tool : {"podman", "umoci", "runc"}) {
      if (Sh(std::string("command -v ") + tool).first != 0) {
        shared->skip = std::string(tool) + " is not installed (scripts/install-deps.sh)";
        return;
      }
    }
    shared->dir = "/tmp/muster-container-test-" + std::to_string(::getpid());
    fs::create_directories(shared->dir);
    // This sandbox's kernel refuses containers some rlimits (issue 23).
    shared->conf = shared->dir + "/containers.conf";
    std::ofstream(shared->conf) << "[containers]\ndefault_ulimits = []\n";
    auto [code, out] = Sh("CONTAINERS_CONF=" + shared->conf + " test/containers/build_busybox_image.sh 2>&1");
    if (code != 0) shared->error = "cannot build the test image: " + out;
    shared->image = out.substr(0, out.find('\n'));
  }
  static void TearDownTestSuite() {
    if (!shared->dir.empty()) fs::remove_all(shared->dir);
    delete shared;
    shared = nullptr;
  }

  void SetUp() override {
    if (!shared->skip.empty()) GTEST_SKIP() << shared->skip;
    ASSERT_TRUE(shared->error.empty()) << shared->error;
    ClusterFixture::SetUp();
  }

  // An agent with `gpus` fake GPUs, each with a device file of its own
  // (major 195, minor = its index, as /dev/nvidiaN).
  AgentProcess& AddContainerAgent(int gpus = 4, std::vector<std::string> extra = {},
                                  std::map<std::string, std::string> env = {}) {
    const std::string dev = Tmp("dev" + std::to_string(agents_.size()));
    fs::create_directories(dev);
    json list = json::array();
    for (int i = 0; i < gpus; ++i) {
      const std::string path = dev + "/nvidia" + std::to_string(i);
      ::mknod(path.c_str(), S_IFCHR | 0666, makedev(195, i));
      list.push_back({{"name", "NVIDIA H100"}, {"minor", i}, {"device", path}});
    }
    const std::string file = dev + "/gpus.json";
    std::ofstream(file) << json({{"gpus", list}}).dump();
    std::vector<std::string> flags = {"--fake-gpus",         file,  "--containers-conf", shared->conf,
                                      "--container-runtime", "runc"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    return AddAgent(flags, env);
  }

  // The containers of agent `a` that Podman knows, by name.
  std::vector<std::string> Containers(const AgentProcess& a) {
    const std::string prefix = "muster-" + agent::TaskBeaconScope(a.state_dir()).substr(0, 8) + "-";
    auto [code, out] = Sh("CONTAINERS_CONF=" + shared->conf + " podman ps -a --format '{{.Names}}'");
    std::vector<std::string> names;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(prefix, 0) == 0) names.push_back(line);
    }
    return names;
  }
  // Whether agent `a`'s containers are all gone within 10 s (a container whose
  // shim was killed is removed by the agent in the background).
  bool ContainersGone(const AgentProcess& a) {
    return WaitFor([&] { return Containers(a).empty(); }, std::chrono::seconds(10), std::chrono::milliseconds(50));
  }
  // The groups under the agent's parent group in every hierarchy, after
  // waiting up to 2 s for them to go.
  std::string GroupsLeft(const AgentProcess& a) {
    std::string left;
    WaitFor(
        [&] {
          left.clear();
          std::error_code ec;
          for (const auto& h : fs::directory_iterator("/sys/fs/cgroup", ec)) {
            for (const auto& parent : fs::directory_iterator(h.path() / "muster", ec)) {
              if (parent.path().filename().string().rfind(a.name() + ".", 0) != 0) continue;
              for (const auto& e : fs::directory_iterator(parent.path(), ec)) {
                if (e.is_directory()) left += e.path().string() + " ";
              }
            }
          }
          return left.empty();
        },
        std::chrono::seconds(2));
    return left;
  }
  // A working directory anyone may use.
  std::string WorkDir(const std::string& name) {
    const std::string dir = Tmp(name);
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::all);
    return dir;
  }
};

TEST_F(ContainerTest, SeesItsEnvironmentItsMountsAndOnlyItsGpusAsItsUser) {
  AddContainerAgent(4);
  WaitNodes(1);
  const std::string work = fs::path(WorkDir("work")).lexically_normal().string(), data = Tmp("data");
  fs::create_directories(data);
  std::ofstream(data + "/hello.txt") << "from the host\n";
  const std::string nobody = server_.UserToken("nobody");
  auto r =
      cli_->Post("/v1/jobs", httplib::Headers{{"Authorization", "Bearer " + nobody}},
                 "name: boxed\nimage: " + shared->image + "\nresources: {gpus: 2}\nworkingDir: " + work +
                     "\nmounts: [{hostPath: " + data +
                     ", containerPath: /data, readOnly: true}]\n"
                     "env: {GREETING: hi}\n"
                     "command: [sh, -c, 'echo uid=$(id -u); echo devs=$(ls /dev | grep nvidia | tr \"\\n\" \" \"); "
                     "echo cvd=$CUDA_VISIBLE_DEVICES; echo job=$MUSTER_JOB_ID rank=$RANK world=$WORLD_SIZE "
                     "slurm=$SLURM_JOB_ID greeting=$GREETING; cat /data/hello.txt; "
                     "touch /data/x 2>/dev/null && echo data-writable || echo data-read-only; "
                     "echo pwd=$(pwd); echo made > here.txt; "
                     "[ -e /etc/debian_version ] && echo host-root || echo image-root']\n",
                 "application/yaml");
  ASSERT_TRUE(r);
  const json submitted = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(submitted.contains("id")) << r->body;
  const int64_t id = submitted["id"];
  const json done = WaitEnd(id);
  ASSERT_EQ(done["state"], "COMPLETED") << done.dump() << Logs(id);
  const std::string log = Logs(id);
  EXPECT_NE(log.find("uid=65534"), std::string::npos) << "runs as the submitting user: " << log;
  // Exactly the two GPUs it was given (CUDA_VISIBLE_DEVICES names them by
  // UUID), by their device files.
  std::map<std::string, std::string> env = EnvOf(log);
  std::set<int> given;
  const json node = Get("/v1/nodes")["items"][0];
  for (const json& g : node["agent"]["gpuDevices"]) {
    if (env["cvd"].find(g["uuid"].get<std::string>()) != std::string::npos) given.insert(g["index"].get<int>());
  }
  ASSERT_EQ(given.size(), 2u) << env["cvd"];
  std::string expected = "devs=";
  for (int g : given) expected += (expected.back() == '=' ? "nvidia" : " nvidia") + std::to_string(g);
  expected += "\n";
  EXPECT_NE(log.find(expected), std::string::npos) << log;
  EXPECT_NE(log.find("job=" + std::to_string(id) + " rank=0 world=1 slurm=" + std::to_string(id) + " greeting=hi"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("from the host"), std::string::npos) << log;
  EXPECT_NE(log.find("data-read-only"), std::string::npos) << log;
  EXPECT_NE(log.find("pwd=" + work), std::string::npos) << log;
  EXPECT_NE(log.find("image-root"), std::string::npos) << log;
  EXPECT_EQ(Read(work + "/here.txt"), "made\n") << "the working directory is the host's";
  struct stat st {};
  ASSERT_EQ(::stat((work + "/here.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u) << "files it writes are the user's";
  EXPECT_TRUE(ContainersGone(*agents_[0])) << "its container is removed";
  EXPECT_EQ(GroupsLeft(*agents_[0]), "");
}

TEST_F(ContainerTest, OutOfMemoryIsClassifiedAsSuch) {
  AddContainerAgent(1);
  WaitNodes(1);
  const int64_t id =
      Submit("name: hog\nimage: " + shared->image +
             "\nresources: {memory: 64Mi}\nretry: {limit: 0}\n"
             "command: [sh, -c, 'echo start; x=$(head -c 400000000 /dev/zero | tr \"\\\\0\" a); echo survived']\n");
  const json j = WaitEnd(id);
  EXPECT_EQ(j["state"], "OUT_OF_MEMORY") << j.dump() << Logs(id);
  EXPECT_NE(j["reason"].get<std::string>().find("out of memory"), std::string::npos) << j.dump();
  EXPECT_EQ(Logs(id).find("survived"), std::string::npos);
  EXPECT_TRUE(ContainersGone(*agents_[0]));
  EXPECT_EQ(GroupsLeft(*agents_[0]), "");
}

TEST_F(ContainerTest, ATimeLimitSendsTheCheckpointSignalThenEndsAsTimeout) {
  AddContainerAgent(1);
  WaitNodes(1);
  const std::string pids = WorkDir("pids") + "/a";
  const int64_t id = Submit("name: slow\nimage: " + shared->image + "\ntimeLimit: 2s\nworkingDir: " + Tmp("pids") +
                            "\ncheckpoint: {dir: " + WorkDir("ckpt") +
                            ", signal: SIGUSR1, gracePeriod: 1s}\n"
                            "command: [sh, -c, 'trap \"echo got-usr1\" USR1; echo $$ > a; "
                            "sleep 300 & echo $! >> a; echo started; while true; do sleep 0.1; done']\n");
  const json j = WaitEnd(id);
  EXPECT_EQ(j["state"], "TIMEOUT") << j.dump();
  const std::string log = Logs(id);
  EXPECT_NE(log.find("started"), std::string::npos) << log;
  EXPECT_NE(log.find("got-usr1"), std::string::npos) << log;
  EXPECT_TRUE(AllGone(pids)) << "a process of the container outlived it";
  EXPECT_TRUE(ContainersGone(*agents_[0]));
  EXPECT_EQ(GroupsLeft(*agents_[0]), "");
}

TEST_F(ContainerTest, CancelLeavesNoProcessContainerOrCgroup) {
  AgentProcess& a = AddContainerAgent(2);
  WaitNodes(1);
  const std::string dir = WorkDir("cancel");
  const int64_t id = Submit("name: victim\nimage: " + shared->image +
                            "\nresources: {gpus: 2, memory: 128Mi}\n"
                            "workingDir: " +
                            dir +
                            "\n"
                            "command: [sh, -c, 'echo $$ > pids; sleep 300 & echo $! >> pids; trap \"\" TERM; wait']\n");
  ASSERT_TRUE(WaitProcessStarted(id, dir + "/pids"));
  EXPECT_EQ(Containers(a).size(), 1u);
  const json j = CancelAndWait(id);
  EXPECT_EQ(j["state"], "CANCELLED") << j.dump();
  EXPECT_TRUE(AllGone(dir + "/pids")) << "a process of the cancelled container is left";
  EXPECT_TRUE(ContainersGone(a)) << "the container is left";
  EXPECT_EQ(GroupsLeft(a), "") << "cgroups left behind";
}

// Room for a killed agent to come back before its tasks' lease runs out:
// on a loaded machine an agent's start takes longer than kFastFailures'
// 2 s lease, and its container would fence itself.
class ContainerAdoptTest : public ContainerTest {
 protected:
  ContainerAdoptTest()
      : ContainerTest(
            "rateLimit: {perSecond: 100000, burst: 100000}\n"
            "agents: {defaultGrace: 1s, unreachableAfter: 5s, lease: 10s, lostAfter: 60s}\n") {}
};

TEST_F(ContainerAdoptTest, AnAgentKilledAndRestartedAdoptsItsContainerAndNeverStartsASecond) {
  AgentProcess& a = AddContainerAgent(1);
  WaitNodes(1);
  const std::string dir = WorkDir("adopt");
  const int64_t id = Submit("name: keep\nimage: " + shared->image + "\nresources: {gpus: 1}\nworkingDir: " + dir +
                            "\ncommand: [sh, -c, 'echo $$ >> starts; exec sleep 300']\n");
  ASSERT_TRUE(WaitProcessStarted(id, dir + "/starts"));
  const std::vector<std::string> before = Containers(a);
  ASSERT_EQ(before.size(), 1u);
  a.Kill();  // kill -9, reaped
  a.Start();
  // The server sees it running all along; give the new agent a few syncs.
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(Get("/v1/jobs/" + std::to_string(id))["state"], "RUNNING");
  }
  const json j = Get("/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(j["attempts"], 1) << j.dump();
  EXPECT_EQ(Containers(a), before) << "the same container, and only it";
  std::istringstream starts(Read(dir + "/starts"));
  int n = 0;
  for (pid_t p; starts >> p;) ++n;
  EXPECT_EQ(n, 1) << "the payload started twice";
  const json c = CancelAndWait(id);
  EXPECT_EQ(c["state"], "CANCELLED") << c.dump();
  EXPECT_TRUE(AllGone(dir + "/starts"));
  EXPECT_TRUE(ContainersGone(a));
  EXPECT_EQ(GroupsLeft(a), "");
}

// A container whose shim was killed with the agent (a node's processes
// killed at random) is removed by the next agent, with its processes and
// groups; so is a container named for this agent that no task knows.
TEST_F(ContainerTest, ARestartedAgentRemovesContainersOfNoRunningTask) {
  AgentProcess& a = AddContainerAgent(1);
  WaitNodes(1);
  const std::string dir = WorkDir("orphan");
  const int64_t id = Submit("name: orphan\nimage: " + shared->image + "\nretry: {limit: 0}\nworkingDir: " + dir +
                            "\ncommand: [sh, -c, 'echo $$ >> pids; exec sleep 300']\n");
  ASSERT_TRUE(WaitProcessStarted(id, dir + "/pids"));
  const std::string prefix = "muster-" + agent::TaskBeaconScope(a.state_dir()).substr(0, 8) + "-";
  // A stray of this agent's naming that no task knows (a crash between create and journal, say).
  auto [created, out] = Sh("CONTAINERS_CONF=" + shared->conf + " podman --runtime runc create --name " + prefix +
                           "j999.a1.r0 " + shared->image + " true");
  ASSERT_EQ(created, 0) << out;
  a.Kill();
  // The task's shim goes too (its pid is in the task's journal); its
  // container runs on under conmon.
  pid_t shim = 0;
  std::istringstream journal(Read(a.state_dir() + "/tasks/j" + std::to_string(id) + ".a1.r0.jsonl"));
  for (std::string line; std::getline(journal, line) && shim == 0;) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("pid")) shim = j["pid"].get<pid_t>();
  }
  ASSERT_GT(shim, 0);
  ASSERT_EQ(::kill(shim, SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(AllGone(dir + "/pids")) << "the container should still run without its shim";
  const std::string first = Read(dir + "/pids");
  a.Start();
  // The task is lost (its shim is gone): the job runs again, once, and the
  // first attempt's container and the stray are removed.
  const json j = WaitAttemptRunning(id, 2);
  EXPECT_EQ(j["attempts"], 2) << j.dump();
  std::ofstream(dir + "/first") << first;
  EXPECT_TRUE(AllGone(dir + "/first")) << "the orphaned container's process is left";
  std::vector<std::string> left;
  WaitFor(
      [&] {
        left = Containers(a);
        return left == std::vector<std::string>{prefix + "j" + std::to_string(id) + ".a2.r0"};
      },
      std::chrono::seconds(10), std::chrono::milliseconds(50));
  EXPECT_EQ(left, std::vector<std::string>{prefix + "j" + std::to_string(id) + ".a2.r0"});
  EXPECT_EQ(CancelAndWait(id)["state"], "CANCELLED");
  EXPECT_TRUE(AllGone(dir + "/pids"));
  EXPECT_TRUE(ContainersGone(a)) << "containers left";
  EXPECT_EQ(GroupsLeft(a), "");
}

TEST_F(ContainerTest, AnImageThatCannotBePulledEndsTheJobWithoutRetrying) {
  AddContainerAgent(1);
  WaitNodes(1);
  // Nothing listens on port 1: the registry cannot be reached.
  const std::string image = "127.0.0.1:1/muster-test/none:1";
  const int64_t id = Submit("name: unpullable\nimage: " + image + "\nretry: {limit: 3}\ncommand: [true]\n");
  const json j = WaitEnd(id);
  EXPECT_EQ(j["state"], "FAILED") << j.dump();
  const std::string reason = j.value("reason", "");
  EXPECT_NE(reason.find("cannot pull image " + image), std::string::npos) << reason;
  EXPECT_EQ(j["attempts"], 1) << "no retry spent on an image that cannot be pulled: " << j.dump();
  EXPECT_TRUE(HasEvent(Events(id), "PullingImage", image)) << Events(id).dump();
}

// Debian's docker-registry on a loopback port of its own, storing in `dir`;
// with `htpasswd`, it wants that login (bcrypt, as the registry requires).
class Registry {
 public:
  // Starts the registry on a free loopback port and waits until it answers;
  // a registry that exits (its port taken meanwhile) is started again on
  // another port.
  Registry(const std::string& dir, const std::string& user = "", const std::string& password = "") : dir_(dir) {
    fs::create_directories(dir + "/data");
    if (!user.empty()) {
      auto [code, hash] =
          Sh("/usr/bin/python3 -W ignore -c 'import crypt,sys; "
             "print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))' '" +
             password + "'");
      std::ofstream(dir + "/htpasswd") << user << ":" << hash;
      auth_ = "auth: {htpasswd: {realm: muster-test, path: " + dir + "/htpasswd}}\n";
    }
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (Start()) return;
    }
    ADD_FAILURE() << "docker-registry did not start; its log:\n" << Read(dir + "/registry.log");
  }
  ~Registry() { SignalAndReap(pid_, SIGTERM, "docker-registry"); }
  int port() const { return port_; }
  std::string addr() const { return "127.0.0.1:" + std::to_string(port_); }
  // Pushes `image` as `remote` (retrying while the registry starts).
  static std::pair<int, std::string> Push(const std::string& env, const std::string& image, const std::string& remote,
                                          const std::string& creds = "") {
    int code = 1;
    std::string out;
    WaitFor(
        [&] {
          std::tie(code, out) = Sh(env + "podman push " + (creds.empty() ? "" : "--creds " + creds + " ") + image +
                                   " docker://" + remote);
          return code == 0;
        },
        std::chrono::seconds(5), std::chrono::milliseconds(100));
    return {code, out};
  }

 private:
  static bool Accepts(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
  }

  bool Start() {
    port_ = FreeLoopbackPort();
    std::ofstream(dir_ + "/config.yml") << "version: 0.1\nstorage: {filesystem: {rootdirectory: " << dir_
                                        << "/data}}\nhttp: {addr: " << addr()
                                        << "}\nlog: {level: error, accesslog: {disabled: true}}\n"
                                        << auth_;
    pid_ = ::fork();
    if (pid_ == 0) {
      const int out = ::open((dir_ + "/registry.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      ::dup2(out, 1);
      ::dup2(out, 2);
      ::execl("/usr/bin/docker-registry", "docker-registry", "serve", (dir_ + "/config.yml").c_str(), nullptr);
      ::_exit(127);
    }
    bool exited = false;
    WaitFor(
        [&] {
          exited = ::waitpid(pid_, nullptr, WNOHANG) == pid_;
          return exited || Accepts(port_);
        },
        std::chrono::seconds(30), std::chrono::milliseconds(100));
    if (exited) pid_ = -1;
    return !exited;  // answering, or slow to answer but alive: Push retries
  }

  std::string dir_, auth_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A real registry (Debian's docker-registry) on loopback, reached through a
// proxy that can hold its answers back: a pull in progress shows in the
// events (the test holds it until it does), the second job on the node
// finds the image cached, and a tag the registry does not have ends the
// job with its reason and no retry.
TEST_F(ContainerTest, PullsFromARegistryOnceAndReportsAMissingImage) {
  if (Sh("command -v docker-registry").first != 0) GTEST_SKIP() << "docker-registry is not installed";
  const std::string reg = Tmp("registry");
  Registry registry(reg);
  const std::string addr = registry.addr();
  TcpProxy proxy(registry.port());
  const std::string via = "127.0.0.1:" + std::to_string(proxy.port());
  std::ofstream(reg + "/registries.conf") << "[[registry]]\nlocation = \"" << addr << "\"\ninsecure = true\n"
                                          << "[[registry]]\nlocation = \"" << via << "\"\ninsecure = true\n";
  const std::string path = "/muster-test/busybox:" + std::to_string(::getpid());
  const std::string env =
      "CONTAINERS_CONF=" + shared->conf + " CONTAINERS_REGISTRIES_CONF=" + reg + "/registries.conf ";
  auto [code, out] = Registry::Push(env, shared->image, addr + path);
  ASSERT_EQ(code, 0) << out;
  const std::string remote = via + path;  // as the jobs name it
  AddContainerAgent(1, {}, {{"CONTAINERS_REGISTRIES_CONF", reg + "/registries.conf"}});
  WaitNodes(1);
  proxy.FreezeAnswers();
  const int64_t first = Submit("name: pulled\nimage: " + remote + "\ncommand: [sh, -c, 'echo ran']\n");
  const bool pulling = WaitFor([&] { return HasEvent(Events(first), "PullingImage", "is pulling image " + remote); },
                               std::chrono::seconds(10));
  EXPECT_TRUE(pulling) << Events(first).dump();
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(first))["state"], "RUNNING");
  proxy.Thaw();
  const json j = WaitEnd(first);
  EXPECT_EQ(j["state"], "COMPLETED") << j.dump() << Logs(first);
  EXPECT_TRUE(HasEvent(Events(first), "PulledImage", "pulled image " + remote + " in")) << Events(first).dump();
  EXPECT_NE(Logs(first).find("muster: pulling image " + remote), std::string::npos) << Logs(first);
  // Cached now: the next job does not pull.
  const int64_t second = Submit("name: cached\nimage: " + remote + "\ncommand: [sh, -c, 'echo ran']\n");
  EXPECT_EQ(WaitEnd(second)["state"], "COMPLETED");
  EXPECT_FALSE(HasEvent(Events(second), "PullingImage", remote)) << Events(second).dump();
  // A tag the registry does not have.
  const std::string missing = via + "/muster-test/busybox:no-such-tag";
  const int64_t third = Submit("name: missing\nimage: " + missing + "\nretry: {limit: 2}\ncommand: [true]\n");
  const json m = WaitEnd(third);
  EXPECT_EQ(m["state"], "FAILED") << m.dump();
  EXPECT_NE(m.value("reason", "").find("cannot pull image " + missing), std::string::npos) << m.dump();
  EXPECT_EQ(m["attempts"], 1) << m.dump();
  Sh(env + "podman rmi -f " + remote);
}

// The digits DDP example (examples/ddp_digits.py) as two replicas in
// containers of an image made from Debian's python3-torch and
// python3-sklearn (build_torch_image.sh), beside the same job as processes:
// the same accuracy and the same weights, to the checksum.
TEST_F(ContainerTest, TheDdpExampleInAContainerMatchesTheProcessRun) {
  if (std::system("/usr/bin/python3 -c 'import torch, sklearn' >/dev/null 2>&1") != 0) {
    GTEST_SKIP()
        << "Debian's python3-torch and python3-sklearn are not installed (scripts/install-deps.sh installs them)";
  }
  auto [code, built] = Sh("CONTAINERS_CONF=" + shared->conf + " test/containers/build_torch_image.sh");
  ASSERT_EQ(code, 0) << built;
  const std::string image = built.substr(0, built.find('\n'));
  AddContainerAgent(1);
  AddContainerAgent(1);
  WaitNodes(2);
  const std::string repo = fs::current_path().string();
  const std::string script = repo + "/examples/ddp_digits.py";
  const std::string common = "replicas: 2\nresources: {gpus: 1, cpus: 1, memory: 2Gi}\nenv: {EPOCHS: '20'}\n";
  const int64_t boxed =
      Submit("name: ddp-boxed\n" + common + "image: " + image + "\nmounts: [{hostPath: " + repo +
             ", containerPath: " + repo + ", readOnly: true}]\ncommand: [/usr/bin/python3, " + script + "]\n");
  const json b = WaitEnd(boxed, 300);
  ASSERT_EQ(b["state"], "COMPLETED") << b.dump() << Logs(boxed, 0) << Logs(boxed, 1);
  const int64_t plain = Submit("name: ddp-plain\n" + common + "command: [/usr/bin/python3, " + script + "]\n");
  const json p = WaitEnd(plain, 300);
  ASSERT_EQ(p["state"], "COMPLETED") << p.dump() << Logs(plain, 0);
  const auto result = [&](int64_t id, int replica) {
    const std::string log = Logs(id, replica);
    const size_t at = log.find("test accuracy");
    return at == std::string::npos ? log : log.substr(at, log.find('\n', at) - at);
  };
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(result(boxed, r).find("weights checksum"), std::string::npos) << result(boxed, r);
    EXPECT_EQ(result(boxed, r), result(plain, r)) << "replica " << r;
  }
  EXPECT_EQ(result(boxed, 0), result(boxed, 1)) << "the replicas disagree";
}

// Registry logins: a user's is used for that user's jobs only and never
// shown; a queue's (an admin's) for every job in the queue; the login file
// on the node is gone once the image is pulled.
TEST_F(ContainerTest, ARegistryLoginServesItsOwnersJobsOnly) {
  if (Sh("command -v docker-registry").first != 0) GTEST_SKIP() << "docker-registry is not installed";
  const std::string reg = Tmp("private");
  Registry registry(reg, "bot", "s3cret-pw");
  std::ofstream(reg + "/registries.conf")
      << "[[registry]]\nlocation = \"" << registry.addr() << "\"\ninsecure = true\n";
  const std::string env =
      "CONTAINERS_CONF=" + shared->conf + " CONTAINERS_REGISTRIES_CONF=" + reg + "/registries.conf ";
  const std::string image = registry.addr() + "/team/busybox:1";
  auto [pushed, out] = Registry::Push(env, shared->image, image, "bot:s3cret-pw");
  ASSERT_EQ(pushed, 0) << out;
  AgentProcess& a = AddContainerAgent(1, {}, {{"CONTAINERS_REGISTRIES_CONF", reg + "/registries.conf"}});
  WaitNodes(1);
  const std::string work = WorkDir("work");
  const std::string nobody = server_.UserToken("nobody"), daemon = server_.UserToken("daemon");
  const auto submit_as = [&](const std::string& token) {
    auto r =
        cli_->Post("/v1/jobs", httplib::Headers{{"Authorization", "Bearer " + token}},
                   "name: private\nimage: " + image + "\nworkingDir: " + work + "\ncommand: [sh, -c, 'echo ran']\n",
                   "application/yaml");
    EXPECT_TRUE(r);
    return r ? json::parse(r->body, nullptr, false).value("id", int64_t{0}) : 0;
  };
  const auto cli = [&](const std::string& token, const std::string& args, const std::string& input = "") {
    return Sh("printf '%s\\n' '" + input + "' | MUSTER_SERVER=" + server_.url() + " MUSTER_TOKEN=" + token + " " +
              MUSTER_BINARY + " " + args);
  };
  // Without a login the pull is refused: the job ends, no retry spent.
  const json refused = WaitEnd(submit_as(nobody));
  EXPECT_EQ(refused["state"], "FAILED") << refused.dump();
  EXPECT_NE(refused.value("reason", "").find("cannot pull image " + image), std::string::npos) << refused.dump();
  // nobody logs in; the password is read from stdin.
  auto [login, said] = cli(nobody, "registry login " + registry.addr() + " --username bot", "s3cret-pw");
  ASSERT_EQ(login, 0) << said;
  auto [listed, table] = cli(nobody, "registry list -o json");
  EXPECT_EQ(listed, 0) << table;
  EXPECT_NE(table.find("\"username\": \"bot\""), std::string::npos) << table;
  EXPECT_EQ(table.find("s3cret"), std::string::npos) << "a password is never shown: " << table;
  auto [other, others_table] = cli(daemon, "registry list -o json");
  EXPECT_EQ(others_table.find(registry.addr()), std::string::npos) << "another user's login shows: " << others_table;
  const int64_t mine = submit_as(nobody);
  const json pulled = WaitEnd(mine);
  EXPECT_EQ(pulled["state"], "COMPLETED") << pulled.dump() << Logs(mine);
  for (const auto& f : fs::directory_iterator(a.state_dir() + "/tasks")) {
    EXPECT_NE(f.path().extension(), ".auth") << "a login file is left on the node: " << f.path();
  }
  // daemon's job may not use nobody's login (the node forgets the image first).
  Sh(env + "podman rmi -f " + image);
  const json theirs = WaitEnd(submit_as(daemon));
  EXPECT_EQ(theirs["state"], "FAILED") << theirs.dump();
  // A login for the queue, by an admin, serves every job in it.
  auto [refused_queue, why] =
      cli(daemon, "registry login " + registry.addr() + " --username bot --queue default", "s3cret-pw");
  EXPECT_NE(refused_queue, 0) << "only admins set a queue's login";
  auto [queue_login, queue_said] =
      cli(server_.admin_token(), "registry login " + registry.addr() + " --username bot --queue default", "s3cret-pw");
  ASSERT_EQ(queue_login, 0) << queue_said;
  const json queued = WaitEnd(submit_as(daemon));
  EXPECT_EQ(queued["state"], "COMPLETED") << queued.dump();
  auto [logout, logout_said] = cli(nobody, "registry logout " + registry.addr());
  EXPECT_EQ(logout, 0) << logout_said;
  Sh(env + "podman rmi -f " + image);
}

// An admin's pre-pull (`muster image pull`): the nodes asked pull the
// image now, each says how it went (a cluster event, `muster image list`),
// a job there then finds it cached; an image that cannot be pulled says
// why; only admins may ask, and a node without Podman says it runs none.
TEST_F(ContainerTest, AnAdminPrePullsAnImageOnChosenNodes) {
  if (Sh("command -v docker-registry").first != 0) GTEST_SKIP() << "docker-registry is not installed";
  const std::string reg = Tmp("prepull");
  Registry registry(reg);
  std::ofstream(reg + "/registries.conf")
      << "[[registry]]\nlocation = \"" << registry.addr() << "\"\ninsecure = true\n";
  const std::string env =
      "CONTAINERS_CONF=" + shared->conf + " CONTAINERS_REGISTRIES_CONF=" + reg + "/registries.conf ";
  const std::string image = registry.addr() + "/team/prepulled:" + std::to_string(::getpid());
  auto [pushed, out] = Registry::Push(env, shared->image, image);
  ASSERT_EQ(pushed, 0) << out;
  Sh(env + "podman rmi -f " + image);
  AddContainerAgent(1, {}, {{"CONTAINERS_REGISTRIES_CONF", reg + "/registries.conf"}});
  AddContainerAgent(1, {}, {{"CONTAINERS_REGISTRIES_CONF", reg + "/registries.conf"}});
  AddAgent({"--fake-gpus", "1xH100", "--podman", "none"});
  WaitNodes(3);
  const auto cli = [&](const std::string& token, const std::string& args) {
    return Sh("MUSTER_SERVER=" + server_.url() + " MUSTER_TOKEN=" + token + " " + MUSTER_BINARY + " " + args);
  };
  auto [refused, why] = cli(server_.UserToken("nobody"), "image pull " + image);
  EXPECT_NE(refused, 0);
  EXPECT_NE(why.find("admin"), std::string::npos) << why;
  const std::string first = agents_[0]->name(), second = agents_[1]->name(), bare = agents_[2]->name();
  auto [code, said] =
      cli(server_.admin_token(), "image pull " + image + " --nodes " + first + "," + bare + " --wait 60s");
  EXPECT_EQ(code, 1) << "one node cannot: " << said;
  EXPECT_NE(said.find(first), std::string::npos) << said;
  json list = Get("/v1/images");
  std::map<std::string, json> by_node;
  for (const json& p : list["items"]) by_node[p["node"].get<std::string>()] = p;
  EXPECT_EQ(by_node[first].value("state", ""), "pulled") << list.dump();
  EXPECT_TRUE(by_node[first].contains("seconds")) << list.dump();
  EXPECT_EQ(by_node[bare].value("state", ""), "failed") << list.dump();
  EXPECT_NE(by_node[bare].value("message", "").find("runs no containers"), std::string::npos) << list.dump();
  EXPECT_FALSE(by_node.count(second)) << "only the nodes asked";
  EXPECT_TRUE(HasEvent(Get("/v1/events")["items"], "ImagePulled", first + " pulled " + image));
  EXPECT_TRUE(HasEvent(Get("/v1/events")["items"], "ImagePullFailed", bare + " could not pull " + image));
  // A job on the node finds it there: no pull. (The scheduler keeps it off
  // the node without Podman.)
  const int64_t id = Submit("name: warm\nimage: " + image + "\nresources: {gpus: 1}\ncommand: [sh, -c, 'echo ran']\n");
  EXPECT_EQ(WaitEnd(id)["state"], "COMPLETED");
  EXPECT_FALSE(HasEvent(Events(id), "PullingImage", image)) << Events(id).dump();
  // A tag the registry does not have.
  const std::string missing = registry.addr() + "/team/prepulled:no-such-tag";
  auto [failed, failure] = cli(server_.admin_token(), "image pull " + missing + " --nodes " + second + " --wait 60s");
  EXPECT_EQ(failed, 1) << failure;
  EXPECT_NE(failure.find("failed"), std::string::npos) << failure;
  EXPECT_NE(failure.find("manifest unknown"), std::string::npos) << failure;
  Sh(env + "podman rmi -f " + image);
}

// The command line and a batch script say it as users already do:
// `muster submit --image --mount`, and pyxis's #SBATCH --container-image
// and --container-mounts.
TEST_F(ContainerTest, SubmitFromTheCommandLineAndAPyxisStyleScript) {
  AddContainerAgent(1);
  WaitNodes(1);
  const std::string data = Tmp("cli-data"), work = WorkDir("cli-work");
  fs::create_directories(data);
  std::ofstream(data + "/in.txt") << "from the host\n";
  const std::string run = "cd " + work + " && MUSTER_SERVER=" + server_.url() +
                          " MUSTER_TOKEN=" + server_.admin_token() + " " + MUSTER_BINARY + " submit --parsable ";
  auto [code, id] = Sh(run + "--image " + shared->image + " --mount " + data +
                       ":/in:ro -- sh -c 'cat /in/in.txt; "
                       "touch /in/x 2>/dev/null || echo read-only'");
  ASSERT_EQ(code, 0) << id;
  const int64_t flags = std::stoll(id);
  std::ofstream(work + "/job.sh") << "#!/bin/sh\n#SBATCH --job-name=pyxis\n#SBATCH --container-image=" << shared->image
                                  << "\n#SBATCH --container-mounts=" << data << ":/in:ro\n"
                                  << "cat /in/in.txt; [ -e /etc/debian_version ] && echo host || echo image\n";
  auto [script_code, script_id] = Sh(run + "job.sh");
  ASSERT_EQ(script_code, 0) << script_id;
  const int64_t script = std::stoll(script_id);
  for (int64_t job : {flags, script}) {
    const json j = WaitEnd(job);
    EXPECT_EQ(j["state"], "COMPLETED") << j.dump() << Logs(job);
    EXPECT_NE(Logs(job).find("from the host"), std::string::npos) << Logs(job);
  }
  EXPECT_NE(Logs(flags).find("read-only"), std::string::npos) << Logs(flags);
  EXPECT_NE(Logs(script).find("image"), std::string::npos) << "the script runs in the image: " << Logs(script);
}

// A container job that no node can run is refused at submit, naming what
// is missing. With acceptUnfitJobs (nodes yet to join) it waits, saying
// why, and starts where one can once it joins; its command never runs on a
// host.
const std::string kAcceptUnfit = std::string(kFastFailures) + "acceptUnfitJobs: true\n";
class ContainerWaitTest : public ContainerTest {
 protected:
  ContainerWaitTest() : ContainerTest(kAcceptUnfit.c_str()) {}
};

TEST_F(ContainerTest, AContainerJobNoNodeCanRunIsRefusedNamingWhatIsMissing) {
  AddAgent({"--fake-gpus", "1xH100", "--podman", "/nonexistent/podman"});
  WaitNodes(1);
  const json j = Post("/v1/jobs", "name: boxed\nimage: " + shared->image + "\ncommand: [/bin/true]\n");
  EXPECT_EQ(j["error"]["field"], "spec.features") << j.dump();
  EXPECT_NE(j["error"]["message"].get<std::string>().find("none has containers"), std::string::npos) << j.dump();
}

TEST_F(ContainerWaitTest, AContainerJobWaitsForANodeThatRunsContainers) {
  AddAgent({"--fake-gpus", "1xH100", "--podman", "/nonexistent/podman"});
  WaitNodes(1);
  const json node = Get("/v1/nodes")["items"][0]["agent"];
  EXPECT_EQ(node.value("containers", "x"), "") << node.dump();
  EXPECT_EQ(node.value("features", json::array()), json::array()) << node.dump();
  EXPECT_NE(node.value("containersNote", "").find("Podman does not run"), std::string::npos) << node.dump();
  const std::string ran = Tmp("ran");
  const int64_t id = Submit("name: boxed\nimage: " + shared->image +
                            "\nresources: {gpus: 1}\n"
                            "command: [/bin/sh, -c, 'touch " +
                            ran + "; echo in the image']\n");
  const std::string job = "/v1/jobs/" + std::to_string(id);
  std::string reason;
  WaitFor([&] { return !(reason = Get(job).value("reasonDetail", "")).empty(); }, std::chrono::seconds(5));
  EXPECT_EQ(reason, "Unschedulable: no schedulable node has containers, gpu-containers") << Get(job).dump();
  // The cycle that gave that reason would have failed it.
  EXPECT_EQ(Get(job)["state"], "PENDING") << "it waits rather than fails";

  AddContainerAgent(1);
  WaitNodes(2);
  const json j = WaitEnd(id);
  EXPECT_EQ(j["state"], "COMPLETED") << j.dump() << Logs(id);
  EXPECT_EQ(j["attempts"], 1) << j.dump();
  EXPECT_NE(Logs(id).find("in the image"), std::string::npos) << Logs(id);
  EXPECT_EQ(j["attemptHistory"][0]["replicas"][0]["node"], agents_[1]->name()) << j.dump();
  EXPECT_FALSE(fs::exists(ran)) << "the file is made inside the container, not on the host";
}

}  // namespace
}  // namespace muster::testing
