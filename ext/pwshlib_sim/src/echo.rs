//! Echo mode: a tiny PowerShell subset, interpreted over the tree-sitter
//! syntax tree, for code that is not a DSC invocation. It exists so that the
//! manager can be tested end to end without PowerShell; README.md ("Echo
//! mode") is the user-facing description and must match this file.
//!
//! Statements run in order. Output accumulates; `exit`, `throw`, a crash or a
//! hang end the script. Anything outside the subset ends it with an
//! errormessage naming the statement, so a test never passes by accident.
//!
//! One file per job: this one runs statements (flow control, pipelines,
//! assignments) and gathers the reply; `echo/commands.rs` the commands the
//! subset knows; `echo/values.rs` what an expression's value is.

use std::collections::HashMap;

use tree_sitter::{Node, Tree};

use crate::outcome::{Outcome, Written};

mod commands;
mod values;

use values::strip_prefix_ignore_case;

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

    /// As host.ps1 gathers a plain request's output:
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
