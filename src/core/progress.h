// A progress bar for long work (loading, converting, benchmarking). Draws only when stderr is a
// terminal, so logs and pipes stay clean; --json output is never touched.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace qlinear {

class Progress {
 public:
  // `total` units of work (bytes, layers, ...); `label` is shown before the bar.
  Progress(std::string label, uint64_t total, bool enabled = true);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(uint64_t units);
  void finish();

 private:
  void draw(bool force);
  std::string label_;
  uint64_t total_;
  uint64_t done_ = 0;
  bool active_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace qlinear
