// avx512_region.hpp - SINGA_AVX512_BEGIN / SINGA_AVX512_END around code that
// uses AVX-512 intrinsics: the functions between them (lambdas included) are
// compiled for AVX-512 while the rest of the plugin keeps the baseline target,
// so callers must check fast::avx512() first. GCC and clang spell this
// differently (a target pragma, an attribute pushed onto every function).
#ifndef SINGA_PLUGINS_COMMON_AVX512_REGION_HPP
#define SINGA_PLUGINS_COMMON_AVX512_REGION_HPP

#if defined(__x86_64__) && defined(__clang__)
#define SINGA_AVX512_BEGIN _Pragma("clang attribute push(__attribute__((target(\"avx512f\"))), apply_to = function)")
#define SINGA_AVX512_END _Pragma("clang attribute pop")
#elif defined(__x86_64__) && defined(__GNUC__)
#define SINGA_AVX512_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f\")")
#define SINGA_AVX512_END _Pragma("GCC pop_options")
#endif

#endif
