#include "agent/owned_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace muster::agent {

namespace fs = std::filesystem;

namespace {

std::string ModeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Others than the owner may write it, and it is not sticky (where they
// could add names but not replace another's).
bool OthersMayReplace(const struct stat& st) {
  return (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0;
}

// Step 1 for one ancestor.
Status CheckAncestor(const std::string& path, uid_t uid, const std::string& what, const std::string& dir) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return FailedPrecondition(what + " " + dir + ": cannot check " + path + ": " + std::strerror(errno));
  }
  if (st.st_uid != 0 && st.st_uid != uid) {
    return FailedPrecondition(what + " " + dir + " is below " + path + ", owned by uid " + std::to_string(st.st_uid) +
                              ", who could replace it; choose a directory whose every parent is root's");
  }
  if (OthersMayReplace(st)) {
    return FailedPrecondition(what + " " + dir + " is below " + path + " (mode " + ModeText(st.st_mode) +
                              "), which others may write; choose a directory whose every parent only root may write");
  }
  return Status::Ok();
}

}  // namespace

Status MakeOwnedDirectory(const std::string& dir, mode_t mode, uid_t uid, const std::string& what) {
  if (dir.empty()) return FailedPrecondition(what + ": no directory given");
  const fs::path absolute = fs::absolute(dir).lexically_normal();
  // The ancestors that exist, canonical (links resolved: /var/run is /run).
  fs::path existing = absolute.parent_path();
  std::error_code ec;
  while (!existing.empty() && !fs::exists(existing, ec) && existing != existing.root_path()) {
    existing = existing.parent_path();
  }
  const fs::path canonical = fs::canonical(existing, ec);
  if (ec) return FailedPrecondition(what + " " + dir + ": cannot resolve " + existing.string() + ": " + ec.message());
  fs::path walk = canonical.root_path();
  RETURN_IF_ERROR(CheckAncestor(walk.string(), uid, what, dir));
  for (const fs::path& part : canonical.relative_path()) {
    walk /= part;
    RETURN_IF_ERROR(CheckAncestor(walk.string(), uid, what, dir));
  }
  // The parents still missing, then the directory: made here, so ours.
  // One made by someone else between the check and mkdir fails below.
  const fs::path below = absolute.lexically_relative(existing);
  const fs::path final_dir = canonical / below;
  fs::path path = canonical;
  for (const fs::path& part : below) {
    path /= part;
    if (::mkdir(path.c_str(), path == final_dir ? 0700 : 0755) != 0 && errno != EEXIST) {
      return FailedPrecondition("cannot make " + what + " " + path.string() + ": " + std::strerror(errno));
    }
  }
  // Step 2 on each of them, without following a link.
  path = canonical;
  for (const fs::path& part : below) {
    path /= part;
    const bool last = path == final_dir;
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      return FailedPrecondition(what + " " + path.string() + " is not a directory (" + std::strerror(errno) +
                                "); remove it");
    }
    struct stat st {};
    Status status = Status::Ok();
    if (::fstat(fd, &st) != 0 || st.st_uid != uid) {
      status = FailedPrecondition(what + " " + path.string() + " is owned by uid " + std::to_string(st.st_uid) +
                                  ", not by the agent's user (" + std::to_string(uid) +
                                  "): someone else made it, and what it holds is theirs; remove it");
    } else if (last && ::fchmod(fd, mode) != 0) {
      status = FailedPrecondition("cannot set the mode of " + what + " " + path.string() + ": " + std::strerror(errno));
    } else if (!last && OthersMayReplace(st)) {
      status = FailedPrecondition(what + " " + dir + " is below " + path.string() + " (mode " + ModeText(st.st_mode) +
                                  "), which others may write");
    }
    ::close(fd);
    RETURN_IF_ERROR(status);
  }
  return Status::Ok();
}

}  // namespace muster::agent
