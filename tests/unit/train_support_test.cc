// The example trainer's flag parsing, progress line and IDX reader.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "examples/idx_reader.h"
#include "examples/progress_view.h"
#include "examples/train_flags.h"

namespace accel::examples {
namespace {

TEST(TrainFlags, ParsesEveryFormAndDefaults) {
  std::string error;
  auto flags =
      ParseTrainFlags({"--layers", "4", "--hidden=128", "--batch_size", "16", "--optimizer", "sgd",
                       "--grad-accum", "2", "--resume", "--checkpoint-dir", "/tmp/x"},
                      &error);
  ASSERT_TRUE(flags) << error;
  EXPECT_EQ(flags->layers, 4);
  EXPECT_EQ(flags->hidden, 128);
  EXPECT_EQ(flags->batch_size, 16);
  EXPECT_EQ(flags->optimizer, "sgd");
  EXPECT_EQ(flags->grad_accum, 2);
  EXPECT_TRUE(flags->resume);
  EXPECT_EQ(flags->input_dim, 784);
  EXPECT_EQ(flags->model, "mlp");
}

TEST(TrainFlags, ReportsAllProblemsAtOnce) {
  std::string error;
  auto flags =
      ParseTrainFlags({"--bogus", "1", "--batch-size", "x", "--lr", "-1", "--model"}, &error);
  EXPECT_FALSE(flags);
  EXPECT_EQ(error,
            "train.bin: unknown flag --bogus (see --help)\n"
            "train.bin: unexpected argument '1' (see --help)\n"
            "train.bin: bad value 'x' for --batch-size\n"
            "train.bin: --model needs a value\n"
            "train.bin: --lr must be positive\n");
}

TEST(TrainFlags, WarmupMustLeaveTimedSteps) {
  std::string error;
  EXPECT_FALSE(ParseTrainFlags({"--steps", "20", "--warmup", "20"}, &error));
  EXPECT_EQ(error, "train.bin: --warmup must be in [0, --steps), got 20\n");
  EXPECT_TRUE(ParseTrainFlags({"--steps", "21", "--warmup", "20"}, &error)) << error;
}

TEST(TrainFlags, ResumeNeedsACheckpointDir) {
  std::string error;
  EXPECT_FALSE(ParseTrainFlags({"--resume"}, &error));
  EXPECT_EQ(error, "train.bin: --resume needs --checkpoint-dir\n");
}

TEST(ProgressView, FormatsBarStepsLossRateEtaAndScale) {
  ProgressSample sample{50, 200, 0.51234, 1234.4, 65536};
  EXPECT_EQ(ProgressView::Format(sample, 75, 10),
            "[###.......] step 50/200  loss 0.5123  1234 samples/s  ETA 01:15  scale 65536");
  sample.loss_scale = 0;
  EXPECT_EQ(ProgressView::Format(sample, -1, 0),
            "step 50/200  loss 0.5123  1234 samples/s  ETA --:--");
}

TEST(ProgressView, PlainModePrintsWholeLines) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ProgressView view(out, /*is_terminal=*/false, /*plain_every_s=*/3600);
  view.Update({1, 4, 2.0, 10, 0});
  view.Update({2, 4, 1.5, 10, 0});  // rate-limited away
  view.Finish({4, 4, 1.0, 10, 0});
  std::rewind(out);
  char buffer[512] = {};
  size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, out);
  std::fclose(out);
  std::string text(buffer, n);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_NE(text.find("step 1/4"), std::string::npos);
  EXPECT_EQ(text.find("step 2/4"), std::string::npos);
  EXPECT_NE(text.find("step 4/4  loss 1.0000"), std::string::npos);
}

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
