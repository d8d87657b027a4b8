// Force-included into every test binary (see qlinear_test in CMakeLists.txt). ctest runs each
// test case as its own process, in parallel, and many cases write folders of the same name: a
// scratch directory per process keeps them apart. It is removed when the process exits.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace qlinear_test_support {

class ScratchDir {
 public:
  ScratchDir() : path_(std::string(QLINEAR_TEST_TMPDIR_BASE) + "/" + std::to_string(::getpid())) {}
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline const char* scratch_dir() {
  static const ScratchDir dir;
  return dir.path().c_str();
}

}  // namespace qlinear_test_support

#define QLINEAR_TEST_TMPDIR (::qlinear_test_support::scratch_dir())
