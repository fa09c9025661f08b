//! What a reason names beside its values: where a delegation link widens
//! its parent, and which budget refused a hold.

/// Where a delegation link widens its parent's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Widening {
    /// A server the parent does not grant.
    Server {
        /// The server.
        server: String,
    },
    /// A tool the parent does not grant on that server.
    Tool {
        /// The tool.
        tool: String,
        /// The server.
        server: String,
    },
    /// A constraint looser than the parent's.
    Constraint {
        /// The constraint's name.
        name: String,
        /// The server.
        server: String,
    },
}

/// The budget a hold was refused by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetName {
    /// A capability's invocation limit.
    Invocations {
        /// The capability (root or child) whose limit it is.
        capability: String,
    },
    /// A configured tool budget.
    Tool {
        /// The agent.
        agent: String,
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// A lineage's monetary total.
    Monetary {
        /// The currency.
        currency: String,
    },
}
