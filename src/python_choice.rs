//! Placeholder until the lexical scan lands (branch python-choice).

/// Which interpreter runs a chain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interpreter {
    #[default]
    /// monty.
    Monty,
    /// CPython.
    Cpython,
}

impl Interpreter {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Interpreter::Monty => "monty",
            Interpreter::Cpython => "cpython",
        }
    }
}

/// What the scan found.
#[derive(Debug)]
pub enum Needs {}

impl std::fmt::Display for Needs {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {}
    }
}

/// The scan.
pub fn needs_cpython(_script: &str) -> Option<Needs> {
    None
}
