//! Populations: named sets of genes of one class.
//!
//! A scenario's `[[adversaries]]` block declares one population; its params
//! decide the genes it starts with. [`AdversaryPopulation::new`] takes the
//! class from the first gene and refuses an empty or mixed-class set, so
//! crossover and hand-built populations obey the same rule as loaded ones.
//! The lineage is the name of the declared population an offspring descends
//! from; the chart and the "no class dies out" rule read it.

use serde::{Deserialize, Serialize};

use crate::operators::Operator;
use chio_arena::adversaries::{resolve_block, AdversaryClass, ClassParams, Gene, Goal};
use chio_arena::error::ArenaError;
use chio_arena::Scenario;

/// A population of adversaries of one class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdversaryPopulation {
    /// Unique name: the declared name, or `<lineage>.g<generation>-<k>` for offspring.
    pub name: String,
    /// The class every member belongs to.
    pub class: AdversaryClass,
    /// The declared population this one descends from.
    pub lineage: String,
    /// Where the declared population's seed corpus lives.
    pub seed_ref: String,
    /// The bounds every gene stays within.
    pub params: ClassParams,
    /// The members, in order; member `i` is named by its index.
    pub members: Vec<Gene>,
    /// What the lineage tries to reach; decides the operators and the oracle.
    pub goal: Goal,
    /// Member `i`'s operator sequence, applied to its base action.
    pub genomes: Vec<Vec<Operator>>,
    /// Populations the lineage breeds per generation, when its block says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<u32>,
}

impl AdversaryPopulation {
    /// Builds a population, refusing an empty or mixed-class member list
    /// and params of another class.
    pub fn new(
        name: &str,
        lineage: &str,
        seed_ref: &str,
        params: ClassParams,
        members: Vec<Gene>,
    ) -> Result<Self, ArenaError> {
        let first = members.first().ok_or_else(|| ArenaError::EmptyPopulation {
            field: format!("population {name}"),
        })?;
        let class = first.class();
        if let Some(other) = members
            .iter()
            .map(Gene::class)
            .chain(std::iter::once(params.class()))
            .find(|c| *c != class)
        {
            return Err(ArenaError::MixedPopulation {
                population: name.to_string(),
                first: class.as_str(),
                other: other.as_str(),
            });
        }
        let genomes = vec![Vec::new(); members.len()];
        Ok(Self {
            name: name.to_string(),
            class,
            lineage: lineage.to_string(),
            seed_ref: seed_ref.to_string(),
            params,
            members,
            goal: Goal::default_for(class),
            genomes,
            pool_size: None,
        })
    }

    /// The same population pursuing `goal`, breeding `pool_size` per generation.
    pub fn with_goal(mut self, goal: Goal, pool_size: Option<u32>) -> Self {
        self.goal = goal;
        self.pool_size = pool_size;
        self
    }

    /// The same population with member `i` carrying `genomes[i]` (missing
    /// sequences are empty, extra ones dropped).
    pub fn with_genomes(mut self, mut genomes: Vec<Vec<Operator>>) -> Self {
        genomes.resize(self.members.len(), Vec::new());
        self.genomes = genomes;
        self
    }

    /// Member `i`'s operator sequence (empty past the end).
    pub fn genome(&self, member: usize) -> &[Operator] {
        self.genomes.get(member).map_or(&[], Vec::as_slice)
    }
}

/// The populations a scenario declares, in declaration order. The loader
/// already validated every block, so this only fails on a broken invariant
/// of that validation, reported as the same typed error.
pub fn populations_from_scenario(
    scenario: &Scenario,
) -> Result<Vec<AdversaryPopulation>, ArenaError> {
    let servers: Vec<String> = scenario
        .file()
        .servers
        .iter()
        .map(|s| s.id.clone())
        .collect();
    scenario
        .file()
        .adversaries
        .iter()
        .enumerate()
        .map(|(i, block)| population_from_block(i, block, &servers))
        .collect()
}

/// Resolves one `[[adversaries]]` block into its population.
pub fn population_from_block(
    index: usize,
    block: &chio_arena::model::AdversaryDecl,
    servers: &[String],
) -> Result<AdversaryPopulation, ArenaError> {
    let declared = resolve_block(index, block, servers)?;
    Ok(AdversaryPopulation::new(
        &block.population,
        &block.population,
        &block.seed_ref,
        declared.params,
        declared.genes,
    )?
    .with_goal(declared.goal, declared.pool_size))
}

#[cfg(test)]
mod tests {
    use super::*;

    // An empty member list and a mixed-class member list are both refused.
    #[test]
    fn empty_and_mixed_populations_are_refused() {
        let params =
            ClassParams::from_table(AdversaryClass::ReplayAttempt, None, "p", &[]).unwrap();
        let err = AdversaryPopulation::new("p", "p", "r", params.clone(), Vec::new()).unwrap_err();
        assert_eq!(err.code(), "CHIO-SCENARIO-EMPTY-POPULATION");
        let mut genes = params.initial_genes();
        genes.push(Gene::ScopeEscape {
            widening: chio_arena::adversaries::WideningKind::Tool,
            choice: 0,
        });
        let err = AdversaryPopulation::new("p", "p", "r", params, genes).unwrap_err();
        assert_eq!(err.code(), "CHIO-SCENARIO-MIXED-POPULATION");
    }
}
