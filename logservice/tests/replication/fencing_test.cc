// Fencing at acknowledgement time ("no acknowledged redo can be lost or
// forged"): an old writer that is still alive must never count an
// acknowledgement a node sends after it promised a newer epoch.
//
// The dangerous window is the node's group commit: an append is checked
// against the promise when it is queued, acknowledged as written at once
// (what innodb_flush_log_at_trx_commit=2 counts) and as durable after the
// fdatasync. A newer writer's promise can land in between. Were its reply
// to report the node's durable LSN without those bytes, its recovery would
// seal below them and cut bytes the old writer was told are written; so the
// promise waits for the group commit and counts them. An ack built after
// the promise took effect must say "fenced", not "durable".
//
// The nodes here run in-process on a file layer (HeldSyncFileSystem) that
// holds the group commit's fdatasync until the test lets it go, so every
// step happens in a fixed order: no sleeps, no timing assumptions beyond
// bounded waits for a state to be reached. The client-side rule ("a reply
// carrying a newer epoch means fenced, and is never an ack") is tested
// against a scripted fake node, since a correct node never sends such an OK.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "codec.h"
#include "local_cluster.h"
#include "node.h"
#include "rpc.h"
#include "strata/logservice/client.h"
#include "storage/file_system.h"
#include "strata/rdma/rdma.h"

namespace strata::logservice {
namespace {

using client::Code;
using client::LogClient;
using repl::Frame;
using std::chrono::milliseconds;
using wire::MsgType;
using wire::ReplyCode;

constexpr auto kBound = milliseconds(10000);  // every wait below is bounded by this

// The local disk, except that once armed, the next fdatasync of a redo
// segment file (what the node's group commit runs for queued appends) waits
// until Release(). Other files (node_meta, tail, checkpoint) pass through,
// so the node keeps answering promises while its group commit is held.
class HeldSyncFileSystem : public FileSystem {
 public:
  void Arm() {
    std::lock_guard<std::mutex> l(mu_);
    armed_ = true;
  }
  // True once an fdatasync is being held.
  bool WaitHeld(milliseconds timeout) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, timeout, [&] { return held_; });
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    armed_ = false;
    released_ = true;
    cv_.notify_all();
  }

  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path, OpenMode mode) override {
    auto f = base_->OpenWritable(path, mode);
    if (!f.ok() || path.find("/redo/") == std::string::npos) return f;
    return std::unique_ptr<WritableFile>(new File(this, std::move(f.value())));
  }
  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    return base_->OpenReadable(path);
  }
  Result<std::vector<std::string>> ListDir(const std::string& dir) override { return base_->ListDir(dir); }
  Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }
  Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }
  Status Rename(const std::string& from, const std::string& to) override { return base_->Rename(from, to); }
  Status Remove(const std::string& path) override { return base_->Remove(path); }
  Result<bool> Exists(const std::string& path) override { return base_->Exists(path); }

 private:
  class File : public WritableFile {
   public:
    File(HeldSyncFileSystem* fs, std::unique_ptr<WritableFile> f) : fs_(fs), f_(std::move(f)) {}
    Status Append(std::string_view data) override { return f_->Append(data); }
    Status Truncate(std::uint64_t size) override { return f_->Truncate(size); }
    Status Sync() override {
      fs_->MaybeHold();
      return f_->Sync();
    }
    std::uint64_t Size() const override { return f_->Size(); }

   private:
    HeldSyncFileSystem* fs_;
    std::unique_ptr<WritableFile> f_;
  };
  void MaybeHold() {
    std::unique_lock<std::mutex> l(mu_);
    if (!armed_) return;
    armed_ = false;
    held_ = true;
    released_ = false;
    cv_.notify_all();
    cv_.wait(l, [&] { return released_; });
  }

  std::shared_ptr<FileSystem> base_ = PosixFileSystem();
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, held_ = false, released_ = false;
};

// N nodes in this process (server::Node, as logserviced runs it), each on a
// HeldSyncFileSystem, data under a fresh temporary directory. Collects the
// nodes' warn/error lines: a test fails on any it did not provoke.
class InProcessNodes {
 public:
  explicit InProcessNodes(int n) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/strata-fence-XXXXXX";
    root_ = mkdtemp(tmpl.data()) ? tmpl : "/tmp/strata-fence-fallback";
    for (int i = 0; i < n; ++i) {
      fs_.push_back(std::make_shared<HeldSyncFileSystem>());
      server::NodeOptions o;
      o.node_id = "n" + std::to_string(i + 1);
      o.data_dir = root_ + "/" + o.node_id;
      o.cluster_id = cluster_id();
      o.secret = secret();
      o.segment_bytes = 4 << 20;
      o.fs = fs_.back();
      o.log = [this](std::string_view level, std::string_view line) {
        if (level == "info") return;
        std::lock_guard<std::mutex> l(log_mu_);
        bad_lines_ += std::string(level) + " " + std::string(line) + "\n";
      };
      auto node = server::Node::Start(std::move(o));
      EXPECT_TRUE(node.ok()) << node.status().ToString();
      if (node.ok()) nodes_.push_back(std::move(node.value()));
    }
  }
  ~InProcessNodes() {
    for (auto& f : fs_) f->Release();  // a held group commit would block Stop
    nodes_.clear();
    if (!std::getenv("STRATA_KEEP_TEST_DIRS")) {
      std::error_code ec;
      std::filesystem::remove_all(root_, ec);
    }
  }
  bool up() const { return nodes_.size() == fs_.size(); }
  server::Node& node(int i) { return *nodes_[i]; }
  HeldSyncFileSystem& fs(int i) { return *fs_[i]; }
  std::vector<std::string> addresses() const {
    std::vector<std::string> a;
    for (const auto& n : nodes_) a.push_back(n->address());
    return a;
  }
  std::string cluster_id() const { return "fence-cluster"; }
  std::string secret() const { return "fence-secret"; }
  std::string bad_lines() {
    std::lock_guard<std::mutex> l(log_mu_);
    return bad_lines_;
  }

 private:
  std::string root_;
  std::vector<std::shared_ptr<HeldSyncFileSystem>> fs_;
  std::vector<std::unique_ptr<server::Node>> nodes_;
  std::mutex log_mu_;
  std::string bad_lines_;
};

client::ClusterConfig Config(const std::vector<std::string>& nodes, std::size_t w, std::uint64_t seed,
                             const std::string& cluster_id, const std::string& secret) {
  client::ClusterConfig cfg;
  cfg.nodes = nodes;
  cfg.transport = client::TransportKind::kTcp;
  cfg.write_quorum = w;
  cfg.cluster_id = cluster_id;
  cfg.secret = secret;
  cfg.open_timeout = kBound;
  cfg.op_timeout = kBound;
  cfg.reconnect_interval = milliseconds(100);
  cfg.seed = seed;
  return cfg;
}

Frame Request(MsgType type, std::uint64_t epoch) {
  Frame f;
  f.type = type;
  f.epoch = epoch;
  return f;
}

// Writer epoch 1 (writer id 11) promised and sealed at LSN 0 on the
// nodes' first node, as a writer's Open leaves it; the channel then carries
// that writer's requests.
void BecomeWriter(repl::RpcChannel& ch, InProcessNodes& nodes) {
  Frame p = Request(MsgType::kPromiseReq, 1);
  p.writer_id = 11;
  ASSERT_EQ(ch.Call(p, kBound)->code, ReplyCode::kOk);
  Frame s = Request(MsgType::kSealReq, 1);
  s.history = {{1, 0}};
  s.peers = nodes.addresses();
  ASSERT_EQ(ch.Call(s, kBound)->code, ReplyCode::kOk);
}

// Waits (bounded) until `pred` holds; for states reached by another thread.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kBound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// Protocol level, two writers (raw channels): writer A (epoch 1) appends;
// while the node's fdatasync for it is held, writer B promises epoch 2.
// A has already been told the bytes are written (the append's first reply;
// what innodb_flush_log_at_trx_commit=2 waits for), so the promise must not
// report a durable end without them: it waits for the group commit and
// counts them, and B's seal keeps them. Whatever A's second (durable) reply
// says, it never claims more than B's promise reported. Every other reply to
// A carries the node's promised epoch (2).
TEST(Fencing, PromiseWaitsForBytesAcknowledgedAsWrittenAndCountsThem) {
  InProcessNodes nodes(1);
  ASSERT_TRUE(nodes.up());
  auto t = rdma::Transport::Create(repl::ReplicationTransportOptions(nodes.cluster_id(), nodes.secret()));
  ASSERT_TRUE(t.ok());
  std::mutex replies_mu;
  std::vector<Frame> late;  // replies to A that no Call is waiting for (the durable one)
  auto a = repl::RpcChannel::Connect(
      **t, nodes.addresses()[0],
      [&](const Frame& f) {
        std::lock_guard<std::mutex> l(replies_mu);
        late.push_back(f);
      },
      nullptr);
  auto b = repl::RpcChannel::Connect(**t, nodes.addresses()[0], nullptr, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_NO_FATAL_FAILURE(BecomeWriter(**a, nodes));
  Frame p, s;

  nodes.fs(0).Arm();
  Frame append = Request(MsgType::kAppendReq, 1);
  append.lsn = 0;
  append.data = testing::RedoBytes(0, 512);
  append.append_flags = wire::kAppendWantsWrittenAck;  // as a writer under innodb_flush_log_at_trx_commit=2
  auto written = (*a)->Call(append, kBound);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  ASSERT_EQ(written->code, ReplyCode::kOk) << written->error;
  EXPECT_EQ(written->complete_lsn, 512u) << "the first reply says the bytes are written";
  EXPECT_EQ(written->lsn, 0u) << "and not yet durable";
  ASSERT_TRUE(nodes.fs(0).WaitHeld(kBound)) << "the append never reached the group commit";

  // The group commit is held: B's promise waits for it.
  p = Request(MsgType::kPromiseReq, 2);
  p.writer_id = 22;
  auto promise = std::async(std::launch::async, [&] { return (*b)->Call(p, kBound); });
  EXPECT_EQ(promise.wait_for(milliseconds(300)), std::future_status::timeout)
      << "the promise reported a durable end while bytes acknowledged as written were not synced";
  nodes.fs(0).Release();
  auto promised = promise.get();
  ASSERT_TRUE(promised.ok()) << promised.status().ToString();
  ASSERT_EQ(promised->code, ReplyCode::kOk);
  EXPECT_EQ(promised->epoch, 2u);
  EXPECT_EQ(promised->state.durable, 512u) << "the promise did not count the written bytes";

  // A's durable reply: an ack no higher than what B's promise reported, or
  // a refusal naming epoch 2.
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> l(replies_mu);
    return !late.empty();
  })) << "no durable reply to the append";
  {
    std::lock_guard<std::mutex> l(replies_mu);
    const Frame& ack = late.front();
    if (ack.code == ReplyCode::kOk) {
      EXPECT_EQ(ack.epoch, 1u);
      EXPECT_LE(ack.lsn, promised->state.durable);
    } else {
      EXPECT_EQ(ack.code, ReplyCode::kStaleEpoch);
      EXPECT_EQ(ack.epoch, 2u);
    }
  }

  // B's recovery, from that promise, seals at 512: nothing A was told is cut.
  s = Request(MsgType::kSealReq, 2);
  s.history = {{1, 0}, {2, 512}};
  s.lsn = 512;
  s.peers = nodes.addresses();
  auto sealed = (*b)->Call(s, kBound);
  ASSERT_TRUE(sealed.ok());
  ASSERT_EQ(sealed->code, ReplyCode::kOk) << sealed->error;
  EXPECT_EQ(sealed->state.durable, 512u);

  // Every reply path carries the node's promised epoch in its header.
  Frame tail = Request(MsgType::kTailReq, 1);
  tail.lsn = 0;
  tail.data_end = 10;
  tail.data = std::string(512, 't');
  Frame read = Request(MsgType::kReadReq, 0);
  read.max_bytes = 4096;
  Frame ckpt = Request(MsgType::kCkptSetReq, 1);
  ckpt.lsn = 1;
  Frame page = Request(MsgType::kPagePutReq, 1);
  page.data = "x";
  Frame release = Request(MsgType::kReleaseReq, 1);
  for (const Frame& q : {append, tail, read, ckpt, page, release, Request(MsgType::kStatusReq, 0),
                         Request(MsgType::kCkptGetReq, 0), Request(MsgType::kPageGetReq, 0)}) {
    auto r = (*a)->Call(q, kBound);
    ASSERT_TRUE(r.ok()) << repl::MsgTypeName(q.type) << ": " << r.status().ToString();
    EXPECT_EQ(r->epoch, 2u) << repl::MsgTypeName(q.type);
    if (q.epoch == 1) {
      EXPECT_EQ(r->code, ReplyCode::kStaleEpoch) << repl::MsgTypeName(q.type);
    }
  }
  EXPECT_EQ(nodes.bad_lines(), "");
}

// The tail register lives in the log's journal and shares the group commit
// (docs/design/logservice-tail-in-journal.md): while that fdatasync is held,
// the TailReq gets no reply and the node's state does not show the new
// register; once it is on disk, both do. Before, the register was a
// node_meta rewrite of its own (two syncs and a rename per tail, which this
// file system never held) and was acknowledged without the group commit.
TEST(Fencing, ATailIsAcknowledgedAndReportedOnlyAfterItsGroupCommit) {
  InProcessNodes nodes(1);
  ASSERT_TRUE(nodes.up());
  auto t = rdma::Transport::Create(repl::ReplicationTransportOptions(nodes.cluster_id(), nodes.secret()));
  ASSERT_TRUE(t.ok());
  auto a = repl::RpcChannel::Connect(**t, nodes.addresses()[0], nullptr, nullptr);
  auto b = repl::RpcChannel::Connect(**t, nodes.addresses()[0], nullptr, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_NO_FATAL_FAILURE(BecomeWriter(**a, nodes));

  nodes.fs(0).Arm();
  Frame tail = Request(MsgType::kTailReq, 1);
  tail.lsn = 0;
  tail.data_end = 100;
  tail.data = testing::RedoBytes(0, 512);
  auto put = std::async(std::launch::async, [&] { return (*a)->Call(tail, kBound); });
  ASSERT_TRUE(nodes.fs(0).WaitHeld(kBound)) << "the tail never reached the group commit";
  EXPECT_EQ(put.wait_for(milliseconds(300)), std::future_status::timeout)
      << "the tail was acknowledged before it was on disk";
  EXPECT_FALSE(nodes.node(0).State().tail.valid()) << "the node reported a register that is not on disk";
  nodes.fs(0).Release();
  auto done = put.get();
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->code, ReplyCode::kOk) << done->error;
  EXPECT_EQ(done->lsn, 0u);
  EXPECT_EQ(done->data_end, 100u);
  const repl::NodeState st = nodes.node(0).State();
  EXPECT_EQ(st.tail.data_end, 100u);
  EXPECT_EQ(st.tail.image, tail.data);
  EXPECT_TRUE(st.tail_anchored);
  EXPECT_EQ(nodes.bad_lines(), "");
}

// The early "written" reply is sent only when the append asks for it
// (wire::kAppendWantsWrittenAck: a writer under
// innodb_flush_log_at_trx_commit=2). Without the flag the append's only
// reply is the durable one: nothing comes while the group commit is held.
// Before, every append got both replies, one nobody waited for under =1.
TEST(Acks, TheWrittenReplyComesOnlyWhenTheAppendAsksForIt) {
  InProcessNodes nodes(1);
  ASSERT_TRUE(nodes.up());
  auto t = rdma::Transport::Create(repl::ReplicationTransportOptions(nodes.cluster_id(), nodes.secret()));
  ASSERT_TRUE(t.ok());
  auto a = repl::RpcChannel::Connect(**t, nodes.addresses()[0], nullptr, nullptr);
  ASSERT_TRUE(a.ok());
  ASSERT_NO_FATAL_FAILURE(BecomeWriter(**a, nodes));

  nodes.fs(0).Arm();
  Frame plain = Request(MsgType::kAppendReq, 1);
  plain.lsn = 0;
  plain.data = testing::RedoBytes(0, 512);
  auto first = std::async(std::launch::async, [&] { return (*a)->Call(plain, kBound); });
  ASSERT_TRUE(nodes.fs(0).WaitHeld(kBound));
  EXPECT_EQ(first.wait_for(milliseconds(300)), std::future_status::timeout)
      << "a written reply came for an append that did not ask for one";
  nodes.fs(0).Release();
  auto durable = first.get();
  ASSERT_TRUE(durable.ok()) << durable.status().ToString();
  ASSERT_EQ(durable->code, ReplyCode::kOk) << durable->error;
  EXPECT_EQ(durable->lsn, 512u) << "the one reply is the durable one";

  nodes.fs(0).Arm();
  Frame asks = Request(MsgType::kAppendReq, 1);
  asks.lsn = 512;
  asks.data = testing::RedoBytes(512, 512);
  asks.append_flags = wire::kAppendWantsWrittenAck;
  auto written = (*a)->Call(asks, kBound);  // returns while the fdatasync is held
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  ASSERT_EQ(written->code, ReplyCode::kOk) << written->error;
  EXPECT_EQ(written->complete_lsn, 1024u) << "written";
  EXPECT_EQ(written->lsn, 512u) << "not yet durable";
  ASSERT_TRUE(nodes.fs(0).WaitHeld(kBound));
  nodes.fs(0).Release();
  EXPECT_EQ(nodes.bad_lines(), "");
}

// A release never goes past the blocks W nodes hold durably. Here node 1
// has the block [1024, 1536) on disk while nodes 2 and 3 hold its first
// bytes only in their tail register (their group commit is held). A
// checkpoint inside that block (1050) must not make node 1 release [1024,
// 1050): a writer that later recovers from node 2 or 3 seals node 1 at 1024,
// below such a release point, and the register's bytes are then on no node
// that counts them (the simulator's soak, seed 589291986430). Before, node 1
// released at 1050.
TEST(Acks, AReleaseStopsAtTheBlocksAWriteQuorumHolds) {
  InProcessNodes nodes(3);
  ASSERT_TRUE(nodes.up());
  auto a = LogClient::Open(Config(nodes.addresses(), 2, 1, nodes.cluster_id(), nodes.secret()));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  LogClient& w = **a;
  ASSERT_TRUE(w.Append(0, testing::RedoBytes(0, 1024)).ok());
  std::string image = testing::RedoBytes(1024, 76);
  image.resize(512, '\0');
  ASSERT_TRUE(w.PutTail(1024, image, 1100).ok());
  ASSERT_TRUE(w.WaitDurable(1100, kBound).ok()) << w.status().reason;
  ASSERT_TRUE(Eventually([&] {
    for (const auto& n : w.status().nodes)
      if (n.durable < 1024) return false;
    return true;
  })) << w.status().reason;

  nodes.fs(1).Arm();
  nodes.fs(2).Arm();
  ASSERT_TRUE(w.Append(1024, testing::RedoBytes(1024, 512)).ok());
  ASSERT_TRUE(nodes.fs(1).WaitHeld(kBound));
  ASSERT_TRUE(nodes.fs(2).WaitHeld(kBound));
  ASSERT_TRUE(Eventually([&] { return nodes.node(0).State().durable == 1536; }));
  ASSERT_TRUE(w.WriteCheckpoint(1050, "inside the tail block").ok());
  auto released = std::async(std::launch::async, [&] { return w.Release(1050); });
  EXPECT_TRUE(Eventually([&] { return nodes.node(0).State().released > 0 || released.wait_for(milliseconds(0)) == std::future_status::ready; }));
  nodes.fs(1).Release();
  nodes.fs(2).Release();
  ASSERT_TRUE(released.get().ok());
  EXPECT_LE(nodes.node(0).State().released, 1024u) << "node 1 released bytes nodes 2 and 3 hold only as a register";
  EXPECT_EQ(nodes.bad_lines(), "");
}

// The same race through the client library, on 3 nodes: writer A's last
// append is written everywhere and A is told so (written_lsn), but every
// group commit is held, so it is not durable. Writer B takes over (its
// promises wait for those group commits). B's recovered log must hold
// everything A was told is written or durable, and A, once B holds the
// nodes, is fenced (naming epoch 2) and counts nothing more.
TEST(Fencing, OldWriterCannotCountAcksForBytesTheNewWriterCuts) {
  InProcessNodes nodes(3);
  ASSERT_TRUE(nodes.up());
  auto cfg = Config(nodes.addresses(), 2, 1, nodes.cluster_id(), nodes.secret());
  auto a = LogClient::Open(cfg);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  LogClient& old_writer = **a;
  ASSERT_TRUE(old_writer.Append(0, testing::RedoBytes(0, 1024)).ok());
  ASSERT_TRUE(Eventually([&] {
    for (const auto& n : old_writer.status().nodes)
      if (n.durable < 1024) return false;
    return true;
  })) << old_writer.status().reason;  // every group commit is idle again

  for (int i = 0; i < 3; ++i) nodes.fs(i).Arm();
  ASSERT_TRUE(old_writer.Append(1024, testing::RedoBytes(1024, 512)).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(nodes.fs(i).WaitHeld(kBound)) << "node " << i + 1;
  ASSERT_TRUE(old_writer.WaitWritten(1536, kBound).ok()) << old_writer.status().reason;
  EXPECT_EQ(old_writer.durable_lsn(), 1024u) << "durable before any group commit ran";

  cfg.seed = 2;
  auto b = std::async(std::launch::async, [&] { return LogClient::Open(cfg); });
  EXPECT_EQ(b.wait_for(milliseconds(300)), std::future_status::timeout)
      << "a takeover completed while written bytes were not yet durable";
  for (int i = 0; i < 3; ++i) nodes.fs(i).Release();

  auto new_writer = b.get();
  ASSERT_TRUE(new_writer.ok()) << new_writer.status().ToString();
  EXPECT_EQ((*new_writer)->epoch(), 2u);
  EXPECT_EQ((*new_writer)->sealed_end(), 1536u) << "the takeover cut bytes the old writer was told are written";
  auto got = (*new_writer)->Read(0, 4096);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, testing::RedoBytes(0, 1536));

  // A may have counted its last append durable before the promises took
  // effect (that is safe: B kept it); anything it appends now is refused.
  auto appended = old_writer.Append(1536, testing::RedoBytes(1536, 512));
  auto st = appended.ok() ? old_writer.WaitDurable(2048, kBound) : appended;
  EXPECT_EQ(st.code(), Code::kFenced) << st.ToString();
  EXPECT_NE(st.message().find("epoch 2"), std::string::npos) << st.message();
  EXPECT_LE(old_writer.durable_lsn(), (*new_writer)->sealed_end()) << "the old writer counted bytes the new one cut";
  EXPECT_LE(old_writer.written_lsn(), (*new_writer)->sealed_end()) << "the old writer counted bytes the new one cut";
  EXPECT_TRUE(old_writer.status().fenced);
  EXPECT_EQ(nodes.bad_lines(), "");
}

// A scripted node (no storage): honest for Status/Promise/Seal, so a writer
// with W = 1 opens on it; `on_append` decides how it answers each
// AppendReq (nullopt: no answer) and `on_status_after_append` how it answers
// a StatusReq once it has seen one.
class FakeNode {
 public:
  using Script = std::function<std::optional<Frame>(const Frame& req, const repl::NodeState& state)>;
  FakeNode(const std::string& cluster_id, const std::string& secret, Script on_append, Script on_status_after_append)
      : on_append_(std::move(on_append)), on_status_after_append_(std::move(on_status_after_append)) {
    auto t = rdma::Transport::Create(repl::ReplicationTransportOptions(cluster_id, secret));
    EXPECT_TRUE(t.ok());
    if (!t.ok()) return;
    transport_ = std::move(t.value());
    auto l = transport_->Listen("tcp://127.0.0.1:0", [this](const std::shared_ptr<rdma::Connection>&) {
      rdma::ConnectionHandlers h;
      h.on_message = [this](rdma::Connection& c, const rdma::Message& m) { OnMessage(c, m); };
      h.on_close = [](rdma::Connection&, const rdma::Status&) {};
      return h;
    });
    EXPECT_TRUE(l.ok());
    if (l.ok()) listener_ = std::move(l.value());
    state_.node_id = "fake";
  }
  ~FakeNode() {
    listener_.reset();
    transport_.reset();
  }
  std::string address() const { return listener_ ? listener_->endpoint().ToString() : ""; }
  // TailReqs are stored (the state shows the register) but never answered,
  // as when a node's reply finds the writer's window full for 500 ms.
  void DropTailReplies() {
    std::lock_guard<std::mutex> l(mu_);
    drop_tail_replies_ = true;
  }

 private:
  void OnMessage(rdma::Connection& c, const rdma::Message& m) {
    Frame req;
    if (!repl::Decode(m.payload(), &req).ok()) return c.Close();
    std::optional<Frame> rep;
    {
      std::lock_guard<std::mutex> l(mu_);
      Frame r;
      r.type = static_cast<MsgType>(static_cast<std::uint8_t>(req.type) + 1);
      r.request_id = req.request_id;
      switch (req.type) {
        case MsgType::kPromiseReq:
          state_.promised_epoch = std::max(state_.promised_epoch, req.epoch);
          r.state = state_;
          break;
        case MsgType::kSealReq:
          state_.seal_epoch = req.epoch;
          state_.seal_lsn = req.lsn;
          state_.history = req.history;
          r.state = state_;
          break;
        case MsgType::kAppendReq:
          seen_append_ = true;
          rep = on_append_(req, state_);
          break;
        case MsgType::kStatusReq:
          if (seen_append_) rep = on_status_after_append_(req, state_);
          r.state = state_;
          break;
        case MsgType::kTailReq:
          state_.tail = repl::TailImage{req.epoch, req.lsn, req.data_end, req.data};
          r.lsn = req.lsn;
          r.data_end = req.data_end;
          if (drop_tail_replies_) return;
          break;
        default: break;
      }
      if (req.type != MsgType::kAppendReq && !rep) rep = r;
      if (rep) {
        rep->type = r.type;
        rep->request_id = r.request_id;
        if (rep->epoch == 0) rep->epoch = state_.promised_epoch;
      }
    }
    if (!rep) return;
    const std::string b = repl::Encode(*rep);
    c.Send(std::as_bytes(std::span(b.data(), b.size()))).IgnoreError();
  }

  Script on_append_, on_status_after_append_;
  std::unique_ptr<rdma::Transport> transport_;
  std::unique_ptr<rdma::Listener> listener_;
  std::mutex mu_;
  repl::NodeState state_;
  bool seen_append_ = false;
  bool drop_tail_replies_ = false;
};

// The client's own rule, whatever the node does: a reply whose header
// carries a newer epoch than the writer's means another writer holds the
// node. It is never counted as an acknowledgement, and the writer is
// fenced with a status naming that epoch and the node. Two paths a reply can
// count through: an AppendResp, and a StatusResp (the poll of a silent node).
TEST(Fencing, ClientTreatsAnyReplyWithANewerEpochAsFencedNotAsAnAck) {
  struct Case {
    const char* name;
    FakeNode::Script on_append, on_status;
  };
  const auto newer_ok_ack = [](const Frame& req, const repl::NodeState&) -> std::optional<Frame> {
    Frame r;
    r.epoch = req.epoch + 1;  // "I have promised epoch 2" ... and still OK
    r.lsn = r.complete_lsn = req.lsn + req.data.size();
    return r;
  };
  const auto silent = [](const Frame&, const repl::NodeState&) -> std::optional<Frame> { return std::nullopt; };
  const auto newer_status = [](const Frame&, const repl::NodeState& s) -> std::optional<Frame> {
    Frame r;
    r.epoch = s.promised_epoch + 1;
    r.state = s;  // still sealed in the writer's epoch, as before a new writer seals
    r.state.promised_epoch = r.epoch;
    r.state.durable = r.state.complete = r.state.highest = 512;
    return r;
  };
  for (const Case& k : {Case{"AppendResp", newer_ok_ack, silent}, Case{"StatusResp", silent, newer_status}}) {
    SCOPED_TRACE(k.name);
    FakeNode fake("fence-cluster", "fence-secret", k.on_append, k.on_status);
    auto w = LogClient::Open(Config({fake.address()}, 1, 3, "fence-cluster", "fence-secret"));
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ((*w)->epoch(), 1u);
    ASSERT_TRUE((*w)->Append(0, testing::RedoBytes(0, 512)).ok());
    auto st = (*w)->WaitDurable(512, kBound);
    EXPECT_EQ(st.code(), Code::kFenced) << st.ToString();
    EXPECT_NE(st.message().find("epoch 2"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(fake.address()), std::string::npos) << st.message();
    EXPECT_EQ((*w)->durable_lsn(), 0u);
    EXPECT_EQ((*w)->Append(512, testing::RedoBytes(512, 512)).code(), Code::kFenced);
  }
}

// A TailResp the node never sent is recovered from the node's state, as a
// lost AppendResp is: the writer polls a node that has not acknowledged the
// current tail for 200 ms and counts the tail register its StatusResp shows.
// Before, the frontier stayed below the tail until the next PutTail (found by
// the deterministic simulator, logservice/tests/sim: seed 6818).
TEST(Acks, ADroppedTailAckIsRecoveredFromTheNodesState) {
  auto durable = std::make_shared<std::atomic<std::uint64_t>>(0);
  FakeNode fake(
      "fence-cluster", "fence-secret",
      [durable](const Frame& req, const repl::NodeState&) -> std::optional<Frame> {
        *durable = req.lsn + req.data.size();
        Frame r;
        r.lsn = r.complete_lsn = durable->load();
        return r;
      },
      [durable](const Frame&, const repl::NodeState& s) -> std::optional<Frame> {
        Frame r;
        r.state = s;
        r.state.durable = r.state.complete = r.state.highest = durable->load();
        return r;
      });
  fake.DropTailReplies();
  auto w = LogClient::Open(Config({fake.address()}, 1, 4, "fence-cluster", "fence-secret"));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->Append(0, testing::RedoBytes(0, 512)).ok());
  ASSERT_TRUE((*w)->WaitDurable(512, kBound).ok());
  ASSERT_TRUE((*w)->PutTail(512, std::string(512, 't'), 600).ok());
  auto st = (*w)->WaitDurable(600, kBound);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ((*w)->durable_lsn(), 600u);
}

}  // namespace
}  // namespace strata::logservice
