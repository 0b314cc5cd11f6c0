//! Unit tests for the argument pipeline.
