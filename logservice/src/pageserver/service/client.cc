// PageServiceClient: contract in include/strata/pageserver/client.h. One
// rdma connection; requests carry ids, replies are matched on the
// transport's I/O thread and handed to the waiting caller.
#include "strata/pageserver/client.h"

#include <condition_variable>
#include <map>
#include <mutex>

#include "page_codec.h"
#include "rpc.h"
#include "send_path.h"
#include "runtime/network.h"

namespace strata::pageserver {

using svc::Frame;
using wire::MsgType;

static_assert(static_cast<int>(PageCode::kUnavailable) == static_cast<int>(wire::Code::kUnavailable));

const char* PageCodeName(PageCode c) { return svc::CodeName(static_cast<wire::Code>(c)).data(); }

struct PageServiceClient::Impl {
  PageServiceConfig cfg;
  std::unique_ptr<logservice::Network> network;
  std::shared_ptr<rdma::Connection> conn;
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, std::optional<Frame>> pending;
  bool closed = false;
  std::string close_reason;

  void OnMessage(const rdma::Message& m) {
    Frame f;
    const auto payload = m.payload();
    Status s = svc::Decode(std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()), &f);
    std::lock_guard<std::mutex> l(mu);
    if (!s.ok()) {
      closed = true;
      close_reason = "undecodable reply: " + s.message();
    } else if (f.type == MsgType::kErrorResp) {
      closed = true;  // the server closes after it
      close_reason = "the page server refused a message: " + f.error;
    } else if (auto it = pending.find(f.request_id); it != pending.end()) {
      it->second = std::move(f);
    }
    cv.notify_all();
  }
  void OnClose(const rdma::Status& why) {
    std::lock_guard<std::mutex> l(mu);
    closed = true;
    if (close_reason.empty()) close_reason = "connection closed: " + why.message();
    cv.notify_all();
  }

  Result<Frame> Call(Frame req, MsgType want) {
    std::uint64_t id;
    {
      std::lock_guard<std::mutex> l(mu);
      if (closed) return Status::IoError(close_reason);
      id = next_id++;
      pending[id];
    }
    req.request_id = id;
    rdma::Status s = logservice::repl::SendMessage(*conn, svc::Encode(req), cfg.timeout);
    std::unique_lock<std::mutex> l(mu);
    if (!s.ok()) {
      pending.erase(id);
      return Status::IoError("send: " + s.message());
    }
    const bool done = cv.wait_for(l, cfg.timeout, [&] { return closed || pending[id].has_value(); });
    std::optional<Frame> f = std::move(pending[id]);
    pending.erase(id);
    if (!f) return Status::IoError(done ? close_reason : "timeout after " + std::to_string(cfg.timeout.count()) + " ms");
    if (f->type != want) return Status::IoError("reply of type " + std::string(svc::TypeName(f->type)));
    return std::move(*f);
  }
};

namespace {
GetPageResult Convert(svc::PageResult r) {
  GetPageResult g;
  g.code = static_cast<PageCode>(r.code);
  g.error = std::move(r.error);
  g.effective_lsn = r.effective_lsn;
  g.page_lsn = r.page_lsn;
  g.never_written = (r.flags & wire::kNeverWritten) != 0;
  g.image = std::move(r.image);
  return g;
}
SpaceEntry Entry(const svc::SpaceInfo& s) { return SpaceEntry{s.space, s.name, s.size_pages, s.created_lsn, s.deleted_lsn}; }
}  // namespace

Result<std::unique_ptr<PageServiceClient>> PageServiceClient::Connect(const PageServiceConfig& config) {
  auto impl = std::make_shared<Impl>();
  impl->cfg = config;
  auto net = logservice::TransportNetwork(logservice::repl::ReplicationTransportOptions(config.cluster_id, config.secret));
  if (!net.ok()) return Status::InvalidArgument("transport: " + net.status().message());
  impl->network = std::move(net.value());
  std::weak_ptr<Impl> weak = impl;
  rdma::ConnectionHandlers h;
  h.on_message = [weak](rdma::Connection&, const rdma::Message& m) {
    if (auto p = weak.lock()) p->OnMessage(m);
  };
  h.on_close = [weak](rdma::Connection&, const rdma::Status& why) {
    if (auto p = weak.lock()) p->OnClose(why);
  };
  auto c = impl->network->Connect(config.address, std::move(h));
  if (!c.ok()) return Status::IoError("connect " + config.address + ": " + logservice::repl::DescribeTransportError(c.status()));
  impl->conn = std::move(c.value());
  return std::unique_ptr<PageServiceClient>(new PageServiceClient(std::move(impl)));
}

PageServiceClient::PageServiceClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
PageServiceClient::~PageServiceClient() {
  if (impl_->conn) impl_->conn->Close();
  impl_->network.reset();
}

Result<GetPageResult> PageServiceClient::GetPage(std::uint32_t space, std::uint32_t page, Lsn request_lsn, Lsn nms) {
  Frame req;
  req.type = MsgType::kGetPageReq;
  req.lsn = request_lsn;
  req.pages = {svc::PageRequest{space, page, nms}};
  auto r = impl_->Call(std::move(req), MsgType::kGetPageResp);
  if (!r.ok()) return r.status();
  return Convert(std::move(r->results.at(0)));
}

Result<std::vector<GetPageResult>> PageServiceClient::GetPages(Lsn request_lsn, const std::vector<PageToRequest>& pages) {
  if (pages.empty() || pages.size() > wire::kMaxBatch) return Status::InvalidArgument("GetPages takes 1..64 pages");
  Frame req;
  req.type = MsgType::kGetPagesReq;
  req.lsn = request_lsn;
  for (const auto& p : pages) req.pages.push_back(svc::PageRequest{p.space, p.page, p.not_modified_since});
  auto r = impl_->Call(std::move(req), MsgType::kGetPagesResp);
  if (!r.ok()) return r.status();
  if (r->results.size() != pages.size()) return Status::IoError("GetPages answered " + std::to_string(r->results.size()) + " pages");
  std::vector<GetPageResult> out;
  for (auto& x : r->results) out.push_back(Convert(std::move(x)));
  return out;
}

Result<std::vector<SpaceEntry>> PageServiceClient::SpaceList(Lsn lsn) {
  Frame req;
  req.type = MsgType::kSpaceListReq;
  req.lsn = lsn;
  auto r = impl_->Call(std::move(req), MsgType::kSpaceListResp);
  if (!r.ok()) return r.status();
  std::vector<SpaceEntry> out;
  for (const auto& s : r->spaces) out.push_back(Entry(s));
  return out;
}

Result<std::pair<PageCode, SpaceEntry>> PageServiceClient::SpaceSize(std::uint32_t space, Lsn lsn) {
  Frame req;
  req.type = MsgType::kSpaceSizeReq;
  req.lsn = lsn;
  svc::SpaceInfo want;
  want.space = space;
  req.spaces = {want};
  auto r = impl_->Call(std::move(req), MsgType::kSpaceSizeResp);
  if (!r.ok()) return r.status();
  SpaceEntry e;
  e.space = space;
  e.size_pages = r->spaces.empty() ? 0 : r->spaces[0].size_pages;
  return std::make_pair(static_cast<PageCode>(r->code), e);
}

Result<std::pair<bool, SpaceEntry>> PageServiceClient::SpaceExists(std::uint32_t space, Lsn lsn) {
  Frame req;
  req.type = MsgType::kSpaceExistsReq;
  req.lsn = lsn;
  svc::SpaceInfo want;
  want.space = space;
  req.spaces = {want};
  auto r = impl_->Call(std::move(req), MsgType::kSpaceExistsResp);
  if (!r.ok()) return r.status();
  SpaceEntry e = r->spaces.empty() ? SpaceEntry{} : Entry(r->spaces[0]);
  e.space = space;
  return std::make_pair(r->exists, e);
}

Result<std::vector<std::pair<std::string, std::uint64_t>>> PageServiceClient::GetStatus() {
  Frame req;
  req.type = MsgType::kStatusReq;
  auto r = impl_->Call(std::move(req), MsgType::kStatusResp);
  if (!r.ok()) return r.status();
  return std::move(r->status);
}

Result<std::pair<PageCode, std::string>> PageServiceClient::PutImages(
    std::uint64_t epoch, Lsn lsn, const std::vector<std::pair<std::pair<std::uint32_t, std::uint32_t>, std::string>>& images) {
  if (images.empty() || images.size() > wire::kMaxPutImages) return Status::InvalidArgument("PutImages takes 1..64 images");
  Frame req;
  req.type = MsgType::kPutImagesReq;
  req.epoch = epoch;
  req.lsn = lsn;
  for (const auto& [id, img] : images) req.images.push_back(svc::ImagePut{id.first, id.second, img});
  auto r = impl_->Call(std::move(req), MsgType::kPutImagesResp);
  if (!r.ok()) return r.status();
  return std::make_pair(static_cast<PageCode>(r->code), r->error);
}

}  // namespace strata::pageserver
