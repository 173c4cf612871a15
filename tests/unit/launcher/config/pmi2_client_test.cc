// The PMI-2 command format: encoding with the length field, decoding replies, refusing text that
// Slurm's parser would split.
#include "launcher/config/pmi2_client.h"

#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

TEST(Pmi2ClientTest, EncodesTheLengthFieldAndPairs) {
  auto bytes = Pmi2Client::Encode({"kvs-put", {{"key", "accel-rdzv-token"}, {"value", "ab12"}}});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, "44    cmd=kvs-put;key=accel-rdzv-token;value=ab12;");
  EXPECT_EQ(*Pmi2Client::Encode({"kvs-fence", {}}), "14    cmd=kvs-fence;");
}

TEST(Pmi2ClientTest, RefusesSeparatorsInKeysAndValues) {
  EXPECT_EQ(Pmi2Client::Encode({"kvs-put", {{"key", "a;b"}, {"value", "v"}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Pmi2Client::Encode({"kvs-put", {{"key", "k"}, {"value", "x=y"}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Pmi2Client::Encode({"kvs-put", {{"", "v"}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Pmi2ClientTest, DecodesReplies) {
  auto reply = Pmi2Client::Decode("cmd=kvs-get-response;rc=0;found=TRUE;value=ab;");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->name, "kvs-get-response");
  EXPECT_EQ(reply->Find("rc"), "0");
  EXPECT_EQ(reply->Find("value"), "ab");
  EXPECT_EQ(reply->Find("missing"), std::nullopt);
  // Slurm's fullinit reply carries an empty value for some keys.
  EXPECT_EQ(Pmi2Client::Decode("cmd=x;spawner-jobid=;").value().Find("spawner-jobid"), "");
}

TEST(Pmi2ClientTest, MalformedRepliesAreErrors) {
  EXPECT_FALSE(Pmi2Client::Decode("rc=0;cmd=x;").ok());
  EXPECT_FALSE(Pmi2Client::Decode("cmd=x;novalue;").ok());
  EXPECT_FALSE(Pmi2Client::Decode("").ok());
}

}  // namespace
}  // namespace accel::launcher
