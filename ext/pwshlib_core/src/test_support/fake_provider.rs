//! One fake provider for the lifecycle's unit tests: the overridable
//! methods are the core defaults, `execute` answers from a queue, and
//! every log line is kept for the assertions.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;

use crate::error::Error;
use crate::lifecycle::{ExecuteOutput, LifecycleState, Provider, Spine};
use crate::script::{build_script, DscMethod, InvocableResource, Script};
use crate::typedef::TypeDef;
use crate::value::{Map, Value};

/// How the fake builds scripts and answers calls.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Empty scripts; with nothing queued, a call gets the answer of a
    /// system in the state of [`FakeProvider::system`].
    Fake,
    /// The real script builder (vendored under `/opt/vendored`); every call
    /// must have its answer queued.
    RealScripts,
}

pub struct FakeProvider {
    pub typedef: Arc<TypeDef>,
    pub state: RefCell<LifecycleState>,
    mode: Mode,
    pending_method: Cell<Option<DscMethod>>,
    /// Each call: its method and timeout.
    pub calls: RefCell<Vec<(DscMethod, Option<u64>)>>,
    /// Each call's script text.
    pub scripts: RefCell<Vec<String>>,
    pub answers: RefCell<VecDeque<ExecuteOutput>>,
    /// What a Get reports when nothing is queued (fake scripts only).
    pub system: RefCell<Map>,
    /// What a Test reports when nothing is queued (fake scripts only).
    pub in_desired_state: Cell<bool>,
    /// (level, message): every message logged, the title in front.
    pub logs: RefCell<Vec<(String, String)>>,
    /// What `debug_enabled` answers (true unless a test says otherwise).
    pub debug_kept: Cell<bool>,
    pub sleeps: RefCell<Vec<f64>>,
    logon_failures: RefCell<Vec<(String, String)>>,
    notices: RefCell<Vec<String>>,
}

fn s(text: &str) -> Value {
    Value::str(text)
}

/// What `execute` returns for this JSON output.
pub fn out(json: &str) -> ExecuteOutput {
    ExecuteOutput {
        stdout: Some(json.to_owned()),
        ..ExecuteOutput::default()
    }
}

/// A value as the JSON that PowerShell's `ConvertTo-Json` would print.
pub fn json(value: &Value) -> String {
    fn to_json(value: &Value) -> serde_json::Value {
        use serde_json::Value as J;
        match value {
            Value::Nil => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Str(t) => J::String(t.clone()),
            Value::Array(items) => J::Array(items.iter().map(to_json).collect()),
            Value::Hash(map) => J::Object(
                map.iter()
                    .map(|(k, v)| (k.key_name().unwrap_or_default().to_owned(), to_json(v)))
                    .collect(),
            ),
            other => J::String(other.to_string()),
        }
    }
    to_json(value).to_string()
}

impl FakeProvider {
    /// The fixture type with fake scripts, over a file `C:\Foo` that is
    /// present with the contents `hello`.
    pub fn new() -> Self {
        let mut provider = Self::with(crate::test_support::fixture_typedef(), Mode::Fake);
        provider.system = RefCell::new(Map(vec![
            (s("DestinationPath"), s("C:\\Foo")),
            (s("Ensure"), s("Present")),
            (s("Contents"), s("hello")),
            (s("Type"), s("file")),
        ]));
        provider
    }

    /// `typedef` with fake scripts, over a system in the fake's state
    /// (`system`, `in_desired_state`).
    pub fn of_type(typedef: TypeDef) -> Self {
        Self::with(typedef, Mode::Fake)
    }

    /// `typedef` with the real script builder and queued answers only.
    pub fn with_real_scripts(typedef: TypeDef) -> Self {
        Self::with(typedef, Mode::RealScripts)
    }

    fn with(typedef: TypeDef, mode: Mode) -> Self {
        let typedef = Arc::new(typedef);
        FakeProvider {
            state: RefCell::new(LifecycleState::new(&typedef)),
            typedef,
            mode,
            pending_method: Cell::new(None),
            calls: RefCell::new(Vec::new()),
            scripts: RefCell::new(Vec::new()),
            answers: RefCell::new(VecDeque::new()),
            system: RefCell::new(Map::default()),
            in_desired_state: Cell::new(true),
            logs: RefCell::new(Vec::new()),
            debug_kept: Cell::new(true),
            sleeps: RefCell::new(Vec::new()),
            logon_failures: RefCell::new(Vec::new()),
            notices: RefCell::new(Vec::new()),
        }
    }

    /// Queues the output of the next call.
    pub fn answer(&self, stdout: &str) {
        self.answers.borrow_mut().push_back(out(stdout));
    }

    /// The methods called, in order.
    pub fn methods(&self) -> Vec<DscMethod> {
        self.calls.borrow().iter().map(|c| c.0).collect()
    }

    fn log(&self, level: &str, title: Option<&Value>, message: &str) {
        let title = title.map(|t| format!("[{t}] ")).unwrap_or_default();
        self.logs
            .borrow_mut()
            .push((level.to_owned(), format!("{title}{message}")));
    }

    /// The messages logged at `level`.
    pub fn logged(&self, level: &str) -> Vec<String> {
        self.logs
            .borrow()
            .iter()
            .filter(|(l, _)| l == level)
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// Every message logged, one a line.
    ///
    /// The prelude's own text, which `--debug` shows once per host session,
    /// is left out: it is the same whatever the values, and a short secret
    /// can spell a piece of it (`'\n ` escaped is `''\n `, found in it by
    /// the proptests), which would read as a leak that is not one.
    pub fn everything_shown(&self) -> String {
        let logs = self.logs.borrow();
        let lines: Vec<&str> = logs.iter().map(|(_, m)| m.as_str()).collect();
        lines
            .join("\n")
            .replace(crate::templates::PRELUDE, "<prelude>")
    }

    /// The answer of a system in the fake's state.
    fn default_answer(&self, method: DscMethod) -> ExecuteOutput {
        match method {
            DscMethod::Get => out(&json(&Value::Hash(self.system.borrow().clone()))),
            DscMethod::Set => {
                out(r#"{"indesiredstate":true,"rebootrequired":false,"errormessage":""}"#)
            }
            DscMethod::Test => out(&format!(
                r#"{{"indesiredstate":{},"errormessage":""}}"#,
                self.in_desired_state.get()
            )),
            DscMethod::Export => out(&format!(
                r#"{{"instances":[{}]}}"#,
                json(&Value::Hash(self.system.borrow().clone()))
            )),
        }
    }
}

impl Provider for FakeProvider {
    type Error = Error;

    fn typedef(&self) -> Result<Arc<TypeDef>, Error> {
        Ok(self.typedef.clone())
    }
    fn with_state<R>(&self, f: impl FnOnce(&mut LifecycleState) -> R) -> R {
        f(&mut self.state.borrow_mut())
    }
    fn vendored_modules_path(&self, _module_name: &str) -> Result<Result<String, Error>, Error> {
        Ok(Ok("/opt/vendored".to_owned()))
    }
    fn build_script(
        &self,
        typedef: &TypeDef,
        props: &Map,
        method: DscMethod,
    ) -> Result<Result<Script, Error>, Error> {
        self.pending_method.set(Some(method));
        Ok(match self.mode {
            Mode::Fake => Ok(Script::default()),
            Mode::RealScripts => InvocableResource::new(typedef, props, method, "/opt/vendored")
                .and_then(|resource| build_script(&resource)),
        })
    }
    fn is_metaparam(&self, name: &str) -> bool {
        name == "loglevel"
    }
    fn logon_failed_already(&self, pair: &(String, String)) -> bool {
        self.logon_failures.borrow().contains(pair)
    }
    fn first_in_run(&self, notice: &str) -> bool {
        let mut notices = self.notices.borrow_mut();
        let first = !notices.iter().any(|seen| seen == notice);
        if first {
            notices.push(notice.to_owned());
        }
        first
    }
    fn remember_logon_failure(&self, pair: (String, String)) {
        let mut failures = self.logon_failures.borrow_mut();
        if !failures.contains(&pair) {
            failures.push(pair);
        }
    }
    fn debug_enabled(&self) -> bool {
        self.debug_kept.get()
    }

    fn debug(&self, message: &str) -> Result<(), Error> {
        self.log("debug", None, message);
        Ok(())
    }
    fn notice(&self, title: Option<&Value>, message: &str) -> Result<(), Error> {
        self.log("notice", title, message);
        Ok(())
    }
    fn warning(&self, title: Option<&Value>, message: &str) -> Result<(), Error> {
        self.log("warning", title, message);
        Ok(())
    }
    fn err(&self, title: Option<&Value>, message: &str) -> Result<(), Error> {
        self.log("err", title, message);
        Ok(())
    }
}

impl Spine for FakeProvider {
    fn execute_script(
        &self,
        script: &Script,
        timeout_ms: Option<u64>,
    ) -> Result<ExecuteOutput, Error> {
        let script = script.text();
        let method = self.pending_method.get().expect("a script was built");
        self.calls.borrow_mut().push((method, timeout_ms));
        self.scripts.borrow_mut().push(script.to_owned());
        let queued = self.answers.borrow_mut().pop_front();
        Ok(match (queued, self.mode) {
            (Some(answer), _) => answer,
            (None, Mode::Fake) => self.default_answer(method),
            (None, Mode::RealScripts) => panic!("every call has its answer queued"),
        })
    }
    fn sleep(&self, seconds: f64) {
        self.sleeps.borrow_mut().push(seconds);
    }
}
