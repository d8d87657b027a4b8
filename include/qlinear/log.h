// Where the library's log lines go. By default they are printed to stderr as
// "[qlinear <topic>] <message>"; an application (a server, a GUI) installs its own sink.
// QLINEAR_VERBOSE=dispatch,run,load,all selects which verbose topics are produced at all.
#pragma once

#include <functional>
#include <string_view>

namespace qlinear {

enum class LogLevel { kInfo, kWarning, kVerbose };

using LogSink =
    std::function<void(LogLevel level, std::string_view topic, std::string_view message)>;

// Replaces the sink; an empty function restores stderr. Safe to call from any thread; the sink
// itself may be called from several threads at once and must be thread-safe.
void set_log_sink(LogSink sink);

}  // namespace qlinear
