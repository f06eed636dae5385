/**
 * @file clock.h
 * @brief The monotonic and the wall clock of host code, in seconds, and a sleep.
 */
#ifndef MANTA_CORE_CLOCK_H
#define MANTA_CORE_CLOCK_H

/** Seconds on the monotonic clock (CLOCK_MONOTONIC): differences are elapsed
 *  time, unaffected by changes of the wall clock; the origin is arbitrary. */
double manta_now(void);

/** Seconds since the Unix epoch on the wall clock (CLOCK_REALTIME), for
 *  timestamps written into files (event files); it jumps when the clock is set,
 *  so measure durations with manta_now(). */
double manta_wall_time(void);

/** Sleep for @p seconds (nothing when not positive); a signal may end it early. */
void manta_sleep(double seconds);

#endif
