// Opening policy: lstat for what the name is, realpath for where it leads, then
// open(O_NOFOLLOW | O_NONBLOCK) of the resolved path and fstat of the descriptor, so the checks
// apply to the file actually read (a FIFO never blocks the open; O_NOFOLLOW refuses a final
// component swapped for a link after the check).
#include "io/model_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/escape.h"

namespace qlinear {
namespace {

// The readlink text of `path`, for messages ("?" when it cannot be read).
std::string link_target(const std::string& path) {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof(buffer) - 1);
  if (n < 0) return "?";
  return escape_for_terminal(std::string_view(buffer, static_cast<std::size_t>(n)));
}

// realpath(3); on failure the errno.
Result<std::string> resolve(const std::string& path, int* err) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) {
    *err = errno;
    return Status(ErrorCode::kIo, std::strerror(*err));
  }
  return std::string(buffer);
}

std::string human_limit(uint64_t bytes) {
  if (bytes % (uint64_t{1} << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

// Opens a path and applies the type and size rules. `shown` names it in messages, `via` is a
// " (a link to ...)" note or "".
Result<ReadFile> open_checked(const std::string& path, int extra_flags, const std::string& shown,
                              const std::string& via, uint64_t max_bytes, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | extra_flags);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) {
      return make_error(ErrorCode::kRefusedFile, "{}{}: is a symbolic link loop", shown, via);
    }
    return make_error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                      "{}{}: cannot open: {}", shown, via, std::strerror(err));
  }
  ReadFile file(fd, 0, shown);  // closes fd on every error below
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return make_error(ErrorCode::kIo, "{}{}: fstat failed: {}", shown, via, std::strerror(errno));
  }
  const std::string_view problem = file_type_problem(st.st_mode);
  if (!problem.empty()) {
    return make_error(ErrorCode::kRefusedFile, "{}{}: {}, not a regular file", shown, via, problem);
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    return make_error(ErrorCode::kRefusedFile, "{}{}: {} bytes is over the {} limit for a {}",
                      shown, via, size, human_limit(max_bytes), what);
  }
  // Regular files ignore O_NONBLOCK, but later readers should not inherit it.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return ReadFile(std::move(file), size);
}

bool is_inside(const std::string& resolved, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const std::string& root) { return resolved.starts_with(root); });
}

std::string parent_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? std::string("/") : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

ReadFile::ReadFile(ReadFile&& other, uint64_t size)
    : fd_(std::exchange(other.fd_, -1)), size_(size), path_(std::move(other.path_)) {}

ReadFile::ReadFile(ReadFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), path_(std::move(other.path_)) {}

ReadFile& ReadFile::operator=(ReadFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    path_ = std::move(other.path_);
  }
  return *this;
}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string_view file_type_problem(unsigned mode) {
  if (S_ISREG(mode)) return {};
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  if (S_ISSOCK(mode)) return "is a socket";
  if (S_ISLNK(mode)) return "is a symbolic link";
  return "is not a regular file";
}

Result<ReadFile> open_user_file(const std::string& path, uint64_t max_bytes,
                                std::string_view role) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int err = errno;
    return make_error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                      "{}{}{}: cannot open: {}", role, role.empty() ? "" : " ", path,
                      std::strerror(err));
  }
  const std::string shown = role.empty() ? path : fmt::format("{} {}", role, path);
  std::string via;
  if (S_ISLNK(st.st_mode)) {
    int err = 0;
    if (!resolve(path, &err).ok()) {
      if (err == ENOENT) {
        return make_error(ErrorCode::kNotFound, "{}: is a dangling symbolic link (to {})", shown,
                          link_target(path));
      }
      if (err == ELOOP) {
        return make_error(ErrorCode::kRefusedFile, "{}: is a symbolic link loop", shown);
      }
    }
    via = fmt::format(" (a link to {})", link_target(path));
  }
  return open_checked(path, 0, shown, via, max_bytes, role.empty() ? "file" : role);
}

Result<std::string> read_whole_file(const ReadFile& file, uint64_t max_bytes) {
  std::string text;
  text.resize(static_cast<std::size_t>(std::min(file.size(), max_bytes)) + 1);
  std::size_t used = 0;
  while (true) {
    if (used == text.size()) {
      if (used > max_bytes) break;
      text.resize(std::min<uint64_t>(max_bytes + 1, text.size() * 2));
    }
    const ssize_t n = ::read(file.fd(), text.data() + used, text.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::kIo, "{}: read failed: {}", file.path(), std::strerror(errno));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  if (used > max_bytes) {
    return make_error(ErrorCode::kRefusedFile, "{}: grew past the {} limit while being read",
                      file.path(), human_limit(max_bytes));
  }
  text.resize(used);
  return text;
}

Status check_relative_name(std::string_view name, std::string_view where) {
  if (name.empty()) {
    return make_error(ErrorCode::kCorrupt, "{}: an empty file name", where);
  }
  if (needs_escape(name) || name.find('\0') != std::string_view::npos) {
    return make_error(ErrorCode::kCorrupt,
                      "{}: file name \"{}\" contains control characters or invalid UTF-8", where,
                      escape_for_terminal(name));
  }
  if (name.front() == '/') {
    return make_error(ErrorCode::kRefusedFile,
                      "{}: \"{}\" is an absolute path; a model's files are named relative to its "
                      "folder and must stay inside it",
                      where, name);
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t slash = name.find('/', start);
    if (slash == std::string_view::npos) slash = name.size();
    if (name.substr(start, slash - start) == "..") {
      return make_error(ErrorCode::kRefusedFile,
                        "{}: \"{}\" leaves the model folder (a \"..\" component); a model's files "
                        "must stay inside it",
                        where, name);
    }
    start = slash + 1;
  }
  return Status::ok_status();
}

Result<ModelDir> ModelDir::open(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      return make_error(ErrorCode::kNotFound, "{}: checkpoint directory does not exist", dir);
    }
    return make_error(ErrorCode::kIo, "{}: cannot open the checkpoint directory: {}", dir,
                      std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode)) {
    return make_error(ErrorCode::kInvalidArgument, "{}: not a directory ({})", dir,
                      file_type_problem(st.st_mode).empty() ? std::string_view("a regular file")
                                                            : file_type_problem(st.st_mode));
  }
  int err = 0;
  auto root = resolve(dir, &err);
  if (!root.ok()) {
    return make_error(ErrorCode::kIo, "{}: cannot resolve the checkpoint directory: {}", dir,
                      std::strerror(err));
  }
  ModelDir out;
  out.dir_ = dir;
  out.roots_.push_back(*root == "/" ? *root : *root + "/");
  // Hugging Face hub cache: <repo>/snapshots/<rev>/<file> -> ../../blobs/<sha>.
  const std::string parent = parent_of(*root);
  if (base_of(parent) == "snapshots") {
    auto blobs = resolve(parent_of(parent) + "/blobs", &err);
    struct stat bst {};
    if (blobs.ok() && ::stat(blobs->c_str(), &bst) == 0 && S_ISDIR(bst.st_mode)) {
      out.roots_.push_back(*blobs + "/");
    }
  }
  return out;
}

std::string ModelDir::path_of(std::string_view name) const {
  return dir_ + "/" + std::string(name);
}

bool ModelDir::contains(std::string_view name) const {
  struct stat st {};
  return ::lstat(path_of(name).c_str(), &st) == 0;
}

Result<ReadFile> ModelDir::open_file(std::string_view name, uint64_t max_bytes,
                                     std::string_view what) const {
  QL_RETURN_IF_ERROR(check_relative_name(name, dir_));
  const std::string path = path_of(name);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int err = errno;
    return make_error(err == ENOENT || err == ENOTDIR ? ErrorCode::kNotFound : ErrorCode::kIo,
                      "{}: {}", path, std::strerror(err));
  }
  const bool is_link = S_ISLNK(st.st_mode);
  int err = 0;
  auto resolved = resolve(path, &err);
  if (!resolved.ok()) {
    if (err == ENOENT && is_link) {
      return make_error(ErrorCode::kNotFound, "{}: is a dangling symbolic link (to {})", path,
                        link_target(path));
    }
    if (err == ELOOP) {
      return make_error(ErrorCode::kRefusedFile, "{}: is a symbolic link loop", path);
    }
    return make_error(ErrorCode::kIo, "{}: cannot resolve: {}", path, std::strerror(err));
  }
  if (!is_inside(*resolved, roots_)) {
    return make_error(ErrorCode::kRefusedFile,
                      "{}: resolves to {}, outside the model folder; a model's files (links "
                      "included) must stay inside it",
                      path, escape_for_terminal(*resolved));
  }
  const std::string via = is_link ? fmt::format(" (a link to {})", link_target(path)) : "";
  return open_checked(*resolved, O_NOFOLLOW, path, via, max_bytes, what);
}

Result<std::vector<std::string>> ModelDir::list(std::string_view suffix) const {
  DIR* handle = ::opendir(dir_.c_str());
  if (handle == nullptr) {
    return make_error(ErrorCode::kIo, "{}: cannot list directory: {}", dir_, std::strerror(errno));
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(handle)) {
    const std::string_view name(entry->d_name);
    if (name.size() > suffix.size() && name.ends_with(suffix)) names.emplace_back(name);
  }
  ::closedir(handle);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace qlinear
