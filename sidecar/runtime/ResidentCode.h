#pragma once
// The daemon's resident set, kept to the code it runs. The kernel maps up to 16 pages around
// every page fault in a file mapping ("fault-around", 64 KiB), so a process that touches a
// little of a 5-6 MB statically linked text ends up with much of it in its RSS, although most
// of those pages are never executed. MADV_RANDOM does not turn fault-around off (measured on
// 6.18: one touch after MADV_RANDOM + MADV_DONTNEED maps 64 KiB); only a mapping's end bounds
// it. So the first call splits every read-only file mapping into pieces of two pages, with
// alternating read-ahead advice (MADV_RANDOM, MADV_NORMAL) that keeps the kernel from merging
// them again: a fault then maps at most 8 KiB. The price is ~1,200 more mappings (kernel
// memory, ~0.25 MB) and ~5 ms at start-up. Every call then drops the code pages mapped so far
// (they fault back in as they run). The pages stay in the page cache either way, shared by
// every process of the binary: this changes what RSS counts, not what is read from disk.
//
// main calls it before the set-up (the start-up peak is the set-up's), the loop once it starts,
// and again once start-up is over: the first connections and TLS handshakes, the first LIST
// and WATCH, the first acquisition or renewal run on the loop after main's set-up.
// keepOnlyTouchedCodeResidentAfter drops the code pages once more when that is past, so that
// the resident set settles at the code the steady state runs.
#include <memory>

#include "time/Clock.h"

namespace leasehold::runtime {

// Best effort: on failure nothing changes. The first call splits (reading /proc/self/maps
// once); later calls only drop.
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
