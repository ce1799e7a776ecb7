// pace: a rate-limited HTTP/1.1 keep-alive load generator for latency at a fixed request rate
// (what wrk2 does; wrk2 is not packaged by Debian). One thread, one connection, blocking I/O.
//
//   pace HOST PORT PATH RATE SECONDS
//
// Request i is *scheduled* at t0 + i/RATE. It is sent at that instant (or as soon as the previous
// response is in, if that came late) and its latency is measured from the scheduled instant, so a
// slow response also counts against the requests queued behind it (no coordinated omission).
// Prints one JSON line: counts, achieved rate and latency percentiles in microseconds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void sleepUntil(int64_t ns) {
  timespec ts{time_t(ns / 1000000000), long(ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

int connectTo(const char* host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends one request and reads one whole response (Content-Length framing). Returns the status
// code, 0 on an I/O error; sets `closeAfter` when the server says Connection: close.
int roundTrip(int fd, const std::string& request, std::string& buf, bool& closeAfter) {
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) return 0;
  buf.clear();
  size_t headerEnd = std::string::npos;
  size_t need = 0;
  char chunk[16384];
  for (;;) {
    if (headerEnd == std::string::npos) {
      headerEnd = buf.find("\r\n\r\n");
      if (headerEnd != std::string::npos) {
        std::string head = buf.substr(0, headerEnd);
        for (auto& c : head)
          c = char(std::tolower(static_cast<unsigned char>(c)));
        auto cl = head.find("content-length:");
        size_t len =
            cl == std::string::npos ? 0 : std::strtoul(head.c_str() + cl + 15, nullptr, 10);
        closeAfter = head.find("connection: close") != std::string::npos;
        need = headerEnd + 4 + len;
      }
    }
    if (headerEnd != std::string::npos && buf.size() >= need) break;
    ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return 0;
    buf.append(chunk, size_t(n));
  }
  return std::atoi(buf.c_str() + 9);  // "HTTP/1.1 200"
}

int64_t percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = size_t(p / 100.0 * double(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: pace HOST PORT PATH RATE SECONDS\n");
    return 2;
  }
  const char* host = argv[1];
  const int port = std::atoi(argv[2]);
  const std::string path = argv[3];
  const double rate = std::atof(argv[4]);
  const double seconds = std::atof(argv[5]);
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + argv[2] +
                              "\r\nUser-Agent: pace\r\nAccept: */*\r\n\r\n";
  int fd = connectTo(host, port);
  if (fd < 0) {
    std::fprintf(stderr, "pace: cannot connect to %s:%d: %s\n", host, port, std::strerror(errno));
    return 1;
  }
  std::string buf;
  bool closeAfter = false;
  // Warm-up: 200 requests, not recorded.
  for (int i = 0; i < 200; ++i) {
    if (roundTrip(fd, request, buf, closeAfter) == 0 || closeAfter) {
      close(fd);
      fd = connectTo(host, port);
    }
  }
  const int64_t interval = int64_t(1e9 / rate);
  const size_t total = size_t(rate * seconds);
  std::vector<int64_t> lat;
  lat.reserve(total);
  size_t errors = 0, reconnects = 0, non200 = 0;
  const int64_t t0 = nowNs() + 1000000;
  for (size_t i = 0; i < total; ++i) {
    const int64_t scheduled = t0 + int64_t(i) * interval;
    if (nowNs() < scheduled) sleepUntil(scheduled);
    int code = fd < 0 ? 0 : roundTrip(fd, request, buf, closeAfter);
    const int64_t done = nowNs();
    if (code == 0) {
      ++errors;
    } else {
      if (code != 200) ++non200;
      lat.push_back(done - scheduled);
    }
    if (code == 0 || closeAfter) {
      if (fd >= 0) close(fd);
      fd = connectTo(host, port);
      ++reconnects;
    }
  }
  const int64_t elapsed = nowNs() - t0;
  if (fd >= 0) close(fd);
  std::sort(lat.begin(), lat.end());
  auto us = [](int64_t ns) { return double(ns) / 1000.0; };
  std::printf(
      "{\"requests\":%zu,\"errors\":%zu,\"non200\":%zu,\"reconnects\":%zu,\"rate\":%.1f,"
      "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f}\n",
      lat.size(), errors, non200, reconnects, double(lat.size() + errors) / (double(elapsed) / 1e9),
      us(percentile(lat, 50)), us(percentile(lat, 90)), us(percentile(lat, 99)),
      us(percentile(lat, 99.9)), us(lat.empty() ? 0 : lat.back()));
  return errors == 0 && non200 == 0 ? 0 : 1;
}
