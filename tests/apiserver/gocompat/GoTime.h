// Go's time.Parse and time.Format for the two layouts Kubernetes uses (metav1.Time, RFC3339, and
// metav1.MicroTime, RFC3339Micro), with Go's error texts, so that a bad timestamp in a request
// body gets the real server's 400; and the wall clock the server stamps objects with.
#pragma once

#include <cstdint>
#include <string>

namespace apiserver {

// time.Parse of Go for the layouts RFC3339Micro ("2006-01-02T15:04:05.000000Z07:00", micro=true)
// and RFC3339 ("2006-01-02T15:04:05Z07:00"), with Go's error texts.
struct GoTime {
  bool ok = false;
  int64_t unix_s = 0;
  int64_t nanos = 0;
  std::string err;  // "parsing time ..." when !ok
};
GoTime go_parse_time(const std::string& value, bool micro);
std::string format_micro(int64_t unix_s, int64_t nanos);  // 2006-01-02T15:04:05.000000Z
std::string format_rfc3339(int64_t unix_s);               // 2006-01-02T15:04:05Z
int64_t unix_now_s();
std::string rfc3339_now();  // creationTimestamp, managedFields time
int64_t now_ms();           // wall clock in ms (token grace windows)

}  // namespace apiserver
