// Host names: HttpsClient looks them up through its HostResolver, in production
// WorkerHostResolver (getaddrinfo on the runtime::BlockingWorker, the answer back on the loop),
// never with asio's resolver and its private thread. "localhost" against a local TLS server
// whose certificate names it; failed lookups; and a connection that closes while its lookup
// waits or runs (the answer is dropped, a lookup not yet started is skipped). Slow lookups wait
// on a gate the test opens.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "Fetch.h"
#include "ScriptedServer.h"
#include "TestCertificates.h"
#include "ThreadCount.h"
#include "net/WorkerHostResolver.h"
#include "runtime/BlockingWorker.h"

namespace leasehold::net::test {
namespace {

using Kind = HttpsClient::Error::Kind;
using Answer = HostResolver::Answer;
using namespace std::chrono_literals;

using leasehold::testing::threadsInProcess;

// Lookups the test sees: which hosts, on which thread, and (when closed) held until it opens.
class ObservedLookUp {
 public:
  explicit ObservedLookUp(bool gated = false) : open_(!gated) {}

  Answer operator()(const std::string& host, std::uint16_t port) {
    {
      std::unique_lock lock(mutex_);
      hosts_.push_back(host);
      threads_.push_back(std::this_thread::get_id());
      changed_.notify_all();
      if (!changed_.wait_for(lock, 10s, [this] { return open_; })) {
        ADD_FAILURE() << "the gate never opened";
      }
    }
    Answer answer = scripted_ ? *scripted_ : WorkerHostResolver::getAddrInfo(host, port);
    returned_ = true;
    return answer;
  }
  void answerWith(Answer answer) { scripted_ = std::move(answer); }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  bool waitStarted() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [this] { return !hosts_.empty(); });
  }
  std::vector<std::string> hosts() const {
    std::lock_guard lock(mutex_);
    return hosts_;
  }
  std::vector<std::thread::id> threads() const {
    std::lock_guard lock(mutex_);
    return threads_;
  }
  bool returned() const { return returned_; }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool open_;
  std::optional<Answer> scripted_;
  std::vector<std::string> hosts_;
  std::vector<std::thread::id> threads_;
  std::atomic<bool> returned_{false};
};

class HttpsClientResolveTest : public ::testing::Test {
 protected:
  const TestCertificates& certs = TestCertificates::get();
  boost::asio::io_context io;
  ScriptedServer server{io, ScriptedServer::Tls{certs.server.certPem, certs.server.keyPem, ""},
                        [](std::shared_ptr<ScriptedConnection> connection, const std::string&) {
                          connection->write(ScriptedServer::response(200, "hello"));
                        }};
  // Declared after what the jobs use: destroyed (and drained) first.
  runtime::BlockingWorker worker{
      [this](std::function<void()> f) { boost::asio::post(io, std::move(f)); }};

  // The lookup through a shared_ptr: the worker's job holds a copy of the LookUp function.
  WorkerHostResolver resolverWith(std::shared_ptr<ObservedLookUp> lookUp) {
    return WorkerHostResolver(worker, [lookUp](const std::string& host, std::uint16_t port) {
      return (*lookUp)(host, port);
    });
  }
  HttpsClient::Options with(HostResolver& resolver) {
    HttpsClient::Options options;
    options.resolver = &resolver;
    return options;
  }
  TlsOptions trustingTheCa() {
    TlsOptions tls;
    tls.caPem = certs.caPem;
    return tls;
  }
  std::string byName() { return "https://localhost:" + std::to_string(server.port()); }
};

TEST_F(HttpsClientResolveTest, ResolvesLocalhostOnTheWorkerAndVerifiesTheName) {
  const auto before = threadsInProcess();
  auto lookUp = std::make_shared<ObservedLookUp>();
  auto resolver = resolverWith(lookUp);
  HttpsClient client(io, byName(), trustingTheCa(), with(resolver));
  auto result = fetch(io, client, get("/x"));
  ASSERT_TRUE(result);
  ASSERT_TRUE(result->ok()) << result->error().message;
  EXPECT_EQ(result->response().body, "hello");
  EXPECT_EQ(server.lastConnection()->sni(), "localhost") << "the name, not the address";
  EXPECT_EQ(lookUp->hosts(), (std::vector<std::string>{"localhost"}));
  ASSERT_EQ(lookUp->threads().size(), 1u);
  EXPECT_NE(lookUp->threads().front(), std::this_thread::get_id()) << "getaddrinfo on the loop";
  EXPECT_EQ(threadsInProcess(), before + 1) << "the worker's thread and no other (asio's "
                                               "resolver would have started one more)";

  // The keep-alive connection is reused: no second lookup.
  auto again = fetch(io, client, get("/y"));
  ASSERT_TRUE(again && again->ok());
  EXPECT_EQ(server.accepts(), 1);
  EXPECT_EQ(lookUp->hosts().size(), 1u);
}

TEST_F(HttpsClientResolveTest, AStreamResolvesThroughTheResolverToo) {
  auto lookUp = std::make_shared<ObservedLookUp>();
  auto resolver = resolverWith(lookUp);
  HttpsClient client(io, byName(), trustingTheCa(), with(resolver));
  int status = 0;
  bool ended = false;
  auto handle = client.stream(
      get("/watch"), {[&](int s, const HttpHeaders&) { status = s; }, [](std::string_view) {},
                      [&](std::optional<HttpsClient::Error> error) {
                        EXPECT_FALSE(error) << error->message;
                        ended = true;
                      }});
  ASSERT_TRUE(runUntil(io, [&] { return ended; }));
  EXPECT_EQ(status, 200);
  EXPECT_EQ(lookUp->hosts(), (std::vector<std::string>{"localhost"}));
}

TEST_F(HttpsClientResolveTest, AFailedLookupIsAConnectErrorNamingTheHost) {
  auto lookUp = std::make_shared<ObservedLookUp>();
  lookUp->answerWith(Answer{{}, "Name or service not known"});
  auto resolver = resolverWith(lookUp);
  HttpsClient client(io, "https://api.example.invalid:6443", trustingTheCa(), with(resolver));
  auto result = fetch(io, client, get("/x"));
  ASSERT_TRUE(result);
  ASSERT_FALSE(result->ok());
  EXPECT_EQ(result->error().kind, Kind::Connect);
  EXPECT_EQ(result->error().message,
            "cannot resolve api.example.invalid: Name or service not known");
}

TEST_F(HttpsClientResolveTest, AnAnswerWithoutUsableAddressesIsAConnectError) {
  auto lookUp = std::make_shared<ObservedLookUp>();
  lookUp->answerWith(Answer{{"not-an-address"}, std::nullopt});
  auto resolver = resolverWith(lookUp);
  HttpsClient client(io, byName(), trustingTheCa(), with(resolver));
  auto result = fetch(io, client, get("/x"));
  ASSERT_TRUE(result && !result->ok());
  EXPECT_EQ(result->error().kind, Kind::Connect);
  EXPECT_EQ(result->error().message, "cannot resolve localhost: no usable address");
}

TEST_F(HttpsClientResolveTest, WithoutAResolverAHostNameFailsAndAnIpLiteralNeedsNone) {
  HttpsClient byNameOnly(io, byName(), trustingTheCa());
  std::optional<HttpsClient::Result> result;
  byNameOnly.request(get("/x"), [&](HttpsClient::Result r) { result = std::move(r); });
  EXPECT_FALSE(result) << "never inside request()";
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  ASSERT_FALSE(result->ok());
  EXPECT_EQ(result->error().kind, Kind::Connect);
  EXPECT_EQ(result->error().message, "cannot resolve localhost: no host resolver configured");

  HttpsClient byAddress(io, server.url(), trustingTheCa());
  auto literal = fetch(io, byAddress, get("/x"));
  ASSERT_TRUE(literal);
  EXPECT_TRUE(literal->ok()) << literal->error().message;
  EXPECT_FALSE(worker.started()) << "an IP literal is never looked up";
}

TEST_F(HttpsClientResolveTest, ADeadlineDuringTheLookupFailsTheRequestAndTheLateAnswerIsDropped) {
  auto lookUp = std::make_shared<ObservedLookUp>(/*gated=*/true);
  auto resolver = resolverWith(lookUp);
  HttpsClient client(io, byName(), trustingTheCa(), with(resolver));
  auto request = get("/x");
  request.deadline = 200ms;
  int calls = 0;
  std::optional<HttpsClient::Result> result;
  client.request(request, [&](HttpsClient::Result r) {
    calls++;
    result = std::move(r);
  });
  ASSERT_TRUE(lookUp->waitStarted());  // getaddrinfo "hangs" on the worker...
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));  // ...the loop does not
  ASSERT_FALSE(result->ok());
  EXPECT_EQ(result->error().kind, Kind::Timeout) << result->error().message;

  lookUp->open();  // the answer comes after all, for a connection that is closed
  ASSERT_TRUE(runUntil(io, [&] { return lookUp->returned(); }));
  runFor(io, 50ms);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(server.accepts(), 0) << "a closed connection must not connect with a late answer";
}

TEST_F(HttpsClientResolveTest, ALookupAbandonedBeforeItStartsIsSkipped) {
  // The worker is busy with something else (a slow status file write, say)...
  auto busy = std::make_shared<ObservedLookUp>(/*gated=*/true);
  worker.run([busy] { return (*busy)("busy", 0); }, [](Answer) {});
  ASSERT_TRUE(busy->waitStarted());
  auto lookUp = std::make_shared<ObservedLookUp>();
  auto resolver = resolverWith(lookUp);
  HttpsClient client(io, byName(), trustingTheCa(), with(resolver));
  std::optional<HttpsClient::Result> result;
  client.request(get("/x"), [&](HttpsClient::Result r) { result = std::move(r); });
  // ...so the lookup waits in the queue when the client shuts down.
  client.shutdown();
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_EQ(result->error().kind, Kind::Cancelled);

  bool after = false;
  busy->open();
  worker.run([] { return 0; }, [&](int) { after = true; });  // behind the skipped lookup
  ASSERT_TRUE(runUntil(io, [&] { return after; }));
  EXPECT_TRUE(lookUp->hosts().empty()) << "getaddrinfo ran for a connection already closed";
  EXPECT_EQ(server.accepts(), 0);
}

TEST_F(HttpsClientResolveTest, DestroyingTheClientWhileItsLookupRunsIsSafe) {
  auto lookUp = std::make_shared<ObservedLookUp>(/*gated=*/true);
  auto resolver = resolverWith(lookUp);
  bool called = false;
  {
    HttpsClient client(io, byName(), trustingTheCa(), with(resolver));
    client.request(get("/x"), [&](HttpsClient::Result) { called = true; });
    auto handle = client.stream(get("/watch"), {nullptr, nullptr, [&](auto) { called = true; }});
    ASSERT_TRUE(lookUp->waitStarted());
  }  // gone, with one lookup running and one queued
  lookUp->open();
  ASSERT_TRUE(runUntil(io, [&] { return lookUp->returned(); }));
  runFor(io, 50ms);
  EXPECT_FALSE(called) << "a destroyed client calls nothing back";
  EXPECT_EQ(server.accepts(), 0);
}

}  // namespace
}  // namespace leasehold::net::test
