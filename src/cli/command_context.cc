#include <CLI/CLI.hpp>
#include <exception>
#include <new>

#include "cli/commands.h"

namespace qlinear {

void run_command(CommandContext& ctx, const std::function<Status()>& body) {
  try {
    ctx.status = body();
  } catch (const CLI::Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    ctx.status = make_error(ErrorCode::kInternal, "out of memory");
  } catch (const std::exception& e) {
    ctx.status = make_error(ErrorCode::kInternal, "unexpected exception: {}", e.what());
  }
}

}  // namespace qlinear
