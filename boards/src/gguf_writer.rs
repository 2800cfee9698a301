//! A GGUF writer for tests and synthetic models (being written).
