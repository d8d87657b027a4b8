// What the three reference kernels share besides the common kernel helpers.
#pragma once

#include <string_view>

#include "core/status.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "qlinear/view.h"

namespace qlinear {

// The reference kernels are host loops: they accept every CPU device, real or simulated, and no
// GPU (their memory would be on the device; `explain --target cuda:sm90` shows no host fallback
// because a real GPU run has none).
inline Verdict require_reference_device(const Device& device) {
  if (device.platform == Platform::kCpu) return Verdict::accept();
  return Verdict::reject(Reason::kWrongPlatform,
                         "reference kernels run on host memory; the device is " +
                             std::string(platform_name(device.platform)));
}

// y[m, n] = value in y's dtype (host view).
inline void store_element(float value, MatrixView y, int64_t m, int64_t n) {
  store_floats(&value, 1, y.dtype(),
               static_cast<std::byte*>(y.row(m)) + n * static_cast<int64_t>(y.element_bytes()));
}

}  // namespace qlinear
