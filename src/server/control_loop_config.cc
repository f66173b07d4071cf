// ControlLoop: a reloaded configuration applied (server/config_reload.h).
#include "server/control_loop.h"

namespace muster::server {

Status ControlLoop::Reconfigure(const ServerOptions& next) {
  {
    std::lock_guard<std::mutex> lock(reconfigure_mu_);
    if (!started_) {
      // A standby: its state is restored later, with these.
      pending_config_ = next;
      return Status::Ok();
    }
  }
  return loop_.Call<Status>([this, &next](Done<Status> done) { done(ApplyConfig(next)); },
                            Unavailable("the server is stopping"));
}

Status ControlLoop::ApplyConfig(const ServerOptions& next) {
  RETURN_IF_ERROR(state_.Reconfigure(next.cluster));
  fairshare_.SetOptions(next.fairshare);
  settings_.Set(next);
  dirty_ = true;  // the next cycle schedules by them
  return Status::Ok();
}

Status ControlLoop::ApplyPendingConfig() {
  std::lock_guard<std::mutex> lock(reconfigure_mu_);
  started_ = true;
  if (!pending_config_) return Status::Ok();
  const ServerOptions next = std::move(*pending_config_);
  pending_config_.reset();
  return ApplyConfig(next);
}

}  // namespace muster::server
