#pragma once
// The daemon's resident set, kept to the code it runs. The kernel maps up to 16 pages around
// every page fault in a file mapping ("fault-around"), so a process that touches a little of a
// 6.7 MB statically linked text ends up with most of it in its RSS, although most of those
// pages are never executed. MADV_RANDOM on the text turns fault-around off for it; the pages
// mapped before that (start-up) are dropped once and fault back in as they run. The pages stay
// in the page cache either way, shared by every process of the binary: this changes what RSS
// (and a memory limit) counts, not what is read from disk.
//
// Start-up code is only known to be over later: the first connections and TLS handshakes, the
// first LIST and WATCH, the first acquisition or renewal run on the loop after main's set-up.
// keepOnlyTouchedCodeResidentAfter drops the code pages once more when that is past, so that
// the resident set settles at the code the steady state runs (a leader: 7.1 -> 5.5 MB).
#include <memory>

#include "time/Clock.h"

namespace leasehold::runtime {

// Best effort: on failure nothing changes. Call once the set-up is done, before the loop runs.
void keepOnlyTouchedCodeResident();

// The same, once, `delay` from now on `clock`. Keep the returned timer alive (destroying it
// cancels the drop).
std::unique_ptr<time::Timer> keepOnlyTouchedCodeResidentAfter(time::Clock& clock,
                                                              time::Duration delay);

// How long start-up takes at most, for keepOnlyTouchedCodeResidentAfter: the first
// acquisition waits up to one retry period after the first read, which is seconds at most
// with any sane timing; ten seconds covers that with margin.
inline constexpr time::Duration kStartupOver = std::chrono::seconds(10);

}  // namespace leasehold::runtime
