#include "core/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace qlinear {

Progress::Progress(std::string label, uint64_t total, bool enabled)
    : label_(std::move(label)), total_(total), active_(enabled && isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() { finish(); }

void Progress::advance(uint64_t units) {
  done_ += units;
  if (active_) draw(false);
}

void Progress::finish() {
  if (!active_ || finished_) return;
  done_ = total_;
  draw(true);
  fmt::print(stderr, "\n");
  finished_ = true;
}

void Progress::draw(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  constexpr int kWidth = 30;
  const double fraction =
      total_ == 0 ? 1.0 : static_cast<double>(done_) / static_cast<double>(total_);
  const int filled = static_cast<int>(fraction * kWidth);
  fmt::print(stderr, "\r{} [{:=<{}}{: <{}}] {:5.1f}%", label_, "", filled, "", kWidth - filled,
             100.0 * fraction);
  std::fflush(stderr);
}

}  // namespace qlinear
