// The log-service backend (backend_logservice.cc) against three real
// logserviced processes (LocalCluster): the same contract the dir:// backend
// meets (backend.h), plus what only a replicated volume has: survival of one
// node loss, fencing by epoch, the refused cut inside the block stream, and
// the rewind when recovery ends inside it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "backend.h"
#include "backend_logservice.h"
#include "local_cluster.h"

namespace strata::redo {
namespace {

using strata::logservice::testing::LocalCluster;

std::vector<unsigned char> blocks(std::uint64_t lsn, std::size_t n, unsigned char fill) {
  std::vector<unsigned char> v(n * kBlockSize, fill);
  for (std::size_t i = 0; i < n; ++i) std::memcpy(&v[i * kBlockSize], &lsn, sizeof lsn), lsn += kBlockSize;
  return v;
}

class LogServiceBackendTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(cluster_.StartAll()); }

  std::unique_ptr<Backend> backend(std::string secret = "", std::uint64_t max_rewind_bytes = 16ull << 20) {
    LogServiceConfig cfg;
    cfg.max_rewind_bytes = max_rewind_bytes;
    for (const auto &a : cluster_.addresses()) cfg.nodes.push_back(a);
    cfg.transport = 1;
    cfg.write_quorum = 2;
    cfg.volume = "innodb";
    cfg.cluster_id = cluster_.cluster_id();
    cfg.secret = secret.empty() ? cluster_.secret() : secret;
    return make_logservice_backend(cfg);
  }

  LocalCluster cluster_{3};
};

TEST_F(LogServiceBackendTest, EmptyVolumeThenCheckpointRoundTrip) {
  auto b = backend();
  ASSERT_TRUE(b->open(true).ok());
  Checkpoint c;
  EXPECT_EQ(b->read_checkpoint(&c).code(), Code::kNotFound);
  WriterInfo w;
  ASSERT_TRUE(b->acquire_writer(&w).ok());
  ASSERT_TRUE(b->write_checkpoint(8204, "meta").ok());
  ASSERT_TRUE(b->read_checkpoint(&c).ok());
  EXPECT_EQ(c.lsn, 8204u);
  EXPECT_EQ(c.metadata, "meta");
}

TEST_F(LogServiceBackendTest, AppendTailDurableReadBackAfterReopen) {
  const std::uint64_t base = 8192;
  {
    auto b = backend();
    WriterInfo w;
    ASSERT_TRUE(b->acquire_writer(&w).ok());
    ASSERT_EQ(w.log_end, 0u);
    // An empty stream takes its first append at any block: InnoDB's starts at 8192.
    const auto full = blocks(base, 3, 0xAB);
    ASSERT_TRUE(b->append(base, full.data(), full.size()).ok()) << "append";
    auto tail = blocks(base + 3 * kBlockSize, 1, 0x01);
    ASSERT_TRUE(b->put_tail(base + 3 * kBlockSize, tail.data(), base + 3 * kBlockSize + 100).ok());
    tail[100] = 0x02;
    ASSERT_TRUE(b->put_tail(base + 3 * kBlockSize, tail.data(), base + 3 * kBlockSize + 200).ok());
    ASSERT_TRUE(b->wait_durable(base + 3 * kBlockSize + 200).ok());
    EXPECT_GE(b->durable_lsn(), base + 3 * kBlockSize + 200);
  }
  auto b = backend();
  WriterInfo w;
  ASSERT_TRUE(b->acquire_writer(&w).ok());
  EXPECT_EQ(w.log_end, base + 3 * kBlockSize + 200);
  std::vector<unsigned char> buf(16 * kBlockSize);
  std::size_t got = 0;
  ASSERT_TRUE(b->read(base, buf.data(), buf.size(), &got).ok());
  ASSERT_EQ(got, 4 * kBlockSize);
  EXPECT_EQ(buf[100], 0xAB);
  EXPECT_EQ(buf[3 * kBlockSize + 100], 0x02);
  // Recovery ended inside the tail block: cutting after it is a no-op.
  EXPECT_TRUE(b->truncate(base + 4 * kBlockSize).ok());
  // Inside the complete-block stream the client cannot cut: refused, loudly.
  const Status s = b->truncate(base + kBlockSize);
  EXPECT_EQ(s.code(), Code::kInvalid);
  EXPECT_NE(s.message().find("cannot cut"), std::string::npos);
}

// A crash left complete blocks holding a torn mtr: recovery ends inside the
// stored stream, and InnoDB's first write is the trimmed block there. The
// backend seals the service at that block and writes it again; the
// checkpoint metadata comes back unchanged; a later writer sees the new end.
TEST_F(LogServiceBackendTest, RecoveryInsideCompleteBlocksRewinds) {
  const std::uint64_t base = 8192;
  {
    auto b = backend();
    WriterInfo w;
    ASSERT_TRUE(b->acquire_writer(&w).ok());
    ASSERT_TRUE(b->write_checkpoint(base + 12, "meta").ok());
    const auto full = blocks(base, 4, 0xAB);
    ASSERT_TRUE(b->append(base, full.data(), full.size()).ok());
    ASSERT_TRUE(b->wait_durable(base + 4 * kBlockSize).ok());
  }
  const std::uint64_t block = base + kBlockSize, recovered = block + 100;
  {
    auto b = backend();
    Checkpoint c;
    ASSERT_TRUE(b->read_checkpoint(&c).ok());
    EXPECT_EQ(c.metadata, "meta");
    WriterInfo w;
    ASSERT_TRUE(b->acquire_writer(&w).ok());
    ASSERT_EQ(w.log_end, base + 4 * kBlockSize);
    const auto trimmed = blocks(block, 1, 0xCD);
    const Status s = b->put_tail(block, trimmed.data(), recovered);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(b->wait_durable(recovered).ok());
    ASSERT_TRUE(b->truncate(block + kBlockSize).ok());
    ASSERT_TRUE(b->read_checkpoint(&c).ok());
    EXPECT_EQ(c.metadata, "meta");
  }
  auto b = backend();
  WriterInfo w;
  ASSERT_TRUE(b->acquire_writer(&w).ok());
  EXPECT_EQ(w.log_end, recovered);
  std::vector<unsigned char> buf(8 * kBlockSize);
  std::size_t got = 0;
  ASSERT_TRUE(b->read(base, buf.data(), buf.size(), &got).ok());
  ASSERT_EQ(got, 2 * kBlockSize);
  EXPECT_EQ(buf[100], 0xAB);
  EXPECT_EQ(buf[kBlockSize + 100], 0xCD);
}

// Recovery as InnoDB does it: the checkpoint through a read-only client
// (sys_init, before the fence), then the writer, then the scan in 64 KiB
// steps (RECV_SCAN_SIZE) from a block-aligned start through the tail, and
// the last block once more (read_block). read() goes through a read-ahead
// (read_ahead.h) made per client: the one over the reader must be dropped
// with it, and the scan must give every block and then the tail.
TEST_F(LogServiceBackendTest, RecoveryScanInInnoDBStepsThroughReaderThenWriter) {
  const std::uint64_t base = 8192, n = 6 * 2048;  // 6 MiB of blocks
  {
    auto b = backend();
    WriterInfo w;
    ASSERT_TRUE(b->acquire_writer(&w).ok());
    ASSERT_TRUE(b->write_checkpoint(base, "meta").ok());
    for (std::uint64_t i = 0; i < n; i += 2048) {
      const auto part = blocks(base + i * kBlockSize, 2048, static_cast<unsigned char>(i / 2048));
      ASSERT_TRUE(b->append(base + i * kBlockSize, part.data(), part.size()).ok());
    }
    const auto tail = blocks(base + n * kBlockSize, 1, 0xEE);
    ASSERT_TRUE(b->put_tail(base + n * kBlockSize, tail.data(), base + n * kBlockSize + 300).ok());
    ASSERT_TRUE(b->wait_durable(base + n * kBlockSize + 300).ok());
  }
  auto b = backend();
  Checkpoint c;
  ASSERT_TRUE(b->read_checkpoint(&c).ok());
  std::vector<unsigned char> buf(64 << 10);
  std::size_t got = 0;
  ASSERT_TRUE(b->read(base, buf.data(), buf.size(), &got).ok());  // through the reader
  ASSERT_EQ(got, buf.size());
  WriterInfo w;
  ASSERT_TRUE(b->acquire_writer(&w).ok());
  ASSERT_EQ(w.log_end, base + n * kBlockSize + 300);
  std::uint64_t at = base + 4 * kBlockSize, blocks_seen = 0;
  for (;;) {
    ASSERT_TRUE(b->read(at, buf.data(), buf.size(), &got).ok()) << at;
    for (std::size_t k = 0; k < got; k += kBlockSize, ++blocks_seen) {
      const std::uint64_t lsn = at + k;
      std::uint64_t stored;
      std::memcpy(&stored, &buf[k], sizeof stored);
      if (lsn < base + n * kBlockSize) {
        ASSERT_EQ(stored, lsn);
        ASSERT_EQ(buf[k + 100], static_cast<unsigned char>((lsn - base) / kBlockSize / 2048)) << lsn;
      } else {
        ASSERT_EQ(buf[k + 100], 0xEE) << "the tail block";
      }
    }
    at += got;
    if (got < buf.size()) break;
  }
  EXPECT_EQ(at, base + (n + 1) * kBlockSize);
  EXPECT_EQ(blocks_seen, n - 4 + 1);
  ASSERT_TRUE(b->read(base + n * kBlockSize, buf.data(), kBlockSize, &got).ok());
  EXPECT_EQ(got, kBlockSize);
  EXPECT_EQ(buf[100], 0xEE);
}

// A recovery that ends further back than one log write can have torn is
// refused with both LSNs, and nothing is cut: the whole stream is still there
// for the next start (before the bound, the rewind cut it on every node).
TEST_F(LogServiceBackendTest, RewindBeyondOneLogWriteIsRefused) {
  const std::uint64_t base = 8192;
  {
    auto b = backend();
    WriterInfo w;
    ASSERT_TRUE(b->acquire_writer(&w).ok());
    ASSERT_TRUE(b->write_checkpoint(base + 12, "meta").ok());
    const auto full = blocks(base, 8, 0xAB);
    ASSERT_TRUE(b->append(base, full.data(), full.size()).ok());
    ASSERT_TRUE(b->wait_durable(base + 8 * kBlockSize).ok());
  }
  const std::uint64_t block = base + kBlockSize, recovered = block + 100, end = base + 8 * kBlockSize;
  {
    auto b = backend("", 2 * kBlockSize);
    Checkpoint c;
    ASSERT_TRUE(b->read_checkpoint(&c).ok());
    WriterInfo w;
    ASSERT_TRUE(b->acquire_writer(&w).ok());
    const auto trimmed = blocks(block, 1, 0xCD);
    const Status s = b->put_tail(block, trimmed.data(), recovered);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("recovery ended at LSN " + std::to_string(recovered)), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("up to LSN " + std::to_string(end)), std::string::npos) << s.message();
  }
  auto b = backend();
  WriterInfo w;
  ASSERT_TRUE(b->acquire_writer(&w).ok());
  EXPECT_EQ(w.log_end, end);
  std::vector<unsigned char> buf(8 * kBlockSize);
  std::size_t got = 0;
  ASSERT_TRUE(b->read(base, buf.data(), buf.size(), &got).ok());
  ASSERT_EQ(got, 8 * kBlockSize);
  EXPECT_EQ(buf[kBlockSize + 100], 0xAB);
  EXPECT_EQ(buf[7 * kBlockSize + 100], 0xAB);
}

// release() frees the nodes' redo below the checkpoint, in the background.
TEST_F(LogServiceBackendTest, ReleaseFreesTheNodesBelowTheCheckpoint) {
  auto b = backend();
  WriterInfo w;
  ASSERT_TRUE(b->acquire_writer(&w).ok());
  const auto full = blocks(0, 8, 0x55);
  ASSERT_TRUE(b->append(0, full.data(), full.size()).ok());
  ASSERT_TRUE(b->wait_durable(8 * kBlockSize).ok());
  ASSERT_TRUE(b->write_checkpoint(4 * kBlockSize + 12, "meta").ok());
  ASSERT_TRUE(b->release(4 * kBlockSize).ok());
  std::vector<unsigned char> buf(kBlockSize);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::size_t got = 0;
    const Status s = b->read(0, buf.data(), buf.size(), &got);
    gone = !s.ok() || got == 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "block 0 is still readable after release";
  std::vector<unsigned char> rest(4 * kBlockSize);
  std::size_t got = 0;
  ASSERT_TRUE(b->read(4 * kBlockSize, rest.data(), rest.size(), &got).ok());
  EXPECT_EQ(got, 4 * kBlockSize);
  EXPECT_EQ(rest[100], 0x55);
}

// A node loses its whole storage while InnoDB is down (killed after its
// last commit): the next writer recovers every durable block from the other
// two, the emptied node rebuilds from where the nodes' released log starts
// and counts again, and then with another node down the log is all there
// and new redo becomes durable (docs/design/logservice-node-rebuild.md).
TEST_F(LogServiceBackendTest, AWipedNodeRebuildsAndTheLogSurvives) {
  // The lowest released LSN of the three nodes, as logservicectl prints it.
  auto lowest_released = [&] {
    std::string nodes, out;
    for (const auto &a : cluster_.addresses()) nodes += (nodes.empty() ? "" : ",") + a;
    const std::string cmd = std::string(LOGSERVICECTL_PATH) + " status --nodes=" + nodes +
                            " --cluster_id=" + cluster_.cluster_id() + " --secret_file=" + cluster_.secret_file() +
                            " 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    if (p == nullptr) return std::uint64_t{0};
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
    std::uint64_t lowest = ~std::uint64_t{0};
    int seen = 0;
    for (std::size_t at = out.find("released_lsn="); at != std::string::npos; at = out.find("released_lsn=", at + 1)) {
      lowest = std::min<std::uint64_t>(lowest, std::strtoull(out.c_str() + at + 13, nullptr, 10));
      ++seen;
    }
    return seen == 3 ? lowest : std::uint64_t{0};
  };
  const std::uint64_t ckpt = 32 * kBlockSize, end = 80 * kBlockSize;
  std::vector<unsigned char> want = blocks(0, 64, 0x5A);
  const auto more = blocks(64 * kBlockSize, 16, 0x6B);
  want.insert(want.end(), more.begin(), more.end());
  auto log_from_checkpoint_is_intact = [&](Backend &b) {
    std::vector<unsigned char> buf(end - ckpt);
    std::size_t got = 0;
    const Status s = b.read(ckpt, buf.data(), buf.size(), &got);
    return s.ok() && got == buf.size() && std::memcmp(buf.data(), want.data() + ckpt, buf.size()) == 0;
  };
  {
    auto b = backend();
    WriterInfo w;
    ASSERT_TRUE(b->acquire_writer(&w).ok());
    ASSERT_TRUE(b->append(0, want.data(), 64 * kBlockSize).ok());
    ASSERT_TRUE(b->wait_durable(64 * kBlockSize).ok());
    ASSERT_TRUE(b->write_checkpoint(ckpt + 12, "meta").ok());
    ASSERT_TRUE(b->release(ckpt).ok());
    // Released on every node (release() works in the background; a read
    // below the checkpoint would retry for 30 s before it fails).
    bool released = false;
    for (int i = 0; i < 100 && !released; ++i) {
      released = lowest_released() >= ckpt;
      if (!released) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(released) << "the nodes did not release below the checkpoint";
    ASSERT_TRUE(b->append(64 * kBlockSize, want.data() + 64 * kBlockSize, 16 * kBlockSize).ok());
    ASSERT_TRUE(b->wait_durable(end).ok());
  }  // InnoDB is gone
  cluster_.Kill(1);
  std::error_code ec;
  std::filesystem::remove_all(cluster_.root() + "/n2", ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(cluster_.Start(1));
  {
    auto b = backend();
    WriterInfo w;
    ASSERT_TRUE(b->acquire_writer(&w).ok());
    EXPECT_GE(w.log_end, end);
    Checkpoint c;
    ASSERT_TRUE(b->read_checkpoint(&c).ok());
    EXPECT_EQ(c.lsn, ckpt + 12);
    EXPECT_TRUE(log_from_checkpoint_is_intact(*b));
    bool member = false;
    for (int i = 0; i < 300 && !member; ++i) {
      member = b->health().nodes[1].in_quorum;
      if (!member) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(member) << "the wiped node did not rebuild: " << b->health().nodes[1].last_error;
  }
  cluster_.Kill(0);
  auto b = backend();
  WriterInfo w;
  ASSERT_TRUE(b->acquire_writer(&w).ok());
  EXPECT_GE(w.log_end, end);
  EXPECT_TRUE(log_from_checkpoint_is_intact(*b));
  const auto next = blocks(w.log_end, 4, 0x7C);
  ASSERT_TRUE(b->append(w.log_end, next.data(), next.size()).ok());
  EXPECT_TRUE(b->wait_durable(w.log_end + next.size()).ok()) << b->health().reason;
}

TEST_F(LogServiceBackendTest, OneNodeDownStillDurable) {
  auto b = backend();
  WriterInfo w;
  ASSERT_TRUE(b->acquire_writer(&w).ok());
  cluster_.Kill(2);
  const auto full = blocks(0, 8, 0x33);
  ASSERT_TRUE(b->append(0, full.data(), full.size()).ok());
  EXPECT_TRUE(b->wait_durable(8 * kBlockSize).ok());
}

TEST_F(LogServiceBackendTest, NewWriterFencesTheOld) {
  auto old_writer = backend();
  WriterInfo w1;
  ASSERT_TRUE(old_writer->acquire_writer(&w1).ok());
  auto new_writer = backend();
  WriterInfo w2;
  ASSERT_TRUE(new_writer->acquire_writer(&w2).ok());
  EXPECT_GT(w2.epoch, w1.epoch);
  const auto full = blocks(0, 1, 0x44);
  Status s = old_writer->append(0, full.data(), full.size());
  if (s.ok()) s = old_writer->wait_durable(kBlockSize);
  EXPECT_EQ(s.code(), Code::kFenced) << s.message();
}

TEST_F(LogServiceBackendTest, WrongSecretIsRefused) {
  auto b = backend("not-the-secret");
  WriterInfo w;
  const Status s = b->acquire_writer(&w);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("secret"), std::string::npos) << s.message();
}

#ifdef STRATA_LOGSERVICE_WITH_GRPC
int run(const std::string &cmd, std::string *out) {
  out->clear();
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  return WEXITSTATUS(pclose(p));
}

// What sys_init_create (redo.cc) does at a second --initialize after a
// first one that wrote its redo and checkpoint: the volume cannot be emptied
// through the backend; after logservicectl drop-volume + create-volume (the
// commands its error names) the volume is empty and a writer starts anew.
TEST_F(LogServiceBackendTest, SecondInitializeNeedsDropAndCreateVolume) {
  const std::uint64_t base = 8192;
  {
    auto first = backend();
    WriterInfo w;
    ASSERT_TRUE(first->acquire_writer(&w).ok());
    const auto full = blocks(base, 4, 0x5A);
    ASSERT_TRUE(first->append(base, full.data(), full.size()).ok());
    ASSERT_TRUE(first->wait_durable(base + 4 * kBlockSize).ok());
    ASSERT_TRUE(first->write_checkpoint(base + 12, "first --initialize").ok());
  }
  {
    auto second = backend();
    Checkpoint c;
    ASSERT_TRUE(second->read_checkpoint(&c).ok()) << "the first --initialize left no checkpoint";
    WriterInfo w;
    ASSERT_TRUE(second->acquire_writer(&w).ok());
    EXPECT_GT(w.log_end, 0u);
    const Status cut = second->truncate(0);
    EXPECT_FALSE(cut.ok()) << "the backend emptied a volume it cannot cut";
  }
  std::string admins;
  for (int i = 0; i < 3; ++i) admins += (i ? "," : "") + cluster_.admin_address(i);
  const std::string ctl = std::string(LOGSERVICECTL_PATH) + " ";
  const std::string auth = " --admin=" + admins + " --token_file=" + cluster_.admin_token_file();
  std::string out;
  ASSERT_EQ(run(ctl + "drop-volume" + auth + " --cluster_id=" + cluster_.cluster_id(), &out), 0) << out;
  ASSERT_EQ(run(ctl + "create-volume" + auth, &out), 0) << out;

  auto third = backend();
  Checkpoint c;
  EXPECT_EQ(third->read_checkpoint(&c).code(), Code::kNotFound);
  WriterInfo w;
  ASSERT_TRUE(third->acquire_writer(&w).ok());
  EXPECT_EQ(w.log_end, 0u);
  const auto full = blocks(base, 2, 0x6B);
  ASSERT_TRUE(third->append(base, full.data(), full.size()).ok());
  ASSERT_TRUE(third->wait_durable(base + 2 * kBlockSize).ok());
  ASSERT_TRUE(third->write_checkpoint(base + 12, "second --initialize").ok());
  ASSERT_TRUE(third->read_checkpoint(&c).ok());
  EXPECT_EQ(c.metadata, "second --initialize");
}
#endif

}  // namespace
}  // namespace strata::redo
