#include "agent/reclaim_state.h"

#include <algorithm>

namespace muster::agent {

bool ReclaimState::NoteCloud(const ReclaimNotice& notice, Time now) {
  MutexLock lock(mu_);
  if (cloud_ && notice.deadline >= cloud_->deadline) return false;
  if (!cloud_) seen_ = now;
  cloud_ = notice;
  return true;
}

std::optional<ReclaimNotice> ReclaimState::cloud() const {
  MutexLock lock(mu_);
  return cloud_;
}

void ReclaimState::NoteServer(std::optional<Time> at) {
  MutexLock lock(mu_);
  server_at_ = at;
}

int64_t ReclaimState::CutGrace(int64_t grace_ms, Time now) const {
  MutexLock lock(mu_);
  std::optional<Time> at = server_at_;
  if (cloud_ && (!at || cloud_->deadline < *at)) at = cloud_->deadline;
  if (!at) return grace_ms;
  return std::clamp<int64_t>((*at - now).millis(), 0, grace_ms);
}

bool ReclaimState::AwaitingServer() const {
  MutexLock lock(mu_);
  return cloud_ && !server_at_ && !stopped_alone_;
}

bool ReclaimState::StopAlone(Time now, ReclaimNotice* notice, Time* seen) {
  MutexLock lock(mu_);
  if (!cloud_ || server_at_ || stopped_alone_) return false;  // none, the server acts on it, or done
  // The sync that carries a notice is answered in milliseconds by a server
  // that can be reached, and its answer acknowledges it.
  const Duration alone = std::min(Duration::Seconds(10), Duration::Millis((cloud_->deadline - seen_).millis() / 4));
  if (now - seen_ < alone) return false;
  stopped_alone_ = true;
  *notice = *cloud_;
  *seen = seen_;
  return true;
}

}  // namespace muster::agent
