#include "kube/ApiTransport.h"

namespace leasehold::kube {

std::string ApiResponse::describe() const {
  if (code == 0) return "no answer: " + error;
  std::string out = std::to_string(code);
  if (status && !status->reason.empty()) out += " " + status->reason;
  if (status && !status->message.empty()) {
    out += ": " + status->message;
  } else if (!error.empty()) {
    out += ": " + error;
  }
  return out;
}

}  // namespace leasehold::kube
