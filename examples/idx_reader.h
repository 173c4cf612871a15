// Reads MNIST's IDX format (big-endian header, unsigned bytes): images (magic 0x00000803,
// N×rows×cols) and labels (magic 0x00000801, N). No LibTorch: the trainer wraps the bytes.
#ifndef ACCEL_EXAMPLES_IDX_READER_H_
#define ACCEL_EXAMPLES_IDX_READER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::examples {

struct IdxImages {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count*rows*cols
};

// Each returns nullopt and sets `error` ("read IDX <path>: <cause>") on failure.
std::optional<IdxImages> ReadIdxImages(const std::string& path, std::string* error);
std::optional<std::vector<std::uint8_t>> ReadIdxLabels(const std::string& path, std::string* error);

// The labels file that goes with an images file: "…-images-idx3-ubyte" → "…-labels-idx1-ubyte",
// "…-images.idx3-ubyte" → "…-labels.idx1-ubyte".
std::string LabelsPathFor(const std::string& images_path);

}  // namespace accel::examples

#endif  // ACCEL_EXAMPLES_IDX_READER_H_
