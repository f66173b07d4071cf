#include "server/authorizer.h"

#include <algorithm>

#include "common/message_text.h"

namespace muster::server {
namespace {

bool Has(const std::vector<std::string>& names, std::string_view user) {
  return std::find(names.begin(), names.end(), user) != names.end();
}

}  // namespace

bool Authorizer::IsAdmin(std::string_view user) const { return Has(options_.admins, user); }

bool Authorizer::IsOperator(std::string_view user) const { return IsAdmin(user) || Has(options_.auth.operators, user); }

bool Authorizer::IsQueueAdmin(std::string_view user, const std::string& queue) const {
  auto q = options_.auth.queues.find(queue);
  return q != options_.auth.queues.end() && Has(q->second.admins, user);
}

Status Authorizer::MaySubmit(const Identity& who, const std::string& queue) const {
  const std::string& user = who.effective_user();
  auto q = options_.auth.queues.find(queue);
  if (q == options_.auth.queues.end() || IsOperator(user) || Has(q->second.users, "*") || Has(q->second.users, user) ||
      Has(q->second.admins, user)) {
    return Status::Ok();
  }
  return PermissionDenied(user + " may not submit to queue " + QuoteForMessage(queue) +
                          " (its access list, auth.queues." + queue + ".users, does not name them)");
}

Status Authorizer::MayManageJob(const Identity& who, const std::string& owner, const std::string& queue,
                                const std::string& verb) const {
  const std::string& user = who.effective_user();
  if (user == owner || IsOperator(user) || IsQueueAdmin(user, queue)) return Status::Ok();
  return PermissionDenied(user + " may not " + verb + " a job of " + owner + "; only its owner, queue " + queue +
                          "'s admins, operators and admins may");
}

Status Authorizer::MayJobTokenRead(const Identity& who, const store::JobRow& job, int64_t now_ms) const {
  if (who.job != job.id) {
    return PermissionDenied("a job token of job " + std::to_string(who.job) + " may not see job " +
                            std::to_string(job.id));
  }
  if (job.end_ms && now_ms - *job.end_ms > options_.job_token_after_end.millis()) {
    return PermissionDenied("job " + std::to_string(job.id) + " ended more than " +
                            options_.job_token_after_end.ToString() +
                            " ago; its token reads it no longer (limits.jobTokenAfterEnd)");
  }
  return Status::Ok();
}

Status Authorizer::MayReadLogs(const Identity& who, const std::string& owner, const std::string& queue) const {
  const std::string& user = who.effective_user();
  if (user == owner || IsAdmin(user) || IsQueueAdmin(user, queue)) return Status::Ok();
  return PermissionDenied(user + " may not read the logs of a job of " + owner + "; only its owner, queue " + queue +
                          "'s admins and admins may");
}

Status Authorizer::MayOperateNodes(const Identity& who, const std::string& verb) const {
  if (who.kind == Identity::Kind::kUser && IsOperator(who.effective_user())) return Status::Ok();
  return PermissionDenied("only operators and admins may " + verb + "; " + who.effective_user() +
                          " is neither (server options auth.operators, admins)");
}

Status Authorizer::MustBeAdmin(const Identity& who, const std::string& verb) const {
  if (who.kind == Identity::Kind::kUser && IsAdmin(who.effective_user())) return Status::Ok();
  return PermissionDenied("only an admin may " + verb + "; " + who.effective_user() +
                          " is not one (server option admins)");
}

Status Authorizer::MayRunAsRoot(const std::string& user) const {
  if (user != "root" || Has(options_.auth.root_jobs, user)) return Status::Ok();
  return PermissionDenied(
      "jobs may not run as root unless the server's auth.rootJobs names the user; "
      "submit as an ordinary user");
}

}  // namespace muster::server
