//===- kernels.cpp - Helper templates copied into generated sources -------===//
//
// The few loops that are the same for every model, as templates whose
// sizes and strides are compile-time constants. A generated source gets
// only the ones it uses, in an anonymous namespace, so two compiled models
// link into one program without clashes.
//
//===----------------------------------------------------------------------===//
#include "emit.h"

namespace mlbridge::modelc {

namespace {

const char *const kGemm = R"(// Y[M,N] += Alpha * A[M,K] x B[K,N], with element (m,k) of A at
// A[m*SAM + k*SAK] and (k,n) of B at B[k*SBK + n*SBN].
//
// When B's rows are contiguous (SBN == 1), a block of a row of Y stays in
// registers (acc, one statement per element: the compiler's SLP vectorizer
// packs them into vector registers) while the rows of B stream by: an axpy
// over n that needs no reordering of any sum. The empty asm statement keeps
// GCC's loop vectorizer (-O3) from vectorizing over k instead, which would
// transpose B on the fly and run ten times slower.
template <typename T, std::size_t K, std::size_t SAK, std::size_t SBK,
          std::size_t... J>
inline void mk_gemm_block(const T *a, const T *B, T *y, T Alpha,
                          std::index_sequence<J...>) noexcept {
  T acc[sizeof...(J)] = {y[J]...};
  for (std::size_t k = 0; k < K; ++k) {
    const T av = mk_mul(Alpha, a[k * SAK]);
    const T *b = B + k * SBK;
    ((acc[J] = mk_madd(acc[J], av, b[J])), ...);
#if defined(__GNUC__)
    __asm__("");
#endif
  }
  ((y[J] = acc[J]), ...);
}

// Few outputs per row (N < 8, e.g. a layer ending in one score): the block
// above would leave one or two accumulators, each a chain of K dependent
// additions bound by the adder's latency. Instead every output gets eight
// partial sums over interleaved k, combined at the end: eight independent
// chains, which the compiler also packs into vector registers. This
// reorders the sum (as onnxruntime's own GEMM does), within rounding.
template <typename T, std::size_t K, std::size_t SAK, std::size_t SBK>
inline T mk_dot8(const T *a, const T *b) noexcept {
  constexpr std::size_t Tail = K - K % 8;
  T part[8] = {};
  for (std::size_t k = 0; k < Tail; k += 8)
    for (std::size_t l = 0; l < 8; ++l)
      part[l] = mk_madd(part[l], a[(k + l) * SAK], b[(k + l) * SBK]);
  if constexpr (K % 8 != 0)
    for (std::size_t l = 0; l < K % 8; ++l)
      part[l] = mk_madd(part[l], a[(Tail + l) * SAK], b[(Tail + l) * SBK]);
  return mk_add(mk_add(mk_add(part[0], part[4]), mk_add(part[1], part[5])),
                mk_add(mk_add(part[2], part[6]), mk_add(part[3], part[7])));
}

template <typename T, std::size_t M, std::size_t K, std::size_t N,
          std::size_t SAM, std::size_t SAK, std::size_t SBK, std::size_t SBN>
inline void mk_gemm(const T *A, const T *B, T *Y, T Alpha) noexcept {
  if constexpr (N < 8 && K >= 32) {
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t n = 0; n < N; ++n)
        Y[m * N + n] = mk_madd(
            Y[m * N + n], Alpha,
            mk_dot8<T, K, SAK, SBK>(A + m * SAM, B + n * SBN));
  } else if constexpr (SBN == 1) {
    // 128 bytes of Y per block: 32 floats, 16 doubles.
    constexpr std::size_t NB = N < 128 / sizeof(T) ? N : 128 / sizeof(T);
    for (std::size_t m = 0; m < M; ++m) {
      const T *a = A + m * SAM;
      T *y = Y + m * N;
      std::size_t n0 = 0;
      for (; n0 + NB <= N; n0 += NB)
        mk_gemm_block<T, K, SAK, SBK>(a, B + n0, y + n0, Alpha,
                                      std::make_index_sequence<NB>());
      if constexpr (N % NB != 0)
        mk_gemm_block<T, K, SAK, SBK>(a, B + n0, y + n0, Alpha,
                                      std::make_index_sequence<N % NB>());
    }
  } else {
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t n = 0; n < N; ++n) {
        T acc = T(0);
        for (std::size_t k = 0; k < K; ++k)
          acc = mk_madd(acc, A[m * SAM + k * SAK], B[k * SBK + n * SBN]);
        Y[m * N + n] = mk_madd(Y[m * N + n], Alpha, acc);
      }
  }
}
)";

const char *const kArith = R"(// Arithmetic that wraps for integers (as two's complement hardware does)
// instead of overflowing, so the generated code has no undefined behaviour
// whatever its inputs; plain operators for floating point.
template <typename T>
using mk_uint_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                     std::make_unsigned_t<T>>;
template <typename T> inline T mk_mul(T A, T B) noexcept {
  if constexpr (std::is_floating_point_v<T>)
    return A * B;
  else
    return static_cast<T>(static_cast<mk_uint_t<T>>(A) *
                          static_cast<mk_uint_t<T>>(B));
}
template <typename T> inline T mk_add(T A, T B) noexcept {
  if constexpr (std::is_floating_point_v<T>)
    return A + B;
  else
    return static_cast<T>(static_cast<mk_uint_t<T>>(A) +
                          static_cast<mk_uint_t<T>>(B));
}
template <typename T> inline T mk_madd(T Acc, T A, T B) noexcept {
  if constexpr (std::is_floating_point_v<T>)
    return Acc + A * B;
  else
    return static_cast<T>(static_cast<mk_uint_t<T>>(Acc) +
                          static_cast<mk_uint_t<T>>(A) *
                              static_cast<mk_uint_t<T>>(B));
}
)";

const char *const kIntOps = R"(// Integer Add/Sub/Mul/Div: wrapping, and x / 0 == 0, never a trap.
template <typename T> inline T mk_iadd(T A, T B) noexcept {
  return mk_add(A, B);
}
template <typename T> inline T mk_isub(T A, T B) noexcept {
  return static_cast<T>(static_cast<mk_uint_t<T>>(A) -
                        static_cast<mk_uint_t<T>>(B));
}
template <typename T> inline T mk_imul(T A, T B) noexcept {
  return mk_mul(A, B);
}
template <typename T> inline T mk_idiv(T A, T B) noexcept {
  if (B == T(0))
    return T(0);
  if constexpr (std::is_signed_v<T>) {
    if (B == T(-1))
      return mk_isub(T(0), A);
  }
  return static_cast<T>(A / B);
}
)";

const char *const kSoftmax = R"(// Softmax (or LogSoftmax) over N elements Inner apart, for each of
// Outer x Inner positions; the maximum is subtracted first, as onnxruntime
// does. Y may be X.
template <typename T, std::size_t Outer, std::size_t N, std::size_t Inner,
          bool Log>
inline void mk_softmax(const T *X, T *Y) noexcept {
  for (std::size_t o = 0; o < Outer; ++o)
    for (std::size_t i = 0; i < Inner; ++i) {
      const T *x = X + o * N * Inner + i;
      T *y = Y + o * N * Inner + i;
      T Max = x[0];
      for (std::size_t j = 1; j < N; ++j)
        Max = x[j * Inner] > Max ? x[j * Inner] : Max;
      T Sum = T(0);
      if constexpr (Log) {
        for (std::size_t j = 0; j < N; ++j)
          Sum += std::exp(x[j * Inner] - Max);
        const T L = std::log(Sum);
        for (std::size_t j = 0; j < N; ++j)
          y[j * Inner] = x[j * Inner] - Max - L;
      } else {
        for (std::size_t j = 0; j < N; ++j) {
          const T E = std::exp(x[j * Inner] - Max);
          y[j * Inner] = E;
          Sum += E;
        }
        for (std::size_t j = 0; j < N; ++j)
          y[j * Inner] = y[j * Inner] / Sum;
      }
    }
}
)";

const char *const kArgMax = R"(// Index of the largest of N elements Inner apart (the first one on ties,
// or the last with Last), for each of Outer x Inner positions.
template <typename T, std::size_t Outer, std::size_t N, std::size_t Inner,
          bool Last>
inline void mk_argmax(const T *X, std::int64_t *Y) noexcept {
  for (std::size_t o = 0; o < Outer; ++o)
    for (std::size_t i = 0; i < Inner; ++i) {
      const T *x = X + o * N * Inner + i;
      T Best = x[0];
      std::int64_t At = 0;
      for (std::size_t j = 1; j < N; ++j) {
        const T V = x[j * Inner];
        if (Last ? !(V < Best) : V > Best) {
          Best = V;
          At = static_cast<std::int64_t>(j);
        }
      }
      Y[o * Inner + i] = At;
    }
}
)";

} // namespace

std::string kernelSource(const std::string &Name) {
  if (Name == "arith")
    return kArith;
  if (Name == "gemm")
    return kGemm;
  if (Name == "intops")
    return kIntOps;
  if (Name == "softmax")
    return kSoftmax;
  if (Name == "argmax")
    return kArgMax;
  return "";
}

} // namespace mlbridge::modelc
