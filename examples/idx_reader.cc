#include "examples/idx_reader.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace accel::examples {
namespace {

std::optional<std::vector<std::uint8_t>> ReadAll(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "read IDX " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::uint32_t BigEndian32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

}  // namespace

std::optional<IdxImages> ReadIdxImages(const std::string& path, std::string* error) {
  auto bytes = ReadAll(path, error);
  if (!bytes) return std::nullopt;
  if (bytes->size() < 16 || BigEndian32(bytes->data()) != 0x803) {
    *error = "read IDX " + path + ": not an IDX images file (expected magic 0x00000803)";
    return std::nullopt;
  }
  IdxImages images;
  images.count = BigEndian32(bytes->data() + 4);
  images.rows = BigEndian32(bytes->data() + 8);
  images.cols = BigEndian32(bytes->data() + 12);
  auto expected = static_cast<std::size_t>(images.count * images.rows * images.cols);
  if (bytes->size() - 16 != expected) {
    *error = "read IDX " + path + ": header says " + std::to_string(expected) +
             " pixel bytes, file has " + std::to_string(bytes->size() - 16);
    return std::nullopt;
  }
  images.pixels.assign(bytes->begin() + 16, bytes->end());
  return images;
}

std::optional<std::vector<std::uint8_t>> ReadIdxLabels(const std::string& path,
                                                       std::string* error) {
  auto bytes = ReadAll(path, error);
  if (!bytes) return std::nullopt;
  if (bytes->size() < 8 || BigEndian32(bytes->data()) != 0x801) {
    *error = "read IDX " + path + ": not an IDX labels file (expected magic 0x00000801)";
    return std::nullopt;
  }
  std::size_t count = BigEndian32(bytes->data() + 4);
  if (bytes->size() - 8 != count) {
    *error = "read IDX " + path + ": header says " + std::to_string(count) + " labels, file has " +
             std::to_string(bytes->size() - 8);
    return std::nullopt;
  }
  return std::vector<std::uint8_t>(bytes->begin() + 8, bytes->end());
}

std::string LabelsPathFor(const std::string& images_path) {
  std::string path = images_path;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"images-idx3", "labels-idx1"},
                                 {"images.idx3", "labels.idx1"}}) {
    if (auto pos = path.rfind(from); pos != std::string::npos) {
      return path.replace(pos, from.size(), to);
    }
  }
  return path + ".labels";
}

}  // namespace accel::examples
