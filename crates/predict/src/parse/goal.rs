//! TODO(helper): the goal reader.

use super::{ParseError, ParseOptions};
use crate::workload::Workload;

pub(crate) fn parse(_text: &str, name: &str, _opts: &ParseOptions) -> Result<Workload, ParseError> {
    Err(ParseError {
        file: name.to_string(),
        line: 1,
        column: 1,
        token: String::new(),
        message: "not implemented yet".into(),
    })
}
