// Metric families written by hand for Prometheus's text format, for values
// read at a scrape rather than kept in a registry (the server's cluster
// gauges, the agent's GPU samples), and the text of a set of families.
// Header only; a user links prometheus-cpp's core (Debian's
// prometheus-cpp-dev), which writes the text.
#pragma once

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace muster::prom {

using Labels = std::vector<prometheus::ClientMetric::Label>;

inline prometheus::MetricFamily Family(std::string name, std::string help,
                                       prometheus::MetricType type = prometheus::MetricType::Gauge) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

inline prometheus::ClientMetric Gauge(double v, Labels labels = {}) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = v;
  return m;
}

inline prometheus::ClientMetric Counter(double v, Labels labels = {}) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = v;
  return m;
}

inline std::string Text(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace muster::prom
