/*
 * Marks the part of a run that bench/instructions_bench.rb counts: the bench
 * compiles this file, and bench/support/catalog_run.rb calls the two
 * functions through Fiddle around its measured part. valgrind runs with
 * --instr-atstart=no, so only what lies between them is counted; outside
 * valgrind both are no-ops (the client requests are a special instruction
 * sequence that does nothing on a real CPU).
 */
#include <valgrind/callgrind.h>

void pwshlib_bench_count_from_here(void) { CALLGRIND_START_INSTRUMENTATION; }

void pwshlib_bench_count_to_here(void) { CALLGRIND_STOP_INSTRUMENTATION; }
