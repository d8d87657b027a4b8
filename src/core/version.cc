#include "qlinear/version.h"

#define QLINEAR_STR2(x) #x
#define QLINEAR_STR(x) QLINEAR_STR2(x)

namespace qlinear {

Version version() { return {QLINEAR_VERSION_MAJOR, QLINEAR_VERSION_MINOR, QLINEAR_VERSION_PATCH}; }

const char* version_string() {
  return QLINEAR_STR(QLINEAR_VERSION_MAJOR) "." QLINEAR_STR(QLINEAR_VERSION_MINOR) "." QLINEAR_STR(
      QLINEAR_VERSION_PATCH);
}

}  // namespace qlinear
