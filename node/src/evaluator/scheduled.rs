//! The scenario's own steps in an instance: each is prepared, performed and
//! counted through the run's step executor, and a call over a delayed link
//! is decided at its arrival, as the run driver does.

use chio_arena::{ArenaError, Step};

use super::budget::Counted;
use super::instance::WorldInstance;
use super::{failure, Instance};
use crate::executor::{PreparedStep, RunStep};
use crate::node::CallAnswer;

impl<I: WorldInstance> Instance<'_, I> {
    /// Runs one of the scenario's own steps through the run's step
    /// executor; a call over a delayed link is put in flight, to be
    /// decided at its arrival ([`Self::land_before`]), as a run does.
    pub(super) fn run_step(&mut self, step: &Step, now_ms: u64) -> Result<(), ArenaError> {
        let agent = step.head.agent.as_str();
        let step_id = step.head.id.as_str();
        self.place
            .complete(self.executor.settle_faults(self.place.dispatcher(), now_ms))
            .map_err(failure)?;
        let prepared = self
            .executor
            .prepare(self.world, step_id, &step.action, agent, now_ms)
            .map_err(failure)?;
        let node = self.world.agent_node(agent).unwrap_or("direct").to_string();
        if let Some(arrival) = prepared.arrival_ms() {
            self.in_flight
                .send(arrival, (step_id.to_string(), node, prepared));
            return Ok(());
        }
        self.decide_step(step_id, &node, prepared)
    }

    /// Decides every scheduled call in flight that arrives before
    /// `instant_ms` (all of them when `None`), in arrival order, as the run
    /// driver does: after the stall its arrival ends, with what a crash
    /// since its sending left of it.
    pub(super) fn land_before(&mut self, instant_ms: Option<u64>) -> Result<(), ArenaError> {
        while let Some((step_id, node, mut prepared)) = self.in_flight.arriving_before(instant_ms) {
            let arrival = prepared.arrival_ms().unwrap_or_default();
            self.place
                .complete(
                    self.executor
                        .settle_faults(self.place.dispatcher(), arrival),
                )
                .map_err(failure)?;
            self.executor.arrive(self.world, &mut prepared);
            self.decide_step(&step_id, &node, prepared)?;
        }
        Ok(())
    }

    /// Performs a prepared scheduled step on `node` and counts what a
    /// kernel decided.
    fn decide_step(
        &mut self,
        step_id: &str,
        node: &str,
        prepared: PreparedStep,
    ) -> Result<(), ArenaError> {
        let performed = self
            .place
            .complete(
                self.executor
                    .perform(self.place.dispatcher(), node, step_id, prepared),
            )
            .map_err(failure)?;
        // A scheduled admission counts under its budgets like any other.
        if let RunStep::Call(call, CallAnswer::Decided(outcome)) = &performed {
            self.evaluations += 1;
            if let Some(held) = self.executor.capability(&call.command.capability_id) {
                let counted = Counted {
                    agent: &call.command.agent,
                    server: &call.command.server,
                    tool: &call.command.tool,
                    token: &held.token,
                };
                self.tally.record(self.world, counted, outcome.verdict);
            }
        }
        Ok(())
    }
}
