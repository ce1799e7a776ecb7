// leasehold-test-apiserver: a stand-in kube-apiserver for tests (see README.md beside this file).
// main: the flags, the TLS context, the two listeners (API, control), SIGHUP and the 0.5 s token
// file check, SIGINT/SIGTERM. One io_context thread, one coroutine per connection (server/).
#include <signal.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>

#include "json/Json.h"
#include "server/AcceptLoop.h"
#include "server/ServerState.h"
#include "server/TlsContext.h"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using apiserver::J;
using namespace std::chrono_literals;

namespace {

void usage() {
  std::cout <<
      R"(leasehold-test-apiserver: a stand-in kube-apiserver for tests (Leases, Events, Pods).

  --address ADDR          listen address (default 127.0.0.1)
  --port N                HTTPS port (default 0 = pick one)
  --control-port N        plain-HTTP control port on 127.0.0.1 (default 0 = pick one)
  --tls-cert FILE         server certificate chain (PEM); without it the API is plain HTTP
  --tls-key FILE          private key (PEM)
  --token-file FILE       lines token,user[,uid[,"group1,group2"]]; user admin or group
                          system:masters = full rights; re-read when it changes or on SIGHUP
  --token TOKEN=USER      add a token (repeatable; USER admin = full rights)
  --token-grace SECONDS   removed tokens keep working this long (default 0)
  --rbac FILE             Role/ClusterRole/RoleBinding/ClusterRoleBinding/ServiceAccount YAML
                          (repeatable)
  --pods FILE             seed Pods (JSON or YAML: a Pod, a list, or a PodList)
  --pod NS/NAME[=IP]      seed one Pod (repeatable)
  --watch-history N       watch cache window in events per resource (default 1000)
  --latency-ms N          delay every API request by N ms
  --deny USER:VERB:RESOURCE  always forbid (repeatable; * wildcards)
The first stdout line is {"port":N,"controlPort":M}. See tests/apiserver/README.md.
)";
}

}  // namespace

int main(int argc, char** argv) {
  std::string address = "127.0.0.1", cert, key;
  int port = 0, control_port = 0;
  auto S = std::make_unique<apiserver::ServerState>();
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      std::string a = args[i];
      std::string val;
      auto eq = a.find('=');
      bool inline_val = a.rfind("--", 0) == 0 && eq != std::string::npos;
      if (inline_val) {
        val = a.substr(eq + 1);
        a = a.substr(0, eq);
      }
      auto next = [&]() -> std::string {
        if (inline_val) return val;
        if (i + 1 >= args.size()) throw std::runtime_error(a + " needs a value");
        return args[++i];
      };
      std::string err;
      if (a == "--help" || a == "-h") {
        usage();
        return 0;
      } else if (a == "--address") {
        address = next();
      } else if (a == "--port") {
        port = std::stoi(next());
      } else if (a == "--control-port") {
        control_port = std::stoi(next());
      } else if (a == "--tls-cert") {
        cert = next();
      } else if (a == "--tls-key") {
        key = next();
      } else if (a == "--token-file") {
        if (!S->api.load_tokens(next(), err)) throw std::runtime_error(err);
      } else if (a == "--token") {
        std::string t = next();
        auto p = t.find('=');
        if (p == std::string::npos) throw std::runtime_error("--token wants TOKEN=USER");
        apiserver::TokenEntry e;
        e.user = t.substr(p + 1);
        e.admin = e.user == "admin";
        S->api.add_token(t.substr(0, p), e);
      } else if (a == "--token-grace") {
        S->api.set_token_grace(std::stoi(next()));
      } else if (a == "--rbac") {
        if (!S->api.load_rbac(next(), err)) throw std::runtime_error(err);
      } else if (a == "--pods") {
        if (!S->api.load_pods(next(), err)) throw std::runtime_error(err);
      } else if (a == "--pod") {
        if (!S->api.add_pod_spec(next(), err)) throw std::runtime_error(err);
      } else if (a == "--watch-history") {
        S->api.set_watch_history(static_cast<size_t>(std::stoul(next())));
      } else if (a == "--latency-ms") {
        S->global_latency_ms = std::stoi(next());
      } else if (a == "--deny") {
        S->api.add_deny(next());
      } else {
        throw std::runtime_error("unknown flag " + a + " (see --help)");
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "leasehold-test-apiserver: " << e.what() << "\n";
    return 2;
  }

  net::io_context io(1);
  std::unique_ptr<ssl::context> tls;
  try {
    if (!cert.empty()) {
      tls = apiserver::make_tls_context(cert, key);
    }
  } catch (const std::exception& e) {
    std::cerr << "leasehold-test-apiserver: TLS setup: " << e.what() << "\n";
    return 2;
  }
  tcp::acceptor api_acc(io), ctl_acc(io);
  try {
    tcp::endpoint ep(net::ip::make_address(address), static_cast<unsigned short>(port));
    api_acc.open(ep.protocol());
    api_acc.set_option(net::socket_base::reuse_address(true));
    api_acc.bind(ep);
    api_acc.listen();
    if (control_port >= 0) {
      tcp::endpoint cep(net::ip::make_address("127.0.0.1"),
                        static_cast<unsigned short>(control_port));
      ctl_acc.open(cep.protocol());
      ctl_acc.set_option(net::socket_base::reuse_address(true));
      ctl_acc.bind(cep);
      ctl_acc.listen();
    }
  } catch (const std::exception& e) {
    std::cerr << "leasehold-test-apiserver: listen: " << e.what() << "\n";
    return 2;
  }
  J hello = J{{"port", api_acc.local_endpoint().port()},
              {"controlPort", ctl_acc.is_open() ? ctl_acc.local_endpoint().port() : 0}};
  std::cout << apiserver::dumps(hello) << std::endl;

  net::co_spawn(io, apiserver::accept_loop(api_acc, *S, tls.get(), false), net::detached);
  if (ctl_acc.is_open())
    net::co_spawn(io, apiserver::accept_loop(ctl_acc, *S, nullptr, true), net::detached);

  net::signal_set stop(io, SIGINT, SIGTERM);
  stop.async_wait([&](const beast::error_code&, int) { io.stop(); });
  net::signal_set hup(io, SIGHUP);
  std::function<void()> arm_hup = [&] {
    hup.async_wait([&](const beast::error_code& ec, int) {
      if (ec) return;
      S->api.maybe_reload_tokens(true);
      arm_hup();
    });
  };
  arm_hup();
  net::steady_timer reload(io);
  std::function<void()> arm_reload = [&] {
    reload.expires_after(500ms);
    reload.async_wait([&](const beast::error_code& ec) {
      if (ec) return;
      S->api.maybe_reload_tokens(false);
      arm_reload();
    });
  };
  arm_reload();
  ::signal(SIGPIPE, SIG_IGN);
  io.run();
  return 0;
}
