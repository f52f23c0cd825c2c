// saturate_cast.hpp - a floating-point value stored into an integer type:
// NaN gives 0 and values past the type's range give its ends. A plain cast
// is undefined behaviour there (a fuzzer found Shrink on int8 with a bias of
// 4.9e33, and ReduceLogSum's log(0) = -inf into int64), so every kernel that
// computes in floating point for an integer output converts through this.
#ifndef SINGA_PLUGINS_COMMON_SATURATE_CAST_HPP
#define SINGA_PLUGINS_COMMON_SATURATE_CAST_HPP

#include <limits>
#include <type_traits>

namespace singa {
namespace ops {

template <class T, class A>
inline T saturate_cast(A v) {
  static_assert(std::is_integral<T>::value && std::is_floating_point<A>::value, "floating to integer only");
  if (!(v == v)) return T(0);
  // Compared as long double: the range's ends are exact there for 64-bit types.
  if ((long double)v <= (long double)std::numeric_limits<T>::min()) return std::numeric_limits<T>::min();
  if ((long double)v >= (long double)std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

}  // namespace ops
}  // namespace singa
#endif
