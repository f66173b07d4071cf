#include "scheduler/policy_registry.h"

#include "common/message_text.h"

#include "scheduler/order/attained_service_order.h"
#include "scheduler/order/priority_order.h"
#include "scheduler/order/shortest_first_order.h"
#include "scheduler/order/submit_order.h"

namespace muster::scheduler {
namespace {

struct Entry {
  const char* name;
  BlockingMode blocking;
  std::unique_ptr<QueueOrder> (*make_order)();
  bool by_service = false;  // ranks and preempts by attained service (ServiceBands)
};

template <typename T>
std::unique_ptr<QueueOrder> Make() {
  return std::make_unique<T>();
}

constexpr Entry kPolicies[] = {
    {"muster", BlockingMode::kBackfill, &Make<PriorityOrder>}, {"fifo", BlockingMode::kStrict, &Make<SubmitOrder>},
    {"fifo-skip", BlockingMode::kSkip, &Make<SubmitOrder>},    {"sjf", BlockingMode::kSkip, &Make<ShortestFirstOrder>},
    {"las", BlockingMode::kBackfill, nullptr, true},
};

}  // namespace

StatusOr<Policy> MakePolicy(std::string_view name) {
  for (const Entry& e : kPolicies) {
    if (name == e.name) {
      if (!e.by_service) return Policy{e.name, e.make_order(), e.blocking, std::nullopt};
      // The order and the preemption rule read the same bands.
      const ServiceBands bands;
      return Policy{e.name, std::make_unique<AttainedServiceOrder>(bands), e.blocking, bands};
    }
  }
  std::string known;
  for (const std::string& n : PolicyNames()) known += (known.empty() ? "" : ", ") + n;
  // Quoted with its control characters escaped: the name comes from a
  // configuration file, and the message reaches logs and terminals.
  return InvalidArgument("unknown policy " + QuoteForMessage(name) + " (known: " + known + ")", "policy");
}

std::vector<std::string> PolicyNames() {
  std::vector<std::string> names;
  for (const Entry& e : kPolicies) names.emplace_back(e.name);
  return names;
}

}  // namespace muster::scheduler
