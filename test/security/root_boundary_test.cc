// The security issue's attacks, as an ordinary user (`nobody`, "mallory")
// would make them on a real cluster whose agents run as root: her own
// `podman` first on a job's PATH, her library in LD_PRELOAD, a forged task
// beacon before an agent restarts, a Slurm commands' directory she made
// first, idle connections and unauthenticated floods from the address
// other users share, and job ids probed through dependencies. Each one
// failed on the tree before the fix; each must now be refused or inert.
// Then the per-user limits and the end of a job token's reach.
#include <httplib.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../agent/cluster_fixture.h"
#include "../agent/process_util.h"
#include "../run_binary.h"
#include "../wait_for.h"
#include "agent/executor.h"
#include "agent/task_beacon.h"
#include "api_call.h"

namespace muster::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uid_t kNobody = 65534;

// Mallory's home: a directory of hers, reachable by everyone (as a home
// under /home is), removed at the end.
class MalloryHome {
 public:
  MalloryHome() : dir_("/tmp/muster-mallory-" + std::to_string(::getpid())) {
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/bin");
    ::chmod(dir_.c_str(), 0755);
  }
  ~MalloryHome() { fs::remove_all(dir_); }
  const std::string& dir() const { return dir_; }
  // Gives her everything in her home.
  void Own() const {
    for (const auto& e : fs::recursive_directory_iterator(dir_)) (void)!::lchown(e.path().c_str(), kNobody, kNobody);
    (void)!::chown(dir_.c_str(), kNobody, kNobody);
  }
  std::string Read(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string dir_;
};

class RootBoundaryTest : public ClusterFixture {
 protected:
  explicit RootBoundaryTest(const char* config = "agents: {defaultGrace: 1s}\nadmins: [root]\n")
      : ClusterFixture(config) {}

  ApiAnswer Call(const std::string& method, const std::string& path, const std::string& token,
                 const std::string& body = "", const std::string& type = "application/yaml") {
    return CallApi(server_.url(), method, path, token, body, type);
  }
  std::string Token(const std::string& user) {
    auto& t = tokens_[user];
    if (t.empty()) t = server_.UserToken(user);
    return t;
  }
  // Waits (up to 30 s) until the agent's log holds `text`.
  static bool WaitLog(const AgentProcess& a, const std::string& text) {
    return WaitFor([&] { return a.log().find(text) != std::string::npos; });
  }
  std::map<std::string, std::string> tokens_;
};

// Attack 1: her `podman` first on the job's PATH, and her library in
// LD_PRELOAD. Root's Podman is found by absolute path with an environment
// of its own, so neither reaches it; in her process job both reach her own
// processes only (they run, as her). A value with a line break is refused at
// submit, naming the variable.
TEST_F(RootBoundaryTest, AJobsPathAndPreloadReachOnlyItsOwnProcesses) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (jobs run as their users)";
  MalloryHome home;
  const std::string& m = home.dir();
  std::ofstream(m + "/bin/podman") << "#!/bin/sh\nid -u >> " << m << "/ran-as\nexit 1\n";
  ::chmod((m + "/bin/podman").c_str(), 0755);
  std::ofstream(m + "/ev.c") << "#include <stdio.h>\n#include <unistd.h>\n"
                                "__attribute__((constructor)) static void loaded(void) {\n"
                                "  FILE* f = fopen(\""
                             << m
                             << "/loaded-as\", \"a\");\n"
                                "  if (f) { fprintf(f, \"%d\\n\", (int)getuid()); fclose(f); }\n}\n";
  const CommandResult cc = RunCommand("cc -shared -fPIC -o " + m + "/ev.so " + m + "/ev.c 2>&1");
  ASSERT_EQ(cc.code, 0) << cc.out;
  home.Own();

  const std::string conf = Tmp("containers.conf");
  std::ofstream(conf) << "[containers]\ndefault_ulimits = []\n";
  AgentProcess& agent = AddAgent({"--fake-gpus", "8xH100", "--containers-conf", conf, "--container-runtime", "runc"});
  WaitNodes(1);
  const bool containers = Get("/v1/nodes")["items"][0].dump().find("\"containers\"") != std::string::npos;
  const std::string env = "env: {PATH: \"" + m + "/bin:/usr/bin:/bin\", LD_PRELOAD: " + m + "/ev.so}\n";
  std::vector<int64_t> ids;
  if (containers) {
    const ApiAnswer c = Call(
        "POST", "/v1/jobs", Token("nobody"),
        "image: localhost/muster-none:1\nworkingDir: " + m + "\n" + env + "retry: {limit: 0}\ncommand: [\"true\"]\n");
    ASSERT_EQ(c.status, 201) << c.text;
    ids.push_back(c.body["id"]);
  } else {
    ADD_FAILURE() << "the agent found no Podman; its log:\n" << agent.log();
  }
  const ApiAnswer p = Call("POST", "/v1/jobs", Token("nobody"),
                           "workingDir: " + m + "\n" + env + "retry: {limit: 0}\ncommand: [podman]\n");
  ASSERT_EQ(p.status, 201) << p.text;
  ids.push_back(p.body["id"]);
  for (int64_t id : ids) WaitEnd(id);

  const std::string ran = home.Read("ran-as"), loaded = home.Read("loaded-as");
  EXPECT_EQ(("\n" + ran).find("\n0\n"), std::string::npos) << "her podman ran as root:\n" << ran;
  EXPECT_EQ(("\n" + loaded).find("\n0\n"), std::string::npos) << "her library was loaded as root:\n" << loaded;
  EXPECT_NE(ran.find("65534"), std::string::npos) << "her process job did not run her own podman: " << ran;
  EXPECT_NE(loaded.find("65534"), std::string::npos) << "her process job did not get its LD_PRELOAD: " << loaded;

  // A line break in a value: refused at submit, naming it (JSON carries it).
  for (const std::string& image : {std::string(",\"image\":\"localhost/muster-none:1\""), std::string()}) {
    const ApiAnswer refused =
        Call("POST", "/v1/jobs", Token("nobody"),
             R"({"command":["true"],"env":{"LD_PRELOAD":")" + m + R"(/ev.so \n"})" + image + "}", "application/json");
    EXPECT_EQ(refused.status, 400) << refused.text;
    EXPECT_NE(refused.text.find("spec.env.LD_PRELOAD"), std::string::npos) << refused.text;
    EXPECT_NE(refused.text.find("line breaks"), std::string::npos) << refused.text;
  }
}

// Attack 2: a beacon she binds, naming another job's process, before the
// agent restarts. The agent believes only beacons the kernel says its own
// shims listen on: her victim runs on, and so does its job.
TEST_F(RootBoundaryTest, AForgedBeaconMakesARestartedAgentKillNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (another user's socket)";
  AgentProcess& agent = AddAgent();
  WaitNodes(1);
  const std::string pid_file = Tmp("victim.pid");
  const int64_t id = Submit("command: [/bin/sh, -c, 'echo $$ > " + pid_file + "; exec sleep 300']\n");
  ASSERT_TRUE(WaitProcessStarted(id, pid_file));
  const pid_t victim = std::stoi(WaitFile(pid_file));
  const int64_t start = agent::ProcessStartTime(victim);
  const std::string scope = agent::TaskBeaconScope(agent.state_dir() + "/tasks");
  ASSERT_FALSE(scope.empty());
  const pid_t forger = HoldAs(kNobody, [&] { return agent::BindTaskBeacon(scope, "j990.a1.r0", victim, start) >= 0; });
  ASSERT_GT(forger, 0);
  agent.Kill();
  agent.Start();
  EXPECT_TRUE(WaitLog(agent, "ignoring a beacon for task j990.a1.r0")) << agent.log();
  WaitNodes(1);
  EXPECT_EQ(::kill(victim, 0), 0) << "the forged beacon's victim was killed";
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(id))["state"], "RUNNING");
  ::kill(forger, SIGKILL);
  ::waitpid(forger, nullptr, 0);
  CancelAndWait(id);
}

// Attack 3: the agent's state directory below a world-writable (sticky)
// parent, and her directory where the agent puts the Slurm commands that
// come first on every job's PATH. The agent refuses to start, naming it.
TEST_F(RootBoundaryTest, ASlurmCommandsDirectoryAUserMadeFirstIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (another user's directory)";
  const std::string shared = "/tmp/muster-sticky-" + std::to_string(::getpid());
  fs::remove_all(shared);
  fs::create_directories(shared);
  ::chmod(shared.c_str(), 01777);
  const std::string premade = shared + "/state.slurm-bin";
  const pid_t mallory = HoldAs(kNobody, [&] {
    if (::mkdir(premade.c_str(), 0755) != 0) return false;
    std::ofstream(premade + "/sh") << "#!/bin/sh\necho mallory was here\nexec /bin/sh \"$@\"\n";
    return ::chmod((premade + "/sh").c_str(), 0755) == 0;
  });
  ASSERT_GT(mallory, 0);
  ::kill(mallory, SIGKILL);
  ::waitpid(mallory, nullptr, 0);
  AgentProcess agent(server_.url(), Name(9), shared);  // its state directory: shared/state
  agent.Start();
  EXPECT_TRUE(WaitLog(agent, premade + " is owned by uid 65534")) << agent.log();
  agent.Stop();
  struct stat st {};
  ASSERT_EQ(::stat(premade.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody) << "the agent took her directory over";
  EXPECT_TRUE(Get("/v1/nodes")["items"].empty()) << "the agent registered anyway";
  fs::remove_all(shared);
}

// Attack 4: 1,010 idle connections and a flood of unauthenticated requests
// from the address alice also uses. Anonymous connections make room for
// new ones, and unauthenticated requests have a budget of their own: alice
// still submits, and is not rate limited.
TEST_F(RootBoundaryTest, IdleSocketsAndAnonymousFloodsFromAnAddressLockNobodyOut) {
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = std::min<rlim_t>(files.rlim_max, 4096);
  ::setrlimit(RLIMIT_NOFILE, &files);
  ASSERT_GE(files.rlim_cur, 1100u) << "the test needs 1,100 descriptors";
  std::vector<int> idle;
  const int port = std::stoi(server_.url().substr(server_.url().rfind(':') + 1));
  for (int i = 0; i < 1010; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << i;
    idle.push_back(fd);
  }
  const std::string alice = Token("alice");
  for (int i = 0; i < 3; ++i) {
    const ApiAnswer a = Call("POST", "/v1/jobs", alice, "hold: true\ncommand: [\"true\"]\n");
    EXPECT_EQ(a.status, 201) << "submit " << i << ": " << a.text;
  }
  for (int fd : idle) ::close(fd);

  // 2,000 requests with no credential, as fast as one connection sends
  // them: more than the address's whole budget was before.
  httplib::Client flood(server_.url());
  flood.set_keep_alive(true);
  int refused = 0;
  for (int i = 0; i < 2000; ++i) {
    auto r = flood.Get("/v1/jobs");
    ASSERT_TRUE(r) << i;
    refused += r->status == 429;
  }
  EXPECT_GT(refused, 0) << "unauthenticated requests have no budget";
  httplib::Client mine(server_.url());
  mine.set_keep_alive(true);
  for (int i = 0; i < 50; ++i) {
    auto r = mine.Get("/v1/jobs", httplib::Headers{{"Authorization", "Bearer " + alice}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << "alice's request " << i << " after the flood: " << r->body;
  }
}

// Attack 5: dependencies that probe other users' job ids. A job she may not
// see is refused exactly as one that does not exist.
TEST_F(RootBoundaryTest, DependenciesNameOnlyJobsTheCallerMaySee) {
  const ApiAnswer bobs = Call("POST", "/v1/jobs", Token("bob"), "hold: true\ncommand: [\"true\"]\n");
  ASSERT_EQ(bobs.status, 201) << bobs.text;
  const int64_t bob_job = bobs.body["id"];
  const std::string unknown = std::to_string(bob_job + 1000);
  for (const std::string type : {"afterok", "after", "afterany"}) {
    const ApiAnswer seen = Call("POST", "/v1/jobs", Token("alice"),
                                "dependencies: " + type + ":" + std::to_string(bob_job) + "\ncommand: [\"true\"]\n");
    const ApiAnswer none =
        Call("POST", "/v1/jobs", Token("alice"), "dependencies: " + type + ":" + unknown + "\ncommand: [\"true\"]\n");
    EXPECT_EQ(seen.status, 400) << seen.text;
    EXPECT_EQ(none.status, 400) << none.text;
    std::string said = seen.body["error"].value("message", "");
    const size_t at = said.find(std::to_string(bob_job));
    ASSERT_NE(at, std::string::npos) << said;
    said.replace(at, std::to_string(bob_job).size(), unknown);
    EXPECT_EQ(said, none.body["error"].value("message", "")) << "the two refusals differ";
    EXPECT_EQ(seen.body["error"].value("field", ""), "spec.dependencies[0].job") << seen.text;
  }
  const ApiAnswer alices = Call("POST", "/v1/jobs", Token("alice"), "hold: true\ncommand: [\"true\"]\n");
  const ApiAnswer after_own = Call("POST", "/v1/jobs", Token("alice"),
                                   "dependencies: afterok:" + std::to_string(alices.body["id"].get<int64_t>()) +
                                       "\nhold: true\ncommand: [\"true\"]\n");
  EXPECT_EQ(after_own.status, 201) << after_own.text;
  // An admin sees every job, and may depend on any.
  EXPECT_EQ(Post("/v1/jobs", "dependencies: afterok:" + std::to_string(bob_job) + "\nhold: true\ncommand: [x]\n")
                    .value("id", int64_t{0}) > 0,
            true);
}

class UserLimitsTest : public RootBoundaryTest {
 protected:
  UserLimitsTest()
      : RootBoundaryTest(
            "agents: {defaultGrace: 1s}\nadmins: [root]\n"
            "limits: {pendingJobsPerUser: 3, arraySize: 5, tokensPerUser: 2, tokenLifetime: 90d, "
            "jobTokenAfterEnd: 0s}\n") {}
};

// Per-user limits refuse clearly, naming the limit; an admin is not held
// to the token limits. A job's token reads its job while it runs, and no
// longer once the time after its end has passed (0 s here).
TEST_F(UserLimitsTest, PerUserLimitsAndAJobTokensEndAreEnforced) {
  const std::string alice = Token("alice");
  ApiAnswer a = Call("POST", "/v1/jobs", alice, "array: 6\nhold: true\ncommand: [\"true\"]\n");
  EXPECT_EQ(a.status, 400) << a.text;
  EXPECT_EQ(a.body["error"].value("field", ""), "spec.array") << a.text;
  EXPECT_NE(a.text.find("limits.arraySize"), std::string::npos) << a.text;
  a = Call("POST", "/v1/jobs", alice, "array: 3\nhold: true\ncommand: [\"true\"]\n");
  EXPECT_EQ(a.status, 201) << a.text;
  a = Call("POST", "/v1/jobs", alice, "hold: true\ncommand: [\"true\"]\n");
  EXPECT_EQ(a.status, 403) << a.text;
  EXPECT_NE(a.text.find("alice has 3 jobs waiting to start"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("limits.pendingJobsPerUser"), std::string::npos) << a.text;
  EXPECT_EQ(Call("POST", "/v1/jobs", Token("bob"), "hold: true\ncommand: [\"true\"]\n").status, 201)
      << "bob has a limit of his own";

  // Tokens: alice holds one (made for her by an admin); one more, then no more.
  a = Call("POST", "/v1/tokens", alice, R"({"expiresIn":"3650d"})", "application/json");
  EXPECT_EQ(a.status, 400) << a.text;
  EXPECT_NE(a.text.find("limits.tokenLifetime"), std::string::npos) << a.text;
  EXPECT_EQ(Call("POST", "/v1/tokens", alice, "{}", "application/json").status, 201);
  a = Call("POST", "/v1/tokens", alice, "{}", "application/json");
  EXPECT_EQ(a.status, 403) << a.text;
  EXPECT_NE(a.text.find("limits.tokensPerUser"), std::string::npos) << a.text;
  EXPECT_EQ(Post("/v1/tokens", R"({"user":"alice"})", "application/json").contains("token"), true)
      << "an admin is not held to it";

  // A job token: good while its job runs, refused once the job has ended.
  AddAgent();
  WaitNodes(1);
  const std::string token_file = Tmp("job.token"), go = Tmp("go");
  const int64_t id = Submit("command: [/bin/sh, -c, 'echo $MUSTER_TOKEN > " + token_file + "; while [ ! -e " + go +
                            " ]; do sleep 0.05; done']\n");
  std::string job_token = WaitFile(token_file);
  ASSERT_FALSE(job_token.empty());
  job_token.pop_back();
  const std::string path = "/v1/jobs/" + std::to_string(id);
  EXPECT_EQ(Call("GET", path, job_token).status, 200);
  std::ofstream(go) << "go\n";
  EXPECT_EQ(WaitEnd(id)["state"], "COMPLETED");
  a = Call("GET", path, job_token);
  EXPECT_EQ(a.status, 403) << a.text;
  EXPECT_NE(a.text.find("limits.jobTokenAfterEnd"), std::string::npos) << a.text;
}

}  // namespace
}  // namespace muster::testing
