#pragma once
// The daemon's resident set, kept to the code it runs. The kernel maps up to 16 pages around
// every page fault in a file mapping ("fault-around"), so a process that touches a little of a
// 6.7 MB statically linked text ends up with most of it in its RSS, although most of those
// pages are never executed. MADV_RANDOM on the text turns fault-around off for it; the pages
// mapped before that (start-up) are dropped once and fault back in as they run. The pages stay
// in the page cache either way, shared by every process of the binary: this changes what RSS
// (and a memory limit) counts, not what is read from disk.
namespace leasehold::runtime {

// Best effort: on failure nothing changes. Call once, early in main.
void keepOnlyTouchedCodeResident();

}  // namespace leasehold::runtime
