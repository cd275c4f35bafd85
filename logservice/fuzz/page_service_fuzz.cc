// Fuzz target: the page server's parsers of bytes from outside: the page
// service codec (src/pageserver/service/page_wire.h: what a compute, a
// seeding tool or anyone holding the cluster secret sends) and the fake redo
// helper's parser (fake_redo.h: bytes from the log). Checked invariants:
// nothing crashes or reads past its input; an accepted message re-encodes to
// exactly its bytes; the parser's records and parsed_to stay inside the
// input, groups in order, every record inside its group's [start, end).
//
// libFuzzer (clang): build page_service_fuzz, run it on a corpus dir.
// Any compiler: page_service_fuzz_smoke runs seeded mutation rounds
// (rdma/fuzz/standalone_fuzz_main.cc) as the ctest pageserver.PageServiceFuzz.
// The first input byte picks the parser (even: codec, odd: fake redo).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fake_redo.h"
#include "page_codec.h"

using namespace strata::pageserver;

namespace {
[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "page_service_fuzz: invariant broken: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    svc::Frame f;
    if (svc::Decode(in, &f).ok() && svc::Encode(f) != in) Fail("an accepted message does not re-encode to its bytes");
  } else {
    FakeRedoHelper h(4096);
    const Lsn from = 1000;
    auto p = h.Parse(from, in);
    if (p.ok()) {
      if (p->parsed_to < from || p->parsed_to > from + in.size()) Fail("parsed_to outside the input");
      Lsn last_end = from;
      for (const auto& r : p->records) {
        if (r.start_lsn < from || r.end_lsn > p->parsed_to || r.start_lsn >= r.end_lsn || r.end_lsn < last_end)
          Fail("a record outside its group or out of order");
        last_end = r.end_lsn;
        (void)h.Apply(r.page, std::nullopt, {r});
      }
    }
  }
  return 0;
}

extern "C" void StrataFuzzSeeds(std::vector<std::string>* seeds) {
  svc::Frame g;
  g.type = wire::MsgType::kGetPagesReq;
  g.lsn = 99;
  g.pages = {{1, 2, 3}, {4, 5, 6}};
  seeds->push_back(std::string(1, '\0') + svc::Encode(g));
  svc::Frame r;
  r.type = wire::MsgType::kGetPageResp;
  r.results = {{wire::Code::kOk, "", 9, 8, 0, std::string(64, 'p')}};
  seeds->push_back(std::string(1, '\0') + svc::Encode(r));
  svc::Frame put;
  put.type = wire::MsgType::kPutImagesReq;
  put.lsn = 5;
  put.images = {{1, 2, "image"}};
  seeds->push_back(std::string(1, '\0') + svc::Encode(put));
  using W = FakeRedoHelper;
  seeds->push_back(std::string(1, '\1') + W::Group({{W::kCreate, 1, 8, 0, "t"}, {W::kWrite, 1, 2, 30, "abc"}}) +
                   W::Group({{W::kDelete, 1, 0, 0, ""}}));
}
