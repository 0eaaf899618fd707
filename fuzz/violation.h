/* violation.h - how a harness reports a broken promise of the code under
 * test: one line "VIOLATION: ..." on stderr (fuzz/run prints it), then
 * abort(), which libFuzzer records as a crash with its reproducer. */
#ifndef SLUICE_FUZZ_VIOLATION_H
#define SLUICE_FUZZ_VIOLATION_H

/* Prints the printf-formatted message and aborts; never returns. */
_Noreturn void sl_fuzz_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
