#include "publish/Metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>

namespace leasehold::publish {
namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

long residentBytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

Metrics::Metrics() {
  using namespace std::chrono;
  startTimeSeconds_ =
      duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

void Metrics::renewal(bool ok, double seconds) {
  if (!ok) {
    renewFailed_++;
    return;
  }
  renewOk_++;
  renewCount_++;
  renewSum_ += seconds;
  for (std::size_t i = 0; i < kBuckets.size(); i++) {
    if (seconds <= kBuckets[i]) renewBuckets_[i]++;
  }
}

std::string Metrics::render(const election::Leadership& now) const {
  std::string out;
  out.reserve(4096);
  header(out, "leasehold_is_leader", "gauge", "1 while this replica claims leadership.");
  out += "leasehold_is_leader " + std::string(now.leader ? "1" : "0") + "\n";
  header(out, "leasehold_fencing_token", "gauge",
         "leaseTransitions of the current term (ours when leader, else the observed holder's).");
  out += "leasehold_fencing_token " +
         (now.fencingToken ? std::to_string(*now.fencingToken) : std::string("-1")) + "\n";
  header(out, "leasehold_leader_changes_total", "counter", "Changes of the observed holder.");
  out += "leasehold_leader_changes_total " + std::to_string(leaderChanges_) + "\n";
  header(out, "leasehold_acquisitions_total", "counter", "Terms this replica acquired.");
  out += "leasehold_acquisitions_total " + std::to_string(acquisitions_) + "\n";
  header(out, "leasehold_renewals_total", "counter", "Renewal attempts by result.");
  out += "leasehold_renewals_total{result=\"success\"} " + std::to_string(renewOk_) + "\n";
  out += "leasehold_renewals_total{result=\"failure\"} " + std::to_string(renewFailed_) + "\n";
  header(out, "leasehold_renew_duration_seconds", "histogram",
         "Round trip of successful renewals.");
  for (std::size_t i = 0; i < kBuckets.size(); i++) {
    out += "leasehold_renew_duration_seconds_bucket{le=\"" + number(kBuckets[i]) + "\"} " +
           std::to_string(renewBuckets_[i]) + "\n";
  }
  out +=
      "leasehold_renew_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(renewCount_) + "\n";
  out += "leasehold_renew_duration_seconds_sum " + number(renewSum_) + "\n";
  out += "leasehold_renew_duration_seconds_count " + std::to_string(renewCount_) + "\n";
  header(out, "leasehold_api_requests_total", "counter",
         "Kubernetes API requests by verb and HTTP code (0 = no answer).");
  for (const auto& [key, count] : api_) {
    out += "leasehold_api_requests_total{verb=\"" + key.first + "\",code=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  header(out, "process_cpu_seconds_total", "counter", "User and system CPU time spent.");
  out += "process_cpu_seconds_total " + number(cpu) + "\n";
  header(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  out += "process_resident_memory_bytes " + std::to_string(residentBytes()) + "\n";
  header(out, "process_start_time_seconds", "gauge", "Start time since the Unix epoch.");
  out += "process_start_time_seconds " + number(startTimeSeconds_) + "\n";
  if (extra_) out += extra_();
  return out;
}

}  // namespace leasehold::publish
