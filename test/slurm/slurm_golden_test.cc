// Golden test (issue 25, item 3): the same scenario of Slurm commands
// (golden/scenario.sh: sbatch --parsable, a two-node batch script's
// environment, srun's per-task environments, scontrol show hostnames, a
// failing step, squeue -h -o, sacct -P --format) ran on the real Slurm
// 22.05 (record_slurm_golden.sh wrote golden/slurm/) and runs here on
// Muster, through the muster binary under Slurm's names. The two are
// compared field by field, after the values that must differ between two
// clusters (job ids, node names, the submit directory) are put in the same
// terms. Every other difference must be listed, with its reason, in
// golden/differences.tsv, and every listed one must still occur: the test
// fails on an unexplained difference and on an explanation gone stale.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "../agent/cluster_fixture.h"
#include "cli/hostlist.h"

namespace muster::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// One run's outputs, in common terms: its job ids become <J1>..<J4> (by
// submission order), its nodes <N1>, <N2> (by the batch script's
// `scontrol show hostnames`), host lists of them <N1,N2>, its submit
// directory <DIR>.
class GoldenRun {
 public:
  GoldenRun(const std::string& dir, const std::string& submit_dir) : dir_(dir) {
    ids_ = Words(ReadAll(dir + "/ids.txt"));
    nodes_ = SplitLines(ReadAll(dir + "/hostnames.txt"));
    submit_dir_ = submit_dir;
  }
  bool ok() const { return ids_.size() == 9 && nodes_.size() == 2; }
  std::string Raw(const std::string& file) const { return ReadAll(dir_ + "/" + file); }

  // `v` in common terms; `id_field`: a field that holds a job id.
  std::string Normal(std::string v, bool id_field) const {
    if (!submit_dir_.empty()) {
      for (size_t at; (at = v.find(submit_dir_)) != std::string::npos;) v.replace(at, submit_dir_.size(), "<DIR>");
    }
    // A host list of this cluster's nodes.
    if (auto hosts = cli::ExpandHostlist(v, 16); hosts.ok() && !hosts->empty()) {
      std::string names;
      bool all = true;
      for (const std::string& h : *hosts) {
        auto it = std::find(nodes_.begin(), nodes_.end(), h);
        if (it == nodes_.end()) {
          all = false;
          break;
        }
        names += (names.empty() ? "" : ",") + std::string("N") + std::to_string(it - nodes_.begin() + 1);
      }
      if (all) return "<" + names + ">";
    }
    // Job ids after a dependency's type ("afterok:12_*(unfulfilled)").
    static const std::regex after_id("(after[a-z]*:)([0-9]+)");
    std::string named;
    auto last = v.cbegin();
    for (std::sregex_iterator it(v.begin(), v.end(), after_id), end; it != end; ++it) {
      named.append(last, (*it)[0].first);
      const auto k = std::find(ids_.begin(), ids_.end(), (*it)[2].str());
      named += (*it)[1].str() + (k == ids_.end() ? (*it)[2].str() : "<J" + std::to_string(k - ids_.begin() + 1) + ">");
      last = (*it)[0].second;
    }
    if (last != v.cbegin()) return named.append(last, v.cend());
    // Job ids, where a value starts with one ("12", "12_3", "12_[0-3%1]").
    for (size_t k = 0; id_field && k < ids_.size(); ++k) {
      const std::string& id = ids_[k];
      if (v.rfind(id, 0) == 0 && (v.size() == id.size() || v[id.size()] == '_')) {
        return "<J" + std::to_string(k + 1) + ">" + v.substr(id.size());
      }
    }
    return v;
  }

 private:
  std::string dir_, submit_dir_;
  std::vector<std::string> ids_, nodes_;
};

struct Difference {
  std::string file, key, kind;  // kind: only-slurm, only-muster, value
  std::string detail;
};

// KEY=VALUE lines (a "N: " label first, for srun -l) as key -> value; the
// key carries the label ("0: SLURM_PROCID").
std::map<std::string, std::string> EnvMap(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const std::string& line : SplitLines(text)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

// "|"-separated lines keyed by their first field, a job id in `run`'s
// common terms ("<J5> State" -> value): for output whose order of lines
// is the cluster's own (sacct's is its database's).
std::map<std::string, std::string> KeyedTableMap(const GoldenRun& run, const std::string& text,
                                                 const std::vector<std::string>& fields) {
  std::map<std::string, std::string> out;
  for (const std::string& line : SplitLines(text)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '|');) cells.push_back(c);
    if (cells.empty()) continue;
    const std::string key = run.Normal(cells[0], true);
    for (size_t f = 1; f < cells.size(); ++f)
      out[key + " " + (f < fields.size() ? fields[f] : std::to_string(f))] = cells[f];
  }
  return out;
}

// "|"-separated lines as "line N field F" -> value.
std::map<std::string, std::string> TableMap(const std::string& text, const std::vector<std::string>& fields) {
  std::map<std::string, std::string> out;
  const std::vector<std::string> lines = SplitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> cells;
    std::stringstream ss(lines[i]);
    for (std::string c; std::getline(ss, c, '|');) cells.push_back(c);
    for (size_t f = 0; f < cells.size(); ++f) {
      out["line " + std::to_string(i + 1) + " " + (f < fields.size() ? fields[f] : std::to_string(f))] = cells[f];
    }
  }
  return out;
}

void Compare(const std::string& file, const std::map<std::string, std::string>& slurm,
             const std::map<std::string, std::string>& muster, const GoldenRun& s, const GoldenRun& m,
             std::vector<Difference>& out) {
  auto id_field = [](const std::string& key) {
    return key.find("JobID") != std::string::npos || key.find("JOB_ID") != std::string::npos ||
           key.find("JOBID") != std::string::npos;
  };
  for (const auto& [k, v] : slurm) {
    auto it = muster.find(k);
    if (it == muster.end()) {
      out.push_back({file, k, "only-slurm", s.Normal(v, id_field(k))});
    } else if (s.Normal(v, id_field(k)) != m.Normal(it->second, id_field(k))) {
      out.push_back(
          {file, k, "value", "Slurm " + s.Normal(v, id_field(k)) + ", Muster " + m.Normal(it->second, id_field(k))});
    }
  }
  for (const auto& [k, v] : muster) {
    if (!slurm.count(k)) out.push_back({file, k, "only-muster", m.Normal(v, id_field(k))});
  }
}

class SlurmGoldenTest : public ClusterFixture {
 protected:
  SlurmGoldenTest() : ClusterFixture(kConfig) {}
};

TEST_F(SlurmGoldenTest, TheScenarioGivesSlurmsAnswersOrDocumentedDifferences) {
  const std::string golden = fs::absolute("test/slurm/golden").string();
  ASSERT_TRUE(fs::exists(golden + "/slurm/ids.txt")) << "run from the repository root";
  // As the recording's n1 and n2 (in name order): node features fa and fb.
  for (const char* feature : {"fa", "fb"}) {
    AddAgent({"--fake-gpus", "4xH100", "--cpus", "4", "--memory", "4000Mi", "--feature", feature});
  }
  WaitNodes(2);
  // Slurm's commands: links to the muster binary, first on the PATH.
  const std::string bin = Tmp("slurm-bin"), run_dir = Tmp("golden-out");
  fs::create_directories(bin);
  for (const char* c : {"sbatch", "srun", "squeue", "scancel", "sacct", "sinfo", "scontrol"}) {
    fs::create_symlink(MUSTER_BINARY, bin + "/" + c);
  }
  const std::string cmd = "PATH=" + bin + ":$PATH MUSTER_SERVER=" + server_.url() +
                          " MUSTER_TOKEN=" + server_.admin_token() + " " + golden + "/scenario.sh " + run_dir + " > " +
                          Tmp("scenario.log") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << ReadAll(Tmp("scenario.log"));

  std::map<std::string, std::string> context;
  for (const std::string& line : SplitLines(ReadAll(golden + "/slurm/context.txt"))) {
    context[line.substr(0, line.find(' '))] = line.substr(line.find(' ') + 1);
  }
  const GoldenRun slurm(golden + "/slurm", context["dir"]), muster(run_dir, fs::weakly_canonical(run_dir).string());
  ASSERT_TRUE(slurm.ok()) << "the recording lacks ids or host names";
  ASSERT_TRUE(muster.ok()) << ReadAll(run_dir + "/ids.txt") << ReadAll(run_dir + "/hostnames.txt")
                           << ReadAll(Tmp("scenario.log"));

  std::vector<Difference> found;
  auto whole = [&](const std::string& file) {
    std::map<std::string, std::string> s, m;
    const auto sl = SplitLines(slurm.Raw(file)), ml = SplitLines(muster.Raw(file));
    for (size_t i = 0; i < sl.size(); ++i) s["line " + std::to_string(i + 1)] = sl[i];
    for (size_t i = 0; i < ml.size(); ++i) m["line " + std::to_string(i + 1)] = ml[i];
    Compare(file, s, m, slurm, muster, found);
  };
  EXPECT_TRUE(std::regex_match(muster.Raw("sbatch-parsable.txt"), std::regex("[0-9]+\n")))
      << muster.Raw("sbatch-parsable.txt");
  for (const char* f : {"srun-exit.txt", "reservation.txt", "scancel.out", "limit.out"}) whole(f);
  // Output lines name nodes inside words: each side's node names become <N1>, <N2>.
  {
    auto lines = [](const std::string& text, const std::vector<std::string>& nodes) {
      std::map<std::string, std::string> out;
      const auto ls = SplitLines(text);
      for (size_t i = 0; i < ls.size(); ++i) {
        std::string l = ls[i];
        for (size_t k = 0; k < nodes.size(); ++k) {
          for (size_t at; (at = l.find(nodes[k] + ":")) != std::string::npos;) {
            l.replace(at, nodes[k].size(), "<N" + std::to_string(k + 1) + ">");
          }
        }
        out["line " + std::to_string(i + 1)] = l;
      }
      return out;
    };
    Compare("env.out", lines(slurm.Raw("env.out"), SplitLines(slurm.Raw("hostnames.txt"))),
            lines(muster.Raw("env.out"), SplitLines(muster.Raw("hostnames.txt"))), slurm, muster, found);
  }
  Compare("batch-env.txt", EnvMap(slurm.Raw("batch-env.txt")), EnvMap(muster.Raw("batch-env.txt")), slurm, muster,
          found);
  // scontrol show job: Key=Value words; the times of two runs differ, their form must not.
  auto words = [](const std::string& text) {
    std::map<std::string, std::string> out;
    static const std::regex time("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}");
    for (const std::string& w : Words(text)) {
      const size_t eq = w.find('=');
      if (eq == std::string::npos) continue;
      std::string v = w.substr(eq + 1);
      if (std::regex_match(v, time)) v = "<TIME>";
      if (w.compare(0, eq, "RunTime") == 0 && std::regex_match(v, std::regex("[0-9:-]+"))) v = "<ELAPSED>";
      out[w.substr(0, eq)] = v;
    }
    return out;
  };
  Compare("show-job.txt", words(slurm.Raw("show-job.txt")), words(muster.Raw("show-job.txt")), slurm, muster, found);
  Compare("show-reservation.txt", words(slurm.Raw("show-reservation.txt")), words(muster.Raw("show-reservation.txt")),
          slurm, muster, found);
  Compare("srun-env.txt", EnvMap(slurm.Raw("srun-env.txt")), EnvMap(muster.Raw("srun-env.txt")), slurm, muster, found);
  const std::vector<std::string> squeue_fields = {"JobID", "Name", "ST", "Reason", "Nodes", "CPUs", "TimeLimit"};
  Compare("squeue.txt", TableMap(slurm.Raw("squeue.txt"), squeue_fields),
          TableMap(muster.Raw("squeue.txt"), squeue_fields), slurm, muster, found);
  const std::vector<std::string> array_fields = {"JobID", "ArrayTaskID", "Reason"};
  Compare("squeue-array.txt", TableMap(slurm.Raw("squeue-array.txt"), array_fields),
          TableMap(muster.Raw("squeue-array.txt"), array_fields), slurm, muster, found);
  const std::vector<std::string> sacct_fields = {"JobID",  "JobName",   "State",    "ExitCode",
                                                 "NNodes", "AllocCPUS", "Timelimit"};
  Compare("sacct.txt", TableMap(slurm.Raw("sacct.txt"), sacct_fields), TableMap(muster.Raw("sacct.txt"), sacct_fields),
          slurm, muster, found);
  const std::vector<std::string> dep_fields = {"JobID", "Dependency", "Reason"};
  Compare("squeue-dep.txt", TableMap(slurm.Raw("squeue-dep.txt"), dep_fields),
          TableMap(muster.Raw("squeue-dep.txt"), dep_fields), slurm, muster, found);
  for (const auto& [file, fields] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"sacct-more.txt", {"JobID", "JobName", "State", "ExitCode", "NNodes"}},
           {"sacct-choice.txt", {"JobID", "NodeList"}}}) {
    Compare(file, KeyedTableMap(slurm, slurm.Raw(file), fields), KeyedTableMap(muster, muster.Raw(file), fields), slurm,
            muster, found);
  }

  // Every difference must be documented, and every documented one must occur.
  struct Documented {
    std::string file, key, kind, why;
    bool seen = false;
  };
  std::vector<Documented> documented;
  for (const std::string& line : SplitLines(ReadAll(golden + "/differences.tsv"))) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cells.push_back(c);
    if (cells.size() < 4) continue;
    documented.push_back({cells[0], cells[1], cells[2], cells[3]});
  }
  // A key pattern's "*" stands for any run of characters without a space
  // ("*: SLURM_CONF", "line * State").
  auto matches = [](const std::string& pattern, const std::string& key) {
    std::string re;
    for (char c : pattern) {
      if (c == '*') {
        re += "[^ ]*";
      } else {
        if (std::string_view(".^$|()[]{}+?\\").find(c) != std::string_view::npos) re += '\\';
        re += c;
      }
    }
    return std::regex_match(key, std::regex(re));
  };
  std::string unexplained;
  for (const Difference& d : found) {
    bool ok = false;
    for (Documented& doc : documented) {
      // File "*": both environment files, any task's or the script's.
      const bool file = doc.file == d.file || (doc.file == "*" && d.file.find("env") != std::string::npos);
      if (file && doc.kind == d.kind &&
          (matches(doc.key, d.key) || (doc.file == "*" && matches("*: " + doc.key, d.key)))) {
        doc.seen = ok = true;
      }
    }
    if (!ok) unexplained += d.file + "\t" + d.key + "\t" + d.kind + "\t" + d.detail + "\n";
  }
  EXPECT_EQ(unexplained, "") << "differences from Slurm not in golden/differences.tsv";
  std::string stale;
  for (const Documented& doc : documented) {
    if (!doc.seen) stale += doc.file + "\t" + doc.key + "\t" + doc.kind + "\n";
  }
  EXPECT_EQ(stale, "") << "golden/differences.tsv lists differences that no longer occur";
}

}  // namespace
}  // namespace muster::testing
