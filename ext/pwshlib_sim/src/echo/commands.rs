//! The commands echo mode knows (README.md, "Echo mode"): the writers in
//! host.ps1's order, the location, sleeping, starting a process, whether a
//! function is defined, and stopping its own process. Any other command,
//! or an argument outside the subset, ends the script as unsupported.

use std::time::Duration;

use tree_sitter::Node;

use super::values::{current_dir, strip_prefix_ignore_case};
use super::{find_child, End, Run};
use crate::outcome::Written;

/// A command's arguments: `-Name value` pairs (a switch has no value) and
/// positional values, as text.
#[derive(Default)]
struct CommandArgs {
    parameters: Vec<(String, Option<String>)>,
    positional: Vec<String>,
}

impl CommandArgs {
    /// The value of `-Name` (PowerShell parameter names ignore case).
    fn named(&self, wanted: &str) -> Option<&String> {
        self.parameters
            .iter()
            .find(|(p, _)| p.eq_ignore_ascii_case(wanted))
            .and_then(|(_, v)| v.as_ref())
    }

    /// `-Name value`, or else the first positional value.
    fn named_or_first(&self, wanted: &str) -> Option<&String> {
        self.named(wanted).or(self.positional.first())
    }

    fn has_switch(&self, wanted: &str) -> bool {
        self.parameters
            .iter()
            .any(|(p, _)| p.eq_ignore_ascii_case(wanted))
    }

    fn is_empty(&self) -> bool {
        self.parameters.is_empty() && self.positional.is_empty()
    }
}

impl Run<'_> {
    pub(super) fn command(&mut self, node: Node<'_>) -> End {
        let text = self.text(node);
        let name = node.child_by_field_name("command_name").or_else(|| {
            let mut cursor = node.walk();
            let found = node
                .named_children(&mut cursor)
                .find(|c| c.kind() == "command_name");
            found
        });
        let (Some(name), Some(args)) = (name, self.command_arguments(node)) else {
            return End::Unsupported(text.to_owned());
        };
        let ran = match self.text(name).to_ascii_lowercase().as_str() {
            "write-output" | "echo" | "write" => {
                for argument in args.positional {
                    self.out_line(argument);
                }
                Some(End::Completed)
            }
            "write-host" => Some(self.write_host(&args)),
            "write-information" => self.write_line("", args.named_or_first("-MessageData")),
            "write-warning" => self.write_line("WARNING: ", args.named_or_first("-Message")),
            "write-verbose" | "write-debug" => Some(End::Completed),
            "write-error" => {
                // A stderr line, and shown in stdout too, in order (host.ps1's
                // ErrorSink, as pwshlib 2.x showed error records).
                let message = args.named_or_first("-Message").cloned().unwrap_or_default();
                self.out_line(&message);
                self.stderr.push(message);
                Some(End::Completed)
            }
            "get-location" | "pwd" if args.is_empty() => {
                self.out_line(current_dir());
                Some(End::Completed)
            }
            "start-sleep" | "sleep" => self.start_sleep(&args),
            "start-process" => self.start_process(&args),
            "test-path" => self.test_path(&args),
            // Like `Stop-Process -Id $PID`.
            "stop-process" => {
                let own_pid = std::process::id().to_string();
                (args.named_or_first("-Id") == Some(&own_pid)).then_some(End::Crash)
            }
            _ => None,
        };
        ran.unwrap_or_else(|| End::Unsupported(text.to_owned()))
    }

    /// The host writes of host.ps1's PwshlibPSHost: shown in order with the
    /// pipeline output (Write-Verbose and Write-Debug are not shown at their
    /// default preference, SilentlyContinue).
    fn write_host(&mut self, args: &CommandArgs) -> End {
        let text = args
            .named("-Object")
            .cloned()
            .unwrap_or_else(|| args.positional.join(" "));
        self.stdout.push_str(&text);
        if !args.has_switch("-NoNewline") {
            self.stdout.push('\n');
        }
        End::Completed
    }

    /// Write-Information and Write-Warning: one line of output after
    /// `prefix`. None without a message.
    fn write_line(&mut self, prefix: &str, message: Option<&String>) -> Option<End> {
        self.out_line(format!("{prefix}{}", message?));
        Some(End::Completed)
    }

    /// Counts the time slept (the main loop sleeps it at the end).
    fn start_sleep(&mut self, args: &CommandArgs) -> Option<End> {
        let (amount, to_millis) = match args.named("-Milliseconds") {
            Some(ms) => (Some(ms), 1.0),
            None => (args.named_or_first("-Seconds"), 1000.0),
        };
        let amount = amount?.trim().parse::<f64>().ok()?;
        if amount < 0.0 || amount.is_nan() {
            return None;
        }
        // Whole milliseconds, rounded down; more than a u64 holds (or
        // infinite) is forever. Duration is the checked f64 -> u64 here:
        // read as seconds, its whole seconds are the whole milliseconds.
        let millis =
            Duration::try_from_secs_f64(amount * to_millis).map_or(u64::MAX, |d| d.as_secs());
        self.written.push(Written {
            after_ms: self.slept_ms,
            stdout: (!self.stdout.is_empty()).then(|| self.stdout.clone()),
            stderr: self.stderr.iter().map(|line| format!("{line}\n")).collect(),
        });
        self.slept_ms = self.slept_ms.saturating_add(millis);
        Some(End::Completed)
    }

    fn start_process(&mut self, args: &CommandArgs) -> Option<End> {
        let program = args.named_or_first("-FilePath")?;
        let arguments: Vec<&str> = args
            .named("-ArgumentList")
            .map(|list| list.split_whitespace().collect())
            .unwrap_or_default();
        // Detached and never waited for: it may outlive this host.
        let started = std::process::Command::new(program)
            .args(arguments)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        Some(match started {
            Ok(child) => {
                self.out_line(child.id().to_string());
                End::Completed
            }
            Err(e) => End::Throw(format!("Start-Process: cannot start {program}: {e}")),
        })
    }

    /// Whether a function is defined: how a test sees which prelude
    /// functions a call gets.
    fn test_path(&mut self, args: &CommandArgs) -> Option<End> {
        let path = args
            .named("-Path")
            .or(args.named("-LiteralPath"))
            .or(args.positional.first())?;
        let name = strip_prefix_ignore_case(path, "function:")?;
        let defined = self.functions.iter().any(|f| f.eq_ignore_ascii_case(name));
        self.out_line(if defined { "True" } else { "False" });
        Some(End::Completed)
    }

    /// `-Name value` pairs and positional values. `None` if an argument is
    /// outside the subset.
    fn command_arguments(&self, node: Node<'_>) -> Option<CommandArgs> {
        let mut args = CommandArgs::default();
        let Some(elements) = find_child(node, "command_elements") else {
            return Some(args);
        };
        let mut cursor = elements.walk();
        let mut pending_parameter: Option<String> = None;
        for element in elements.named_children(&mut cursor) {
            match element.kind() {
                "command_argument_sep" => {}
                "command_parameter" => {
                    if let Some(name) = pending_parameter.take() {
                        args.parameters.push((name, None));
                    }
                    let text = self.text(element).trim_end_matches(':');
                    pending_parameter = Some(text.to_owned());
                }
                _ => {
                    if pending_parameter.is_none() && self.is_null(element) {
                        continue; // a $null argument passes nothing
                    }
                    let value = self.value(element)?;
                    match pending_parameter.take() {
                        Some(name) => args.parameters.push((name, Some(value))),
                        None => args.positional.push(value),
                    }
                }
            }
        }
        if let Some(name) = pending_parameter {
            args.parameters.push((name, None));
        }
        Some(args)
    }
}
