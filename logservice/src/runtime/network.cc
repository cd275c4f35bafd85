// TransportNetwork: the Network of logserviced and of the client library
// (network.h): an rdma::Transport, on SystemRuntime().
#include "runtime/network.h"

#include "runtime/runtime.h"

namespace strata::logservice {
namespace {

class TransportNetworkImpl final : public Network {
 public:
  TransportNetworkImpl(std::unique_ptr<rdma::Transport> owned, rdma::Transport* t)
      : owned_(std::move(owned)), t_(t), rt_(SystemRuntime()) {}
  Runtime& runtime() override { return *rt_; }
  rdma::Result<std::unique_ptr<rdma::Listener>> Listen(std::string_view address,
                                                       rdma::AcceptHandler on_accept) override {
    return t_->Listen(address, std::move(on_accept));
  }
  rdma::Result<std::shared_ptr<rdma::Connection>> Connect(std::string_view address,
                                                          rdma::ConnectionHandlers handlers) override {
    return t_->Connect(address, std::move(handlers));
  }

 private:
  std::unique_ptr<rdma::Transport> owned_;  // null when borrowed
  rdma::Transport* t_;
  std::shared_ptr<Runtime> rt_;
};

}  // namespace

rdma::Result<std::unique_ptr<Network>> TransportNetwork(rdma::TransportOptions options) {
  auto t = rdma::Transport::Create(std::move(options));
  if (!t.ok()) return t.status();
  rdma::Transport* raw = t.value().get();
  return std::unique_ptr<Network>(new TransportNetworkImpl(std::move(t.value()), raw));
}

std::unique_ptr<Network> BorrowedTransportNetwork(rdma::Transport& transport) {
  return std::make_unique<TransportNetworkImpl>(nullptr, &transport);
}

}  // namespace strata::logservice
