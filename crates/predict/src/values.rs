//! The values a prediction is configured with, read from text as the command line gives them:
//! a profile file (and, beside it, the model's parameters), each refused with a typed error
//! whose message names what was wrong. The binary's options call these; so can any caller.

use commperf_core::Profile;
use std::path::{Path, PathBuf};

/// Why a profile file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProfileFileError {
    #[error("reading the profile")]
    Read(#[source] commperf_core::TextError),
    #[error("{}: not a commperf profile", path.display())]
    NotAProfile {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Reads a profile written by `commperf calibrate`.
pub fn read_profile(path: &Path) -> Result<Profile, ProfileFileError> {
    let text = commperf_core::read_text(path).map_err(ProfileFileError::Read)?;
    serde_json::from_str(&text).map_err(|source| ProfileFileError::NotAProfile {
        path: path.to_path_buf(),
        source,
    })
}
