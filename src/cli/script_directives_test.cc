#include "cli/script_directives.h"

#include <gtest/gtest.h>

namespace muster::cli {
namespace {

ScriptSettings Read(const std::string& script) {
  auto s = ReadScriptDirectives(script, "job.sh");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : ScriptSettings{};
}

std::string Error(const std::string& script) {
  auto s = ReadScriptDirectives(script, "job.sh");
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : s.status().message();
}

TEST(ScriptDirectives, SlurmFlagsMapOntoTheSpecWithSlurmsUnits) {
  ScriptSettings s = Read(
      "#!/bin/bash\n#SBATCH --job-name='my job' -N 2-2\n#SBATCH --gres=gpu:a100:4 --mem 4000\n"
      "#SBATCH -t 1-00:00:00 -c8 -p research -q high\n#SBATCH -d afterok:3 -H -D /data\npython x.py\n");
  EXPECT_EQ(s.name, "my-job") << "a Muster name: letters, digits and ._-";
  EXPECT_EQ(s.replicas, 2);
  EXPECT_EQ(s.gpus, 4);
  EXPECT_EQ(s.gpu_type, "a100");
  EXPECT_EQ(s.memory, "4000Mi");
  EXPECT_EQ(s.time, "1-00:00:00");
  EXPECT_EQ(s.cpus, "8");
  EXPECT_EQ(s.slurm_partition, "research") << "Slurm's names go to the server, which maps them";
  EXPECT_EQ(s.slurm_qos, "high");
  EXPECT_FALSE(s.queue.has_value());
  EXPECT_FALSE(s.priority.has_value());
  EXPECT_EQ(s.after, "afterok:3");
  EXPECT_TRUE(s.hold);
  EXPECT_EQ(s.chdir, "/data");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0],
            "job.sh line 2: #SBATCH --job-name=my job: the job is named my-job (names are letters, digits and ._-)");

  s = Read("#SBATCH --gpus=h100:16 --nodes=2 --mem=1t -t 45\n");
  EXPECT_EQ(s.gpus, 8) << "the job's total, divided among its nodes";
  EXPECT_EQ(s.gpu_type, "h100");
  EXPECT_EQ(s.memory, "1Ti");
  EXPECT_EQ(s.time, "45m");
  EXPECT_EQ(Read("#SBATCH --gres=gpu\n").gpus, 1);
  EXPECT_EQ(Read("#SBATCH -t 0\n").time, "unlimited");
  EXPECT_EQ(Read("#MUSTER -t 30\n").time, "30m") << "muster's -t is sbatch's";
  EXPECT_EQ(SlurmTimeLimit("2h"), "2h");
  EXPECT_EQ(Read("#SBATCH --time=INFINITE\n").time, "unlimited");
}

TEST(ScriptDirectives, ContainerImageAndMountsAsPyxisAndMusterSayThem) {
  ScriptSettings s = Read(
      "#!/bin/bash\n#SBATCH --container-image=nvcr.io/nvidia/pytorch:24.05-py3\n"
      "#SBATCH --container-mounts=/data:/data:ro,/scratch:/scratch\npython x.py\n");
  EXPECT_EQ(s.image, "nvcr.io/nvidia/pytorch:24.05-py3");
  EXPECT_EQ(s.mounts, (std::vector<std::string>{"/data:/data:ro", "/scratch:/scratch"}));
  s = Read("#MUSTER --image ubuntu:22.04 --mount /d:/in:ro --mount /o\n");
  EXPECT_EQ(s.image, "ubuntu:22.04");
  EXPECT_EQ(s.mounts, (std::vector<std::string>{"/d:/in:ro", "/o"}));
  EXPECT_TRUE(s.warnings.empty());
}

TEST(ScriptDirectives, EnvironmentAndRetries) {
  // sbatch's --export: the last one counts; a list without ALL is all the
  // job gets; #MUSTER --env comes after and wins.
  ScriptSettings s = Read(
      "#SBATCH --export=ALL\n#SBATCH --export=NONE,PYTHONPATH,MODE=fast\n"
      "#MUSTER --env CUDA_LAUNCH_BLOCKING=1 --retry 0\n");
  EXPECT_EQ(s.env, (std::vector<std::string>{"PYTHONPATH", "MODE=fast", "CUDA_LAUNCH_BLOCKING=1"}));
  EXPECT_FALSE(s.export_all);
  EXPECT_EQ(s.retry, 0);
  EXPECT_TRUE(s.warnings.empty());
  s = Read("#SBATCH --export=ALL,MODE=fast\n");
  EXPECT_TRUE(s.export_all);
  EXPECT_EQ(s.env, std::vector<std::string>{"MODE=fast"});
  EXPECT_TRUE(Read("#SBATCH -N 1\n").export_all) << "sbatch's default is ALL";
  EXPECT_FALSE(Read("#MUSTER --gpus 1\n").export_all) << "muster submit's is none";
}

TEST(ScriptDirectives, EndAtTheFirstCommandAndSkipOtherComments) {
  const ScriptSettings s = Read(
      "#!/bin/sh\n\n# SBATCH --gpus=1 (a comment: a space after #)\n  #MUSTER --gpus 2\n"
      "echo hi\n#MUSTER --gpus 3\n");
  EXPECT_EQ(s.gpus, 2);
  EXPECT_EQ(Read("#MUSTER --array 5 --hold --time=2h\n").array, 5);
  EXPECT_TRUE(Read("#MUSTER --spot\n").spot);
  EXPECT_FALSE(Read("#MUSTER --hold\n").spot);
}

TEST(ScriptDirectives, BookkeepingIsIgnoredWithAWarningAndTheRestIsRefusedByLine) {
  const ScriptSettings s = Read("#!/bin/bash\n#SBATCH -o out-%j.txt --mail-type=END\n#SBATCH --error=%x.err\n");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "job.sh line 2: #SBATCH --mail-type is ignored (it has no meaning here)");
  EXPECT_EQ(s.stdout_path, "out-%j.txt");  // Slurm's output files are the spec's stdout and stderr
  EXPECT_EQ(s.stderr_path, "%x.err");
  EXPECT_EQ(Error("#!/bin/bash\n#SBATCH --exclusive=user\n"),
            "job.sh line 2: #SBATCH --exclusive=user: sharing nodes only with the same user or MCS label is not "
            "supported; --exclusive alone gives the job its nodes whole");
  EXPECT_EQ(Read("#SBATCH --reservation=hug\n").reservation, "hug");
  EXPECT_EQ(Read("#SBATCH --reservation=hug\n#SBATCH --reservation=\n").reservation, std::nullopt) << "cleared";
  EXPECT_EQ(Error("#MUSTER --gpu 2\n"), "job.sh line 1: #MUSTER --gpu is not a muster submit flag");
  EXPECT_EQ(Error("#MUSTER --gpus\n"), "job.sh line 1: #MUSTER --gpus needs a value");
  EXPECT_EQ(Error("#MUSTER --hold=yes\n"), "job.sh line 1: #MUSTER --hold takes no value");
  EXPECT_EQ(Error("#SBATCH -N 4-1\n"),
            "job.sh line 1: #SBATCH -N (--nodes): expected a node count N or a range MIN-MAX, got \"4-1\"");
  // Read as sbatch reads them: only at the start of a line, a '#' ending
  // the line even inside a word, abbreviations, ambiguity, unknown options,
  // stray words.
  const ScriptSettings indented = Read("#!/bin/bash\n  #SBATCH --job-name=ignored\n#SBATCH --job-name=a#b\n");
  EXPECT_EQ(indented.name, "a");
  ASSERT_EQ(indented.warnings.size(), 1u);
  EXPECT_EQ(indented.warnings[0], "job.sh line 2: an indented #SBATCH is a comment to sbatch, and is ignored here too");
  EXPECT_EQ(Read("#SBATCH --out=o.txt --job=x\n").stdout_path, "o.txt");
  EXPECT_EQ(Error("#SBATCH --nod=2\n"),
            "job.sh line 1: #SBATCH --nod is ambiguous: it could be --nodefile, --nodelist, --nodes");
  EXPECT_EQ(Error("#SBATCH --no-such-option\n"), "job.sh line 1: #SBATCH --no-such-option is not an sbatch option");
  EXPECT_EQ(Error("#SBATCH --nodes=2 plain\n"),
            "job.sh line 1: #SBATCH \"plain\" is not an option (sbatch refuses the script: invalid directive)");
  EXPECT_EQ(Error("#SBATCH --gres=mps:100\n"),
            "job.sh line 1: #SBATCH --gres: only GPUs can be asked for as a generic resource (gpu[:type]:N), got "
            "\"mps:100\"");
  EXPECT_EQ(Error("#SBATCH --gpus=6 -N 4\n"), "job.sh: #SBATCH --gpus=6 cannot be divided evenly among 4 nodes");
  EXPECT_EQ(Error("#SBATCH --gpus=8 --gpus-per-node=4\n"),
            "job.sh: #SBATCH --gpus (the job's total) and a per-node GPU count were both given");
}

// --signal=[{R|B}:]SIG[@TIME], as sbatch reads it: the spec's limitSignal.
TEST(ScriptDirectives, SignalsBeforeTheTimeLimitGoToTheStepsOrTheBatchShell) {
  ScriptSettings s = Read("#SBATCH --signal=USR1@90\n");
  ASSERT_TRUE(s.limit_signal.has_value());
  EXPECT_EQ(s.limit_signal->signal, "SIGUSR1");
  EXPECT_EQ(s.limit_signal->before_seconds, 90);
  EXPECT_EQ(s.limit_signal->to, "steps");
  EXPECT_TRUE(s.warnings.empty());
  s = Read("#SBATCH --signal=B:12\n");
  EXPECT_EQ(s.limit_signal->signal, "SIGUSR2");
  EXPECT_EQ(s.limit_signal->before_seconds, 60) << "Slurm's default";
  EXPECT_EQ(s.limit_signal->to, "batch");
  s = Read("#SBATCH --signal=RB:sigterm@0\n");
  EXPECT_EQ(s.limit_signal->to, "batch");
  EXPECT_EQ(s.limit_signal->before_seconds, 0);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("R: is ignored"), std::string::npos) << s.warnings[0];
  EXPECT_EQ(Error("#SBATCH --signal=USR3\n"),
            "job.sh line 1: #SBATCH --signal=USR3: \"USR3\" is not a signal name or number (1 to 64)");
  EXPECT_EQ(Error("#SBATCH --signal=X:USR1\n"),
            "job.sh line 1: #SBATCH --signal=X:USR1: the flags before ':' may be B (the batch shell) and R only");
  EXPECT_EQ(Error("#SBATCH --signal=USR1@65536\n"),
            "job.sh line 1: #SBATCH --signal=USR1@65536: the time after '@' must be seconds from 0 to 65535");
  EXPECT_EQ(Error("#SBATCH --signal=USR1@\n"),
            "job.sh line 1: #SBATCH --signal=USR1@: the time after '@' must be seconds from 0 to 65535");
}

}  // namespace
}  // namespace muster::cli
