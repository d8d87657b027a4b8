// exp on 16 or 8 floats for the CPU decoder's softmax and SiLU (cpu_attention.cc, cpu_ops.cc),
// from SLEEF (Debian's libsleef-dev): std::exp one element at a time was most of a decode step's
// attention time. Sleef_expf16_u10avx512f and Sleef_expf8_u10avx2 are accurate to 1.0 ulp
// (SLEEF's u10 contract) and handle NaN, +-inf, overflow and subnormal results as exp does.
//
// sleef.h declares its __m512 / __m256 functions only when the translation unit is compiled with
// -mavx512f / -mavx2; the library is built for baseline x86-64 and calls them from functions with
// a target("avx512f") / target("avx2,fma") attribute only (on CPUs that have it), so the two
// functions used are declared here instead, with that attribute (clang checks the vector ABI of
// every call against it).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

extern "C" __attribute__((target("avx512f"))) __m512 Sleef_expf16_u10avx512f(__m512 x);
extern "C" __attribute__((target("avx2,fma"))) __m256 Sleef_expf8_u10avx2(__m256 x);
#endif
