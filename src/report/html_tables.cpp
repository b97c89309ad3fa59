// The HTML report's tables under the diagram (html_parts.h): balances, transfers, invariants,
// expectations, and the counters with what is parked.
#include <algorithm>
#include <map>

#include "report/html.h"
#include "report/html_parts.h"

namespace inboxsim {

namespace {

std::string cell(std::string_view text, std::string_view css_class = "") {
  if (css_class.empty()) return "<td>" + escape_html(text) + "</td>";
  return "<td class=\"" + std::string(css_class) + "\">" + escape_html(text) + "</td>";
}

std::string signed_text(int64_t amount) { return (amount > 0 ? "+" : "") + std::to_string(amount); }

std::string balances_table(const RunResult& result) {
  std::string out =
      "<section class=\"card\"><h2>Balances</h2><table><thead><tr><th>account</th>"
      "<th class=\"n\">opening</th><th class=\"n\">final</th><th class=\"n\">change"
      "</th></tr></thead><tbody>";
  for (const auto& [account, final_balance] : result.balances) {
    const auto opening = result.opening_balances.find(account);
    const int64_t start = opening == result.opening_balances.end() ? 0 : opening->second;
    const int64_t change = final_balance - start;
    out += "<tr>" + cell(account) + cell(std::to_string(start), "n") +
           cell(std::to_string(final_balance), "n") +
           cell(change == 0 ? "" : signed_text(change), change < 0 ? "n neg" : "n pos") + "</tr>";
  }
  return out + "</tbody></table></section>";
}

// A long story lists its first kTransfersListedMax transfers (open ones first) and counts the
// rest by state: the page stays the same size whatever the story's length.
constexpr size_t kTransfersListedMax = 100;

std::string transfers_table(const RunResult& result) {
  std::string out =
      "<section class=\"card\"><h2>Transfers</h2><table><thead><tr><th>transfer</th>"
      "<th class=\"n\">amount</th><th>saga state</th></tr></thead><tbody>";
  std::vector<std::pair<std::string, SagaState>> listed;
  std::map<std::string, size_t> unlisted;
  for (const bool open : {true, false}) {
    for (const auto& [id, state] : result.transfers) {
      if (is_terminal(state) == open) continue;
      if (listed.size() < kTransfersListedMax) {
        listed.emplace_back(id, state);
      } else {
        ++unlisted[std::string(saga_state_name(state))];
      }
    }
  }
  std::stable_sort(listed.begin(), listed.end(), [&](const auto& a, const auto& b) {
    return result.transfers.size() <= kTransfersListedMax && a.first < b.first;
  });
  for (const auto& [id, state] : listed) {
    const auto amount = result.transfer_amounts.find(id);
    const std::string name(saga_state_name(state));
    out +=
        "<tr>" + cell(id) +
        cell(amount == result.transfer_amounts.end() ? "" : std::to_string(amount->second), "n") +
        cell(name, is_terminal(state) ? "state" : "state open") + "</tr>";
  }
  if (!unlisted.empty()) {
    std::string counts;
    for (const auto& [state, count] : unlisted) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(count) + " " + state;
    }
    out += "<tr><td colspan=\"3\" class=\"more-rows\">and " +
           std::to_string(result.transfers.size() - listed.size()) +
           " more: " + escape_html(counts) + "</td></tr>";
  }
  return out + "</tbody></table></section>";
}

std::string invariants_table(const RunResult& result) {
  std::string out = "<section class=\"card\"><h2>Invariants</h2><table><tbody>";
  for (size_t i = 0; i < kInvariantCount; ++i) {
    if (!result.invariant_applies[i]) continue;
    const auto invariant = static_cast<Invariant>(i);
    const auto broken = std::find_if(result.violations.begin(), result.violations.end(),
                                     [&](const Violation& v) { return v.invariant == invariant; });
    const bool held = broken == result.violations.end();
    out += "<tr>" + cell(invariant_name(invariant), "mono") +
           cell(held ? "held" : "VIOLATED", held ? "ok" : "bad") +
           cell(held ? "" : broken->detail + " (at " + std::to_string(broken->time_ms) + " ms)") +
           "</tr>";
  }
  return out + "</tbody></table></section>";
}

std::string expectations_table(const RunResult& result) {
  std::string out = "<section class=\"card\"><h2>Expectations</h2><table><tbody>";
  if (result.expectations.empty()) out += "<tr><td>none stated</td></tr>";
  for (const ExpectationResult& expectation : result.expectations) {
    out += "<tr>" + cell(expectation.what, "mono") +
           cell(expectation.ok ? "ok" : "FAILED", expectation.ok ? "ok" : "bad") +
           cell(expectation.detail) + "</tr>";
  }
  return out + "</tbody></table></section>";
}

// The dead-letter and error queues: how many messages went in, and which still wait there.
std::string parked_section(const RunResult& result) {
  if (result.dead_letter_queues.empty()) return {};
  std::string html = "<div class=\"parked\"><b>Error and dead-letter queues</b><ul>";
  for (const auto& [queue, count] : result.dead_letter_queues) {
    html += "<li>" + escape_html(queue) + ": " + std::to_string(count) + " moved in</li>";
  }
  for (const std::string& waiting : result.parked) {
    html += "<li>still waiting: " + escape_html(waiting) + "</li>";
  }
  return html + "</ul></div>";
}

std::string counters_line(const RunResult& result) {
  const Stats& s = result.stats;
  auto item = [](std::string_view name, int64_t value) {
    return "<span><b>" + std::to_string(value) + "</b> " + std::string(name) + "</span>";
  };
  return "<section class=\"card wide counters\">" + item("published", s.published) +
         item("deliveries", s.deliveries) + item("redelivered", s.redeliveries) +
         item("acks", s.acks) + item("dedupe hits", s.dedupe_hits) + item("effects", s.effects) +
         item("crashes", s.crashes) + item("transactions", s.transactions) +
         item("dead-lettered", s.dead_lettered) + item("to error queues", s.error_queued) +
         (s.dropped > 0 ? item("dropped", s.dropped) : std::string()) +
         item("virtual ms", result.virtual_ms) + parked_section(result) + "</section>";
}

}  // namespace

std::string html::render_result_tables(const RunResult& result) {
  return balances_table(result) + transfers_table(result) + invariants_table(result) +
         expectations_table(result) + counters_line(result);
}

}  // namespace inboxsim
