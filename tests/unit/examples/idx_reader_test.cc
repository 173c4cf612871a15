// The example trainer's MNIST IDX reader.
#include "examples/idx_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "examples/progress_view.h"
#include "examples/train_flags.h"

namespace accel::examples {
namespace {

void WriteBytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

TEST(IdxReader, ReadsImagesAndLabels) {
  std::string dir = ::testing::TempDir();
  std::string images = dir + "/t10k-images-idx3-ubyte";
  WriteBytes(images, {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 10, 20, 30, 40});
  WriteBytes(LabelsPathFor(images), {0, 0, 8, 1, 0, 0, 0, 2, 7, 3});
  EXPECT_EQ(LabelsPathFor(images), dir + "/t10k-labels-idx1-ubyte");
  std::string error;
  auto read = ReadIdxImages(images, &error);
  ASSERT_TRUE(read) << error;
  EXPECT_EQ(read->count, 2);
  EXPECT_EQ(read->rows, 1);
  EXPECT_EQ(read->cols, 2);
  EXPECT_EQ(read->pixels, (std::vector<std::uint8_t>{10, 20, 30, 40}));
  auto labels = ReadIdxLabels(LabelsPathFor(images), &error);
  ASSERT_TRUE(labels) << error;
  EXPECT_EQ(*labels, (std::vector<std::uint8_t>{7, 3}));
}

TEST(IdxReader, RejectsTruncatedAndMissingFiles) {
  std::string path = ::testing::TempDir() + "/bad-images-idx3-ubyte";
  WriteBytes(path, {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 10});
  std::string error;
  EXPECT_FALSE(ReadIdxImages(path, &error));
  EXPECT_EQ(error, "read IDX " + path + ": header says 4 pixel bytes, file has 1");
  EXPECT_FALSE(ReadIdxImages("/nonexistent/x", &error));
  EXPECT_EQ(error, "read IDX /nonexistent/x: No such file or directory");
}

}  // namespace
}  // namespace accel::examples
