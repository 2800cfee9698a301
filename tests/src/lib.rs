//! Shared helpers for Glimmer's cross-crate tests: finding real models and fixtures.

use std::path::PathBuf;

use glimmer_boards::model_file::models_dir;

/// The repository's `tests/fixtures` directory.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Path of model file `name` in the models directory, or `None` (with a printed reason) when it
/// has not been fetched. Set `GLIMMER_REQUIRE_MODELS=1` (CI does) to turn a missing model into a
/// panic instead of a skip.
pub fn real_model(name: &str) -> Option<PathBuf> {
    let p = models_dir().join(name);
    if p.exists() {
        return Some(p);
    }
    if std::env::var_os("GLIMMER_REQUIRE_MODELS").is_some_and(|v| v == "1") {
        panic!(
            "model {} is required but missing: run scripts/fetch-models.sh",
            p.display()
        );
    }
    eprintln!(
        "SKIP: model {} not found (run scripts/fetch-models.sh)",
        p.display()
    );
    None
}
