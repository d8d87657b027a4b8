// The file-opening policy: what a model folder may hold under the names qlinear reads, and what
// is refused (by its own name, with what it is instead), without ever blocking.
#include "io/model_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "io_test_util.h"

namespace qlinear {
namespace {

namespace fs = std::filesystem;
using io_test::scratch_dir;
using io_test::write_file;

void expect_error(const Status& status, ErrorCode code,
                  std::initializer_list<std::string> needles) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), code) << status.to_string();
  for (const auto& needle : needles) {
    EXPECT_NE(status.message().find(needle), std::string::npos)
        << "'" << needle << "' not in: " << status.message();
  }
}

ModelDir open_dir(const fs::path& dir) {
  auto model = ModelDir::open(dir.string());
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  return std::move(model).value();
}

TEST(ModelFiles, RegularFileAndLinkInsideTheFolderAreRead) {
  const auto dir = scratch_dir();
  write_file(dir / "config.json", "{}");
  fs::create_directories(dir / "sub");
  write_file(dir / "sub" / "real.json", "[1]");
  fs::create_symlink("sub/real.json", dir / "link.json");
  const ModelDir model = open_dir(dir);
  auto plain = model.open_file("config.json", kMaxJsonFileBytes);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(plain->size(), 2u);
  auto text = read_whole_file(*plain, kMaxJsonFileBytes);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "{}");
  auto linked = model.open_file("link.json", kMaxJsonFileBytes);
  ASSERT_TRUE(linked.ok()) << linked.status().to_string();
  EXPECT_EQ(*read_whole_file(*linked, kMaxJsonFileBytes), "[1]");
  EXPECT_TRUE(model.contains("link.json"));
  EXPECT_FALSE(model.contains("absent.json"));
}

TEST(ModelFiles, FifoIsRefusedWithoutBlocking) {
  const auto dir = scratch_dir();
  ASSERT_EQ(::mkfifo((dir / "config.json").c_str(), 0600), 0);
  const ModelDir model = open_dir(dir);
  EXPECT_TRUE(model.contains("config.json"));
  // Without O_NONBLOCK this open would wait forever for a writer.
  expect_error(model.open_file("config.json", kMaxJsonFileBytes).status(), ErrorCode::kRefusedFile,
               {"config.json", "FIFO"});
}

TEST(ModelFiles, DirectoryIsRefusedByName) {
  const auto dir = scratch_dir();
  fs::create_directories(dir / "model.safetensors");
  expect_error(open_dir(dir).open_file("model.safetensors", kNoSizeLimit).status(),
               ErrorCode::kRefusedFile, {"model.safetensors", "is a directory"});
}

TEST(ModelFiles, LinkOutsideTheFolderIsRefused) {
  const auto dir = scratch_dir();
  fs::create_symlink("/dev/zero", dir / "config.json");
  fs::create_symlink("/etc/passwd", dir / "passwd.json");
  write_file(dir.parent_path() / "outside.json", "{}");
  fs::create_symlink("../outside.json", dir / "up.json");
  const ModelDir model = open_dir(dir);
  expect_error(model.open_file("config.json", kMaxJsonFileBytes).status(), ErrorCode::kRefusedFile,
               {"config.json", "/dev/zero", "outside the model folder"});
  expect_error(model.open_file("passwd.json", kMaxJsonFileBytes).status(), ErrorCode::kRefusedFile,
               {"passwd.json", "/etc/passwd"});
  expect_error(model.open_file("up.json", kMaxJsonFileBytes).status(), ErrorCode::kRefusedFile,
               {"up.json", "outside"});
}

TEST(ModelFiles, DanglingLinkAndLoopAreNamed) {
  const auto dir = scratch_dir();
  fs::create_symlink("nowhere.json", dir / "config.json");
  fs::create_symlink("b.json", dir / "a.json");
  fs::create_symlink("a.json", dir / "b.json");
  const ModelDir model = open_dir(dir);
  EXPECT_TRUE(model.contains("config.json"));  // present, so reported rather than skipped
  expect_error(model.open_file("config.json", kMaxJsonFileBytes).status(), ErrorCode::kNotFound,
               {"config.json", "dangling", "nowhere.json"});
  expect_error(model.open_file("a.json", kMaxJsonFileBytes).status(), ErrorCode::kRefusedFile,
               {"a.json", "loop"});
}

TEST(ModelFiles, SizeLimitIsCheckedBeforeReading) {
  const auto dir = scratch_dir();
  write_file(dir / "big.json", std::string(100, ' '));
  expect_error(open_dir(dir).open_file("big.json", 64, "JSON file").status(),
               ErrorCode::kRefusedFile, {"big.json", "100 bytes", "64 bytes", "JSON file"});
  EXPECT_EQ(kMaxJsonFileBytes, uint64_t{64} << 20);
}

TEST(ModelFiles, NamesMustStayInsideTheFolder) {
  const auto dir = scratch_dir();
  const ModelDir model = open_dir(dir);
  expect_error(model.open_file("/etc/passwd", kNoSizeLimit).status(), ErrorCode::kRefusedFile,
               {"/etc/passwd", "absolute"});
  expect_error(model.open_file("../x.safetensors", kNoSizeLimit).status(), ErrorCode::kRefusedFile,
               {"../x.safetensors", ".."});
  expect_error(model.open_file("a/../../x", kNoSizeLimit).status(), ErrorCode::kRefusedFile,
               {".."});
  expect_error(check_relative_name(std::string("a\0b", 3), "index"), ErrorCode::kCorrupt,
               {"a\\x00b", "control"});
  expect_error(check_relative_name("\x1b[2Jx", "index"), ErrorCode::kCorrupt, {"\\x1b[2Jx"});
  EXPECT_TRUE(check_relative_name("sub/model.safetensors", "index").ok());
}

TEST(ModelFiles, HubCacheSnapshotsMayLinkIntoBlobs) {
  const auto repo = scratch_dir() / "models--org--name";
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "snapshots" / "abc123");
  write_file(repo / "blobs" / "0123", "{}");
  fs::create_symlink("../../blobs/0123", repo / "snapshots" / "abc123" / "config.json");
  auto file = open_dir(repo / "snapshots" / "abc123").open_file("config.json", kMaxJsonFileBytes);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  // The same link from a folder that is not a snapshot leaves it.
  fs::create_directories(repo / "other");
  fs::create_symlink("../blobs/0123", repo / "other" / "config.json");
  EXPECT_EQ(open_dir(repo / "other").open_file("config.json", kMaxJsonFileBytes).status().code(),
            ErrorCode::kRefusedFile);
}

TEST(ModelFiles, ListReportsEntriesOfEveryType) {
  const auto dir = scratch_dir();
  write_file(dir / "b.safetensors", "x");
  fs::create_directories(dir / "a.safetensors");
  fs::create_symlink("gone", dir / "c.safetensors");
  write_file(dir / "notes.txt", "x");
  auto names = open_dir(dir).list(".safetensors");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a.safetensors", "b.safetensors", "c.safetensors"}));
}

TEST(ModelFiles, UserFileMustBeRegular) {
  const auto dir = scratch_dir();
  write_file(dir / "x.bin", "abc");
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  EXPECT_TRUE(open_user_file((dir / "x.bin").string(), kNoSizeLimit, "--input").ok());
  expect_error(open_user_file((dir / "pipe").string(), kNoSizeLimit, "--input").status(),
               ErrorCode::kRefusedFile, {"--input", "pipe", "FIFO"});
  expect_error(open_user_file("/dev/null", kNoSizeLimit, "--input").status(),
               ErrorCode::kRefusedFile, {"/dev/null", "character device"});
  expect_error(open_user_file(dir.string(), kNoSizeLimit, "--input").status(),
               ErrorCode::kRefusedFile, {"directory"});
  expect_error(open_user_file((dir / "none").string(), kNoSizeLimit, "--input").status(),
               ErrorCode::kNotFound, {"none"});
}

TEST(ModelFiles, ModelDirMustBeADirectory) {
  const auto dir = scratch_dir();
  write_file(dir / "file", "x");
  expect_error(ModelDir::open((dir / "file").string()).status(), ErrorCode::kInvalidArgument,
               {"not a directory"});
  expect_error(ModelDir::open((dir / "none").string()).status(), ErrorCode::kNotFound,
               {"does not exist"});
}

}  // namespace
}  // namespace qlinear
