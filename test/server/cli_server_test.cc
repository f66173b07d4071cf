// The `muster` user commands against a real server process.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "../child_process.h"
#include "../run_binary.h"

#include "../wait_for.h"
#include "server_process.h"

namespace muster::testing {
namespace {

using nlohmann::json;

using Result = CommandResult;

// The CLI as carol, with a token of hers, in CliServerTest; elsewhere as
// the admin whose token ServerProcess put in MUSTER_TOKEN.
std::string g_carol;

Result Muster(const std::string& server, const std::string& args) {
  const std::string token = g_carol.empty() ? "" : "MUSTER_TOKEN=" + g_carol + " ";
  return RunCommand("MUSTER_SERVER=" + server + " " + token + MUSTER_BINARY + " " + args);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class CliServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start()) << server_.log();
    g_carol = server_.UserToken("carol");
  }
  void TearDown() override { g_carol.clear(); }
  // Its static node is small: jobs larger than it are accepted and wait (the
  // CLI's reading of them is what these tests check).
  ServerProcess server_{"nodeGroups:\n  - {count: 1, gpus: 8, gpuType: H100}\nacceptUnfitJobs: true\n"};
};

TEST_F(CliServerTest, SubmitListWhyAndActions) {
  const std::string url = server_.url();
  Result r = Muster(url, "submit --parsable --gpus 8 --time 1h --name first -- python train.py --lr 0.1");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string first = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(first, "1");

  const std::string file = server_.dir() + "/job.yaml";
  std::ofstream(file) << "name: second\ncommand: [sleep, '60']\nresources: {gpus: 4}\ntimeLimit: 30m\n";
  r = Muster(url, "submit " + file);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "Submitted job 2\n");

  // The first runs, the second waits for it: why says so, with numbers.
  WaitFor([&] { return Muster(url, "get jobs --state RUNNING -o json").out.find("\"first\"") != std::string::npos; },
          std::chrono::seconds(10));
  r = Muster(url, "get jobs -o json");
  ASSERT_EQ(r.code, 0) << r.out;
  const json jobs = json::parse(r.out);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0]["state"], "RUNNING");
  EXPECT_EQ(jobs[0]["user"], "carol");
  EXPECT_EQ(jobs[0]["command"], json({"python", "train.py", "--lr", "0.1"}));
  r = Muster(url, "why 2");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Job 2 (second) is PENDING: Resources: need 4 GPU; free 0 GPU"), std::string::npos) << r.out;
  // The first job's 1 h limit, counted from its start; `why` reads the clock
  // a moment later (more than a second on a loaded machine).
  EXPECT_TRUE(std::regex_search(r.out, std::regex("planned start in (1h|59m[0-9]+s)"))) << r.out;
  EXPECT_NE(r.out.find(" = class 10000 + age 0 + fair-share "), std::string::npos) << r.out;

  r = Muster(url, "get jobs");
  EXPECT_NE(r.out.find("ID  NAME"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\\n2 +second +carol +default +PENDING +4 +[0-9]+s +Resources\\n")))
      << r.out;
  // Wide adds the priority class, replicas and the running job's node.
  r = Muster(url, "get jobs -o wide");
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex("\\n1 +first +carol +default +RUNNING +8 +[0-9]+s +normal +1 +H100-0\\n")))
      << r.out;
  r = Muster(url, "get nodes");
  EXPECT_NE(r.out.find("H100-0"), std::string::npos) << r.out;
  r = Muster(url, "get nodes -o wide");
  EXPECT_TRUE(std::regex_search(r.out, std::regex("STATE +CPUS +MEMORY +SPINE +POOL +GPU SOURCE +AGENT +LAST SEEN\n")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nH100-0 .* Ready +0 +0 +g0-spine0 +on-demand +- +static +-\n")))
      << r.out;
  r = Muster(url, "get queues -o yaml");
  EXPECT_NE(r.out.find("name: default"), std::string::npos) << r.out;

  r = Muster(url, "hold 2");
  EXPECT_EQ(r.out, "job 2: HELD\n");
  r = Muster(url, "release 2");
  EXPECT_EQ(r.out, "job 2: PENDING\n");
  r = Muster(url, "cancel 1 2");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "job 1: CANCELLED\njob 2: CANCELLED\n");
  r = Muster(url, "history -o json");
  EXPECT_EQ(json::parse(r.out).size(), 2u) << r.out;
  // --limit keeps the most recent, as a table too.
  r = Muster(url, "history --limit 1 -o json");
  ASSERT_EQ(json::parse(r.out).size(), 1u) << r.out;
  EXPECT_EQ(json::parse(r.out)[0]["id"], 2) << r.out;
  r = Muster(url, "history --limit 1");
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^ID +NAME.*\n2 +second +carol .*CANCELLED.*\n$"))) << r.out;
  r = Muster(url, "describe job 1");
  EXPECT_NE(r.out.find("Events:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Cancelled"), std::string::npos) << r.out;
}

TEST_F(CliServerTest, ErrorsAndExitCodes) {
  const std::string url = server_.url();
  Result r = Muster(url, "submit --gpus 2000 -- x");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("spec.resources.gpus: must be an integer from 0 to 1024, got 2000"), std::string::npos) << r.out;
  r = Muster(url, "submit --time soon -- x");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("spec.timeLimit"), std::string::npos) << r.out;
  r = Muster(url, "submit --gpus 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("give a job file, a batch script, or the command"), std::string::npos) << r.out;
  // A negative number is the server's to refuse, not "unset".
  r = Muster(url, "submit --gpus -1 -- x");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("spec.resources.gpus: must be an integer from 0 to 1024, got -1"), std::string::npos) << r.out;
  r = Muster(url, "submit --replicas -2 -- x");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("spec.replicas"), std::string::npos) << r.out;
  // A file is the whole job: flags beside it would be lost, so they are refused.
  const std::string file = server_.dir() + "/job.yaml";
  std::ofstream(file) << "command: [sleep, '60']\n";
  r = Muster(url, "submit --gpus 4 --hold " + file);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("give the job's settings in " + file + " or as flags, not both (flags given: --gpus, --hold)"),
            std::string::npos)
      << r.out;
  r = Muster(url, "get jobs --limit -1");
  EXPECT_EQ(r.code, 2) << r.out;
  r = Muster(url, "cancel 4242");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("job 4242 does not exist"), std::string::npos) << r.out;
  r = Muster(url, "get widgets");
  EXPECT_EQ(r.code, 2) << r.out;
  r = Muster(url, "sumbit --gpus 1 -- x");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown command \"sumbit\"; did you mean \"submit\"?"), std::string::npos) << r.out;
  r = Muster(url, "submit --no-such-flag 3 -- x");
  EXPECT_EQ(r.code, 2) << r.out;
  // An unknown flag is named, with the closest one the command takes (not
  // every argument left over: "-c sh" read as noise).
  r = Muster(url, "submit --gpu 1 -- sh -c 'exit 3'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("muster submit: unknown flag \"--gpu\"; did you mean \"--gpus\"?"), std::string::npos) << r.out;
  r = Muster(url, "get jobs --limt 3");
  EXPECT_NE(r.out.find("muster get: unknown flag \"--limt\"; did you mean \"--limit\"?"), std::string::npos) << r.out;
  r = Muster(url, "get jobs -o xml");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(Muster(url, "get jobs").code, 0);
  // Nothing rejected was stored.
  EXPECT_EQ(json::parse(Muster(url, "get jobs -o json").out).size(), 0u);
}

// -o yaml writes strings that a YAML reader would take for something else
// (a boolean, a number, a time) quoted, and describe's structured output
// has the events and checkpoints its table shows.
TEST_F(CliServerTest, YamlOutputKeepsStringsStrings) {
  const std::string file = server_.dir() + "/job.json";
  std::ofstream(file) << R"({"command": ["x", "true", "0x10", "1:30", "yes", "", "plain"], "hold": true})";
  Result r = Muster(server_.url(), "submit --parsable " + file);
  ASSERT_EQ(r.code, 0) << r.out;
  r = Muster(server_.url(), "describe job 1 -o yaml");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* line :
       {"- x\n", "- \"true\"\n", "- \"0x10\"\n", "- \"1:30\"\n", "- \"yes\"\n", "- \"\"\n", "- plain\n", "hold: true\n",
        "state: HELD\n", "events:\n", "type: Submitted\n", "type: Held\n", "checkpoints:\n  []\n"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " in\n" << r.out;
  }
  const json described = json::parse(Muster(server_.url(), "describe job 1 -o json").out);
  EXPECT_EQ(described["events"].size(), 2u) << described.dump();
  EXPECT_TRUE(described["checkpoints"].is_array()) << described.dump();
}

// kubectl's -l: the server filters by the spec's labels (store-side, so
// paging and --limit see only the matching jobs).
TEST_F(CliServerTest, ALabelSelectorFiltersOnTheServer) {
  int i = 0;
  for (const char* labels : {R"({"team": "vision", "tier": "batch"})", R"({"team": "vision"})", R"({"team": "nlp"})"}) {
    const std::string file = server_.dir() + "/labelled" + std::to_string(++i) + ".json";
    std::ofstream(file) << R"({"command": ["true"], "hold": true, "labels": )" << labels << "}";
    ASSERT_EQ(Muster(server_.url(), "submit " + file).code, 0);
  }
  auto ids = [&](const std::string& selector) {
    const Result r = Muster(server_.url(), "get jobs -l '" + selector + "' -o json");
    EXPECT_EQ(r.code, 0) << r.out;
    std::vector<int64_t> out;
    for (const json& j : json::parse(r.out)) out.push_back(j["id"].get<int64_t>());
    return out;
  };
  EXPECT_EQ(ids("team=vision"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ids("team=vision,!tier"), (std::vector<int64_t>{2}));
  EXPECT_EQ(ids("team!=vision"), (std::vector<int64_t>{3}));
  EXPECT_EQ(json::parse(Muster(server_.url(), "get jobs --selector team --limit 1 -o json").out).size(), 1u);
  const Result bad = Muster(server_.url(), "get jobs -l 'team=a=b'");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("query.labelSelector: must be requirements such as team=vision"), std::string::npos)
      << bad.out;
}

// `muster get jobs --watch` prints each change as the server pushes it:
// the job's RUNNING row shows while it runs, its CANCELLED row once it is
// cancelled; a job the label selector leaves out never shows.
TEST_F(CliServerTest, GetJobsWatchShowsEachTransitionAsItHappens) {
  const std::string out = server_.dir() + "/watch.out";
  const pid_t watcher = ::fork();
  ASSERT_GE(watcher, 0);
  if (watcher == 0) {
    ::setenv("MUSTER_SERVER", server_.url().c_str(), 1);
    ::setenv("MUSTER_TOKEN", g_carol.c_str(), 1);
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(MUSTER_BINARY, MUSTER_BINARY, "get", "jobs", "--watch", "-l", "team=a", nullptr);
    ::_exit(127);
  }
  // Lines of the watch's output: with the job's name, and its state.
  auto has = [&](const std::string& name, const std::string& state) {
    std::ifstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.find(" " + name + " ") != std::string::npos && line.find(" " + state + " ") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  auto wait = [&](const std::function<bool()>& done) {
    WaitFor([&] { return done(); }, std::chrono::seconds(30));
    return done();
  };
  ASSERT_TRUE(wait([&] { return ReadAll(out).find("REASON") != std::string::npos; })) << ReadAll(out);
  for (const auto& [name, team] : {std::pair{"watched", "a"}, std::pair{"other", "b"}}) {
    const std::string file = server_.dir() + "/" + name + ".json";
    std::ofstream(file) << R"({"name": ")" << name << R"(", "command": ["sleep", "600"], "resources": {"gpus": 4},)"
                        << R"( "labels": {"team": ")" << team << R"("}})";
    ASSERT_EQ(Muster(server_.url(), "submit " + file).code, 0);
  }
  EXPECT_TRUE(wait([&] { return has("watched", "RUNNING"); })) << ReadAll(out);
  EXPECT_FALSE(has("watched", "CANCELLED"));
  ASSERT_EQ(Muster(server_.url(), "cancel 1").code, 0);
  EXPECT_TRUE(wait([&] { return has("watched", "CANCELLED"); })) << ReadAll(out);
  ASSERT_EQ(Muster(server_.url(), "cancel 2").code, 0);
  ASSERT_TRUE(wait([&] {
    return Muster(server_.url(), "get jobs --state CANCELLED -o json").out.find("\"other\"") != std::string::npos;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // room for a wrong line to arrive
  SignalAndReap(watcher, SIGTERM, "muster get jobs --watch");
  const std::string text = ReadAll(out);
  EXPECT_EQ(text.find("other"), std::string::npos) << text;
  // In order: the RUNNING row before the CANCELLED one.
  EXPECT_LT(text.find(" RUNNING "), text.find(" CANCELLED ")) << text;
}

// kubectl's -o jsonpath=... and -o custom-columns=... on the job list.
TEST_F(CliServerTest, JsonPathAndCustomColumnsPrintWhatTheyName) {
  const std::string file = server_.dir() + "/labelled.json";
  std::ofstream(file) << R"({"command": ["true"], "hold": true, "name": "tagged", "labels": {"team": "vision"}})";
  ASSERT_EQ(Muster(server_.url(), "submit " + file).code, 0);
  ASSERT_EQ(Muster(server_.url(), "submit --hold --name plain -- true").code, 0);
  Result r =
      Muster(server_.url(), R"(get jobs -o 'jsonpath={range .items[*]}{.id} {.name} {.labels.team}{"\n"}{end}')");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "1 tagged vision\n2 plain \n");
  r = Muster(server_.url(), "get jobs -o jsonpath='{.items[*].state}'");
  EXPECT_EQ(r.out, "HELD HELD");
  r = Muster(server_.url(), "get jobs -o custom-columns=ID:.id,TEAM:.labels.team");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^ID +TEAM\n1 +vision\n2 +<none>\n$"))) << r.out;
  r = Muster(server_.url(), "get jobs -o jsonpath='{.items'");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "muster: -o jsonpath: a { without its }\n");
  EXPECT_EQ(Muster(server_.url(), "get jobs -o tsv").code, 2);
  // Nodes and queues too.
  r = Muster(server_.url(), "get nodes -o custom-columns=NAME:.name,GPUS:.gpus");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^NAME +GPUS\n[^ ]+ +8\n$"))) << r.out;
  r = Muster(server_.url(), "get queues -o jsonpath='{.items[*].name}'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "default");
}

TEST_F(CliServerTest, ArraySubmit) {
  Result r = Muster(server_.url(), "submit --array 3 --gpus 1 --name sweep -- python sweep.py");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "Submitted jobs 1-3\n");
  r = Muster(server_.url(), "submit --parsable --array 2 -- true");
  EXPECT_EQ(r.out, "4-5\n");
  EXPECT_EQ(json::parse(Muster(server_.url(), "get jobs --name sweep -o json").out).size(), 3u);
  // Lists longer than a page (1,000) come whole, or up to --limit.
  ASSERT_EQ(Muster(server_.url(), "submit --parsable --array 1200 -- true").out, "6-1205\n");
  r = Muster(server_.url(), "get jobs");
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1206) << r.out.substr(0, 400);
  EXPECT_NE(r.out.find("\n1205 "), std::string::npos);
  EXPECT_EQ(json::parse(Muster(server_.url(), "get jobs --limit 1100 -o json").out).size(), 1100u);
  r = Muster(server_.url(), "get jobs --limit 1100");
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1101) << r.out.substr(0, 400);
  EXPECT_NE(r.out.find("\n1100 "), std::string::npos);
  EXPECT_EQ(r.out.find("\n1101 "), std::string::npos);
  // What --parsable prints for an array names the array in --after.
  r = Muster(server_.url(), "submit --parsable --after afterok:4-5 -- true");
  ASSERT_EQ(r.code, 0) << r.out;
  const json deps =
      json::parse(Muster(server_.url(), "describe job " + r.out.substr(0, r.out.find('\n')) + " -o json").out);
  EXPECT_EQ(deps["dependencies"], json::parse(R"([{"type":"afterok","job":4},{"type":"afterok","job":5}])"))
      << deps.dump();
  // An array's range, as submit printed it, names its jobs in the actions.
  r = Muster(server_.url(), "cancel 1-3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "job 1: CANCELLED\njob 2: CANCELLED\njob 3: CANCELLED\n");
  // -o json: the jobs as the action left them, one list.
  r = Muster(server_.url(), "cancel 4-5 -o json");
  ASSERT_EQ(r.code, 0) << r.out;
  const json cancelled = json::parse(r.out)["items"];
  ASSERT_EQ(cancelled.size(), 2u) << r.out;
  EXPECT_EQ(cancelled[0]["id"], 4);
  EXPECT_EQ(cancelled[1]["id"], 5);
  EXPECT_EQ(cancelled[1]["state"], "CANCELLED") << r.out;
  // logs prints output as the job wrote it: -o is a usage error there.
  EXPECT_EQ(Muster(server_.url(), "logs 4 -o json").code, 2);
  for (const char* bad : {"hold 3-1", "hold 1-", "hold x", "hold 0", "cancel 1-20000"}) {
    r = Muster(server_.url(), bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
  }
  r = Muster(server_.url(), "submit --array 0 -- true");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("spec.array: must be an integer from 1 to 10000, or Slurm's indices"), std::string::npos)
      << r.out;
}

// Queues with quotas, as a table: this crashed (a dangling iterator over a
// queue's guarantee) whenever a queue had a guarantee or a limit.
// A job submitted from flags runs where it was submitted from, as with
// sbatch (a relative command such as ./train.sh then finds its file), or in
// the directory --chdir names.
TEST_F(CliServerTest, SubmitRunsInTheDirectoryItWasSubmittedFrom) {
  auto working_dir = [&](const std::string& args) {
    const Result r = Muster(server_.url(), "submit --parsable " + args + " -- true");
    EXPECT_EQ(r.code, 0) << r.out;
    const std::string id = r.out.substr(0, r.out.find('\n'));
    return json::parse(Muster(server_.url(), "describe job " + id + " -o json").out)["workingDir"];
  };
  EXPECT_EQ(working_dir(""), std::filesystem::current_path().string());
  EXPECT_EQ(working_dir("--chdir /srv/data"), "/srv/data");
  EXPECT_EQ(working_dir("-D /tmp"), "/tmp");
}

// `muster submit train.sh`, as `sbatch train.sh`: the script's text is the
// job, its #SBATCH and #MUSTER lines give the settings, a flag on the
// command line wins, and a directive that cannot be honoured is an error
// naming its line, never dropped.
TEST_F(CliServerTest, ABatchScriptIsSubmittedWithItsDirectives) {
  const std::string url = server_.url();
  const std::string script = server_.dir() + "/train.sh";
  const std::string text =
      "#!/bin/bash\n"
      "# fine-tune\n"
      "#SBATCH -J llama-ft\n"
      "#SBATCH --nodes=1 --gpus-per-node=4   # one node\n"
      "#SBATCH --mem=64G -t 90\n"
      "#SBATCH --output=slurm-%j.out\n"
      "#MUSTER --cpus 8\n"
      "\n"
      "set -e\n"
      "#SBATCH --gpus=8\n"
      "torchrun train.py\n";
  std::ofstream(script) << text;
  Result r = Muster(url, "submit --parsable " + script);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("ignored"), std::string::npos) << r.out;
  // The id is the last line (warnings come first, on stderr).
  auto job_of = [&](const Result& submitted) {
    std::string out = submitted.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    const Result d = Muster(url, "describe job " + out.substr(out.rfind('\n') + 1) + " -o json");
    return json::parse(d.out, nullptr, false);
  };
  json job = job_of(r);
  EXPECT_EQ(job["script"], text);
  EXPECT_TRUE(job["command"].is_null()) << job.dump();
  EXPECT_EQ(job["name"], "llama-ft");
  EXPECT_EQ(job["replicas"], 1);
  EXPECT_EQ(job["resources"]["gpus"], 4) << "the directive after the first command counts for nothing";
  EXPECT_EQ(job["resources"]["cpus"], 8);
  EXPECT_EQ(job["resources"]["memory"], int64_t{64} << 30) << "Slurm's G is GiB";
  EXPECT_EQ(job["timeLimit"], "1h30m");
  EXPECT_EQ(job["workingDir"], std::filesystem::current_path().string());
  EXPECT_EQ(job["stdout"], "slurm-%j.out") << "sbatch's --output is the job's stdout file";

  r = Muster(url, "submit --parsable --gpus 2 --name mine --retry 0 --env MODE=fast --env HOME " + script);
  ASSERT_EQ(r.code, 0) << r.out;
  job = job_of(r);
  EXPECT_EQ(job["resources"]["gpus"], 2);
  EXPECT_EQ(job["name"], "mine");
  EXPECT_EQ(job["retry"]["limit"], 0);
  EXPECT_EQ(job["env"]["HOME"], std::getenv("HOME"));
  EXPECT_EQ(job["env"]["MODE"], "fast");
  // A Slurm script takes the submitting environment (sbatch's --export=ALL),
  // but Muster's own variables.
  EXPECT_EQ(job["env"].value("PATH", ""), std::getenv("PATH"));
  EXPECT_FALSE(job["env"].contains("MUSTER_TOKEN"));

  // After "--" the file is a command to run on the node.
  r = Muster(url, "submit --parsable -- " + script);
  ASSERT_EQ(r.code, 0) << r.out;
  job = job_of(r);
  EXPECT_EQ(job["command"], json({script}));

  const std::string before = Muster(url, "get jobs -o json").out;
  std::ofstream(script) << "#!/bin/bash\n#SBATCH --constraint='[a100|v100]'\nhostname\n";
  r = Muster(url, "submit " + script);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("train.sh line 2: #SBATCH --constraint=[a100|v100]: all nodes with the same one of several "
                       "features ([a|b]) and node counts (a*2) are not supported"),
            std::string::npos)
      << r.out;
  std::ofstream(script) << "#!/bin/bash\n#MUSTER --gpus eight\nhostname\n";
  r = Muster(url, "submit " + script);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("train.sh line 2: #MUSTER --gpus: expected a count, got \"eight\""), std::string::npos) << r.out;
  // A file that is not there is not taken for a command (it failed on the
  // node, exit 127).
  r = Muster(url, "submit trian.sh");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(
      r.out.find("trian.sh: no such file; a batch script or job file is submitted by its name, and a command goes "
                 "after \"--\" (muster submit -- trian.sh)"),
      std::string::npos)
      << r.out;
  EXPECT_EQ(Muster(url, "get jobs -o json").out, before) << "a refused script submitted nothing";
  // Words after a script are its arguments, as sbatch's.
  std::ofstream(script) << "#!/bin/bash\nhostname\n";
  r = Muster(url, "submit --parsable " + script + " 0.1 two");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(json::parse(Muster(url, "get jobs -o json").out).back()["args"], json::array({"0.1", "two"}));
}

TEST(CliQueues, QuotasAndUseByTypeAreShown) {
  ServerProcess server(
      "nodeGroups:\n  - {count: 2, gpus: 8, gpuType: H100}\n"
      "queues:\n  - {name: team, guarantee: {H100: 4}, limit: {\"*\": 12}}\n");
  ASSERT_TRUE(server.Start()) << server.log();
  ASSERT_EQ(Muster(server.url(), "submit --gpus 3 --queue team -- x").code, 0);
  Result r;
  WaitFor(
      [&] {
        r = Muster(server.url(), "get queues -o wide");
        return r.out.find("H100 3") != std::string::npos;
      },
      std::chrono::seconds(10));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nteam +0 +1 +3 +H100 4 +12 +file +H100 3\n"))) << r.out;
  r = Muster(server.url(), "get queues");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nteam +0 +1 +3 +H100 4 +12 +file\n"))) << r.out;
}

// A 429 was not acted on: the CLI waits as the server asks and sends again,
// instead of failing a user's command because other clients are busy.
TEST(CliRateLimit, TheCliWaitsOutA429) {
  ServerProcess server("rateLimit: {perSecond: 2, burst: 2}\n");
  ASSERT_TRUE(server.Start()) << server.log();
  for (int i = 0; i < 5; ++i) {
    Result r = Muster(server.url(), "get queues");
    EXPECT_EQ(r.code, 0) << i << ": " << r.out;
  }
  Result r = Muster(server.url(), "submit --parsable -- true");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "1\n");
}

TEST(CliNoServer, SaysItCannotReachTheServer) {
  setenv("MUSTER_RETRY_SECONDS", "1", 1);
  Result r = Muster("http://127.0.0.1:1", "get jobs --server http://127.0.0.1:1");
  unsetenv("MUSTER_RETRY_SECONDS");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("cannot reach the server at http://127.0.0.1:1"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace muster::testing

namespace muster::testing {
namespace {

TEST(ServerPort, ASecondServerOnTheSamePortIsRefused) {
  ServerProcess first;
  ASSERT_TRUE(first.Start()) << first.log();
  const std::string store = first.dir() + "/second.db";
  // (If it did start, it is stopped after 2 s so the test cannot hang.)
  CommandResult r = RunCommand("{ " + std::string(MUSTER_BINARY) + " server --store " + store +
                               " --listen 127.0.0.1:" + std::to_string(first.port()) +
                               " & pid=$!; sleep 2; kill $pid 2>/dev/null; wait $pid; }");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("cannot listen on 127.0.0.1:" + std::to_string(first.port())), std::string::npos) << r.out;
}

}  // namespace
}  // namespace muster::testing
