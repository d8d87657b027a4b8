#include <CLI/CLI.hpp>
#include <exception>
#include <new>
#include <stdexcept>

#include "cli/commands.h"
#include "core/log.h"

namespace qlinear {

void run_command(CommandContext& ctx, const std::function<Status()>& body) {
  try {
    ctx.status = body();
  } catch (const CLI::Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    ctx.status = make_error(ErrorCode::kInternal,
                            "out of memory: the request needs more memory than this machine gave");
  } catch (const std::length_error&) {
    ctx.status = make_error(ErrorCode::kInternal,
                            "out of memory: the request needs a buffer larger than can exist");
  } catch (const std::exception& e) {
    // The library returns Status and never throws on input; an exception here is a qlinear bug.
    // Its text (a library's internals) goes to the verbose log, not to the user.
    log_verbose("all", "unexpected exception: {}", e.what());
    ctx.status = make_error(ErrorCode::kInternal,
                            "internal error (an unexpected exception; QLINEAR_VERBOSE=all shows "
                            "it); please report it");
  }
}

}  // namespace qlinear
