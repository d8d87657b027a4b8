// qlinear's version: the macros this header was written with, and version_string() of the
// library actually linked (a consumer can check the two agree). CMake reads the numbers here.
#pragma once

#define QLINEAR_VERSION_MAJOR 0
#define QLINEAR_VERSION_MINOR 2
#define QLINEAR_VERSION_PATCH 0

namespace qlinear {

struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
};

// The linked library's version, and as "0.2.0".
Version version();
const char* version_string();

}  // namespace qlinear
