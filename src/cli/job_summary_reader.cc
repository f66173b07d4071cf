#include "cli/job_summary_reader.h"

#include <nlohmann/json.hpp>

namespace muster::cli {
namespace {

using json = nlohmann::json;

// Depth 1 is the page object, its "items" array holds the items at depth 2;
// an item's "nodes" is the only array inside one.
class Reader : public nlohmann::json_sax<json> {
 public:
  Reader(int64_t max_items, const std::function<void(const JobSummaryItem&)>& each) : max_(max_items), each_(each) {}
  int64_t count() const { return count_; }
  bool stopped() const { return stopped_; }
  const std::string& error() const { return error_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return Number(v); }
  bool number_unsigned(number_unsigned_t v) override { return Number(static_cast<int64_t>(v)); }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool string(string_t& v) override {
    if (!InItem()) return true;
    if (in_nodes_) {
      item_.nodes.push_back(std::move(v));
      return true;
    }
    if (std::string* field = Field()) *field = std::move(v);
    return true;
  }
  bool start_object(std::size_t) override {
    ++depth_;
    if (depth_ == 2 && in_items_) item_ = JobSummaryItem{};
    return true;
  }
  bool end_object() override {
    if (depth_ == 2 && in_items_) {
      if (count_ == max_) {
        stopped_ = true;
        return false;  // enough: stop reading
      }
      each_(item_);
      ++count_;
    }
    --depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) top_key_ = k;
    if (InItem()) key_ = k;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 1 && top_key_ == "items") in_items_ = true;
    if (InItem() && key_ == "nodes") in_nodes_ = true;
    return true;
  }
  bool end_array() override {
    if (in_nodes_) in_nodes_ = false;
    else if (depth_ == 1) in_items_ = false;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = e.what();
    return false;
  }

 private:
  bool InItem() const { return in_items_ && depth_ == 2; }
  bool Number(int64_t v) {
    if (!InItem()) return true;
    if (key_ == "id") item_.id = std::to_string(v);
    else if (key_ == "gpus") item_.gpus = v;
    else if (key_ == "replicas") item_.replicas = v;
    return true;
  }
  std::string* Field() {
    if (key_ == "name") return &item_.name;
    if (key_ == "user") return &item_.user;
    if (key_ == "queue") return &item_.queue;
    if (key_ == "priority") return &item_.priority;
    if (key_ == "state") return &item_.state;
    if (key_ == "reason") return &item_.reason;
    if (key_ == "submitTime") return &item_.submit_time;
    return nullptr;
  }

  const int64_t max_;
  const std::function<void(const JobSummaryItem&)>& each_;
  int depth_ = 0;
  bool in_items_ = false, in_nodes_ = false, stopped_ = false;
  std::string top_key_, key_, error_;
  JobSummaryItem item_;
  int64_t count_ = 0;
};

}  // namespace

StatusOr<int64_t> ReadJobSummaryPage(std::string_view text, int64_t max_items,
                                     const std::function<void(const JobSummaryItem&)>& each) {
  Reader reader(max_items, each);
  const bool ok = json::sax_parse(text.begin(), text.end(), &reader, json::input_format_t::json, /*strict=*/true);
  if (!ok && !reader.stopped()) {
    return Status(StatusCode::kInternal, "the server's job list is not JSON: " + reader.error());
  }
  return reader.count();
}

}  // namespace muster::cli
