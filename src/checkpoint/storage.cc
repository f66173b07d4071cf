#include "checkpoint/storage.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "checkpoint/beneath.h"
#include "checkpoint/manifest.h"
#include "common/message_text.h"

namespace muster::checkpoint {

namespace fs = std::filesystem;

Status DirectoryStorage::Verify(const std::string& location, const std::string& manifest_sha256, int64_t job) {
  return checkpoint::Verify(location, manifest_sha256, job);
}

Status DirectoryStorage::Remove(const std::string& location, const std::string& manifest_sha256, int64_t job) {
  // The directory is resolved once, to a descriptor; the check and the
  // deletion both act on it, so a link swapped into the path between them
  // (the job owns the directory) cannot redirect the deletion.
  fs::path path = fs::path(location).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();  // "/ckpt/step-5/"
  const std::string name = path.filename().string();
  if (name.empty() || name == "." || name == ".." || !path.is_absolute()) {
    return InvalidArgument("a checkpoint location must be an absolute path below the job's checkpoint.dir", "location");
  }
  const ScopedFd parent(::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent.get() < 0) {
    if (errno == ENOENT) return Status::Ok();  // gone already
    return Internal("open " + path.parent_path().string() + ": " + std::strerror(errno));
  }
  const ScopedFd dir(::openat(parent.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.get() < 0) {
    if (errno == ENOENT) return Status::Ok();  // gone already
    return FailedPrecondition(location + " is not a directory (a symbolic link?), not a checkpoint; not removed");
  }
  const std::string manifest_path = location + "/" + kManifestName;
  if (auto m = ReadCommittedManifest(dir.get(), location, manifest_sha256, job); !m.ok()) {
    return FailedPrecondition(m.status().message() + "; not removed");
  }
  // The manifest goes first, so a removal cut short leaves no checkpoint
  // that looks whole.
  if (::unlinkat(dir.get(), kManifestName, 0) != 0)
    return Internal("remove " + manifest_path + ": " + std::strerror(errno));
  RETURN_IF_ERROR(RemoveContentsBeneath(dir.get(), location));
  if (::unlinkat(parent.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return Internal("remove " + location + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<CheckpointStorage>> StorageFor(const std::string& location) {
  if (!location.empty() && location.front() == '/') return std::unique_ptr<CheckpointStorage>(new DirectoryStorage());
  const size_t scheme = location.find("://");
  if (scheme != std::string::npos) {
    return FailedPrecondition("checkpoint storage " + QuoteForMessage(location.substr(0, scheme) + "://") +
                              " is not built in; use a shared directory");
  }
  return InvalidArgument("must be an absolute path, got " + QuoteForMessage(location));
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
