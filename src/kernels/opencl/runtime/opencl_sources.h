// The `.cl` files of src/kernels/opencl/, embedded as text at build time
// (cmake/embed_opencl.cmake writes opencl_sources.cc from them).
#pragma once

#include <string_view>
#include <vector>

namespace qlinear::opencl {

// The text of embedded file `name` ("common.cl", "int_gemm_portable.cl"); "" when there is none.
std::string_view embedded_source(std::string_view name);
// Every embedded file's name.
std::vector<std::string_view> embedded_source_names();

}  // namespace qlinear::opencl
