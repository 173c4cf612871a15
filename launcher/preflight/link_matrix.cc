#include "launcher/preflight/link_matrix.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace accel::launcher {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string Mb(double bytes_per_s) { return absl::StrFormat("%.1f", bytes_per_s / 1e6); }

std::string Host(const PreflightResult& r, int machine) {
  return machine >= 0 && machine < static_cast<int>(r.hosts.size()) ? r.hosts[machine] : "?";
}

// Returns a matrix, one row per machine, `cell(link)` in the cells.
template <typename Cell>
std::string Matrix(const PreflightResult& r, const Cell& cell) {
  const int n = static_cast<int>(r.hosts.size());
  std::string out = absl::StrFormat("  %-8s", "from\\to");
  for (int to = 0; to < n; ++to)
    absl::StrAppend(&out, absl::StrFormat("%12s", absl::StrCat("m", to)));
  out += "\n";
  for (int from = 0; from < n; ++from) {
    absl::StrAppend(&out, absl::StrFormat("  %-8s", absl::StrCat("m", from)));
    for (int to = 0; to < n; ++to) {
      std::string text = "-";
      for (const LinkMeasure& l : r.links) {
        if (l.from == from && l.to == to) text = cell(l);
      }
      absl::StrAppend(&out, absl::StrFormat("%12s", text));
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::vector<std::pair<int, int>> LinkOrder(int world) {
  std::vector<std::pair<int, int>> order;
  for (int from = 0; from < world; ++from) {
    for (int to = 0; to < world; ++to) {
      if (from != to) order.emplace_back(from, to);
    }
  }
  return order;
}

std::string EncodePreflight(const PreflightResult& r) {
  std::string out = absl::StrCat("transport\t", r.transport, "\n");
  for (const std::string& h : r.hosts) absl::StrAppend(&out, "host\t", h, "\n");
  for (const LinkMeasure& l : r.links) {
    absl::StrAppend(&out, "link\t", l.from, "\t", l.to, "\t",
                    absl::StrFormat("%.6g", l.bytes_per_s), "\t", absl::StrFormat("%.6g", l.rtt_s),
                    "\n");
  }
  absl::StrAppend(&out, "allreduce\t", r.allreduce_bytes, "\t",
                  absl::StrFormat("%.6g", r.allreduce_s), "\n");
  return out;
}

std::optional<PreflightResult> DecodePreflight(absl::string_view text) {
  PreflightResult r;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
    bool ok = f.size() >= 2;
    if (ok && f[0] == "transport") {
      r.transport = std::string(f[1]);
    } else if (ok && f[0] == "host") {
      r.hosts.emplace_back(f[1]);
    } else if (ok && f[0] == "link" && f.size() == 5) {
      LinkMeasure l;
      ok = absl::SimpleAtoi(f[1], &l.from) && absl::SimpleAtoi(f[2], &l.to) &&
           absl::SimpleAtod(f[3], &l.bytes_per_s) && absl::SimpleAtod(f[4], &l.rtt_s);
      r.links.push_back(l);
    } else if (ok && f[0] == "allreduce" && f.size() == 3) {
      ok = absl::SimpleAtoi(f[1], &r.allreduce_bytes) && absl::SimpleAtod(f[2], &r.allreduce_s);
    } else {
      ok = false;
    }
    if (!ok) return std::nullopt;
  }
  if (r.transport.empty() || r.hosts.empty()) return std::nullopt;
  return r;
}

std::vector<SlowLink> FindSlowLinks(const PreflightResult& r, double threshold) {
  std::vector<double> bandwidths;
  for (const LinkMeasure& l : r.links) bandwidths.push_back(l.bytes_per_s);
  const double median = Median(bandwidths);
  std::vector<SlowLink> slow;
  for (const LinkMeasure& l : r.links) {
    if (l.bytes_per_s < threshold * median) slow.push_back({l.from, l.to, l.bytes_per_s, median});
  }
  std::sort(slow.begin(), slow.end(),
            [](const SlowLink& a, const SlowLink& b) { return a.bytes_per_s < b.bytes_per_s; });
  return slow;
}

std::vector<int> SlowMachines(const PreflightResult& r, const std::vector<SlowLink>& slow) {
  const int n = static_cast<int>(r.hosts.size());
  std::vector<int> out;
  if (n < 3) return out;
  for (int m = 0; m < n; ++m) {
    int slow_out = 0, slow_in = 0;
    for (const SlowLink& s : slow) {
      slow_out += s.from == m ? 1 : 0;
      slow_in += s.to == m ? 1 : 0;
    }
    if (slow_out == n - 1 || slow_in == n - 1) out.push_back(m);
  }
  return out;
}

std::string FormatPreflight(const PreflightResult& r, const std::vector<SlowLink>& slow,
                            double threshold) {
  const int n = static_cast<int>(r.hosts.size());
  std::string out = absl::StrCat("network preflight (", r.transport, ", ", n, " machines:");
  for (int m = 0; m < n; ++m) absl::StrAppend(&out, " m", m, "=", Host(r, m));
  absl::StrAppend(&out, ")\n bandwidth, MB/s (row: from, column: to)\n",
                  Matrix(r, [](const LinkMeasure& l) { return Mb(l.bytes_per_s); }),
                  " round trip, microseconds\n", Matrix(r, [](const LinkMeasure& l) {
                    return absl::StrFormat("%.0f", l.rtt_s * 1e6);
                  }));
  if (r.allreduce_s > 0) {
    absl::StrAppend(
        &out, absl::StrFormat(" all-reduce of %.1f MiB (the bucket size) over %d machines: %.4f s "
                              "(%.1f MB/s of bucket per second)\n",
                              r.allreduce_bytes / 1048576.0, n, r.allreduce_s,
                              r.allreduce_bytes / r.allreduce_s / 1e6));
  }
  for (const SlowLink& s : slow) {
    absl::StrAppend(
        &out, absl::StrFormat(" SLOW LINK machine %d (%s) -> machine %d (%s): %s MB/s, %.0f%% of "
                              "the median link's %s MB/s (threshold %.0f%%)\n",
                              s.from, Host(r, s.from), s.to, Host(r, s.to), Mb(s.bytes_per_s),
                              100 * s.bytes_per_s / s.median_bytes_per_s, Mb(s.median_bytes_per_s),
                              100 * threshold));
  }
  for (int m : SlowMachines(r, slow)) {
    absl::StrAppend(&out, " SLOW MACHINE ", m, " (", Host(r, m),
                    "): its links are slow in one direction to every other machine; its network "
                    "interface, cable or switch port is the likely cause\n");
  }
  if (slow.empty())
    absl::StrAppend(&out, " every link is within ", 100 * threshold, "% of the median\n");
  return out;
}

}  // namespace accel::launcher
