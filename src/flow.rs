//! The data-flow policy's vocabulary, shared by the analysis that reads a
//! script before it runs ([`crate::check::flow`]) and the invoker that
//! applies its verdict to each call.
//!
//! A tool's results may be *untrusted* (a web page, an email, a search
//! result: text someone else wrote, which can carry instructions). A tool's
//! *guarded* arguments are those untrusted data must not reach unapproved
//! (a recipient, a shell command); by default every argument of a tool whose
//! risk is `high` or above. In code mode the script is written before any
//! untrusted data arrives, so the host can know from the script alone which
//! results each guarded call may derive from (CaMeL, arXiv 2503.18813):
//! the analysis answers, per guarded tool, a [`Taint`]: the untrusted tools
//! whose results may reach its guarded arguments or decide that it is
//! called. At run time the invoker turns that into the calls of those tools
//! that have answered so far (their results exist), and a call with any
//! such source waits for approval as a critical call does.
//!
//! Verdicts are per tool, not per call site: the guests report which tool a
//! call is of, not where in the script it was made (that would mean
//! patching both interpreters), so a tool called at a tainted site and at a
//! clean one is treated as tainted at both.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::policy::{ChainPolicy, Flow};
use crate::tools::{ToolRegistry, ToolRisk, schema_params};

/// Which untrusted results a value, a condition or a call may derive from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Taint {
    /// Any untrusted result at all (the analysis could not follow the
    /// value: `exec`, a computed attribute, a name from an earlier cell).
    pub any: bool,
    /// The untrusted tools whose results it may derive from.
    pub tools: BTreeSet<String>,
}

impl Taint {
    /// Derived from nothing untrusted.
    pub fn is_clean(&self) -> bool {
        !self.any && self.tools.is_empty()
    }

    /// Whether a result of `tool` (an untrusted tool) may reach it.
    pub fn reaches_from(&self, tool: &str) -> bool {
        self.any || self.tools.contains(tool)
    }

    /// Tainted by every untrusted result.
    pub fn any() -> Self {
        Taint {
            any: true,
            tools: BTreeSet::new(),
        }
    }
}

/// The analysis's answer for one script: for each guarded tool that may
/// be called with untrusted data (or because of it), from which tools.
/// A guarded tool not in it is never called with untrusted data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowVerdict {
    sinks: FxHashMap<String, Taint>,
}

impl FlowVerdict {
    /// A verdict from its sinks (clean taints are dropped).
    pub fn new(sinks: impl IntoIterator<Item = (String, Taint)>) -> Self {
        FlowVerdict {
            sinks: sinks.into_iter().filter(|(_, taint)| !taint.is_clean()).collect(),
        }
    }

    /// The verdict when the script cannot be read (it does not parse, it
    /// is too long or too deep): every guarded tool, from every untrusted
    /// result.
    pub fn everything(tools: &FlowTools) -> Self {
        FlowVerdict::new(tools.guarded.keys().map(|name| (name.clone(), Taint::any())))
    }

    /// What calls of `tool` may derive from; `None` when nothing untrusted.
    pub fn taint_of(&self, tool: &str) -> Option<&Taint> {
        self.sinks.get(tool)
    }

    /// Whether no guarded call may take untrusted data.
    pub fn is_clean(&self) -> bool {
        self.sinks.is_empty()
    }

    /// The sinks, in no particular order.
    pub fn sinks(&self) -> impl Iterator<Item = (&str, &Taint)> {
        self.sinks.iter().map(|(name, taint)| (name.as_str(), taint))
    }
}

/// Which of a tool's arguments are guarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guarded {
    /// All of them (the default for a `high` or `critical` tool).
    All,
    /// These, by name.
    Args(FxHashSet<String>),
}

impl Guarded {
    /// Whether the argument named `arg` is guarded.
    pub fn covers(&self, arg: &str) -> bool {
        match self {
            Guarded::All => true,
            Guarded::Args(args) => args.contains(arg),
        }
    }
}

/// What the data-flow policy knows of a chain's tools: which are untrusted,
/// which arguments of which are guarded, and each tool's parameters in
/// order (positional arguments map onto them).
#[derive(Debug, Clone, Default)]
pub struct FlowTools {
    names: FxHashSet<String>,
    untrusted: FxHashSet<String>,
    guarded: FxHashMap<String, Guarded>,
    params: FxHashMap<String, Vec<String>>,
}

impl FlowTools {
    /// Read from `registry` under `policy` (its per-tool risks; `flow =
    /// "off"` makes it inactive).
    pub fn new(registry: &ToolRegistry, policy: &ChainPolicy) -> Self {
        let mut tools = FlowTools::default();
        if policy.flow == Flow::Off {
            return tools;
        }
        for tool in registry.iter() {
            let Some(local) = tool.as_local() else {
                tools.names.insert(tool.name().to_owned());
                continue;
            };
            let name = local.name();
            tools.names.insert(name.to_owned());
            if local.untrusted() {
                tools.untrusted.insert(name.to_owned());
            }
            let guarded = match local.guarded_args() {
                Some([]) => None,
                Some(args) => Some(Guarded::Args(args.iter().cloned().collect())),
                None if policy.effective_risk(name, local.risk()) >= ToolRisk::High => Some(Guarded::All),
                None => None,
            };
            if let Some(guarded) = guarded {
                tools.guarded.insert(name.to_owned(), guarded);
                tools
                    .params
                    .insert(name.to_owned(), schema_params(local.input_schema()));
            }
        }
        tools
    }

    /// Whether the policy can ask anything: some tool is untrusted and some
    /// argument guarded.
    pub fn is_active(&self) -> bool {
        !self.untrusted.is_empty() && !self.guarded.is_empty()
    }

    /// Whether `name` is a tool's (of any kind).
    pub fn is_tool(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// Whether `tool`'s results are untrusted.
    pub fn is_untrusted(&self, tool: &str) -> bool {
        self.untrusted.contains(tool)
    }

    /// The arguments of `tool` that are guarded, if any are.
    pub fn guarded(&self, tool: &str) -> Option<&Guarded> {
        self.guarded.get(tool)
    }

    /// `tool`'s parameters in schema order (for a guarded tool).
    pub fn params(&self, tool: &str) -> &[String] {
        self.params.get(tool).map_or(&[], Vec::as_slice)
    }
}
