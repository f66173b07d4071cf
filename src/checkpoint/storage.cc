#include "checkpoint/storage.h"

#include <filesystem>
#include <system_error>

#include "checkpoint/manifest.h"

namespace muster::checkpoint {

namespace fs = std::filesystem;

Status DirectoryStorage::Verify(const std::string& location, const std::string& manifest_sha256) {
  return checkpoint::Verify(location, manifest_sha256);
}

Status DirectoryStorage::Remove(const std::string& location, const std::string& manifest_sha256) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(location, ec))) return Status::Ok();  // gone already
  if (fs::is_symlink(fs::symlink_status(location, ec))) {
    return FailedPrecondition(location + " is a symbolic link, not a checkpoint directory; not removed");
  }
  auto sha = Sha256OfFile(location + "/" + kManifestName);
  if (!sha.ok() || *sha != manifest_sha256) {
    return FailedPrecondition(location + " does not hold the manifest that was committed there; not removed");
  }
  // The manifest goes first, so a removal cut short leaves no checkpoint
  // that looks whole.
  fs::remove(location + "/" + kManifestName, ec);
  if (ec) return Internal("remove " + location + ": " + ec.message());
  fs::remove_all(location, ec);
  if (ec) return Internal("remove " + location + ": " + ec.message());
  return Status::Ok();
}

StatusOr<std::unique_ptr<CheckpointStorage>> StorageFor(const std::string& location) {
  if (!location.empty() && location.front() == '/') return std::unique_ptr<CheckpointStorage>(new DirectoryStorage());
  const size_t scheme = location.find("://");
  if (scheme != std::string::npos) {
    return FailedPrecondition("checkpoint storage \"" + location.substr(0, scheme) + "://\" is not built in; use a shared directory");
  }
  return InvalidArgument("must be an absolute path, got \"" + location.substr(0, 64) + "\"");
}

bool IsBelow(const std::string& location, const std::string& root) {
  if (location.empty() || root.empty() || location.front() != '/' || root.front() != '/') return false;
  const fs::path loc = fs::path(location).lexically_normal();
  const fs::path base = fs::path(root).lexically_normal();
  const fs::path rel = loc.lexically_relative(base);
  if (rel.empty() || rel == ".") return false;
  const std::string first = rel.begin()->string();
  return first != ".." && first != ".";
}

}  // namespace muster::checkpoint
