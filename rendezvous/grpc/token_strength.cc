#include "rendezvous/grpc/token_strength.h"

#include <cmath>
#include <cstdlib>
#include <set>

namespace accel::rendezvous {
namespace {

constexpr std::size_t kMaxAnalyzed = 256;

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool IsUpperHex(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }

// The size of the smallest alphabet the token's characters fit.
double AlphabetSize(std::string_view token) {
  bool hex = true, upper_hex = true, digit = false, lower = false, upper = false;
  std::set<char> others;  // punctuation and bytes above ASCII: only those seen count
  for (const char c : token) {
    hex = hex && IsHex(c);
    upper_hex = upper_hex && IsUpperHex(c);
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c >= 'a' && c <= 'z') {
      lower = true;
    } else if (c >= 'A' && c <= 'Z') {
      upper = true;
    } else {
      others.insert(c);
    }
  }
  if (digit && !lower && !upper && others.empty()) return 10;
  if (hex || upper_hex) return 16;
  return (digit ? 10 : 0) + (lower ? 26 : 0) + (upper ? 26 : 0) +
         static_cast<double>(others.size());
}

// The length of the longest earlier stretch (it may overlap position i) equal to the text at i.
std::size_t LongestRepeat(std::string_view token, std::size_t i) {
  std::size_t best = 0;
  for (std::size_t j = 0; j < i; ++j) {
    std::size_t n = 0;
    while (i + n < token.size() && token[j + n] == token[i + n]) ++n;
    if (n > best) best = n;
  }
  return best;
}

}  // namespace

double EstimateTokenBits(std::string_view token) {
  // Beyond its first kMaxAnalyzed characters a token adds nothing the verdict needs (256 of the
  // smallest alphabet, hex, are 1,024 bits) and the search for repeats is quadratic per character.
  token = token.substr(0, kMaxAnalyzed);
  if (token.empty()) return 0;
  std::size_t symbols = 0;
  std::size_t i = 0;
  while (i < token.size()) {
    if (const std::size_t repeat = LongestRepeat(token, i); repeat >= kMinRepeat) {
      ++symbols;  // one reference to the earlier stretch
      i += repeat;
      continue;
    }
    if (i >= 2) {
      const int step = token[i] - token[i - 1];
      if (std::abs(step) <= 1 && step == token[i - 1] - token[i - 2]) {
        ++i;  // continues a run of equal small steps
        continue;
      }
    }
    ++symbols;
    ++i;
  }
  return static_cast<double>(symbols) * std::log2(AlphabetSize(token));
}

}  // namespace accel::rendezvous
