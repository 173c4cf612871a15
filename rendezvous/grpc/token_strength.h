// How many bits of entropy a token seems to carry: an estimate from the token alone, for refusing
// tokens a person made up ("password-password-…") before anyone can guess them.
//
// A token is modelled as symbols drawn from the smallest alphabet its characters fit (the digits,
// hex, else the digits and the letters of each case present plus each other character seen),
// each symbol worth log2(alphabet) bits. A symbol is one fresh character, or one repetition of an
// earlier stretch of at least kMinRepeat characters (an LZ77 reference: "abcabcabc" is "abc" and
// one repeat), or nothing when it continues a run of equal steps of at most one ("aaaa", "abcd",
// "9876": the first two characters count). Random tokens estimate close to their true entropy
// (length × log2(alphabet)); patterned ones far below it. It cannot see a dictionary word or a
// date: it is a floor against patterns, not a proof of randomness. GenerateToken's 64 hex
// characters estimate about 256 bits.
#ifndef ACCEL_RENDEZVOUS_GRPC_TOKEN_STRENGTH_H_
#define ACCEL_RENDEZVOUS_GRPC_TOKEN_STRENGTH_H_

#include <cstddef>
#include <string_view>

namespace accel::rendezvous {

inline constexpr std::size_t kMinRepeat = 4;

// The estimate above, in bits.
double EstimateTokenBits(std::string_view token);

// The least estimate a token the user supplies must reach (`accel-launch token` writes 256 bits).
inline constexpr double kMinTokenBits = 128;

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_TOKEN_STRENGTH_H_
