//! The measurement engine (ARCHITECTURE §6): interleaved runs, statistics, counters.
