//! The `[[adversaries]]` blocks of a scenario: the four adversary classes,
//! the gene each population member carries, the class parameters read from
//! `[adversaries.params]` and the goal a block pursues.
//!
//! These are part of the scenario format: the validator resolves every
//! block here at load, so a scenario with a bad class parameter or goal is
//! refused before anything runs. The search that breeds and evaluates the
//! populations these blocks declare lives in the `chio-adversary` crate.
//!
//! Module map:
//! - [`class`]: [`AdversaryClass`], the per-member [`Gene`] and the
//!   class parameters ([`ClassParams`]);
//! - [`goal`]: [`Goal`], what an adversary tries to reach.

pub mod class;
pub mod goal;

pub use class::{
    AdversaryClass, ClassParams, Gene, InjectionTarget, ReplayMode, ReplayReuse, SwapKind,
    WideningKind,
};
pub use goal::{Goal, MAX_BURST};

use crate::error::ArenaError;
use crate::model::AdversaryDecl;

/// Most populations one lineage may breed per generation.
pub const MAX_POPULATION_SIZE: u32 = 64;

/// One `[[adversaries]]` block, resolved and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredAdversary {
    /// The block's class.
    pub class: AdversaryClass,
    /// Its parameters, defaults applied.
    pub params: ClassParams,
    /// The genes its population starts with (never empty).
    pub genes: Vec<Gene>,
    /// The goal it pursues (its class's default when the block names none).
    pub goal: Goal,
    /// Populations the lineage breeds per generation, when the block says.
    pub pool_size: Option<u32>,
}

/// Resolves the `[[adversaries]]` block at `index`; `servers` are the
/// scenario's declared server ids, the defaults of the class parameters.
/// Every refusal names the key at fault.
pub fn resolve_block(
    index: usize,
    block: &AdversaryDecl,
    servers: &[String],
) -> Result<DeclaredAdversary, ArenaError> {
    let field = format!("adversaries[{index}]");
    let class =
        AdversaryClass::parse(&block.class).ok_or_else(|| ArenaError::UnsupportedValue {
            field: format!("{field}.class"),
            value: block.class.clone(),
            allowed: "prompt-injection, capability-overrequest, replay-attempt, scope-escape",
        })?;
    let params = ClassParams::from_table(
        class,
        block.params.as_ref(),
        &format!("{field}.params"),
        servers,
    )?;
    let genes = params.initial_genes();
    if genes.is_empty() {
        return Err(ArenaError::EmptyPopulation {
            field: format!("{field}.params"),
        });
    }
    let goal = Goal::from_block(
        class,
        block.goal.as_deref(),
        block.goal_path.as_deref(),
        &field,
    )?
    .with_tools(block.goal_tools.as_deref(), &field)?;
    let pool_size = match block.population_size {
        None => None,
        Some(n) if (1..=i64::from(MAX_POPULATION_SIZE)).contains(&n) => Some(n as u32),
        Some(_) => {
            return Err(ArenaError::AdversaryParam {
                field: format!("{field}.population_size"),
                reason: format!(
                    "expected a whole number between 1 and {MAX_POPULATION_SIZE}; omit it for the evolve default"
                ),
            })
        }
    };
    Ok(DeclaredAdversary {
        class,
        params,
        genes,
        goal,
        pool_size,
    })
}
