// libFuzzer target: the frame parser and the handshake payload decoders, the
// code that sees untrusted network bytes first. Feeds the input as a byte
// stream cut at fuzzer-chosen points, as TCP may deliver it, and checks the
// parser's invariants (no frame beyond the input, limits respected).
//
//   clang++ build: cmake -DCMAKE_CXX_COMPILER=clang++ ...; ./rdma_frame_fuzz -max_total_time=30
// Any compiler: linked with fuzz/standalone_fuzz_main.cc it runs seeded,
// mutation-based rounds as the ctest rdma.FrameParserFuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <span>
#include <vector>

#include "frame_codec.h"
#include "handshake.h"

using namespace strata::rdma;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // First byte picks the limits, so bulk and tiny limits get explored too.
  // Bit 3: before authentication (only handshake frames may pass).
  const FrameLimits limits{data[0] % 2 ? 256u : 65536u, data[0] % 3 ? 4096u : 0u, (data[0] & 8) != 0};
  std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data + 1), reinterpret_cast<const std::byte*>(data + size));
  if (data[0] & 4) {
    // Re-seal checksums so mutations reach the code behind the checksum
    // (random bytes almost never carry a valid CRC32C).
    for (size_t off = 0; off + wire::kHeaderSize <= bytes.size();) {
      const size_t len = DecodeHeader(bytes.data() + off).length;
      if (len > bytes.size() - off - wire::kHeaderSize) break;
      SealHeader(bytes.data() + off, PayloadCrc({bytes.data() + off + wire::kHeaderSize, len}));
      off += wire::kHeaderSize + len;
    }
  }
  std::span<const std::byte> stream(bytes);
  while (!stream.empty()) {
    ParsedFrame frame;
    Status error;
    const ParseOutcome outcome = ParseFrame(stream, limits, &frame, &error);
    if (outcome != ParseOutcome::kFrame) break;
    if (frame.consumed > stream.size() || frame.consumed != wire::kHeaderSize + frame.payload.size()) std::abort();
    if (frame.header.type == wire::FrameType::kData && frame.payload.size() > limits.max_data_payload) std::abort();
    // An unauthenticated peer gets nothing past the header but a handshake
    // frame of at most a control payload.
    if (limits.handshake_only &&
        (frame.payload.size() > wire::kMaxControlPayload ||
         (frame.header.type != wire::FrameType::kChallenge && frame.header.type != wire::FrameType::kAuth &&
          frame.header.type != wire::FrameType::kAccept && frame.header.type != wire::FrameType::kRefuse)))
      std::abort();
    if (frame.header.type == wire::FrameType::kAuth) {
      Nonce nonce{};
      (void)VerifyAuth(frame.payload, "secret", "cluster", nonce);
    }
    if (frame.header.type == wire::FrameType::kAccept) {
      Nonce a{}, b{};
      (void)VerifyAccept(frame.payload, "secret", "cluster", a, b);
    }
    stream = stream.subspan(frame.consumed);
  }
  return 0;
}

// Seed inputs for the standalone driver (libFuzzer takes a corpus
// directory): a valid stream of every frame type, under each limits mode.
extern "C" void StrataFuzzSeeds(std::vector<std::string>* seeds) {
  std::string stream;
  auto add = [&](wire::FrameType type, uint32_t length, uint32_t sequence, uint32_t aux) {
    FrameHeader h;
    h.type = type;
    h.length = length;
    h.sequence = sequence;
    h.aux = aux;
    std::vector<std::byte> f(wire::kHeaderSize + length, std::byte{0x5a});
    EncodeHeader(h, f.data());
    SealHeader(f.data(), PayloadCrc({f.data() + wire::kHeaderSize, length}));
    stream.append(reinterpret_cast<const char*>(f.data()), f.size());
  };
  add(wire::FrameType::kChallenge, wire::kChallengeSize, 0, 0);
  add(wire::FrameType::kAuth, wire::kAuthSize, 0, 0);
  add(wire::FrameType::kAccept, wire::kAcceptSize, 0, 0);
  add(wire::FrameType::kData, 100, 1, 0);
  add(wire::FrameType::kBulk, 200, 2, 64);
  add(wire::FrameType::kCredit, 0, 0, 0);
  add(wire::FrameType::kPing, 0, 0, 0);
  add(wire::FrameType::kClose, 5, 0, 0);
  for (char mode : {'\x00', '\x01', '\x04', '\x05', '\x0c', '\x0d'}) seeds->push_back(std::string(1, mode) + stream);
}
