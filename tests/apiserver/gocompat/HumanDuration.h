// duration.HumanDuration of k8s.io/apimachinery: the AGE and LAST SEEN text kubectl shows, which
// the server computes in the Table cells it returns.
#pragma once

#include <cstdint>
#include <string>

namespace apiserver {

std::string human_duration(int64_t seconds);  // "42s", "5m3s", "3h", "2d4h", "3y"...

}  // namespace apiserver
