#pragma once
// What a freshly forked child does before exec, shared by the command launcher and the
// watchdog. Async-signal-safe system calls only: the parent may have two threads.
namespace leasehold::supervise {

// No blocked signals and every disposition back to the default: the new program starts as it
// would from a shell, not with the supervisor's signal handling.
void resetSignalsForExec();

// exec failed: say so on stderr (no allocation) and exit 127, the shell's "cannot execute".
[[noreturn]] void exitAfterFailedExec(const char* what);

}  // namespace leasehold::supervise
