//! Tokenizers built from GGUF vocabularies (being written).
