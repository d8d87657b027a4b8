// The output policy: new and regular files are replaced atomically; links, devices, FIFOs and
// directories are refused with the reason unless write-through is asked for.
#include "io/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "io/safetensors.h"
#include "io_test_util.h"

namespace qlinear {
namespace {

namespace fs = std::filesystem;
using io_test::read_file;
using io_test::scratch_dir;
using io_test::write_file;

// Entries of `dir` (temporary files would show up here).
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutputFile, WritesNewAndReplacesRegularFiles) {
  const auto dir = scratch_dir();
  ASSERT_TRUE(write_output_file((dir / "a.txt").string(), "one").ok());
  EXPECT_EQ(read_file(dir / "a.txt"), "one");
  ASSERT_TRUE(write_output_file((dir / "a.txt").string(), "two").ok());
  EXPECT_EQ(read_file(dir / "a.txt"), "two");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"a.txt"});  // no temporary file left
}

TEST(OutputFile, UncommittedWriteLeavesTheTargetAlone) {
  const auto dir = scratch_dir();
  write_file(dir / "a.txt", "old");
  {
    auto out = OutputFile::create((dir / "a.txt").string());
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(out->write(std::string_view("new")).ok());
  }  // destroyed without commit(): a failed write
  EXPECT_EQ(read_file(dir / "a.txt"), "old");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"a.txt"});
}

TEST(OutputFile, SymlinkIsRefusedUnlessWriteThrough) {
  const auto dir = scratch_dir();
  write_file(dir / "target.txt", "keep");
  fs::create_symlink("target.txt", dir / "link.txt");
  const Status refused = write_output_file((dir / "link.txt").string(), "x");
  EXPECT_EQ(refused.code(), ErrorCode::kRefusedFile);
  EXPECT_NE(refused.message().find("symbolic link (to target.txt)"), std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("--force-output"), std::string::npos);
  EXPECT_TRUE(fs::is_symlink(dir / "link.txt"));
  EXPECT_EQ(read_file(dir / "target.txt"), "keep");

  ASSERT_TRUE(write_output_file((dir / "link.txt").string(), "through", {true}).ok());
  EXPECT_TRUE(fs::is_symlink(dir / "link.txt"));  // the link stays a link
  EXPECT_EQ(read_file(dir / "target.txt"), "through");
}

TEST(OutputFile, DeviceIsRefusedOrWrittenInPlace) {
  const Status refused = write_output_file("/dev/null", "x");
  EXPECT_EQ(refused.code(), ErrorCode::kRefusedFile);
  EXPECT_NE(refused.message().find("character device"), std::string::npos) << refused.message();
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_TRUE(write_output_file("/dev/null", "x", {true}).ok());
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));  // still the device
}

TEST(OutputFile, FifoAndDirectoryAreRefused) {
  const auto dir = scratch_dir();
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  fs::create_directories(dir / "folder");
  const Status fifo = write_output_file((dir / "pipe").string(), "x");
  EXPECT_EQ(fifo.code(), ErrorCode::kRefusedFile);
  EXPECT_NE(fifo.message().find("FIFO"), std::string::npos) << fifo.message();
  const Status folder = write_output_file((dir / "folder").string(), "x", {true});
  EXPECT_EQ(folder.code(), ErrorCode::kRefusedFile);
  EXPECT_NE(folder.message().find("is a directory"), std::string::npos) << folder.message();
  EXPECT_TRUE(fs::is_directory(dir / "folder"));
  const Status missing = write_output_file((dir / "no" / "x").string(), "x");
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound);
}

TEST(OutputFile, SafetensorsWriterUsesThePolicy) {
  const auto dir = scratch_dir();
  fs::create_symlink("/dev/null", dir / "y.safetensors");
  SafetensorsWriter writer;
  writer.add_values<float>("y", DType::kF32, {1}, {1.0f});
  const Status status = writer.write((dir / "y.safetensors").string());
  EXPECT_EQ(status.code(), ErrorCode::kRefusedFile) << status.to_string();
  EXPECT_TRUE(fs::is_symlink(dir / "y.safetensors"));
}

}  // namespace
}  // namespace qlinear
