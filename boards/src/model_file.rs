//! Model files: where they live, and mapping one into memory.

use std::fs::File;
use std::path::{Path, PathBuf};

use glimmer_core::gguf::Gguf;
use memmap2::Mmap;

use crate::Error;

/// File name of the default model (SmolLM2-135M-Instruct, Q4_1) in the models directory.
pub const DEFAULT_MODEL: &str = "smollm2-135m-instruct-q4_1.gguf";
/// File name of the Gemma 3 270M Q4_K_M model in the models directory.
pub const GEMMA3_MODEL: &str = "gemma-3-270m-q4_k_m.gguf";

/// The models directory: `$GLIMMER_MODELS`, else `~/.cache/glimmer/models`.
pub fn models_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("GLIMMER_MODELS") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache").join("glimmer").join("models")
}

/// Path of the default model.
pub fn default_model_path() -> PathBuf {
    models_dir().join(DEFAULT_MODEL)
}

/// A model file mapped read-only into memory.
pub struct ModelFile {
    map: Mmap,
    path: PathBuf,
}

impl ModelFile {
    /// Maps `path`.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let file = File::open(path).map_err(|e| Error::Io(path.display().to_string(), e))?;
        // SAFETY: the map is read-only and private to this process. Glimmer never writes model
        // files; if another process truncates the file while it is mapped, reads fault (SIGBUS),
        // which is the documented hazard of mapping files and is accepted for model weights.
        let map =
            unsafe { Mmap::map(&file) }.map_err(|e| Error::Io(path.display().to_string(), e))?;
        Ok(ModelFile {
            map,
            path: path.to_path_buf(),
        })
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Where it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Parses the GGUF structure.
    pub fn gguf(&self) -> Result<Gguf<'_>, Error> {
        Gguf::parse(&self.map).map_err(Error::Gguf)
    }
}
