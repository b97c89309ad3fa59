// A progress line for long commands (fuzz, matrix, explore, long runs) on a terminal's stderr:
// how much is done, how fast, and how long is left. It is redrawn in place at most five times a
// second and erased when the command ends, so that what stays on the screen is the result.
//
// This is the one place outside the CLI that reads the wall clock, and it only ever writes to
// the terminal: nothing of it reaches a trace, a result or --json. The caller decides whether
// there is a terminal (isatty on stderr); without one there is no ProgressLine at all.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <string>

namespace inboxsim {

// "12 s", "3 min 05 s", "2 h 07 min": a duration for a person, rounded up to the second.
std::string duration_text(double seconds);

class ProgressLine {
 public:
  // `what` opens the line ("fuzz", "matrix", "explore 01-happy-path").
  ProgressLine(std::ostream& stream, std::string what);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Redraws the line, unless it was drawn less than 200 ms ago or the command has run for less
  // than half a second (a short command leaves no flicker). INBOXSIM_PROGRESS_FIRST_MS in the
  // environment changes that half second (0: draw at once; the tests use it so that a short
  // command shows its line). `fraction_done` in [0, 1] (or
  // below 0 when unknown) gives the time left, from the rate so far. Safe to call from any
  // thread.
  void update(const std::string& counters, double fraction_done);

  // Erases the line, if drawn, so that a line of output can be written in its place; the next
  // update draws it again at once.
  void clear();

  // Seconds since the line was made.
  double elapsed_seconds() const;

 private:
  std::ostream& stream_;
  std::string what_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
  std::chrono::milliseconds first_draw_after_{500};
  bool shown_ = false;
};

}  // namespace inboxsim
