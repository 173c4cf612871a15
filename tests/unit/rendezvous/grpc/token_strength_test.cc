// The token strength estimate (token_strength.h) against a reference: random tokens, whose
// entropy is known (length × log2(alphabet)), over every alphabet and length around the limit;
// and tokens made the way people make them up, which must all be refused.
#include "rendezvous/grpc/token_strength.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "rendezvous/grpc/token.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;

struct Alphabet {
  const char* name;
  std::string chars;
};

std::string Range(char first, char last) {
  std::string out;
  for (char c = first; c <= last; ++c) out += c;
  return out;
}

// The reference: a token of `length` characters drawn uniformly from `alphabet` carries
// length × log2(|alphabet|) bits. Far enough above the limit (a margin of four characters, for
// the rare repeat or run a random draw makes) it must pass; below the limit it must not.
TEST(TokenStrengthTest, RandomTokensAreJudgedByTheirTrueEntropy) {
  const Alphabet alphabets[] = {
      {"digits", Range('0', '9')},
      {"hex", Range('0', '9') + Range('a', 'f')},
      {"HEX", Range('0', '9') + Range('A', 'F')},
      {"lower", Range('a', 'z')},
      {"alnum", Range('0', '9') + Range('a', 'z') + Range('A', 'Z')},
      {"base64url", Range('0', '9') + Range('a', 'z') + Range('A', 'Z') + "-_"},
      {"printable", Range('!', '~')},
  };
  std::mt19937_64 rng(20261204);
  int checked = 0;
  for (const Alphabet& a : alphabets) {
    const double per_char = std::log2(static_cast<double>(a.chars.size()));
    std::uniform_int_distribution<std::size_t> pick(0, a.chars.size() - 1);
    for (std::size_t length = 1; length <= 96; ++length) {
      const double truth = static_cast<double>(length) * per_char;
      const bool clearly_strong = truth >= kMinTokenBits + 4 * per_char;
      const bool weak = truth < kMinTokenBits;
      if (!clearly_strong && !weak) continue;  // within four characters of the limit
      for (int trial = 0; trial < 20; ++trial) {
        std::string token;
        for (std::size_t i = 0; i < length; ++i) token += a.chars[pick(rng)];
        // A draw that happens to use only digits is judged as digits (a smaller alphabet).
        if (token.find_first_not_of(Range('0', '9')) == std::string::npos && a.name[0] != 'd') {
          continue;
        }
        const double bits = EstimateTokenBits(token);
        EXPECT_LE(bits, truth + 1e-9) << a.name << " " << token;
        EXPECT_EQ(CheckTokenStrength(token, "test").ok(), clearly_strong)
            << a.name << " length " << length << " truth " << truth << " estimate " << bits << ": "
            << token;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 5000);
}

// Made-up tokens: repeats, runs and padding, at lengths that would pass a character count.
TEST(TokenStrengthTest, PatternedTokensAreRefused) {
  const std::string made_up[] = {
      "password-password-password-passw",  // the reviewer's example: 32 characters, 11 different
      "0123456789abcdef0123456789abcdef",  // a run, then the same again
      "abcdefghijklmnopqrstuvwxyz0123456789",
      "zyxwvutsrqponmlkjihgfedcba9876543210",
      std::string(64, 'a'),
      "abababababababababababababababababababababababababababababababab",
      "correct-horse-correct-horse-correct-horse-correct-horse-correct-horse",
      "Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3",
      "1111111122222222333333334444444455555555666666667777777788888888",
      "secret",
      "",
  };
  for (const std::string& token : made_up) {
    absl::Status s = CheckTokenStrength(token, "ACCEL_RDZV_TOKEN");
    EXPECT_FALSE(s.ok()) << token << " estimated " << EstimateTokenBits(token) << " bits";
    EXPECT_THAT(s.message(), HasSubstr("too weak"));
    EXPECT_THAT(s.message(), HasSubstr("ACCEL_RDZV_TOKEN"));
    EXPECT_THAT(s.message(), HasSubstr("accel-launch token"));
  }
}

TEST(TokenStrengthTest, GeneratedTokensCarryAbout256Bits) {
  for (int i = 0; i < 200; ++i) {
    absl::StatusOr<std::string> token = GenerateToken();
    ASSERT_TRUE(token.ok());
    EXPECT_GE(EstimateTokenBits(*token), 224) << *token;
    EXPECT_TRUE(CheckTokenStrength(*token, "test").ok());
  }
}

// A token file may hold up to 4 KiB: the estimate stays fast and bounded on the worst input.
TEST(TokenStrengthTest, LongTokensAreCheap) {
  std::string token(4096, 'a');
  for (std::size_t i = 0; i < token.size(); i += 7) token[i] = 'b';
  EXPECT_LT(EstimateTokenBits(token), kMinTokenBits);
}

}  // namespace
}  // namespace accel::rendezvous
