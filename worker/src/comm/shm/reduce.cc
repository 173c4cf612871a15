#include "worker/src/comm/shm/reduce.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "accel/error.h"

namespace accel::worker::shm {
namespace {

// Elements reduced per pass over the inputs: a float32 accumulator block that stays in L1.
constexpr std::int64_t kBlock = 2048;

template <typename T>
struct AccumulatorOf {
  using type = T;
};
template <>
struct AccumulatorOf<c10::Half> {
  using type = float;
};
template <>
struct AccumulatorOf<c10::BFloat16> {
  using type = float;
};

struct Sum {
  template <typename A>
  A operator()(A a, A b) const {
    return a + b;
  }
};
struct Max {
  template <typename A>
  A operator()(A a, A b) const {
    if constexpr (std::is_floating_point_v<A>) return (a > b || a != a) ? a : b;  // NaN wins
    return std::max(a, b);
  }
};
struct Min {
  template <typename A>
  A operator()(A a, A b) const {
    if constexpr (std::is_floating_point_v<A>) return (a < b || a != a) ? a : b;
    return std::min(a, b);
  }
};

template <typename T, typename Op>
void ReduceTyped(const std::vector<const void*>& inputs, T* out, T* out2, std::int64_t count, Op op,
                 int divisor) {
  using A = typename AccumulatorOf<T>::type;
  A acc[kBlock];
  for (std::int64_t base = 0; base < count; base += kBlock) {
    const std::int64_t n = std::min(kBlock, count - base);
    const T* first = static_cast<const T*>(inputs[0]) + base;
    for (std::int64_t i = 0; i < n; ++i) acc[i] = static_cast<A>(first[i]);
    for (std::size_t k = 1; k < inputs.size(); ++k) {
      const T* in = static_cast<const T*>(inputs[k]) + base;
      for (std::int64_t i = 0; i < n; ++i) acc[i] = op(acc[i], static_cast<A>(in[i]));
    }
    if (divisor > 1) {
      if constexpr (std::is_floating_point_v<A>) {
        const A d = static_cast<A>(divisor);
        for (std::int64_t i = 0; i < n; ++i) acc[i] = acc[i] / d;
      } else {
        for (std::int64_t i = 0; i < n; ++i) {
          acc[i] = static_cast<A>(static_cast<std::int64_t>(acc[i]) / divisor);  // truncating
        }
      }
    }
    T* o = out + base;
    for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(acc[i]);
    if (out2 != nullptr) std::copy(o, o + n, out2 + base);
  }
}

template <typename T>
void Dispatch(ReduceOp op, const std::vector<const void*>& inputs, void* out, void* out2,
              std::int64_t count, int divisor) {
  T* o = static_cast<T*>(out);
  T* o2 = static_cast<T*>(out2);
  switch (op) {
    case ReduceOp::kSum:
      return ReduceTyped<T>(inputs, o, o2, count, Sum{}, 1);
    case ReduceOp::kAvg:
      return ReduceTyped<T>(inputs, o, o2, count, Sum{}, divisor);
    case ReduceOp::kMax:
      return ReduceTyped<T>(inputs, o, o2, count, Max{}, 1);
    case ReduceOp::kMin:
      return ReduceTyped<T>(inputs, o, o2, count, Min{}, 1);
  }
}

}  // namespace

bool Supported(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat:
    case c10::kDouble:
    case c10::kHalf:
    case c10::kBFloat16:
    case c10::kInt:
    case c10::kLong:
    case c10::kByte:
    case c10::kChar:
      return true;
    default:
      return false;
  }
}

void Reduce(c10::ScalarType dtype, ReduceOp op, const std::vector<const void*>& inputs, void* out,
            void* out2, std::int64_t count, int divisor) {
  switch (dtype) {
    case c10::kFloat:
      return Dispatch<float>(op, inputs, out, out2, count, divisor);
    case c10::kDouble:
      return Dispatch<double>(op, inputs, out, out2, count, divisor);
    case c10::kHalf:
      return Dispatch<c10::Half>(op, inputs, out, out2, count, divisor);
    case c10::kBFloat16:
      return Dispatch<c10::BFloat16>(op, inputs, out, out2, count, divisor);
    case c10::kInt:
      return Dispatch<std::int32_t>(op, inputs, out, out2, count, divisor);
    case c10::kLong:
      return Dispatch<std::int64_t>(op, inputs, out, out2, count, divisor);
    case c10::kByte:
      return Dispatch<std::uint8_t>(op, inputs, out, out2, count, divisor);
    case c10::kChar:
      return Dispatch<std::int8_t>(op, inputs, out, out2, count, divisor);
    default:
      throw Error("all-reduce", "(shm)", std::string("unsupported dtype ") + c10::toString(dtype));
  }
}

}  // namespace accel::worker::shm
