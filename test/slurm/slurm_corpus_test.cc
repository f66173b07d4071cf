// Issue 25's corpus: 48 real batch scripts for GPU training, submitted with
// `sbatch` (the muster binary under that name) to a real server of static
// nodes, each read as the real Slurm 22.05 reads it.
//
// Slurm's reading is computed here, independently of Muster's parser, from
// what Slurm itself recorded (test/slurm/corpus/slurm_reading.tsv: the
// fields of `scontrol show job` for each script submitted held) with
// Slurm's allocation rules, which the first test checks against Slurm's own
// placements (slurm_allocation.tsv: `sbatch --test-only` on the recording
// cluster of 4 nodes of 128 CPUs).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "../run_binary.h"
#include "../server/server_process.h"
#include "../wait_for.h"

namespace muster::testing {
namespace {

using nlohmann::json;

const std::string kCorpus = std::string(MUSTER_SOURCE_DIR) + "/test/slurm/corpus";

using Row = std::map<std::string, std::string>;

std::vector<Row> ReadTsv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> header;
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cells.push_back(c);
    if (header.empty()) {
      header = cells;
      continue;
    }
    Row r;
    for (size_t i = 0; i < header.size(); ++i) r[header[i]] = i < cells.size() ? cells[i] : "";
    rows.push_back(std::move(r));
  }
  return rows;
}

int64_t Int(const std::string& s) { return s.empty() ? 0 : std::stoll(s); }

// "1000M", "200G", "0" as scontrol prints memory, in MiB.
int64_t Mib(const std::string& s) {
  const char unit = s.back();
  const int64_t n = std::stoll(s);
  return unit == 'G' ? n * 1024 : unit == 'T' ? n * 1024 * 1024 : n;
}

// "gres:gpu:a100:8" or "gres:gpu:8,gres:gpu:8": the count (and type).
int64_t Gres(const std::string& s, std::string* type = nullptr) {
  if (s.empty()) return 0;
  const std::string first = s.substr(0, s.find(','));
  std::vector<std::string> parts;
  std::stringstream ss(first);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  if (type != nullptr && parts.size() == 4) *type = parts[2];
  return std::stoll(parts.back());
}

// Slurm's array indices as scontrol prints them ("1-10%1", "0,4,8,12",
// "500-16500:1000%26"): how many.
int64_t ArraySize(const std::string& s) {
  if (s.empty()) return 0;
  int64_t n = 0;
  std::stringstream ss(s.substr(0, s.find('%')));
  for (std::string part; std::getline(ss, part, ',');) {
    const size_t dash = part.find('-'), colon = part.find(':');
    if (dash == std::string::npos) {
      ++n;
      continue;
    }
    const int64_t a = std::stoll(part.substr(0, dash)), b = std::stoll(part.substr(dash + 1));
    const int64_t step = colon == std::string::npos ? 1 : std::stoll(part.substr(colon + 1));
    n += (b - a) / step + 1;
  }
  return n;
}

// What a job that Slurm read as `r` gets on nodes of `node_cpus` CPUs.
struct Reading {
  int64_t nodes = 1, tasks = 1, tasks_per_node = 1, cpus_per_node = 1, gpus_per_node = 0;
  std::string gpu_type;
  int64_t memory_mib = 0;  // per node; 0 with exclusive: the whole node
  bool exclusive = false;
  int64_t array = 0;
  int64_t array_limit = 0;
};

Reading SlurmReading(const Row& r, int64_t node_cpus) {
  Reading x;
  x.exclusive = r.at("OverSubscribe") == "NO";
  x.tasks = Int(r.at("NumTasks"));
  const int64_t cpus_per_task = Int(r.at("CPUs/Task"));
  const int64_t per_node = Int(r.at("NtasksPerN:B:S:C").substr(0, r.at("NtasksPerN:B:S:C").find(':')));
  const std::string& nodes = r.at("NumNodes");
  if (nodes.find('-') != std::string::npos) {
    x.nodes = Int(nodes.substr(0, nodes.find('-')));  // asked: the minimum
  } else if (per_node > 0) {
    x.nodes = (x.tasks + per_node - 1) / per_node;
  } else {
    // Not asked: tasks packed onto as few nodes as hold them, a task never
    // split across nodes. (The NumNodes of a held job is only Slurm's
    // estimate.)
    const int64_t fit = node_cpus / cpus_per_task;
    x.nodes = std::max<int64_t>(1, (x.tasks + fit - 1) / fit);
  }
  x.tasks_per_node = per_node > 0 ? per_node : (x.tasks + x.nodes - 1) / x.nodes;
  x.cpus_per_node = x.exclusive ? node_cpus : x.tasks_per_node * cpus_per_task;
  if (!r.at("TresPerNode").empty()) {
    x.gpus_per_node = Gres(r.at("TresPerNode"), &x.gpu_type);
    if (!r.at("TresPerTask").empty())
      x.gpus_per_node = std::max(x.gpus_per_node, Gres(r.at("TresPerTask")) * x.tasks_per_node);
  } else if (!r.at("TresPerTask").empty()) {
    x.gpus_per_node = Gres(r.at("TresPerTask"), &x.gpu_type) * x.tasks_per_node;
  } else if (!r.at("TresPerJob").empty()) {
    x.gpus_per_node = Gres(r.at("TresPerJob"), &x.gpu_type) / x.nodes;
  }
  if (!r.at("MemPerTres").empty()) {
    x.memory_mib = Gres(r.at("MemPerTres")) * x.gpus_per_node;
  } else if (!r.at("MinMemoryNode").empty()) {
    x.memory_mib = Mib(r.at("MinMemoryNode"));
    x.exclusive = x.exclusive || x.memory_mib == 0;  // all of each node's
  } else {
    x.memory_mib = Mib(r.at("MinMemoryCPU")) * x.cpus_per_node;
  }
  x.array = ArraySize(r.at("ArrayTaskId"));
  x.array_limit = Int(r.at("ArrayTaskThrottle"));
  return x;
}

std::map<std::string, Row> ByFile(const std::vector<Row>& rows) {
  std::map<std::string, Row> out;
  for (const Row& r : rows) out[r.at("file")] = r;
  return out;
}

// The rules above give what Slurm itself allocated on its 4 nodes of 128
// CPUs, for every script that fits them.
TEST(SlurmCorpus, TheReadingRulesGiveSlurmsOwnAllocations) {
  const std::map<std::string, Row> reading = ByFile(ReadTsv(kCorpus + "/slurm_reading.tsv"));
  int checked = 0;
  for (const Row& a : ReadTsv(kCorpus + "/slurm_allocation.tsv")) {
    if (a.at("verdict") != "fits") continue;
    SCOPED_TRACE(a.at("file"));
    const Reading x = SlurmReading(reading.at(a.at("file")), 128);
    EXPECT_EQ(x.nodes, Int(a.at("nodes")));
    EXPECT_EQ(x.nodes * x.cpus_per_node, Int(a.at("cpus")));
    ++checked;
  }
  EXPECT_GE(checked, 35);
}

class SlurmCorpusServer : public ::testing::Test {
 protected:
  void SetUp() override {
    // The recording cluster's partitions, features and GPU types, with
    // nodes big enough for every script (Slurm's DefMemPerCPU=1000 too).
    server_ = std::make_unique<ServerProcess>(
        "jobDefaults: {resources: {memoryPerCpu: 1000Mi, cpus: 1}}\n"
        "slurm: {qos: {high: high, normal: normal, qos_gpu-t3: normal, qos_gpu-gc: low}}\n"
        "nodeGroups:\n"
        "  - {count: 64, gpus: 8, gpuType: a100, cpus: 192, memory: 2000000Mi, nodesPerLeaf: 16, prefix: a,"
        " features: [a100, gpu80, v100-16g, volta32gb]}\n"
        "  - {count: 8, gpus: 8, gpuType: l40s, cpus: 192, memory: 2000000Mi, prefix: l,"
        " features: [a100, gpu80, v100-16g, volta32gb]}\n");
    ASSERT_TRUE(server_->Start());
    bin_ = server_->dir() + "/bin";
    std::filesystem::create_directories(bin_);
    std::filesystem::create_symlink(MUSTER_BINARY, bin_ + "/sbatch");
    work_ = server_->dir() + "/work";
    std::filesystem::create_directories(work_);
  }

  CommandResult Muster(const std::string& args) {
    return RunCommand("cd " + work_ + " && MUSTER_SERVER=" + server_->url() + " " + args);
  }

  json Job(int64_t id) {
    const CommandResult r = Muster(std::string(MUSTER_BINARY) + " describe job " + std::to_string(id) + " -o json");
    EXPECT_EQ(r.code, 0) << r.out;
    json j = json::parse(r.out, nullptr, false);
    return j.is_object() && j.contains("items") ? j["items"][0] : j;
  }

  std::unique_ptr<ServerProcess> server_;
  std::string bin_, work_;
};

// Every script sbatch accepts is accepted and read as sbatch reads it:
// nodes, tasks, CPUs, GPUs and memory per node, array size, and placed on
// distinct nodes (exclusive ones on whole nodes).
TEST_F(SlurmCorpusServer, EveryScriptIsAcceptedAndReadAsSbatchReadsIt) {
  int accepted = 0;
  std::map<std::string, std::string> refused;
  for (const Row& row : ReadTsv(kCorpus + "/slurm_reading.tsv")) {
    const std::string file = row.at("file");
    SCOPED_TRACE(file);
    const std::string script = kCorpus + "/scripts/" + file;
    const std::string override = row.at("override");
    const CommandResult r = Muster(bin_ + "/sbatch --parsable " + override + " " + script);
    if (row.at("verdict") != "accepted") {
      // sbatch refuses it too (file 20: a directive that is not an option).
      EXPECT_NE(r.code, 0) << r.out;
      EXPECT_NE(r.out.find("sbatch: error: "), std::string::npos) << r.out;
      continue;
    }
    if (r.code != 0) {
      const size_t at = r.out.find("sbatch: error: ");
      refused[file] = at == std::string::npos ? r.out : r.out.substr(at, r.out.find('\n', at) - at);
      continue;
    }
    const int64_t id = std::stoll(r.out.substr(r.out.find_last_of('\n', r.out.size() - 2) + 1));
    ++accepted;
    const Reading want = SlurmReading(row, 192);
    json job = Job(id);
    const json& spec = job;  // the job with its spec's fields
    EXPECT_EQ(spec.value("replicas", 1), want.nodes);
    EXPECT_EQ(spec["slurm"].value("tasks", 0), want.tasks);
    EXPECT_EQ(spec["slurm"].value("tasksPerNode", 0), want.tasks_per_node);
    EXPECT_TRUE(spec.value("onePerNode", false) || spec.value("exclusive", false));
    EXPECT_EQ(spec.value("exclusive", false), want.exclusive);
    EXPECT_EQ(spec["resources"].value("gpus", 0), want.gpus_per_node);
    if (!want.gpu_type.empty()) {
      EXPECT_EQ(spec["resources"].value("gpuType", ""), want.gpu_type);
    }
    SCOPED_TRACE(spec["resources"].dump());
    // The site's QOS names, through the server's mapping. (The recording
    // Slurm keeps no QOS without accounting: the script's own line says.)
    const std::map<std::string, std::string> qos = {
        {"high", "high"}, {"normal", "normal"}, {"qos_gpu-t3", "normal"}, {"qos_gpu-gc", "low"}, {"", "normal"}};
    std::smatch m;
    std::ifstream in(script);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::string asked =
        std::regex_search(text, m, std::regex("\n#SBATCH[^\n]*--qos=([A-Za-z0-9_-]+)")) ? m[1].str() : "";
    EXPECT_EQ(spec.value("priority", ""), qos.at(asked));
    if (!want.exclusive) {
      EXPECT_EQ(spec["resources"].value("cpus", 0.0), static_cast<double>(want.cpus_per_node));
      EXPECT_EQ(spec["resources"].value("memory", int64_t{0}), want.memory_mib << 20)
          << "Slurm's " << row.at("MinMemoryNode") << row.at("MinMemoryCPU") << row.at("MemPerTres");
    }
    if (want.array > 0) {
      EXPECT_EQ(job.value("arrayFirstId", int64_t{0}), id);
      const CommandResult tasks = Muster(std::string(MUSTER_BINARY) + " get jobs -o json");
      const json all = json::parse(tasks.out, nullptr, false);
      int64_t in_array = 0;
      for (const json& j : all.is_array() ? all : all["items"]) in_array += j.value("arrayFirstId", int64_t{0}) == id;
      EXPECT_EQ(in_array, want.array);
    }
    // Placed: on distinct nodes, each with the node's share.
    json placed;
    WaitFor(
        [&] {
          placed = Job(id);
          return placed.value("state", "") == "RUNNING";
        },
        std::chrono::seconds(10));
    ASSERT_EQ(placed.value("state", ""), "RUNNING") << placed.dump();
    std::set<std::string> nodes;
    for (const json& a : placed["allocations"]) {
      nodes.insert(a["node"].get<std::string>());
      EXPECT_EQ(a["replicas"], 1);
      EXPECT_EQ(static_cast<int64_t>(a["gpus"].size()), want.exclusive ? 8 : want.gpus_per_node);
    }
    EXPECT_EQ(static_cast<int64_t>(nodes.size()), want.nodes);
    const std::string last = want.array > 0 ? "-" + std::to_string(id + want.array - 1) : "";
    EXPECT_EQ(Muster(std::string(MUSTER_BINARY) + " cancel " + std::to_string(id) + last).code, 0);
  }
  for (const auto& [file, why] : refused) ADD_FAILURE() << file << ": " << why;
  EXPECT_EQ(accepted, 47);
}

// sbatch's habits: its output, the environment it exports by default,
// its input variables between the script and the command line, -D
// relative to where it runs, and its errors.
TEST_F(SlurmCorpusServer, SbatchTakesItsEnvironmentAndCommandLineAsSlurmDoes) {
  const std::string script = work_ + "/job.sh";
  std::ofstream(script) << "#!/bin/bash\n#SBATCH -t 10 --partition=gpu\necho hi\n";
  std::filesystem::create_directories(work_ + "/sub");
  CommandResult r = Muster("FOO=bar " + bin_ + "/sbatch " + script);
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_EQ(r.out.rfind("Submitted batch job ", 0), 0u) << r.out;
  json job = Job(std::stoll(r.out.substr(20)));
  EXPECT_EQ(job["timeLimit"], "10m");
  EXPECT_EQ(job["env"].value("FOO", ""), "bar") << "--export=ALL is sbatch's default";
  EXPECT_FALSE(job["env"].contains("MUSTER_TOKEN")) << "Muster's own variables stay behind";
  EXPECT_EQ(job["queue"], "gpu");
  r = Muster("FOO=bar SBATCH_TIMELIMIT=30 SBATCH_PARTITION=debug " + bin_ + "/sbatch --parsable -D sub --export=NONE " +
             script);
  ASSERT_EQ(r.code, 0) << r.out;
  job = Job(std::stoll(r.out));
  EXPECT_EQ(job["timeLimit"], "30m") << "SBATCH_TIMELIMIT over the script";
  EXPECT_EQ(job["queue"], "debug");
  EXPECT_FALSE(job["env"].contains("FOO"));
  EXPECT_EQ(job["workingDir"], std::filesystem::path(work_ + "/sub").lexically_normal().string());
  r = Muster("SBATCH_TIMELIMIT=30 " + bin_ + "/sbatch --parsable -t 45 " + script);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Job(std::stoll(r.out))["timeLimit"], "45m") << "the command line over SBATCH_TIMELIMIT";
  r = Muster(bin_ + "/sbatch --bogus " + script);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("sbatch: error: --bogus is not an sbatch option"), std::string::npos) << r.out;
  // A hint that cannot matter here is accepted with a warning in sbatch's words.
  r = Muster(bin_ + "/sbatch --mail-type=END " + script);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("sbatch: warning: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--mail-type"), std::string::npos) << r.out;
  // What no node could ever hold is refused at once, naming the limit, as sbatch does.
  for (const auto& [flags, why] : std::vector<std::pair<std::string, std::string>>{
           {"--gres=gpu:b200:1",
            "spec.resources.gpuType: no node has GPUs of type b200 (the cluster's types: a100, l40s)"},
           {"--gpus-per-node=16", "spec.resources.gpus: a replica asks for 16 GPUs; the most any node has is 8"},
           {"-N 100", "spec.replicas: needs 100 distinct nodes; the cluster has 72 that can hold a replica"}}) {
    r = Muster(bin_ + "/sbatch " + flags + " " + script);
    EXPECT_EQ(r.code, 1) << flags;
    EXPECT_NE(r.out.find(why), std::string::npos) << flags << ": " << r.out;
  }
  r = Muster(bin_ + "/sbatch --parsable " + script + " --epochs 'ten more'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Job(std::stoll(r.out))["args"], json::array({"--epochs", "ten more"})) << "the script's arguments";
}

// `scontrol show hostnames` as batch scripts call it for the master
// address: the binary under that name, the list from the job's variable.
TEST(Scontrol, ShowHostnamesExpandsTheJobsNodeList) {
  const std::string dir = ::testing::TempDir() + "/scontrol_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/scontrol");
  std::filesystem::create_symlink(MUSTER_BINARY, dir + "/scontrol");
  CommandResult r = RunCommand("SLURM_JOB_NODELIST='gpu[07-09],login' " + dir + "/scontrol show hostnames | head -n1");
  EXPECT_EQ(r.out, "gpu07\n");
  r = RunCommand(dir + "/scontrol show hostnames 'n[1-2]'");
  EXPECT_EQ(r.out, "n1\nn2\n");
  r = RunCommand(dir + "/scontrol show hostlist n1,n2,n3");
  EXPECT_EQ(r.out, "n[1-3]\n");
  r = RunCommand(dir + "/scontrol show partition");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("scontrol: error: \"show partition\" is not supported here yet"), std::string::npos) << r.out;
  r = RunCommand(dir + "/scontrol hold 3");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("scontrol: error: only"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace muster::testing
