//! Telling one Puppet run from the next in a long-lived process.
//!
//! The Resource API keeps one provider instance per type for the life of the
//! Ruby process (`my_provider ||= ...` in `Puppet::ResourceApi`), and its
//! `context` too, so nothing the provider is handed changes from run to run.
//! The caches and the logon-failure memo belong to one run (docs/behavior.md §3
//! "Caches"), so the provider watches two objects Puppet creates afresh:
//!
//! * **The run's report.** `Puppet::Configurer#run` (every agent run, in the
//!   daemon too, and `puppet apply`) makes a new `Puppet::Transaction::Report`
//!   and registers it as a `Puppet::Util::Log` destination until the run
//!   ends; `Puppet::Resource::Catalog#apply` registers its transaction's
//!   report while it evaluates. It is the one object that is new for every
//!   run and present while resources are evaluated.
//! * **The loaders** (`Puppet.lookup(:loaders)`). `puppet apply` converts the
//!   catalog (which canonicalizes every manifest resource) before its
//!   configurer run, so no report exists yet; its loaders are made per
//!   apply. The agent daemon keeps one set for its life: there only the
//!   report tells runs apart.
//!
//! A run ends when its report goes away or another one appears; without a
//! report before, other loaders in place of the previous ones mean a new run. A report appearing
//! where there was none is the same run going on (the apply case: convert,
//! then evaluate). Object ids are compared, never the objects kept: Ruby's
//! object ids are not reused.

/// What identifies the current run: the object ids of the report and the
/// loaders in view, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunMarker {
    pub report: Option<u64>,
    pub loaders: Option<u64>,
}

/// Whether `now` belongs to another run than `last` (None: nothing seen yet,
/// so nothing cached to forget).
pub fn is_new_run(last: Option<RunMarker>, now: RunMarker) -> bool {
    let Some(last) = last else {
        return false;
    };
    match (last.report, now.report) {
        (Some(before), Some(current)) => before != current,
        (Some(_), None) => true,
        // Loaders coming or going is the same run changing its context
        // (`Puppet::Configurer` pushes loaders when none are bound and pops
        // a context at the end of its run); only other loaders in their
        // place tell of another run.
        (None, _) => {
            matches!((last.loaders, now.loaders), (Some(before), Some(current)) if before != current)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(report: Option<u64>, loaders: Option<u64>) -> RunMarker {
        RunMarker { report, loaders }
    }

    /// Feeds a sequence of markers and returns where new runs began.
    fn run_starts(markers: &[RunMarker]) -> Vec<usize> {
        let mut last = None;
        let mut starts = Vec::new();
        for (i, now) in markers.iter().enumerate() {
            if is_new_run(last, *now) {
                starts.push(i);
            }
            last = Some(*now);
        }
        starts
    }

    #[test]
    fn the_agent_daemon_is_told_apart_by_its_reports() {
        // One set of loaders for the daemon's life, a report per run.
        let l = Some(1);
        let calls = [
            marker(Some(10), l),
            marker(Some(10), l),
            marker(Some(11), l),
            marker(Some(11), l),
            marker(Some(12), l),
        ];
        assert_eq!(run_starts(&calls), [2, 4]);
    }

    #[test]
    fn apply_converts_before_its_report_exists() {
        // Run 1: convert (no report), evaluate (report 10); run 2 likewise,
        // with new loaders (puppet apply) or the same ones (a tool applying
        // catalogs in one context).
        for second_loaders in [Some(2), Some(1)] {
            let calls = [
                marker(None, Some(1)),
                marker(Some(10), Some(1)),
                marker(Some(10), Some(1)),
                marker(None, second_loaders),
                marker(Some(11), second_loaders),
            ];
            assert_eq!(run_starts(&calls), [3], "{second_loaders:?}");
        }
    }

    #[test]
    fn a_configurer_that_pushes_loaders_mid_run_does_not_start_another() {
        // Seen with two catalogs applied in one process: the first
        // configurer run popped the caller's loaders, so the second catalog
        // is converted with none bound, and its configurer run pushes new ones.
        let calls = [
            marker(None, Some(1)),
            marker(Some(10), Some(1)),
            marker(None, None),
            marker(Some(11), Some(2)),
            marker(Some(11), Some(2)),
        ];
        assert_eq!(run_starts(&calls), [2]);
    }

    #[test]
    fn without_any_report_only_other_loaders_in_place_start_a_run() {
        let calls = [
            marker(None, None),
            marker(None, None),
            marker(None, Some(1)),
            marker(None, Some(1)),
            marker(None, None),
            marker(None, Some(2)),
            marker(None, Some(3)),
        ];
        assert_eq!(run_starts(&calls), [6]);
    }

    #[test]
    fn new_loaders_within_a_report_are_the_same_run() {
        // The configurer may push new loaders mid-run (environment switch).
        let calls = [marker(Some(10), Some(1)), marker(Some(10), Some(2))];
        assert_eq!(run_starts(&calls), Vec::<usize>::new());
    }
}
