//! Event calendar.
