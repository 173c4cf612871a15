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

// The last pass over a block: v = op(acc or the first input, the last input), divided for kAvg,
// stored to `o` and, when kTwo, to `o2` in the same pass. `o` may be an input at the same index
// (read before written), hence ivdep rather than __restrict.
template <bool kTwo, typename T, typename A, typename Load, typename Op>
void FinalPass(Load first, const T* last, T* o, T* o2, std::int64_t n, Op op, int divisor) {
  if (divisor > 1) {
    if constexpr (std::is_floating_point_v<A>) {
      const A d = static_cast<A>(divisor);
#pragma GCC ivdep
      for (std::int64_t i = 0; i < n; ++i) {
        const T v = static_cast<T>(op(first(i), static_cast<A>(last[i])) / d);
        o[i] = v;
        if constexpr (kTwo) o2[i] = v;
      }
    } else {
      for (std::int64_t i = 0; i < n; ++i) {
        const auto sum = static_cast<std::int64_t>(op(first(i), static_cast<A>(last[i])));
        const T v = static_cast<T>(sum / divisor);  // truncating
        o[i] = v;
        if constexpr (kTwo) o2[i] = v;
      }
    }
    return;
  }
#pragma GCC ivdep
  for (std::int64_t i = 0; i < n; ++i) {
    const T v = static_cast<T>(op(first(i), static_cast<A>(last[i])));
    o[i] = v;
    if constexpr (kTwo) o2[i] = v;
  }
}

// One block of at most kBlock elements. Two inputs (the common case: two ranks on a machine) take
// one pass that reads both and writes both outputs; more inputs accumulate the first k - 1 in an
// L1-resident float32 (or T) block, and the last pass adds the last input and writes. The sum is
// always taken in rank order: ((in0 op in1) op in2) ...
template <bool kTwo, typename T, typename Op>
void ReduceBlock(const std::vector<const void*>& inputs, std::int64_t base, T* o, T* o2,
                 std::int64_t n, Op op, int divisor) {
  using A = typename AccumulatorOf<T>::type;
  auto in = [&](std::size_t k) { return static_cast<const T*>(inputs[k]) + base; };
  const std::size_t k_last = inputs.size() - 1;  // at least 1: Reduce's contract
  if (k_last == 1) {
    const T* first = in(0);
    return FinalPass<kTwo, T, A>([first](std::int64_t i) { return static_cast<A>(first[i]); },
                                 in(1), o, o2, n, op, divisor);
  }
  A acc[kBlock];
  const T* a = in(0);
  const T* b = in(1);
  for (std::int64_t i = 0; i < n; ++i) acc[i] = op(static_cast<A>(a[i]), static_cast<A>(b[i]));
  for (std::size_t k = 2; k < k_last; ++k) {
    const T* x = in(k);
    for (std::int64_t i = 0; i < n; ++i) acc[i] = op(acc[i], static_cast<A>(x[i]));
  }
  const A* accp = acc;
  FinalPass<kTwo, T, A>([accp](std::int64_t i) { return accp[i]; }, in(k_last), o, o2, n, op,
                        divisor);
}

template <typename T, typename Op>
void ReduceTyped(const std::vector<const void*>& inputs, T* out, T* out2, std::int64_t count, Op op,
                 int divisor) {
  for (std::int64_t base = 0; base < count; base += kBlock) {
    const std::int64_t n = std::min(kBlock, count - base);
    if (out2 != nullptr) {
      ReduceBlock<true>(inputs, base, out + base, out2 + base, n, op, divisor);
    } else {
      ReduceBlock<false>(inputs, base, out + base, static_cast<T*>(nullptr), n, op, divisor);
    }
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
  if (inputs.size() < 2) throw Error("all-reduce", "(shm)", "a reduction needs two inputs or more");
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
