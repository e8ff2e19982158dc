//===- support/utf8.cpp - UTF-8 validation and encoding --------------------===//

#include "support/utf8.h"

#include <cstring>

namespace mlbridge::support {

// Length of the well-formed UTF-8 sequence at P (Unicode table 3-7), or 0.
// P < End and *P >= 0x80.
size_t utf8SequenceLength(const char *P, const char *End) {
  const auto *U = reinterpret_cast<const unsigned char *>(P);
  const size_t Avail = size_t(End - P);
  const unsigned char B0 = U[0];
  auto Cont = [&](size_t I, unsigned char Lo = 0x80, unsigned char Hi = 0xBF) {
    return I < Avail && U[I] >= Lo && U[I] <= Hi;
  };
  if (B0 >= 0xC2 && B0 <= 0xDF)
    return Cont(1) ? 2 : 0;
  if (B0 >= 0xE0 && B0 <= 0xEF) {
    // E0 excludes overlongs, ED excludes UTF-16 surrogates.
    const unsigned char Lo = B0 == 0xE0 ? 0xA0 : 0x80;
    const unsigned char Hi = B0 == 0xED ? 0x9F : 0xBF;
    return Cont(1, Lo, Hi) && Cont(2) ? 3 : 0;
  }
  if (B0 >= 0xF0 && B0 <= 0xF4) {
    // F0 excludes overlongs, F4 caps at U+10FFFF.
    const unsigned char Lo = B0 == 0xF0 ? 0x90 : 0x80;
    const unsigned char Hi = B0 == 0xF4 ? 0x8F : 0xBF;
    return Cont(1, Lo, Hi) && Cont(2) && Cont(3) ? 4 : 0;
  }
  return 0; // 80..C1 (continuation / overlong lead) and F5..FF.
}

void appendUtf8(std::string &Out, uint32_t CP) {
  if (CP < 0x80) {
    Out.push_back(char(CP));
  } else if (CP < 0x800) {
    Out.push_back(char(0xC0 | (CP >> 6)));
    Out.push_back(char(0x80 | (CP & 0x3F)));
  } else if (CP < 0x10000) {
    Out.push_back(char(0xE0 | (CP >> 12)));
    Out.push_back(char(0x80 | ((CP >> 6) & 0x3F)));
    Out.push_back(char(0x80 | (CP & 0x3F)));
  } else {
    Out.push_back(char(0xF0 | (CP >> 18)));
    Out.push_back(char(0x80 | ((CP >> 12) & 0x3F)));
    Out.push_back(char(0x80 | ((CP >> 6) & 0x3F)));
    Out.push_back(char(0x80 | (CP & 0x3F)));
  }
}

bool isValidUtf8(std::string_view S, size_t *ErrorOffset) {
  const char *P = S.data();
  const char *End = P + S.size();
  while (P != End) {
    // ASCII runs are the common case: test eight bytes at a time.
    while (End - P >= 8) {
      uint64_t W;
      std::memcpy(&W, P, 8);
      if (W & 0x8080808080808080ULL)
        break;
      P += 8;
    }
    if (P == End)
      break;
    if (static_cast<unsigned char>(*P) < 0x80) {
      ++P;
      continue;
    }
    const size_t N = utf8SequenceLength(P, End);
    if (N == 0) {
      if (ErrorOffset)
        *ErrorOffset = size_t(P - S.data());
      return false;
    }
    P += N;
  }
  return true;
}

} // namespace mlbridge::support
