// An open-loop load of many paced clients, as a team's training jobs put on a tracking server:
// each of N keep-alive connections sends POST runs/log-metric once every INTERVAL ms, at a
// phase of its own (drawn with a fixed seed), and the latency of each request is measured from
// the moment it was due, not the moment it went out, so a server that falls behind is charged
// for the wait (no coordinated omission). wrk's delay() is not used for this figure because
// its millisecond timers fire whole groups of connections at once and its latency then includes
// wrk's own queue.
//
// Usage: cairn_bench_paced HOST PORT RUN_ID [CONNECTIONS=256] [INTERVAL_MS=50] [SECONDS=10]
// Prints requests, errors, the achieved rate and latency percentiles in milliseconds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <queue>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Conn {
  int fd = -1;
  bool waiting = false;          // a request is out
  Clock::time_point due;         // when the request out (or the next one) was due
  std::string in;
  int64_t step = 0;
};

// Whether `in` holds a whole answer; sets its status.
bool Complete(const std::string& in, int* status, size_t* length) {
  const size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  *status = std::atoi(in.c_str() + 9);
  size_t body = 0;
  const char* cl = strcasestr(in.c_str(), "\r\ncontent-length:");
  if (cl != nullptr && cl < in.c_str() + end) body = std::strtoul(cl + 17, nullptr, 10);
  *length = end + 4 + body;
  return in.size() >= *length;
}

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(i), v.end());
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s HOST PORT RUN_ID [CONNECTIONS] [INTERVAL_MS] [SECONDS]\n",
                 argv[0]);
    return 2;
  }
  const std::string host = argv[1];
  const int port = std::atoi(argv[2]);
  const std::string run_id = argv[3];
  const int connections = argc > 4 ? std::atoi(argv[4]) : 256;
  const auto interval = std::chrono::milliseconds(argc > 5 ? std::atoi(argv[5]) : 50);
  const auto duration = std::chrono::seconds(argc > 6 ? std::atoi(argv[6]) : 10);

  const int ep = epoll_create1(EPOLL_CLOEXEC);
  std::vector<Conn> conns(static_cast<size_t>(connections));
  std::mt19937_64 rng(42);
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(100);
  using Due = std::pair<Clock::time_point, int>;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> schedule;
  for (int i = 0; i < connections; ++i) {
    Conn& c = conns[static_cast<size_t>(i)];
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      std::perror("connect");
      return 1;
    }
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    c.step = int64_t{i} * 1'000'000'000;
    c.due = start + std::chrono::microseconds(rng() % static_cast<uint64_t>(
                                                         interval.count() * 1000));
    schedule.push({c.due, i});
  }
  const Clock::time_point end = start + duration;
  std::vector<double> latencies_ms;
  long errors = 0;
  char buf[65536];
  epoll_event events[256];

  auto send_request = [&](Conn& c) {
    ++c.step;
    char body[256];
    const int n = std::snprintf(
        body, sizeof(body),
        R"({"run_id":"%s","key":"loss","value":0.25,"timestamp":1700000000000,"step":%lld})",
        run_id.c_str(), static_cast<long long>(c.step));
    std::string req = "POST /api/2.0/mlflow/runs/log-metric HTTP/1.1\r\nHost: " + host + ":" +
                      std::to_string(port) +
                      "\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(n) + "\r\n\r\n" + std::string(body, static_cast<size_t>(n));
    if (write(c.fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) ++errors;
    c.waiting = true;
  };

  for (;;) {
    const Clock::time_point now = Clock::now();
    while (!schedule.empty() && schedule.top().first <= now) {
      const int i = schedule.top().second;
      schedule.pop();
      Conn& c = conns[static_cast<size_t>(i)];
      if (c.due >= end) continue;
      if (!c.waiting) send_request(c);  // else it goes out when the answer before it arrives
    }
    const bool waiting_any = std::any_of(conns.begin(), conns.end(),
                                         [](const Conn& c) { return c.waiting; });
    if (now >= end && !waiting_any) break;
    timespec timeout{0, 1'000'000};
    if (!schedule.empty()) {
      const auto wait = std::max(schedule.top().first - Clock::now(), Clock::duration::zero());
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
      timeout = {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    }
    const int n = epoll_pwait2(ep, events, 256, &timeout, nullptr);
    for (int k = 0; k < n; ++k) {
      Conn& c = conns[events[k].data.u32];
      const ssize_t got = read(c.fd, buf, sizeof(buf));
      if (got <= 0) {
        std::fprintf(stderr, "a connection was closed\n");
        return 1;
      }
      c.in.append(buf, static_cast<size_t>(got));
      int status = 0;
      size_t length = 0;
      if (!c.waiting || !Complete(c.in, &status, &length)) continue;
      const Clock::time_point done = Clock::now();
      if (status != 200) ++errors;
      latencies_ms.push_back(std::chrono::duration<double, std::milli>(done - c.due).count());
      c.in.erase(0, length);
      c.waiting = false;
      c.due += interval;
      if (c.due < end) {
        if (c.due <= done) {
          send_request(c);  // already due: behind schedule, the latency counts from c.due
        } else {
          schedule.push({c.due, static_cast<int>(events[k].data.u32)});
        }
      }
    }
  }
  const double seconds = std::chrono::duration<double>(duration).count();
  const size_t count = latencies_ms.size();
  const double p50 = Percentile(latencies_ms, 0.50), p90 = Percentile(latencies_ms, 0.90),
               p99 = Percentile(latencies_ms, 0.99), p999 = Percentile(latencies_ms, 0.999);
  const double max = latencies_ms.empty()
                         ? 0
                         : *std::max_element(latencies_ms.begin(), latencies_ms.end());
  std::printf("requests %zu errors %ld rate %.0f/s\n", count, errors,
              static_cast<double>(count) / seconds);
  std::printf("latency_ms p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f max %.3f\n", p50, p90, p99, p999,
              max);
  return errors == 0 ? 0 : 1;
}
