// The index page of a demo (render_demo_index, declared in app/demo.h): one row per scenario
// under a heading per lesson block, with links into each scenario's report.
#include "app/demo.h"
#include "kernel/file_names.h"
#include "report/description.h"
#include "report/html.h"

namespace inboxsim {

namespace {

// A break-it story passes when the money really goes wrong; the index says what broke.
std::string broken_invariants(const RunResult& result) {
  if (result.violations.empty()) return {};
  std::string names;
  for (const Violation& violation : result.violations) {
    if (!names.empty()) names += ", ";
    names += invariant_name(violation.invariant);
  }
  return "<div class=\"broke\">breaks: " + escape_html(names) + "</div>";
}

}  // namespace

std::string render_demo_index(const std::vector<DemoIndexRow>& rows) {
  std::string body;
  for (size_t i = 0; i < rows.size(); ++i) {
    const DemoIndexRow& row = rows[i];
    if (i == 0 || row.block != rows[i - 1].block) {
      int64_t minutes = 0;
      for (size_t j = i; j < rows.size() && rows[j].block == row.block; ++j) {
        minutes += rows[j].minutes;
      }
      body += "<tr class=\"block\"><th colspan=\"4\">" + escape_html(row.block) +
              (minutes > 0 ? " <span class=\"min\">" + std::to_string(minutes) + " min</span>"
                           : std::string()) +
              "</th></tr>\n";
    }
    const RunResult& result = *row.result;
    // The moment to watch, as a link straight to it in the scenario's report.
    std::string watch;
    if (const std::optional<size_t> event =
            selected_event(result.description_parts.watch_for_event, result.events);
        event && !result.description_parts.empty()) {
      watch = "<div class=\"watch\"><a href=\"" + escape_html(safe_file_stem(result.name)) +
              ".html#event-" + std::to_string(*event + 1) + "\">👁 " +
              escape_html(result.description_parts.watch_for) + "</a></div>";
    }
    std::string explores;
    for (const std::string& line : row.explores) {
      explores += "<div class=\"explore\">" + escape_html(line) + "</div>";
    }
    body += "<tr><td class=\"verdict " + std::string(result.passed ? "pass" : "fail") + "\">" +
            (result.passed ? "PASS" : "FAIL") + "</td><td><a href=\"" +
            escape_html(safe_file_stem(result.name)) + ".html\">" + escape_html(result.name) +
            "</a>" +
            (row.minutes > 0 ? "<div class=\"min\">" + std::to_string(row.minutes) + " min</div>"
                             : std::string()) +
            "</td><td>" + escape_html(result.title) + broken_invariants(result) + watch + explores +
            "</td><td class=\"lesson\">" + escape_html(result.lesson) + "</td></tr>\n";
  }
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<title>inboxsim: the idempotent consumer, watched</title><style>"
         "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:72rem;color:#1f2933}"
         "h1{margin-bottom:.2rem}p.sub{color:#52606d;margin-top:0}"
         "table{border-collapse:collapse;width:100%}td,th{padding:.55rem .7rem;"
         "border-bottom:1px solid #e4e7eb;text-align:left;vertical-align:top}"
         "th{background:#f5f7fa}tr.block th{background:#e8eef7;font-size:1.05em}"
         ".min{color:#52606d;font-weight:400;font-size:.9em}"
         "a{color:#2457a6;font-weight:600;text-decoration:none}"
         ".verdict{font-weight:700}.pass{color:#207a3c}.fail{color:#b42318}"
         ".lesson{color:#3e4c59;font-style:italic}.watch{font-size:14px;margin-top:2px}.explore{font-family:monospace;"
         "font-size:.9em;margin-top:.2rem}"
         ".broke{color:#b42318;font-size:.9em;margin-top:.2rem}</style></head><body>"
         "<h1>The idempotent consumer (inbox), watched</h1>"
         "<p class=\"sub\">Each scenario runs a small bank on an at-least-once broker. Open one "
         "to step through it event by event.</p><table><thead><tr><th></th><th>scenario</th>"
         "<th>what happens</th><th>the lesson</th></tr></thead><tbody>\n" +
         body + "</tbody></table></body></html>\n";
}

}  // namespace inboxsim
