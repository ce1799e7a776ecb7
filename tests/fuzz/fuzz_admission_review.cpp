// `leasehold inject`'s AdmissionReviewHandler on arbitrary bytes, with the chart's parameters.
// Every answer is a 400 or an admission.k8s.io/v1 AdmissionReview for the request's uid; a patch
// decodes, applies to request.object as RFC 6902 says (nlohmann's patch), and the patched pod,
// reviewed again, is left alone (what reinvocation relies on).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "FuzzCheck.h"
#include "InjectorParamsData.h"
#include "inject/AdmissionReviewHandler.h"
#include "net/Base64.h"

#include <nlohmann/json.hpp>

using namespace leasehold;
using nlohmann::json;

namespace {

const inject::ParamsState& chartParams() {
  static const inject::ParamsState params = [] {
    auto parsed = inject::InjectorParams::fromData(inject::testing::injectorParamsData());
    return inject::ParamsState(std::get<inject::InjectorParams>(parsed));
  }();
  return params;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const auto reply = inject::AdmissionReviewHandler::handle(body, chartParams());
  FUZZ_CHECK(reply.httpStatus == 200 || reply.httpStatus == 400,
             "status " + std::to_string(reply.httpStatus));
  if (reply.httpStatus == 400) {
    FUZZ_CHECK(!reply.body.empty() && reply.body.back() == '\n', reply.body);
    return 0;
  }
  const json out = json::parse(reply.body);  // ours: always JSON
  const json review = json::parse(body);
  const json& response = out.at("response");
  FUZZ_CHECK(out.at("apiVersion") == "admission.k8s.io/v1" && out.at("kind") == "AdmissionReview",
             reply.body);
  FUZZ_CHECK(response.at("uid") == review.at("request").at("uid"), reply.body);
  if (!response.contains("patch")) return 0;
  FUZZ_CHECK(response.at("allowed") == true, reply.body);
  const auto patch = net::Base64::decode(response.at("patch").get<std::string>());
  FUZZ_CHECK(patch.has_value(), reply.body);
  json patched;
  try {
    patched = review.at("request").at("object").patch(json::parse(*patch));
  } catch (const json::exception& e) {
    FUZZ_CHECK(false, std::string("the patch does not apply: ") + e.what() + "\n" + *patch);
  }
  json again = review;
  again["request"]["object"] = patched;
  const auto second = inject::AdmissionReviewHandler::handle(again.dump(), chartParams());
  const json secondOut = json::parse(second.body);
  FUZZ_CHECK(second.httpStatus == 200 && !secondOut.at("response").contains("patch"),
             "reviewed again, the injected pod is patched again: " + second.body);
  return 0;
}
