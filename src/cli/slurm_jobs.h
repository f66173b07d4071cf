// Muster's jobs as Slurm's commands show them (squeue, sacct, scancel):
// the job API's JSON (GET /v1/jobs, full view) read into Slurm's terms.
//
//  - id: "N", or for an array task "FIRST_INDEX" (Slurm's array job id is
//    the array's first task's id, its task id the Slurm index);
//  - partition: the job's Slurm partition, else its queue; qos: its QOS,
//    else its priority class; account: its account, else its queue;
//  - state: Slurm's name and code (HELD is PENDING; STARTING is
//    CONFIGURING, CF);
//  - reason: Slurm's reason names (Muster's Resources, Priority,
//    Dependency, BeginTime keep theirs; Held is JobHeldUser, ArrayTaskLimit
//    JobArrayTaskLimit, Quota AssocGrpGRES, FairShare Priority,
//    Unschedulable BadConstraints, ReservedFor and Preempting Resources);
//    None when it runs.
// Times are local, as Slurm prints them ("2026-11-29T11:42:34").
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace muster::cli {

class Client;

struct SlurmJob {
  int64_t id = 0;
  int64_t array_job = 0;    // the array's first task's id; 0: not an array task
  int32_t array_task = -1;  // the Slurm index
  int32_t array_limit = 0;  // the array's %K
  std::string name, user, partition, qos, account;
  std::string state;               // Muster's state name
  std::string slurm_state;         // Slurm's: PENDING, RUNNING, ...
  std::string code;                // PD, R, ...
  std::string reason;              // Slurm's reason name ("None" when it runs)
  std::vector<std::string> nodes;  // where it runs or ran, distinct, sorted (numbers by value)
  int64_t node_count = 0;          // allocated, or asked for while pending
  int64_t cpus = 0;
  int64_t gpus_per_node = 0;
  std::optional<Time> submit, start, end;
  // A waiting job's start as the scheduler's last plan has it (squeue
  // --start asks each for it: GET /v1/jobs/{id}'s plannedStart).
  std::optional<Time> planned_start;
  Duration time_limit = Duration::Infinite();
  std::optional<int32_t> exit_code;  // of a finished job's last attempt
  int32_t exit_signal = 0;
  std::string work_dir;
  std::string reservation;  // an admin reservation's name, or ""
  // As the spec has them: [{type, job, delay?}], joined by "?" when
  // dependencies_any; singleton: waits for the earlier jobs of its name.
  nlohmann::json dependencies = nlohmann::json::array();
  bool dependencies_any = false, singleton = false;
  std::string dependency_text;  // SlurmDependencyText's, where a command filled it in

  bool Finished() const;
  // "12" or "3_7".
  std::string IdText() const;
};

SlurmJob SlurmJobFromJson(const nlohmann::json& j);

// Slurm's text for the dependencies of `j` that do not hold yet, each with
// its state, as squeue's %E and scontrol's Dependency= show them:
// "afterok:12_*(unfulfilled),afterany:15(failed)" ("_*": the whole array
// whose id it is); "(null)" when none is left. `job_of` gives a job's JSON
// by id (nullopt: no such job). singleton, which names no job, shows while
// `j` waits with reason Dependency.
std::string SlurmDependencyText(const SlurmJob& j, const std::function<std::optional<nlohmann::json>(int64_t)>& job_of);
// `job_of` for SlurmDependencyText over the API, each job asked for once.
std::function<std::optional<nlohmann::json>(int64_t)> JobsByIdFrom(Client& client);

// The tasks of one array that Slurm shows as one record (its tasks that
// have not started): "[2-5,7%2]", the indices as runs and the array's
// limit; a lone task's index alone ("3").
std::string ArrayTaskRuns(const std::vector<const SlurmJob*>& tasks);

// Slurm's order of job states, as squeue sorts them: pending first, then
// running, then ended ones.
int SlurmStateRank(const std::string& slurm_state);

// Every job the caller may see in `states` (Muster's names; empty: all),
// oldest first, following the API's pages.
StatusOr<std::vector<SlurmJob>> ListSlurmJobs(Client& client, const std::string& states);

// Slurm's durations: "M:SS", "H:MM:SS", "D-HH:MM:SS" (squeue's %M: hours
// and days only as needed), or always "HH:MM:SS" with `full` (sacct).
std::string SlurmDuration(int64_t seconds, bool full);
// A local time as "YYYY-MM-DDTHH:MM:SS"; "Unknown" for none.
std::string SlurmTime(const std::optional<Time>& t);

// A format's fields: "%.18i %.9P %j" as squeue and sinfo read it (`%` then
// an optional `#` (sinfo: sized to the data) or `.` for right-justified and
// a width, then the field letter; other characters are literal). Each
// piece is literal text or a field.
struct FormatPiece {
  std::string literal;
  char field = 0;  // 0: literal
  int width = 0;   // 0: as long as it is
  bool right = false;
  bool fit = false;  // "%#X" (sinfo): as wide as the column's longest value
};
std::vector<FormatPiece> ParsePercentFormat(const std::string& format);
// `value` padded or cut to the piece's width.
std::string FitField(const FormatPiece& piece, const std::string& value);

}  // namespace muster::cli
