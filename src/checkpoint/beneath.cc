#include "checkpoint/beneath.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace muster::checkpoint {
namespace {

Status Errno(const std::string& what) { return Internal(what + ": " + std::strerror(errno)); }

}  // namespace

StatusOr<int> OpenRegularBeneath(int dirfd, const std::string& rel, const std::string& shown) {
  int at = dirfd, owned = -1;
  size_t start = 0;
  while (true) {
    const size_t slash = rel.find('/', start);
    const bool last = slash == std::string::npos;
    const std::string part = rel.substr(start, last ? std::string::npos : slash - start);
    const int fd = ::openat(at, part.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last ? O_NONBLOCK : O_DIRECTORY));
    const int err = errno;
    struct stat link {};
    // A link as a directory on the path gives ENOTDIR, as the file ELOOP.
    const bool is_link = fd < 0 && (err == ELOOP || err == ENOTDIR) &&
                         ::fstatat(at, part.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode);
    if (owned >= 0) ::close(owned);
    if (fd < 0) {
      if (is_link)
        return DataLoss(shown + " is a symbolic link or lies under one; a checkpoint holds regular files only");
      if (err == ENOENT || err == ENOTDIR) return NotFound(shown + " is missing");
      errno = err;
      return Errno("open " + shown);
    }
    if (last) {
      struct stat st {};
      if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return DataLoss(shown + " is not a regular file");
      }
      return fd;
    }
    at = owned = fd;
    start = slash + 1;
  }
}

Status RemoveContentsBeneath(int dirfd, const std::string& shown) {
  const int listing = ::dup(dirfd);
  if (listing < 0) return Errno("dup " + shown);
  DIR* d = ::fdopendir(listing);  // owns `listing`
  if (d == nullptr) {
    ::close(listing);
    return Errno("list " + shown);
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  }
  ::closedir(d);
  for (const std::string& name : names) {
    const std::string path = shown + "/" + name;
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return Errno("stat " + path);
    }
    if (S_ISDIR(st.st_mode)) {
      // Swapped for a link since the stat: O_NOFOLLOW refuses it.
      const int sub = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) return Errno("open " + path);
      const Status s = RemoveContentsBeneath(sub, path);
      ::close(sub);
      RETURN_IF_ERROR(s);
      if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) return Errno("remove " + path);
    } else if (::unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) {
      return Errno("remove " + path);
    }
  }
  return Status::Ok();
}

}  // namespace muster::checkpoint
