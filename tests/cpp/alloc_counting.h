//===- tests/cpp/alloc_counting.h - Count the program's heap allocations --===//
//
// Replaces the global operator new / delete with malloc / free and counts
// every allocation. Include it in exactly one file of a test executable of
// its own (the replacement is program-wide).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TESTS_ALLOC_COUNTING_H
#define MLBRIDGE_TESTS_ALLOC_COUNTING_H

#include <atomic>
#include <cstdlib>
#include <new>

// The replacements below pair malloc with free on purpose.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace alloc_counting {
inline std::atomic<long> Allocations{0};
} // namespace alloc_counting

void *operator new(std::size_t N) {
  ++alloc_counting::Allocations;
  if (void *P = std::malloc(N ? N : 1))
    return P;
  throw std::bad_alloc();
}
void *operator new[](std::size_t N) { return operator new(N); }
void operator delete(void *P) noexcept { std::free(P); }
void operator delete[](void *P) noexcept { std::free(P); }
void operator delete(void *P, std::size_t) noexcept { std::free(P); }
void operator delete[](void *P, std::size_t) noexcept { std::free(P); }

#endif // MLBRIDGE_TESTS_ALLOC_COUNTING_H
