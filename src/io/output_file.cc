#include "io/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "io/model_files.h"

namespace qlinear {
namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Status refuse(const std::string& path, std::string_view what, bool flag_helps) {
  return make_error(ErrorCode::kRefusedFile, "{}: {}; refusing to replace it with a regular file{}",
                    path, what,
                    flag_helps ? " (pass --force-output to write through it instead)" : "");
}

// Opens a temporary file beside `target` (same folder, so rename is atomic).
Result<std::string> make_temp(const std::string& path, const std::string& target, int* fd) {
  std::string pattern = dir_of(target) + "/." + base_of(target) + ".qlinear-tmp-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  *fd = ::mkostemp(buffer.data(), O_CLOEXEC);
  if (*fd < 0) {
    return make_error(ErrorCode::kIo, "{}: cannot create a temporary file in {}: {}", path,
                      dir_of(target), std::strerror(errno));
  }
  // mkstemp creates 0600; an output file gets the usual 0666 & ~umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  (void)::fchmod(*fd, 0666 & ~mask);
  return std::string(buffer.data());
}

}  // namespace

Result<OutputFile> OutputFile::create(const std::string& path, const OutputOptions& options) {
  if (path.empty()) return make_error(ErrorCode::kInvalidArgument, "output path is empty");
  OutputFile out;
  out.path_ = path;
  out.target_ = path;
  struct stat st {};
  bool in_place = false;
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
      const std::string text = n < 0 ? std::string("?") : std::string(target, std::size_t(n));
      if (!options.write_through) {
        return refuse(path, fmt::format("is a symbolic link (to {})", text), true);
      }
      char resolved[PATH_MAX];
      if (::realpath(path.c_str(), resolved) == nullptr) {
        return make_error(ErrorCode::kRefusedFile,
                          "{}: the symbolic link (to {}) leads nowhere: {}", path, text,
                          std::strerror(errno));
      }
      out.target_ = resolved;
      if (::stat(resolved, &st) != 0) {
        return make_error(ErrorCode::kIo, "{}: cannot stat {}: {}", path, resolved,
                          std::strerror(errno));
      }
    }
    if (S_ISDIR(st.st_mode)) return refuse(path, "is a directory", false);
    if (S_ISSOCK(st.st_mode)) return refuse(path, "is a socket", false);
    if (!S_ISREG(st.st_mode)) {
      if (!options.write_through) return refuse(path, file_type_problem(st.st_mode), true);
      in_place = true;  // a device or FIFO cannot be renamed over: write into it
    }
  } else if (errno != ENOENT) {
    return make_error(ErrorCode::kIo, "{}: cannot stat: {}", path, std::strerror(errno));
  } else {
    struct stat dst {};
    const std::string dir = dir_of(path);
    if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
      return make_error(ErrorCode::kNotFound, "{}: the folder {} does not exist", path, dir);
    }
  }
  if (in_place) {
    out.fd_ = ::open(out.target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (out.fd_ < 0) {
      return make_error(ErrorCode::kIo, "{}: cannot open for writing: {}", path,
                        std::strerror(errno));
    }
    return out;
  }
  QL_ASSIGN_OR_RETURN(out.temp_, make_temp(path, out.target_, &out.fd_));
  return out;
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      target_(std::move(other.target_)),
      temp_(std::exchange(other.temp_, std::string())),
      fd_(std::exchange(other.fd_, -1)) {}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

Status OutputFile::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) return make_error(ErrorCode::kInternal, "{}: write after commit", path_);
  const auto* p = reinterpret_cast<const char*>(bytes.data());
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::kIo, "{}: write failed: {}", path_, std::strerror(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return Status::ok_status();
}

Status OutputFile::write(std::string_view text) { return write(std::as_bytes(std::span(text))); }

Status OutputFile::commit() {
  if (fd_ < 0) return make_error(ErrorCode::kInternal, "{}: committed twice", path_);
  if (temp_.empty()) {  // a device or FIFO written in place
    const int result = ::close(std::exchange(fd_, -1));
    if (result != 0) {
      return make_error(ErrorCode::kIo, "{}: close failed: {}", path_, std::strerror(errno));
    }
    return Status::ok_status();
  }
  if (::fsync(fd_) != 0) {
    return make_error(ErrorCode::kIo, "{}: fsync failed: {}", path_, std::strerror(errno));
  }
  if (::close(std::exchange(fd_, -1)) != 0) {
    return make_error(ErrorCode::kIo, "{}: close failed: {}", path_, std::strerror(errno));
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    return make_error(ErrorCode::kIo, "{}: cannot rename {} into place: {}", path_, temp_,
                      std::strerror(errno));
  }
  temp_.clear();
  // The rename is durable once the folder is synced; failing that is not worth an error.
  const int dir_fd = ::open(dir_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
  return Status::ok_status();
}

Status write_output_file(const std::string& path, std::string_view text,
                         const OutputOptions& options) {
  QL_ASSIGN_OR_RETURN(OutputFile file, OutputFile::create(path, options));
  QL_RETURN_IF_ERROR(file.write(text));
  return file.commit();
}

}  // namespace qlinear
