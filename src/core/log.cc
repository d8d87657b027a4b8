#include "core/log.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

namespace qlinear {
namespace {

// The installed sink, swapped under a mutex and called through a shared_ptr copy, so a sink
// replaced while another thread logs stays alive until that call returns.
std::mutex g_sink_mutex;
std::shared_ptr<const LogSink> g_sink;

std::shared_ptr<const LogSink> current_sink() {
  const std::lock_guard<std::mutex> lock(g_sink_mutex);
  return g_sink;
}

}  // namespace

bool verbose_enabled(std::string_view topic) {
  const char* env = std::getenv("QLINEAR_VERBOSE");
  if (env == nullptr) return false;
  std::string_view list(env);
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    if (item == topic || item == "all") return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

void set_log_sink(LogSink sink) {
  auto next = sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr;
  const std::lock_guard<std::mutex> lock(g_sink_mutex);
  g_sink = std::move(next);
}

void log_message(LogLevel level, std::string_view topic, std::string_view message) {
  if (const std::shared_ptr<const LogSink> sink = current_sink()) {
    (*sink)(level, topic, message);
    return;
  }
  fmt::print(stderr, "[qlinear {}] {}\n", topic, message);
}

}  // namespace qlinear
