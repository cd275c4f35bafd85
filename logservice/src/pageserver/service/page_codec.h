// Encode/decode of page service messages (format: page_wire.h). Pure functions.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/logservice/status.h"
#include "strata/logservice/types.h"
#include "page_wire.h"

namespace strata::pageserver::svc {

using logservice::Lsn;
using logservice::Status;

struct PageRequest {
  std::uint32_t space = 0, page = 0;
  Lsn not_modified_since = 0;
  bool operator==(const PageRequest&) const = default;
};

struct PageResult {
  wire::Code code = wire::Code::kOk;
  std::string error;
  Lsn effective_lsn = 0, page_lsn = 0;
  std::uint8_t flags = 0;
  std::string image;
  bool operator==(const PageResult&) const = default;
};

struct SpaceInfo {
  std::uint32_t space = 0;
  std::string name;
  std::uint32_t flags = 0, size_pages = 0;
  Lsn created_lsn = 0, deleted_lsn = 0;
  bool operator==(const SpaceInfo&) const = default;
};

struct ImagePut {
  std::uint32_t space = 0, page = 0;
  std::string image;
  bool operator==(const ImagePut&) const = default;
};

// One message; only its type's fields are encoded.
struct Frame {
  wire::MsgType type = wire::MsgType::kStatusReq;
  wire::Code code = wire::Code::kOk;
  std::uint64_t request_id = 0;
  std::string error;
  Lsn lsn = 0;   // request_lsn (GetPage/GetPages), lsn (Space*, PutImages)
  Lsn epoch = 0; // PutImages
  std::vector<PageRequest> pages;    // GetPageReq (one), GetPagesReq
  std::vector<PageResult> results;   // GetPageResp (one), GetPagesResp
  std::vector<SpaceInfo> spaces;     // SpaceListResp; SpaceSize/ExistsReq use spaces[0].space;
                                     // SpaceSizeResp spaces[0].size_pages; SpaceExistsResp spaces (0 or 1)
  std::vector<std::pair<std::string, std::uint64_t>> status;  // StatusResp
  std::vector<ImagePut> images;      // PutImagesReq
  bool exists = false;               // SpaceExistsResp (with spaces[0]'s created/deleted LSNs)
  bool operator==(const Frame&) const = default;
};

std::string Encode(const Frame& f);
[[nodiscard]] Status Decode(std::string_view bytes, Frame* out);
std::string_view CodeName(wire::Code c);
std::string_view TypeName(wire::MsgType t);

}  // namespace strata::pageserver::svc
