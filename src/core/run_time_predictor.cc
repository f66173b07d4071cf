#include "core/run_time_predictor.h"

#include <algorithm>

namespace muster::core {

int32_t RunTimePredictor::Intern(const std::string& user) {
  if (user.empty()) return -1;
  auto [it, fresh] = ids_.try_emplace(user, static_cast<int32_t>(history_.size()));
  if (fresh) history_.emplace_back();
  return it->second;
}

void RunTimePredictor::Note(int32_t user, Duration ran) {
  if (user < 0 || static_cast<size_t>(user) >= history_.size() || ran.is_infinite()) return;
  History& h = history_[user];
  h.before = h.last;
  h.last = std::max(ran, Duration::Zero());
}

Duration RunTimePredictor::Predict(int32_t user) const {
  if (user < 0 || static_cast<size_t>(user) >= history_.size()) return Duration::Infinite();
  const History& h = history_[user];
  if (h.last.is_infinite()) return Duration::Infinite();
  if (h.before.is_infinite()) return h.last;
  return Duration::Millis((h.last.millis() + h.before.millis()) / 2);
}

}  // namespace muster::core
