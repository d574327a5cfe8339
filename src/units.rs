//! Quantities with units in machine and scenario files ("6.5 GB/s", "10 us", "5.6 GiB").
