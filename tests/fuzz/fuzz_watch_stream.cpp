// Watch-stream framing: the bytes of a watch response body, cut into pieces at fuzzer-chosen
// points, go through net::LineSplitter (as LeaseWatch feeds it HTTP chunks) and every line into
// kube::decodeWatchEvent.
//
// Input layout (FuzzedDataProvider): the stream bytes come from the front, the cut points and the
// line limit from the back, so a plain watch body is a valid seed.
//
// Properties: the lines (and the overflow verdict) do not depend on where the stream was cut; an
// event's Lease survives the encode/decode round trip.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "FuzzCheck.h"
#include "kube/LeaseCodec.h"
#include "net/LineSplitter.h"

using namespace leasehold;

namespace {

struct Split {
  std::vector<std::string> lines;
  bool ok = true;
  std::string partial;  // the incomplete last line
};

Split splitWhole(std::string_view stream, std::size_t maxLine) {
  Split out;
  net::LineSplitter splitter(maxLine);
  out.ok = splitter.feed(stream, [&](std::string_view line) { out.lines.emplace_back(line); });
  out.partial = splitter.partial();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  FuzzedDataProvider provider(data, size);
  // Mostly the production limit; sometimes a tiny one so that the overflow path is exercised.
  static constexpr std::size_t kLimits[] = {4 * 1024 * 1024, 1, 16, 100, 1000};
  const std::size_t maxLine = provider.PickValueInArray(kLimits);
  const std::size_t cuts = provider.ConsumeIntegralInRange<std::size_t>(0, 16);
  std::vector<std::size_t> pieceSizes;
  for (std::size_t i = 0; i < cuts; i++)
    pieceSizes.push_back(provider.ConsumeIntegralInRange<std::size_t>(0, 512));
  const std::string stream = provider.ConsumeRemainingBytesAsString();

  net::LineSplitter splitter(maxLine);
  Split pieces;
  std::string_view rest = stream;
  const auto onLine = [&](std::string_view line) {
    FUZZ_CHECK(line.size() <= maxLine, "a line longer than the limit was delivered");
    FUZZ_CHECK(line.find('\n') == std::string_view::npos, "a line contains a line feed");
    pieces.lines.emplace_back(line);
    kube::WatchEvent event;
    std::string error;
    if (kube::decodeWatchEvent(line, event, error)) {
      FUZZ_CHECK(event.type == kube::WatchEvent::Type::kError ? event.status.has_value()
                                                              : !event.status.has_value(),
                 "ERROR events and only they carry a Status");
      if (event.lease) fuzz::checkLeaseRoundTrip(*event.lease);
    } else {
      FUZZ_CHECK(!error.empty(), "decodeWatchEvent failed without a message");
    }
  };
  for (std::size_t i = 0; i <= pieceSizes.size() && pieces.ok; i++) {
    const std::size_t n =
        i < pieceSizes.size() ? std::min(pieceSizes[i], rest.size()) : rest.size();
    pieces.ok = splitter.feed(rest.substr(0, n), onLine);
    rest.remove_prefix(n);
  }
  FUZZ_CHECK(pieces.ok == !splitter.overflowed(), "feed() result and overflowed() disagree");
  pieces.partial = splitter.partial();

  const Split whole = splitWhole(stream, maxLine);
  FUZZ_CHECK(whole.ok == pieces.ok, "the overflow verdict depends on where the stream was cut");
  FUZZ_CHECK(whole.lines == pieces.lines, "the lines depend on where the stream was cut");
  FUZZ_CHECK(whole.partial == pieces.partial, "the pending partial line depends on the cuts");
  return 0;
}
