//! The second half of [`ArenaError`](super::ArenaError)'s table: the
//! refusals about a scenario's world (sections, fixtures, guards,
//! populations) and the run-time errors of the arena (`CHIO-ARENA-...`).
//!
//! [`error_table!`](crate::diagnostic::error_table) declares one enum from
//! one table, and a macro's input cannot span two files, so this file hands
//! its rows on: `with_world_rows! { error_table! { HEAD } }` expands to
//! `error_table! { HEAD ROWS }`. The enum, its codes and its classes are
//! still declared once.

/// Appends this file's rows to the table `$table!` is given.
macro_rules! with_world_rows {
    ($table:ident ! { $($head:tt)* }) => {
        $table! {
            $($head)*
        /// Some world sections are declared but a needed one is missing.
        IncompleteWorld {
            /// The missing section or key.
            field: String,
        } => "CHIO-SCENARIO-INCOMPLETE-WORLD", Input, at: Some(field),
            summary: format!("the scenario declares a world but {field} is missing"),
            help: "declare [[nodes]], [[kernels]], [[servers]] and each agent's kernel, or none of them";
        /// A runner was given a scenario that declares no world, so none of its
        /// steps can be dispatched.
        NoWorld {
            /// How many steps the scenario schedules.
            steps: usize,
        } => "CHIO-SCENARIO-NO-WORLD", Input, at: None,
            summary: format!(
                "the scenario declares no world (no [[nodes]], [[kernels]], [[servers]], [[grants]] or agent kernel), so none of its {steps} step(s) can be dispatched"
            ),
            help: "add [[nodes]], [[kernels]] (each with a node), [[servers]] (each with a kernel), [[grants]] for the calls, and kernel = \"...\" on every agent; chio arena validate checks the scenario as it is";
        /// A message's `from_step` is not an earlier call step of its sender.
        MessageSource {
            /// Path of the `from_step` key.
            field: String,
            /// The step it names.
            step: String,
            /// Which condition fails.
            reason: &'static str,
        } => "CHIO-SCENARIO-MESSAGE-SOURCE", Input, at: Some(field),
            summary: format!("{field} names step {step:?}, which a message cannot forward: {reason}"),
            help: "name an earlier call step of the message's own agent, or send literal content";
        /// A fault step that a run could not suffer at that point of the
        /// schedule (a restart of a node that is up, a heal of a link that
        /// carries), or a message across a fault in effect.
        FaultSequence {
            /// Path of the step's key at fault.
            field: String,
            /// What is wrong at that point.
            reason: String,
            /// How to order the steps instead.
            fix: &'static str,
        } => "CHIO-SCENARIO-FAULT-SEQUENCE", Input, at: Some(field),
            summary: format!("fault sequence broken at {field}: {reason}"),
            help: format!("{fix}");
        /// A delegate, revoke or message step in a scenario without a world.
        WorldRequired {
            /// Path of the step's `action`.
            field: String,
            /// The action.
            action: String,
        } => "CHIO-SCENARIO-WORLD-REQUIRED", Input, at: Some(field),
            summary: format!("{action} step at {field} needs a world"),
            help: "declare the world (nodes, kernels, servers, grants) or remove the step";
        /// A key that does not apply where it is written.
        KeyNotAllowed {
            /// Path of the key.
            field: String,
            /// Where it does apply.
            context: &'static str,
        } => "CHIO-SCENARIO-KEY-NOT-ALLOWED", Input, at: Some(field),
            summary: format!("key {field} does not apply here ({context})"),
            help: "remove the key";
        /// A call step without `expect_verdict`.
        MissingExpectVerdict {
            /// Path of the missing key.
            field: String,
        } => "CHIO-SCENARIO-MISSING-EXPECT-VERDICT", Input, at: Some(field),
            summary: format!("call step has no expect_verdict at {field}"),
            help: "add expect_verdict = \"allow\", \"deny\" or \"rewrite\"";
        /// `expect_verdict` on a step that is not a call.
        ExpectVerdictNotCall {
            /// Path of the key.
            field: String,
            /// The step's action.
            action: String,
        } => "CHIO-SCENARIO-EXPECT-VERDICT-NOT-CALL", Input, at: Some(field),
            summary: format!("expect_verdict at {field} is set on a {action} step"),
            help: "remove expect_verdict; only call steps expect a verdict";
        /// A fixtures folder that does not exist next to the scenario.
        FixtureMissing {
            /// Path of the `fixtures` key.
            field: String,
            /// The folder, relative to the scenario.
            folder: String,
        } => "CHIO-SCENARIO-FIXTURE-MISSING", Input, at: Some(field),
            summary: format!("fixtures folder {folder:?} at {field} does not exist next to the scenario"),
            help: "create the folder next to the scenario file or correct the path";
        /// An agent's `seed_prompt_ref` names no file next to the scenario
        /// (`chio arena validate` checks it; the prompt is read by no kernel).
        SeedPromptMissing {
            /// Path of the `seed_prompt_ref` key.
            field: String,
            /// The file, relative to the scenario.
            file: String,
        } => "CHIO-SCENARIO-SEED-PROMPT-MISSING", Input, at: Some(field),
            summary: format!("seed prompt {file:?} at {field} is not a file next to the scenario"),
            help: "write the agent's prompt to that file (relative to the scenario's folder) or correct seed_prompt_ref";
        /// A fixtures path that leaves the scenario's folder: absolute, climbing
        /// out with `..`, naming the folder itself, or resolving elsewhere
        /// through a symbolic link (the folder or anything below it).
        FixtureOutsideScenario {
            /// Path of the key naming it (`fixtures`, a sealed file's
            /// `fixture`, `seed_prompt_ref`).
            field: String,
            /// The file or folder that resolves outside, relative to the
            /// scenario's folder, when it is not the `fixtures` folder as written.
            entry: Option<String>,
        } => "CHIO-SCENARIO-FIXTURE-OUTSIDE", Input, at: Some(field),
            summary: match entry {
                None => format!("path at {field} is absolute or leaves the scenario's folder"),
                Some(entry) => format!(
                    "{entry:?} at {field} resolves outside the scenario's folder through a symbolic link"
                ),
            },
            help: "keep fixtures, sealed files and prompts below the scenario's folder, without '..' and without symbolic links that lead out of it";
        /// A fixture a run could not seed: not UTF-8 text, a name that is not
        /// UTF-8, not a file or folder, a dangling or looping link, unreadable.
        FixtureUnreadable {
            /// Path of the `fixtures` key.
            field: String,
            /// The file or folder, relative to the scenario's folder.
            entry: String,
            /// What is wrong with it.
            reason: String,
        } => "CHIO-SCENARIO-FIXTURE-UNREADABLE", Input, at: Some(field),
            summary: format!("fixture {entry:?} at {field} cannot be seeded: {reason}"),
            help: "make every fixture a readable UTF-8 text file or folder with a UTF-8 name, and remove dangling or looping links";
        /// A guard's configuration refused by the kernel's guard builder.
        GuardConfig {
            /// Path of the guard's `config`.
            field: String,
            /// The builder's reason.
            reason: String,
        } => "CHIO-SCENARIO-GUARD-CONFIG", Input, at: Some(field),
            summary: format!("guard configuration at {field} refused by the kernel: {reason}"),
            help: "fix the guard's [guards.config] table; docs/scenario-schema.md lists each kind's keys";
        /// A guard's configuration names a server or tool that no kernel
        /// running the guard serves, so the guard would never apply to it.
        GuardNameUnserved {
            /// Path of the name in the guard's `config`.
            field: String,
            /// The server or tool named, as `server "x"` or `tool "y"`.
            name: String,
            /// The kernels that would have to serve it.
            kernels: String,
            /// ` (did you mean "z"?)`, or empty.
            closest: String,
        } => "CHIO-SCENARIO-GUARD-UNSERVED", Input, at: Some(field),
            summary: format!("{field} names {name}, which no server of kernel(s) {kernels} serves{closest}: the guard would never apply to it"),
            help: "name a server or tool that a kernel running this guard serves, or add the guard to the pipeline of the kernel that serves it";
        /// A sequence rule's predecessor is a bare tool name that several
        /// servers serve, so a look-alike on any of them would satisfy it.
        GuardNameAmbiguous {
            /// Path of the name in the guard's `config`.
            field: String,
            /// The tool named.
            tool: String,
            /// The servers that serve it.
            servers: String,
        } => "CHIO-SCENARIO-GUARD-AMBIGUOUS", Input, at: Some(field),
            summary: format!("{field} names tool {tool:?}, which servers {servers} all serve: a call to any of them would satisfy the rule"),
            help: "name the predecessor as server/tool (for example ci/run_tests)";
        /// An `[adversaries.params]` entry is unknown, of the wrong type or names an unknown value.
        AdversaryParam {
            /// Path of the parameter, such as `adversaries[0].params.patterns[1]`.
            field: String,
            /// What is wrong and what is accepted.
            reason: String,
        } => "CHIO-SCENARIO-ADVERSARY-PARAM", Input, at: Some(field),
            summary: format!("adversary parameter {field} refused: {reason}"),
            help: "fix the parameter; docs/scenario-schema.md lists each class's parameters";
        /// A population would have no member.
        EmptyPopulation {
            /// Path of the parameter or population that leaves it empty.
            field: String,
        } => "CHIO-SCENARIO-EMPTY-POPULATION", Input, at: Some(field),
            summary: format!("adversary population at {field} would have no member"),
            help: "list at least one value, or remove the parameter to use its default";
        /// A population mixes members of several classes.
        MixedPopulation {
            /// The population's name.
            population: String,
            /// The class of its first member.
            first: &'static str,
            /// Another class found in it.
            other: &'static str,
        } => "CHIO-SCENARIO-MIXED-POPULATION", Input, at: None,
            summary: format!("population {population:?} mixes classes {first} and {other}"),
            help: "keep one class per population; declare another [[adversaries]] block for the other class";
        /// Evolution or promotion was asked of a scenario with no `[[adversaries]]`.
        NoAdversaries => "CHIO-ARENA-NO-ADVERSARIES", Input, at: Some("adversaries"),
            summary: "the scenario declares no population at adversaries".to_string(),
            help: "declare at least one [[adversaries]] block with class, population and seed_ref";
        /// The adversary evaluator failed (not a verdict: the run cannot go on).
        Evaluation {
            /// What failed.
            cause: String,
        } => "CHIO-ARENA-EVALUATION", Infrastructure, at: None,
            summary: format!("adversary evaluation failed: {cause}"),
            help: "check the scenario's world and fixtures and run again";
        /// An arena output (leaderboard, trace, chart, promoted case) could not be written.
        Output {
            /// The file or folder.
            path: String,
            /// What went wrong.
            cause: String,
        } => "CHIO-ARENA-OUTPUT", Infrastructure, at: None,
            summary: format!("cannot write {path}: {cause}"),
            help: "check the folder's permissions and free space, or pass another --out";
        /// The promotion bless gate is shut.
        PromotionGate {
            /// The clause that keeps it shut.
            clause: String,
        } => "CHIO-ARENA-PROMOTE-GATE", Input, at: None,
            summary: format!("promotion gate is shut: {clause}"),
            help: "set CHIO_BLESS=1 and BLESS_REASON=arena:<scenario-id>, outside CI, to promote fixtures";
        /// A step named on the command line is not a step the adversaries act on.
        UnknownStep {
            /// The id given.
            step: String,
        } => "CHIO-ARENA-UNKNOWN-STEP", Input, at: None,
            summary: format!("step {step:?} is not a call step the adversaries act on"),
            help: "name a call step the scenario expects to be allowed (see chio arena validate)";
        /// A value could not be printed as canonical JSON.
        Canonical {
            /// The printer's refusal.
            #[from]
            source: CanonicalError,
        } => "CHIO-ARENA-CANONICAL-JSON", Infrastructure, at: None,
            summary: format!("cannot print canonical JSON: {source}"),
            help: "report this as a bug: validated scenarios always print";
        /// An evidence bundle was refused: `--out` names something the arena did
        /// not write, or a folder given to replay or diff is not a bundle.
        Bundle {
            /// The file or folder.
            path: String,
            /// What went wrong and how to fix it.
            cause: String,
        } => "CHIO-ARENA-BUNDLE", Input, at: None,
            summary: format!("bundle {path}: {cause}"),
            help: "pass an empty or new --out folder, or a folder a run wrote";
        /// Writing an evidence bundle failed on the filesystem (a full disk, a
        /// read-only or missing parent); the previous bundle, if any, is kept.
        BundleIo {
            /// The file or folder being written.
            path: String,
            /// The operating system's reason.
            cause: String,
        } => "CHIO-ARENA-BUNDLE-IO", Infrastructure, at: None,
            summary: format!("cannot write bundle {path}: {cause}; the previous bundle is kept"),
            help: "check the folder's permissions and free space, or pass another --out";
        }
    };
}
