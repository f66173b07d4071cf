// ControlLoop: container images. Registry credentials (server/
// registry_credentials.h) kept as a store meta document, and admins'
// pre-pulls of an image on chosen nodes (server/image_pulls.h), which the
// nodes' agents hear of at their next sync.
#include "common/message_text.h"
#include "server/control_loop.h"

namespace muster::server {

void ControlLoop::PutRegistryCredential(RegistryCredential c, store::AuditRow audit, Done<Status> done) {
  loop_.Async<Status>(
      [this, c = std::move(c), audit = std::move(audit)](std::function<void(Status)> reply) mutable {
        registry_credentials_.Put(std::move(c));
        store::WriteBatch b;
        b.meta.emplace_back(RegistryCredentials::kMetaKey, registry_credentials_.Dump());
        b.audit.push_back(std::move(audit));
        Persist(std::move(b), reply);
      },
      std::move(done), ShuttingDown());
}

void ControlLoop::RemoveRegistryCredential(std::string scope, std::string owner, std::string registry,
                                           store::AuditRow audit, Done<StatusOr<bool>> done) {
  using R = StatusOr<bool>;
  loop_.Async<R>(
      [this, scope, owner, registry, audit = std::move(audit)](std::function<void(R)> reply) mutable {
        if (!registry_credentials_.Remove(scope, owner, registry)) return reply(false);
        store::WriteBatch b;
        b.meta.emplace_back(RegistryCredentials::kMetaKey, registry_credentials_.Dump());
        b.audit.push_back(std::move(audit));
        Persist(std::move(b), [reply](const Status& s) { s.ok() ? reply(true) : reply(s); });
      },
      std::move(done), ShuttingDown());
}

void ControlLoop::PullImage(std::string image, std::vector<std::string> nodes, const Identity& who,
                            store::AuditRow audit, Done<StatusOr<std::vector<std::string>>> done) {
  using R = StatusOr<std::vector<std::string>>;
  loop_.Async<R>(
      [this, image, nodes, user = who.Describe(), audit = std::move(audit)](std::function<void(R)> reply) mutable {
        std::vector<std::string> asked = nodes;
        if (asked.empty()) {
          for (const core::Node& n : state_.nodes()) {
            if (agents_.Serves(n.spec.name)) asked.push_back(n.spec.name);
          }
        }
        std::vector<core::NodeIndex> indexes;
        for (const std::string& node : asked) {
          const std::optional<core::NodeIndex> index = state_.FindNode(node);
          if (!index || !agents_.Serves(node)) {
            return reply(NotFound("no agent serves node " + QuoteForMessage(node)));
          }
          indexes.push_back(*index);
        }
        if (asked.empty()) return reply(FailedPrecondition("no node has an agent yet"));
        const int64_t now = clock_.Now().millis();
        lifecycle::Effects fx;
        for (size_t i = 0; i < asked.size(); ++i) {
          image_pulls_.Ask(asked[i], image, user, now);
          lifecycle_.Touch(indexes[i], fx);  // its agent hears of it now
        }
        store::WriteBatch b;
        ApplyEffects(fx, b);
        b.meta.emplace_back(ImagePulls::kMetaKey, image_pulls_.Dump());
        b.audit.push_back(std::move(audit));
        Persist(std::move(b), [reply, asked](const Status& s) { s.ok() ? reply(asked) : reply(s); });
      },
      std::move(done), ShuttingDown());
}

void ControlLoop::ImagePullList(Done<StatusOr<std::vector<ImagePull>>> done) {
  using R = StatusOr<std::vector<ImagePull>>;
  loop_.Async<R>([this](std::function<void(R)> reply) { reply(image_pulls_.All()); }, std::move(done), ShuttingDown());
}

void ControlLoop::RegistryCredentialList(Done<StatusOr<std::vector<RegistryCredential>>> done) {
  using R = StatusOr<std::vector<RegistryCredential>>;
  loop_.Async<R>([this](std::function<void(R)> reply) { reply(registry_credentials_.All()); }, std::move(done),
                 ShuttingDown());
}

}  // namespace muster::server
