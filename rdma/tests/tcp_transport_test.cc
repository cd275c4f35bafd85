// TCP backend over loopback: ordering, sizes, bulk, many connections,
// backpressure, completions, leases and clean shutdown.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstring>
#include <thread>

#include "test_support.h"

namespace strata::rdma::test {
namespace {

// Server that records every message (and optionally echoes it).
class Server {
 public:
  explicit Server(TransportOptions options, bool echo = false) : echo_(echo) {
    transport_ = MakeTransport(options);
    auto l = transport_->Listen("tcp://127.0.0.1:0", [this](const std::shared_ptr<Connection>& c) {
      signal_.Notify([&] { conns_.push_back(c); });
      ConnectionHandlers h;
      h.on_message = [this](Connection& conn, const Message& m) { OnMessage(conn, m); };
      h.on_close = [this](Connection&, const Status& s) { signal_.Notify([&] { closes_.push_back(s); }); };
      return h;
    });
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    listener_ = std::move(l).value();
  }
  std::string address() const { return "tcp://127.0.0.1:" + std::to_string(listener_->endpoint().port); }
  uint16_t port() const { return listener_->endpoint().port; }

  void OnMessage(Connection& conn, const Message& m) {
    if (echo_) {
      const Status s = m.is_bulk() ? conn.SendBulk(m.payload(), {}, 5s) : conn.Send(m.payload(), {}, 5s);
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    if (retain_) {
      auto lease = m.Retain();
      signal_.Notify([&] { leases_.push_back(std::move(lease)); ++count_; });
      return;
    }
    signal_.Notify([&] {
      received_.emplace_back(m.payload().begin(), m.payload().end());
      bulk_flags_.push_back(m.is_bulk());
      ++count_;
    });
  }

  bool echo_;
  std::atomic<bool> retain_{false};
  Signal signal_;
  std::vector<std::shared_ptr<Connection>> conns_;
  std::vector<Status> closes_;
  std::vector<std::vector<std::byte>> received_;
  std::vector<bool> bulk_flags_;
  std::vector<MessageLease> leases_;
  size_t count_ = 0;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Listener> listener_;
};

// Client handlers that record messages and the close status.
struct Client {
  Signal signal;
  std::vector<std::vector<std::byte>> received;
  std::vector<Status> closes;
  ConnectionHandlers Handlers() {
    ConnectionHandlers h;
    h.on_message = [this](Connection&, const Message& m) {
      signal.Notify([&] { received.emplace_back(m.payload().begin(), m.payload().end()); });
    };
    h.on_close = [this](Connection&, const Status& s) { signal.Notify([&] { closes.push_back(s); }); };
    return h;
  }
};

TEST(TcpTransport, DeliversInOrderWithCompletions) {
  LogCapture log;
  Server server(TestOptions(&log));
  Client client;  // outlives the transport that calls its handlers
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect(server.address(), client.Handlers());
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn.value()->backend(), Scheme::kTcp);
  constexpr int kCount = 2000;
  std::atomic<int> completed{0};
  for (int i = 0; i < kCount; ++i) {
    uint32_t v = static_cast<uint32_t>(i);
    const Status s = conn.value()->Send(std::as_bytes(std::span(&v, 1)), [&](const Status& st) {
      EXPECT_TRUE(st.ok());
      ++completed;
    }, 5s);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.count_ == kCount; }));
  std::lock_guard lock(server.signal_.mu());
  for (int i = 0; i < kCount; ++i) {
    uint32_t v;
    std::memcpy(&v, server.received_[i].data(), 4);
    ASSERT_EQ(v, static_cast<uint32_t>(i));
  }
  EXPECT_EQ(completed.load(), kCount);
}

TEST(TcpTransport, TinyAndMaximalMessagesRoundTrip) {
  LogCapture log;
  Server server(TestOptions(&log), /*echo=*/true);
  Client client;  // outlives the transport that calls its handlers
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect(server.address(), client.Handlers());
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  const uint32_t max = conn.value()->max_message_size();
  EXPECT_EQ(max, 64u * 1024);
  const std::vector<size_t> sizes = {0, 1, 7, 63, 64, 4096, max - 1, max};
  for (size_t i = 0; i < sizes.size(); ++i) ASSERT_TRUE(conn.value()->Send(Pattern(sizes[i], i), {}, 5s).ok());
  ASSERT_TRUE(client.signal.WaitUntil([&] { return client.received.size() == sizes.size(); }));
  std::lock_guard lock(client.signal.mu());
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(client.received[i], Pattern(sizes[i], i)) << sizes[i];
  const Status too_big = conn.value()->Send(Pattern(max + 1, 0));
  EXPECT_EQ(too_big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_big.message().find("use SendBulk"), std::string::npos);
}

// Large messages behind a full socket wait for it to drain and are written
// from the caller's memory; small ones in between go through the send arena.
// A receiver that is slow at first fills the socket; everything must still
// arrive once, in order, intact.
TEST(TcpTransport, LargeMessagesBehindAFullSocketKeepOrderWithSmallOnes) {
  LogCapture log;
  TransportOptions server_options = TestOptions(&log);
  server_options.receive_credits = 1024;  // the socket, not credits, is what fills
  std::atomic<uint32_t> next{0}, bad{0};
  Signal done;
  auto server_t = MakeTransport(server_options);
  auto l = server_t->Listen("tcp://127.0.0.1:0", [&](const std::shared_ptr<Connection>&) {
    ConnectionHandlers h;
    h.on_message = [&](Connection&, const Message& m) {
      const uint32_t i = next.load();
      if (i < 100) std::this_thread::sleep_for(200us);  // slow start: the sender's socket fills
      uint32_t got = ~0u;
      if (m.payload().size() >= 4) std::memcpy(&got, m.payload().data(), 4);
      const size_t want_size = i % 10 == 9 ? 100 : 64 * 1024;
      if (got != i || m.payload().size() != want_size || m.payload().back() != static_cast<std::byte>(i & 0xff)) ++bad;
      done.Notify([&] { next.store(i + 1); });
    };
    return h;
  });
  ASSERT_TRUE(l.ok());
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect("tcp://127.0.0.1:" + std::to_string(l.value()->endpoint().port), ConnectionHandlers{});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  constexpr uint32_t kCount = 400;  // ~24 MiB
  std::vector<std::byte> buf(64 * 1024);
  for (uint32_t i = 0; i < kCount; ++i) {
    const size_t size = i % 10 == 9 ? 100 : buf.size();
    std::memcpy(buf.data(), &i, 4);
    std::memset(buf.data() + 4, static_cast<int>(i & 0xff), size - 4);
    const Status s = conn.value()->Send(std::span(buf.data(), size), {}, 10s);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_TRUE(done.WaitUntil([&] { return next.load() == kCount; }, 30s)) << next.load();
  EXPECT_EQ(bad.load(), 0u);
  conn.value()->Close();
  client_t.reset();
  l.value().reset();
  server_t.reset();
}

// With low_latency_reads a server thread whose one connection streams
// without pause keeps reading it in blocking recv()s; the listener on the
// same thread must still accept new connections (the loop polls its other
// fds at least every millisecond).
TEST(TcpTransport, LowLatencyReadsDoNotStarveTheListener) {
  LogCapture log;
  TransportOptions o = TestOptions(&log);
  o.low_latency_reads = true;
  Server server(o);
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto busy = client_t->Connect(server.address(), ConnectionHandlers{});
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  std::atomic<bool> stop{false};
  std::thread streamer([&] {
    const auto payload = Pattern(512, 1);
    while (!stop.load()) {
      if (!busy.value()->Send(payload, {}, 1s).ok()) break;
    }
  });
  // Let the stream get going, then connect a second client.
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.count_ > 1000; }));
  auto second_t = MakeTransport(TestOptions(&log, 44));
  const auto t0 = std::chrono::steady_clock::now();
  auto second = second_t->Connect(server.address(), ConnectionHandlers{});
  const auto took = std::chrono::steady_clock::now() - t0;
  stop = true;
  streamer.join();
  // Within connect_timeout (3 s here); starved, it took 0.9-2.5 s or failed.
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  std::printf("second connect took %lld ms\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
}

// A large Send that finds the socket full keeps reading the caller's buffer
// while it pushes the bytes out itself; when its wait runs out first it
// must copy what is left before returning, since the caller may reuse the
// buffer at once. The server's I/O thread is held in a handler so nothing
// is read and the sockets fill up; the client scribbles over its buffer
// after every Send, then the server is let go and checks every message.
TEST(TcpTransport, LargeSendOutOfTimeOnAFullSocketCopiesItsPayload) {
  LogCapture log;
  TransportOptions server_options = TestOptions(&log);
  server_options.receive_credits = 4096;  // the socket, not credits, fills
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open_gate = false;
  std::atomic<uint32_t> next{0}, bad{0};
  Signal done;
  auto server_t = MakeTransport(server_options);
  auto l = server_t->Listen("tcp://127.0.0.1:0", [&](const std::shared_ptr<Connection>&) {
    ConnectionHandlers h;
    h.on_message = [&](Connection&, const Message& m) {
      {
        std::unique_lock lock(gate_mu);
        gate_cv.wait(lock, [&] { return open_gate; });
      }
      const uint32_t i = next.load();
      uint32_t got = ~0u;
      if (m.payload().size() == 64 * 1024) std::memcpy(&got, m.payload().data(), 4);
      if (got != i || m.payload()[1000] != static_cast<std::byte>(i & 0xff) || m.payload().back() != static_cast<std::byte>(i & 0xff)) ++bad;
      done.Notify([&] { next.store(i + 1); });
    };
    return h;
  });
  ASSERT_TRUE(l.ok());
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect("tcp://127.0.0.1:" + std::to_string(l.value()->endpoint().port), ConnectionHandlers{});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  std::vector<std::byte> buf(64 * 1024);
  uint32_t accepted = 0, left_queued = 0;
  Status last;
  for (uint32_t i = 0; i < 2000; ++i) {
    std::memcpy(buf.data(), &i, 4);
    std::memset(buf.data() + 4, static_cast<int>(i & 0xff), buf.size() - 4);
    last = conn.value()->Send(buf, {}, 30ms);
    std::memset(buf.data(), 0xEE, buf.size());  // the caller reuses its buffer
    if (!last.ok()) break;
    ++accepted;
    if (conn.value()->stats().queued_messages > 0) ++left_queued;
  }
  EXPECT_EQ(last.code(), StatusCode::kBusy) << last.ToString();
  // Some Sends ran out of time with their frame still queued: those copied.
  EXPECT_GT(left_queued, 0u);
  {
    std::lock_guard lock(gate_mu);
    open_gate = true;
  }
  gate_cv.notify_all();
  EXPECT_TRUE(done.WaitUntil([&] { return next.load() == accepted; }, 30s)) << next.load() << " of " << accepted;
  EXPECT_EQ(bad.load(), 0u);
  conn.value()->Close();
  client_t.reset();
  l.value().reset();
  server_t.reset();
}

// low_latency_reads is adaptive: a request/response connection keeps its
// blocking reads (they hit), while one whose messages come rarely backs off
// after a miss instead of holding its thread in recv() after each message.
TEST(TcpTransport, LowLatencyReadsBackOffWhenThePeerIsQuiet) {
  LogCapture log;
  TransportOptions o = TestOptions(&log);
  o.low_latency_reads = true;
  o.keepalive_interval = 10s;  // no PINGs: only our messages wake the server
  o.keepalive_timeout = 20s;
  Server server(o, /*echo=*/true);
  Client client;
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect(server.address(), client.Handlers());
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.conns_.size() == 1; }));
  const auto payload = Pattern(64, 1);
  // Ping-pong: the next request follows each reply at once.
  constexpr size_t kPings = 200;
  for (size_t i = 0; i < kPings; ++i) {
    ASSERT_TRUE(conn.value()->Send(payload, {}, 1s).ok());
    ASSERT_TRUE(client.signal.WaitUntil([&] { return client.received.size() == i + 1; }));
  }
  const ConnectionStats busy = server.conns_[0]->stats();
  EXPECT_GE(busy.blocking_reads - busy.blocking_read_misses, kPings / 2) << busy.blocking_reads << " reads, "
                                                                          << busy.blocking_read_misses << " misses";
  // Quiet: a message every 60 ms (a blocking read times out within ~20 ms).
  constexpr size_t kSparse = 12;
  for (size_t i = 0; i < kSparse; ++i) {
    std::this_thread::sleep_for(60ms);
    ASSERT_TRUE(conn.value()->Send(payload, {}, 1s).ok());
    ASSERT_TRUE(client.signal.WaitUntil([&] { return client.received.size() == kPings + i + 1; }));
  }
  const ConnectionStats quiet = server.conns_[0]->stats();
  const uint64_t tries = quiet.blocking_reads - busy.blocking_reads;
  const uint64_t misses = quiet.blocking_read_misses - busy.blocking_read_misses;
  // Without the back-off every message would be followed by a try (12);
  // with it: tries after messages 1, 3, 6 and 11.
  EXPECT_GE(misses, 1u);
  EXPECT_LE(tries, 6u) << tries << " blocking reads for " << kSparse << " sparse messages";
  conn.value()->Close();
}

// kMore holds small frames back to write them together; a large payload
// in the middle of a batch flushes the batch ahead of itself and leaves
// directly. Order and content must survive every mix.
TEST(TcpTransport, MoreBatchesKeepOrderAroundLargeMessages) {
  LogCapture log;
  TransportOptions server_options = TestOptions(&log);
  server_options.receive_credits = 1024;
  Server server(server_options);
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect(server.address(), ConnectionHandlers{});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  constexpr uint32_t kCount = 300;
  auto size_of = [](uint32_t i) -> size_t { return i % 7 == 6 ? 64 * 1024 : 100 + i; };
  for (uint32_t i = 0; i < kCount; ++i) {
    auto payload = Pattern(size_of(i), i);
    const SendFlags flags = i % 10 == 9 || i + 1 == kCount ? SendFlags::kNone : SendFlags::kMore;
    const Status s = conn.value()->Send(payload, {}, 5s, flags);
    ASSERT_TRUE(s.ok()) << i << ": " << s.ToString();
  }
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.count_ == kCount; })) << server.count_;
  std::lock_guard lock(server.signal_.mu());
  for (uint32_t i = 0; i < kCount; ++i) EXPECT_EQ(server.received_[i], Pattern(size_of(i), i)) << "message " << i;
}

TEST(TcpTransport, BulkMessagesKeepOrderWithSmallOnes) {
  LogCapture log;
  Server server(TestOptions(&log));
  Client client;  // outlives the transport that calls its handlers
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect(server.address(), client.Handlers());
  ASSERT_TRUE(conn.ok());
  ASSERT_GE(conn.value()->max_bulk_size(), 1u << 20);
  // Interleave: 1 MiB bulk, small, 300 KiB bulk, ... (wraps the ring).
  std::vector<std::vector<std::byte>> sent;
  for (int i = 0; i < 24; ++i) {
    const bool bulk = i % 2 == 0;
    sent.push_back(Pattern(bulk ? (i % 4 == 0 ? 1u << 20 : 300u << 10) : 100, i));
    const Status s = bulk ? conn.value()->SendBulk(sent.back(), {}, 5s) : conn.value()->Send(sent.back(), {}, 5s);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.count_ == sent.size(); }));
  std::lock_guard lock(server.signal_.mu());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(server.received_[i], sent[i]) << i;
    EXPECT_EQ(server.bulk_flags_[i], i % 2 == 0);
  }
  EXPECT_EQ(conn.value()->SendBulk(Pattern(8u << 20, 0)).code(), StatusCode::kInvalidArgument);
}

TEST(TcpTransport, ManyConnectionsConcurrently) {
  LogCapture log;
  auto opts = TestOptions(&log);
  opts.io_threads = 2;
  Server server(opts, /*echo=*/true);
  auto client_opts = TestOptions(&log, 43);
  client_opts.io_threads = 2;
  constexpr int kConns = 32, kMsgs = 50;
  std::vector<std::unique_ptr<Client>> clients;  // outlive client_t
  auto client_t = MakeTransport(client_opts);
  std::vector<std::shared_ptr<Connection>> conns;
  for (int c = 0; c < kConns; ++c) {
    clients.push_back(std::make_unique<Client>());
    auto conn = client_t->Connect(server.address(), clients.back()->Handlers());
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    conns.push_back(conn.value());
  }
  std::vector<std::thread> senders;
  for (int c = 0; c < kConns; ++c) {
    senders.emplace_back([&, c] {
      for (int i = 0; i < kMsgs; ++i) EXPECT_TRUE(conns[c]->Send(Pattern(200, c * 1000 + i), {}, 5s).ok());
    });
  }
  for (auto& t : senders) t.join();
  for (int c = 0; c < kConns; ++c) {
    ASSERT_TRUE(clients[c]->signal.WaitUntil([&] { return clients[c]->received.size() == kMsgs; })) << c;
    std::lock_guard lock(clients[c]->signal.mu());
    for (int i = 0; i < kMsgs; ++i) ASSERT_EQ(clients[c]->received[i], Pattern(200, c * 1000 + i));
  }
}

TEST(TcpTransport, StalledReceiverBoundsSenderMemory) {
  LogCapture log;
  auto server_opts = TestOptions(&log);
  server_opts.receive_credits = 8;
  Server server(server_opts);
  server.retain_ = true;  // hold every message: no credit goes back
  auto client_opts = TestOptions(&log, 43);
  client_opts.send_buffer_size = 256 * 1024;
  Client client;
  auto client_t = MakeTransport(client_opts);
  auto conn = client_t->Connect(server.address(), client.Handlers());
  ASSERT_TRUE(conn.ok());
  const auto payload = Pattern(16 * 1024, 1);
  int accepted = 0;
  Status last;
  for (int i = 0; i < 1000 && (last = conn.value()->Send(payload)).ok(); ++i) ++accepted;
  EXPECT_EQ(last.code(), StatusCode::kBusy) << last.ToString();
  EXPECT_TRUE(last.retryable());
  // Eight messages hold credits on the server; the rest wait in our bounded buffer.
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.count_ == 8; }));
  const ConnectionStats stats = conn.value()->stats();
  EXPECT_LE(stats.queued_bytes, 256u * 1024 + 2 * (64 * 1024 + 128));
  EXPECT_EQ(stats.send_credits, 0u);
  EXPECT_LT(accepted, 40);
  EXPECT_EQ(conn.value()->Send(payload, {}, 20ms).code(), StatusCode::kBusy);
  // Release: everything flows, in order.
  {
    std::lock_guard lock(server.signal_.mu());
    server.retain_ = false;
    server.leases_.clear();
  }
  ASSERT_TRUE(conn.value()->Send(payload, {}, 5s).ok());
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.count_ == static_cast<size_t>(accepted) + 1; }));
}

// A large Send that finds no credit waits (within its `wait`) for the
// receiver to return some instead of copying the payload into the send
// buffer, then leaves directly; order and content survive.
TEST(TcpTransport, LargeSendWaitsForCreditsInsteadOfCopying) {
  LogCapture log;
  auto server_opts = TestOptions(&log);
  server_opts.receive_credits = 8;
  Server server(server_opts);
  server.retain_ = true;  // hold every message: no credit goes back
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect(server.address(), ConnectionHandlers{});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  for (uint32_t i = 0; i < 8; ++i) ASSERT_TRUE(conn.value()->Send(Pattern(64 * 1024, i), {}, 1s).ok());
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.count_ == 8; }));
  EXPECT_EQ(conn.value()->stats().send_credits, 0u);
  // Give the credits back a little later, from another thread.
  std::thread releaser([&] {
    std::this_thread::sleep_for(150ms);
    std::lock_guard lock(server.signal_.mu());
    server.retain_ = false;
    server.leases_.clear();
  });
  auto ninth = Pattern(64 * 1024, 8);
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = conn.value()->Send(ninth, {}, 5s);
  const auto took = std::chrono::steady_clock::now() - t0;
  std::fill(ninth.begin(), ninth.end(), std::byte{0xEE});  // the caller reuses its buffer
  releaser.join();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GE(took, 100ms) << "returned before any credit came back: the payload was copied, not sent";
  EXPECT_LT(took, 4s);
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.count_ == 9; }));
  std::lock_guard lock(server.signal_.mu());
  ASSERT_EQ(server.received_.size(), 1u);  // the first eight were retained as leases
  EXPECT_EQ(server.received_[0], Pattern(64 * 1024, 8));
}

// ...but a handler (the I/O thread) never waits for credits: it is the
// thread that would read them, so it would only stall for its whole wait.
TEST(TcpTransport, LargeSendFromAHandlerDoesNotWaitForCredits) {
  LogCapture log;
  Server server(TestOptions(&log), /*echo=*/true);  // echoes with a 5 s wait
  auto client_opts = TestOptions(&log, 43);
  client_opts.receive_credits = 2;
  Signal got;
  std::vector<MessageLease> leases;  // under got.mu(): no credit goes back
  ConnectionHandlers h;
  h.on_message = [&](Connection&, const Message& m) {
    auto lease = m.Retain();
    got.Notify([&] { leases.push_back(std::move(lease)); });
  };
  auto client_t = MakeTransport(client_opts);
  auto conn = client_t->Connect(server.address(), h);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(conn.value()->Send(Pattern(64 * 1024, i), {}, 1s).ok());
  // The third echo finds no credit; its handler must return at once.
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.count_ == 3; }, 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  ASSERT_TRUE(got.WaitUntil([&] { return leases.size() == 2; }));
  {
    std::lock_guard lock(got.mu());
    leases.clear();  // credits go back: the third echo follows
  }
  EXPECT_TRUE(got.WaitUntil([&] { return leases.size() == 1; }));
}

TEST(TcpTransport, RetainedLeaseOutlivesHandler) {
  LogCapture log;
  Server server(TestOptions(&log));
  server.retain_ = true;
  Client client;  // outlives the transport that calls its handlers
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect(server.address(), client.Handlers());
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn.value()->Send(Pattern(5000, 9)).ok());
  ASSERT_TRUE(conn.value()->SendBulk(Pattern(200000, 10)).ok());
  ASSERT_TRUE(conn.value()->Send(Pattern(10, 11)).ok());  // overwrites the read buffer
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.count_ == 3; }));
  std::lock_guard lock(server.signal_.mu());
  auto first = server.leases_[0].payload();
  EXPECT_EQ(std::vector<std::byte>(first.begin(), first.end()), Pattern(5000, 9));
  auto second = server.leases_[1].payload();
  EXPECT_EQ(std::vector<std::byte>(second.begin(), second.end()), Pattern(200000, 10));
}

TEST(TcpTransport, GracefulCloseDrainsAndTellsThePeer) {
  LogCapture log;
  Server server(TestOptions(&log));
  Client client;  // outlives the transport that calls its handlers
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect(server.address(), client.Handlers());
  ASSERT_TRUE(conn.ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(conn.value()->Send(Pattern(1000, i), {}, 5s).ok());
  conn.value()->Close();
  EXPECT_EQ(conn.value()->Send(Pattern(1, 0)).code(), StatusCode::kClosed);
  ASSERT_TRUE(client.signal.WaitUntil([&] { return client.closes.size() == 1; }));
  EXPECT_TRUE(client.closes[0].ok()) << client.closes[0].ToString();
  ASSERT_TRUE(server.signal_.WaitUntil([&] { return server.closes_.size() == 1; }));
  EXPECT_EQ(server.count_, 100u);  // everything queued before Close arrived
  EXPECT_EQ(server.closes_[0].code(), StatusCode::kClosed);
  EXPECT_NE(server.closes_[0].message().find("peer closed the connection"), std::string::npos);
}

TEST(TcpTransport, TransportShutdownAbortsConnections) {
  LogCapture log;
  auto server = std::make_unique<Server>(TestOptions(&log));
  Client client;  // outlives the transport that calls its handlers
  auto client_t = MakeTransport(TestOptions(&log, 43));
  auto conn = client_t->Connect(server->address(), client.Handlers());
  ASSERT_TRUE(conn.ok());
  client_t.reset();  // joins I/O threads; on_close runs with kAborted
  ASSERT_EQ(client.closes.size(), 1u);
  EXPECT_EQ(client.closes[0].code(), StatusCode::kAborted);
  EXPECT_EQ(conn.value()->Send(Pattern(1, 0)).code(), StatusCode::kClosed);
  ASSERT_TRUE(server->signal_.WaitUntil([&] { return server->closes_.size() == 1; }));
}

TEST(TcpTransport, ConnectRefusedAndRdmaUnavailableAreReported) {
  LogCapture log;
  Client client;
  auto t = MakeTransport(TestOptions(&log));
  auto listener = t->Listen("tcp://127.0.0.1:0", [](const auto&) { return ConnectionHandlers{}; });
  ASSERT_TRUE(listener.ok());
  const uint16_t port = listener.value()->endpoint().port;
  listener.value().reset();  // nobody listens there now
  auto refused = t->Connect("tcp://127.0.0.1:" + std::to_string(port), client.Handlers());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("connect("), std::string::npos);
  if (!Transport::RdmaDeviceAvailable()) {
    auto rdma = t->Connect("rdma://127.0.0.1:1", client.Handlers());
    EXPECT_EQ(rdma.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(rdma.status().message().find("no usable RDMA device"), std::string::npos);
  }
}

}  // namespace
}  // namespace strata::rdma::test
