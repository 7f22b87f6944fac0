//! Echo mode: a tiny PowerShell subset, interpreted over the tree-sitter
//! syntax tree, for code that is not a DSC invocation. It exists so that the
//! manager can be tested end to end without PowerShell; README.md ("Echo
//! mode") is the user-facing description and must match this file.
//!
//! Statements run in order. Output accumulates; `exit`, `throw`, a crash or a
//! hang end the script. Anything outside the subset ends it with an
//! errormessage naming the statement, so a test never passes by accident.

use std::collections::HashMap;
use std::time::Duration;

use tree_sitter::{Node, Tree};

use crate::outcome::{Outcome, Written};

/// The comment that makes the host hang, ignoring the timeout.
pub const HANG_DIRECTIVE: &str = "#pwshlib-sim:hang";

/// Interprets `code` (already parsed into `tree`); `functions` are those
/// defined for it (a prelude's).
pub fn handle(code: &str, tree: &Tree, functions: &[String]) -> Outcome {
    if code.trim().is_empty() {
        return Outcome::Reply {
            stdout: None,
            stderr: String::new(),
            exitcode: 0,
            errormessage: None,
        };
    }
    let mut run = Run {
        code,
        stdout: String::new(),
        stderr: Vec::new(),
        variables: HashMap::new(),
        slept_ms: 0,
        written: Vec::new(),
        functions,
    };
    let end = run.statements(tree.root_node());
    run.finish(end)
}

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

/// How a script ended.
enum End {
    Completed,
    Exit(i32),
    Throw(String),
    Unsupported(String),
    Crash,
    Hang,
}

struct Run<'a> {
    code: &'a str,
    /// Everything shown, in order: pipeline output, host writes
    /// (Write-Host, Write-Information, `WARNING: ` lines) and
    /// `[Console]::Out`, as host.ps1 gathers them for a plain request.
    stdout: String,
    stderr: Vec<String>,
    variables: HashMap<String, String>,
    slept_ms: u64,
    /// What had been written at the start of each sleep.
    written: Vec<Written>,
    /// The functions defined for this script (its prelude's).
    functions: &'a [String],
}

impl<'a> Run<'a> {
    fn text(&self, node: Node<'_>) -> &'a str {
        &self.code[node.byte_range()]
    }

    /// Runs every statement below `node` (program, statement lists).
    fn statements(&mut self, node: Node<'_>) -> End {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for child in children {
            let end = match child.kind() {
                "comment" => {
                    let compact: String = self
                        .text(child)
                        .chars()
                        .filter(|c| !c.is_whitespace())
                        .collect();
                    if compact.eq_ignore_ascii_case(HANG_DIRECTIVE) {
                        End::Hang
                    } else {
                        End::Completed
                    }
                }
                "statement_list" | "empty_statement" => self.statements(child),
                "flow_control_statement" => self.flow_control(child),
                "pipeline" => self.pipeline(child),
                _ => End::Unsupported(self.text(child).to_owned()),
            };
            if !matches!(end, End::Completed) {
                return end;
            }
        }
        End::Completed
    }

    fn flow_control(&mut self, node: Node<'_>) -> End {
        let keyword = node
            .child(0)
            .map(|k| self.text(k).to_ascii_lowercase())
            .unwrap_or_default();
        let argument = node.named_child(0).map(|arg| self.value(arg));
        match (keyword.as_str(), argument) {
            ("exit", None) => End::Exit(0),
            ("exit", Some(Some(value))) => match value.trim().parse() {
                Ok(code) => End::Exit(code),
                Err(_) => End::Unsupported(self.text(node).to_owned()),
            },
            ("throw", None) => End::Throw("ScriptHalted".into()),
            ("throw", Some(Some(message))) => End::Throw(message),
            _ => End::Unsupported(self.text(node).to_owned()),
        }
    }

    fn pipeline(&mut self, node: Node<'_>) -> End {
        // pipeline → pipeline_chain → one command or expression; `|` chains
        // (more than one element) are outside the subset.
        let mut inner = single_named_child(node);
        if let Some(chain) = inner.filter(|n| n.kind() == "pipeline_chain") {
            inner = single_named_child(chain);
        }
        let Some(inner) = inner else {
            return End::Unsupported(self.text(node).to_owned());
        };
        match inner.kind() {
            "command" => self.command(inner),
            "assignment_expression" => self.assignment(inner),
            _ => self.expression_statement(inner),
        }
    }

    /// A bare expression: its value is output, except for the stderr
    /// writer `[Console]::Error.WriteLine(<value>)`.
    fn expression_statement(&mut self, node: Node<'_>) -> End {
        let text = self.text(node);
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if compact
            .to_ascii_lowercase()
            .starts_with("[console]::error.writeline(")
        {
            return match self.call_argument(node) {
                Some(line) => {
                    self.stderr.push(line);
                    End::Completed
                }
                None => End::Unsupported(text.to_owned()),
            };
        }
        // host.ps1 points [Console]::Out at the host's buffer during a
        // call: the line is stdout, in order with the rest.
        if compact
            .to_ascii_lowercase()
            .starts_with("[console]::out.writeline(")
        {
            return match self.call_argument(node) {
                Some(line) => {
                    self.out_line(line);
                    End::Completed
                }
                None => End::Unsupported(text.to_owned()),
            };
        }
        if self.is_null(node) {
            return End::Completed; // $null outputs nothing
        }
        match self.value(node) {
            Some(value) => {
                self.out_line(value);
                End::Completed
            }
            None => End::Unsupported(text.to_owned()),
        }
    }

    /// The single argument of a method call such as `X.WriteLine('a')`.
    fn call_argument(&self, node: Node<'_>) -> Option<String> {
        let list = find_descendant(node, "argument_list")?;
        let expressions = find_descendant(list, "argument_expression_list")?;
        let mut cursor = expressions.walk();
        let args: Vec<_> = expressions.named_children(&mut cursor).collect();
        match args.as_slice() {
            [only] => self.value(*only),
            _ => None,
        }
    }

    fn assignment(&mut self, node: Node<'_>) -> End {
        let (Some(target), Some(value)) = (node.named_child(0), node.named_child(2)) else {
            return End::Unsupported(self.text(node).to_owned());
        };
        let operator = node.named_child(1).map(|op| self.text(op)).unwrap_or("");
        let target_text = self.text(target).trim();
        // `$env:NAME = 'v'` changes the process environment, as in
        // PowerShell: it outlives the call unless the host restores its
        // start-up environment before the next one (host.ps1 does, and so
        // does the simulator: main.rs).
        if let Some(env_name) = strip_prefix_ignore_case(target_text, "$env:")
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_'))
        {
            let value = if value.kind() == "pipeline" {
                single_named_child(value).and_then(|v| self.value(v))
            } else {
                self.value(value)
            };
            return match (operator, value) {
                ("=", Some(value)) => {
                    // An empty value removes the variable, as .NET does.
                    if value.is_empty() {
                        std::env::remove_var(env_name);
                    } else {
                        std::env::set_var(env_name, value);
                    }
                    End::Completed
                }
                _ => End::Unsupported(self.text(node).to_owned()),
            };
        }
        let name = target_text
            .strip_prefix('$')
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_'));
        // `$x = $null` leaves `$x` null (it outputs nothing), as an unset one.
        let null = self.is_null(value);
        let value = if value.kind() == "pipeline" {
            single_named_child(value).and_then(|v| self.value(v))
        } else {
            self.value(value)
        };
        match (operator, name, value) {
            ("=", Some(name), Some(_)) if null => {
                self.variables.remove(&name.to_ascii_lowercase());
                End::Completed
            }
            ("=", Some(name), Some(value)) => {
                self.variables.insert(name.to_ascii_lowercase(), value);
                End::Completed
            }
            _ => End::Unsupported(self.text(node).to_owned()),
        }
    }

    fn command(&mut self, node: Node<'_>) -> End {
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

    /// The value of an expression in the subset, as text.
    fn value(&self, node: Node<'_>) -> Option<String> {
        let text = self.text(node);
        match node.kind() {
            "string_literal" if !text.starts_with('"') => string_literal(text),
            "string_literal" | "expandable_string_literal" => {
                // Double-quoted text without expansions or escapes only.
                let inner = text.strip_prefix('"')?.strip_suffix('"')?;
                (!inner.contains(['$', '`', '"'])).then(|| inner.to_owned())
            }
            "integer_literal" | "decimal_integer_literal" | "real_literal" | "generic_token" => {
                Some(text.to_owned())
            }
            "variable" => self.variable(text),
            "parenthesized_expression" | "sub_expression" => {
                // `(Get-Location)` and friends: the location's text.
                let compact: String = text
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect::<String>()
                    .to_ascii_lowercase();
                matches!(
                    compact.as_str(),
                    "(get-location)" | "$(get-location)" | "(pwd)"
                )
                .then(current_dir)
            }
            "member_access" => {
                let compact: String = text
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect::<String>()
                    .to_ascii_lowercase();
                matches!(compact.as_str(), "(get-location).path" | "$pwd.path").then(current_dir)
            }
            _ => single_named_child(node).and_then(|child| self.value(child)),
        }
    }

    /// True for an expression that is `$null`: `$null` itself, an unset
    /// `$env:NAME`, or a variable this script has not set.
    fn is_null(&self, node: Node<'_>) -> bool {
        let mut node = node;
        while node.kind() != "variable" {
            match single_named_child(node) {
                Some(child) => node = child,
                None => return false,
            }
        }
        let name = self.text(node).trim_start_matches('$');
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("env:") {
            return std::env::var_os(&name[4..]).is_none();
        }
        match lower.as_str() {
            "null" => true,
            "pid" | "pwd" | "true" | "false" => false,
            _ => !self.variables.contains_key(&lower),
        }
    }

    fn variable(&self, text: &str) -> Option<String> {
        let name = text.strip_prefix('$')?;
        let lower = name.to_ascii_lowercase();
        if let Some(env_name) = lower.strip_prefix("env:") {
            // Case-insensitive, like Windows; `$env:UNSET` is $null, which
            // outputs nothing (here: an empty value).
            let env_name = &name[name.len() - env_name.len()..];
            return Some(std::env::var(env_name).unwrap_or_default());
        }
        match lower.as_str() {
            "pid" => Some(std::process::id().to_string()),
            "pwd" => Some(current_dir()),
            "true" => Some("True".into()),
            "false" => Some("False".into()),
            "null" => Some(String::new()),
            _ => Some(self.variables.get(&lower).cloned().unwrap_or_default()),
        }
    }

    /// One line of stdout.
    fn out_line(&mut self, line: impl AsRef<str>) {
        self.stdout.push_str(line.as_ref());
        self.stdout.push('\n');
    }

    fn finish(self, end: End) -> Outcome {
        let joined =
            |lines: &[String]| -> String { lines.iter().map(|line| format!("{line}\n")).collect() };
        let stdout = (!self.stdout.is_empty()).then(|| self.stdout.clone());
        let stderr = joined(&self.stderr);
        let reply = |exitcode: i32, errormessage: Option<String>| Outcome::Reply {
            stdout: stdout.clone(),
            stderr: stderr.clone(),
            exitcode,
            errormessage,
        };
        let outcome = match end {
            End::Completed => reply(0, None),
            End::Exit(code) => reply(code, None),
            End::Throw(message) => reply(1, Some(message)),
            End::Unsupported(statement) => {
                let mut shown: String = statement.chars().take(120).collect();
                if shown.len() < statement.len() {
                    shown.push('…');
                }
                reply(
                    1,
                    Some(format!(
                        "pwshlib-sim echo mode does not support this statement: {shown}"
                    )),
                )
            }
            End::Crash => Outcome::Crash,
            End::Hang => return Outcome::HangForever,
        };
        if self.slept_ms > 0 {
            Outcome::Sleep {
                millis: self.slept_ms,
                then: Box::new(outcome),
                written: self.written,
            }
        } else {
            outcome
        }
    }
}

/// `'…'` with `''` unescaped, and `@'…'@` here-strings (contents between the
/// header line and the closing line, verbatim).
fn string_literal(text: &str) -> Option<String> {
    if let Some(body) = text.strip_prefix("@'") {
        let body = body.strip_suffix("'@")?;
        let body = body
            .strip_prefix("\r\n")
            .or_else(|| body.strip_prefix('\n'))?;
        let body = body
            .strip_suffix("\r\n")
            .or_else(|| body.strip_suffix('\n'))
            .unwrap_or(body);
        return Some(body.to_owned());
    }
    let inner = text.strip_prefix('\'')?.strip_suffix('\'')?;
    Some(inner.replace("''", "'"))
}

fn strip_prefix_ignore_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

fn current_dir() -> String {
    std::env::current_dir()
        .map(|dir| dir.display().to_string())
        .unwrap_or_default()
}

fn single_named_child(node: Node<'_>) -> Option<Node<'_>> {
    let mut cursor = node.walk();
    let named: Vec<_> = node
        .named_children(&mut cursor)
        .filter(|c| c.kind() != "comment")
        .collect();
    match named.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}

fn find_child<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    let found = node.named_children(&mut cursor).find(|c| c.kind() == kind);
    found
}

fn find_descendant<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    if node.kind() == kind {
        return Some(node);
    }
    let mut cursor = node.walk();
    let children: Vec<_> = node.named_children(&mut cursor).collect();
    children.into_iter().find_map(|c| find_descendant(c, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(code: &str) -> Outcome {
        let tree = crate::parse(code).expect("parses");
        handle(code, &tree, &[])
    }

    const ERRORS_THEN_EXIT: &str = "Write-Error 'bad'; [Console]::Error.WriteLine('worse')\nWrite-Output 'x'\nexit 3\nWrite-Output 'never'";
    const OUTPUT_CONSOLE_WARNING: &str =
        "Write-Output 'bar'; [Console]::Out.WriteLine('foo'); Write-Warning 'baz'";
    const EVERY_HOST_WRITE: &str = "Write-Host 'a' -NoNewline\nWrite-Host 'b'\nWrite-Information -MessageData 'c'\nWrite-Verbose 'hidden'\nWrite-Debug 'hidden'\nWrite-Warning -Message 'w'\n'd'";

    /// Each script run alone gives its reply.
    fn assert_replies(cases: &[(&str, Outcome)]) {
        for (code, expected) in cases {
            assert_eq!(&run(code), expected, "{code:?}");
        }
    }

    fn reply(stdout: Option<&str>, stderr: &str, exitcode: i32, error: Option<&str>) -> Outcome {
        Outcome::Reply {
            stdout: stdout.map(str::to_owned),
            stderr: stderr.to_owned(),
            exitcode,
            errormessage: error.map(str::to_owned),
        }
    }

    #[test]
    fn output_and_literals() {
        assert_replies(&[
            (
                "Write-Output 'it''s' 42 \"plain\"\n'bare'\n7",
                reply(Some("it's\n42\nplain\nbare\n7\n"), "", 0, None),
            ),
            (
                "Write-Output @'\nline 'one' '@ is not the end\n'@",
                reply(Some("line 'one' '@ is not the end\n"), "", 0, None),
            ),
            ("Write-Output 'a\0b'", reply(Some("a\0b\n"), "", 0, None)),
            ("  ", reply(None, "", 0, None)),
        ]);
    }

    #[test]
    fn errors_exit_codes_and_throw() {
        assert_replies(&[
            (
                ERRORS_THEN_EXIT,
                reply(Some("bad\nx\n"), "bad\nworse\n", 3, None),
            ),
            ("throw 'boom'", reply(None, "", 1, Some("boom"))),
        ]);
    }

    /// As host.ps1 gathers a plain request's output (issue 10, item 3):
    /// host writes and [Console]::Out in order with Write-Output.
    #[test]
    fn host_writes_and_the_console_are_stdout_in_order() {
        assert_replies(&[
            (
                OUTPUT_CONSOLE_WARNING,
                reply(Some("bar\nfoo\nWARNING: baz\n"), "", 0, None),
            ),
            (
                EVERY_HOST_WRITE,
                reply(Some("ab\nc\nWARNING: w\nd\n"), "", 0, None),
            ),
        ]);
    }

    /// Item 2: `exit N` at the top level is the exit code, whatever was
    /// written before it.
    #[test]
    fn exit_gives_its_code() {
        assert_replies(&[
            ("Write-Host 'x'\nexit 7", reply(Some("x\n"), "", 7, None)),
            ("exit 0", reply(None, "", 0, None)),
        ]);
    }

    /// `$env:NAME = value` sets the process environment (the host restores
    /// its start-up environment before the next call: main.rs).
    #[test]
    fn env_assignment_sets_the_process_environment() {
        assert_eq!(
            run("$env:PWSHLIB_SIM_ECHO_SET = 'v1'; $env:PWSHLIB_SIM_ECHO_SET"),
            reply(Some("v1\n"), "", 0, None)
        );
        assert_eq!(std::env::var("PWSHLIB_SIM_ECHO_SET").as_deref(), Ok("v1"));
        assert_eq!(
            run("$env:PWSHLIB_SIM_ECHO_SET = ''"),
            reply(None, "", 0, None)
        );
        assert!(std::env::var_os("PWSHLIB_SIM_ECHO_SET").is_none());
    }

    #[test]
    fn variables_are_per_script() {
        assert_eq!(run("$x = 'v'; $x"), reply(Some("v\n"), "", 0, None));
        assert_eq!(run("$x"), reply(None, "", 0, None));
        assert_eq!(run("$x = 'v'; $x = $null; $x"), reply(None, "", 0, None));
        assert_eq!(
            run("Write-Output $env:PWSHLIB_SIM_SURELY_UNSET 'a' $null"),
            reply(Some("a\n"), "", 0, None)
        );
    }

    #[test]
    fn sleeps_crashes_and_hangs() {
        let written = |after_ms: u64, stdout: Option<&str>, stderr: &str| Written {
            after_ms,
            stdout: stdout.map(str::to_owned),
            stderr: stderr.to_owned(),
        };
        assert_eq!(
            run("Write-Error 'e'; Start-Sleep -Seconds 1\n'mid'; Start-Sleep -Milliseconds 250\nWrite-Output 'late'"),
            Outcome::Sleep {
                millis: 1250,
                then: Box::new(reply(Some("e\nmid\nlate\n"), "e\n", 0, None)),
                written: vec![written(0, Some("e\n"), "e\n"), written(1000, Some("e\nmid\n"), "e\n")],
            }
        );
        assert_eq!(run("Stop-Process -Id $PID"), Outcome::Crash);
        assert_eq!(
            run("Write-Output 'x'\n# pwshlib-sim:hang"),
            Outcome::HangForever
        );
    }

    #[test]
    fn start_process_outputs_the_pid_or_says_why_it_could_not() {
        let program = std::env::current_exe().unwrap();
        let code = format!(
            "Start-Process -FilePath '{}' -ArgumentList '--list --exact none'",
            program.display()
        );
        match run(&code) {
            Outcome::Reply {
                stdout: Some(pid),
                exitcode: 0,
                ..
            } => assert!(pid.trim().parse::<u32>().is_ok_and(|pid| pid > 0), "{pid}"),
            other => panic!("{other:?}"),
        }
        match run("Start-Process -FilePath '/nonexistent/pwshlib-sim-child'") {
            Outcome::Reply {
                exitcode: 1,
                errormessage: Some(message),
                ..
            } => assert!(
                message.contains("cannot start /nonexistent/pwshlib-sim-child"),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn anything_else_is_refused_by_name() {
        match run("Get-Item foo | Out-String") {
            Outcome::Reply {
                errormessage: Some(message),
                exitcode: 1,
                ..
            } => {
                assert!(
                    message.contains("does not support this statement: Get-Item foo | Out-String"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
