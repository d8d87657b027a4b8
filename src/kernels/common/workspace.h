// Carving a run's buffers out of the caller's workspace. A kernel writes its carve sequence once,
// as a function of M, and calls it twice: on a sizing carver (no memory) for workspace_bytes(m),
// and on the real workspace in do_run(), so the two can never disagree.
#pragma once

#include <cstddef>
#include <cstdint>

#include <string>
#include <string_view>

#include "core/status.h"
#include "qlinear/view.h"

namespace qlinear {

class WorkspaceCarver {
 public:
  static constexpr std::size_t kAlignment = 64;

  // Sizing: take() returns nullptr and only counts.
  WorkspaceCarver() = default;
  // Carving: buffers are consecutive, 64-byte aligned pieces of `workspace` (host memory).
  explicit WorkspaceCarver(const Workspace& workspace)
      : base_(static_cast<std::byte*>(workspace.data)), capacity_(workspace.bytes) {}

  // `count` elements of T, uninitialised; nullptr when sizing or when the workspace is too small
  // (overflowed() then says so).
  template <class T>
  T* take(int64_t count) {
    used_ = (used_ + kAlignment - 1) / kAlignment * kAlignment;
    const std::size_t bytes = static_cast<std::size_t>(count < 0 ? 0 : count) * sizeof(T);
    T* p = nullptr;
    if (base_ != nullptr) {
      if (used_ + bytes > capacity_) {
        overflowed_ = true;
      } else {
        p = reinterpret_cast<T*>(base_ + used_);
      }
    }
    used_ += bytes;
    return p;
  }

  // Bytes taken so far, alignment padding included.
  std::size_t used() const { return used_; }
  bool overflowed() const { return overflowed_; }

 private:
  std::byte* base_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
  bool overflowed_ = false;
};

// What do_run() returns when its carve sequence did not fit (a kernel bug: run() checked the
// workspace against workspace_bytes()).
inline Status workspace_overflow(std::string_view kernel) {
  return Status(ErrorCode::kInternal,
                std::string(kernel) + ": the workspace is smaller than its own workspace_bytes()");
}

}  // namespace qlinear
